#include "models/pcie/link_accounting.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace gpunvme::pcie {
namespace {

// ---------------------------------------------------------------------------------------------
// Constants, each with its source.

// Signalling rate per lane in GT/s, Gen1..Gen6: PCIe Base Spec r1.0a/r2.0/r3.0/r4.0/r5.0/r6.0;
// pcie-bench model/pcie.py `GTs`.
constexpr double kLaneGtps[] = {2.5, 5.0, 8.0, 16.0, 32.0, 64.0};

// 8b/10b for 2.5 and 5 GT/s, 128b/130b for 8..32 GT/s (PCIe Base Spec r5.0 §4.2). Gen6 flit
// mode: each 256 B flit holds 236 B of TLP bytes, 6 B of DLP (data link payload: the Ack/Nak,
// flow-control and sequence information that DLLPs and per-TLP link bytes carry in non-flit
// mode), 8 B of CRC and 6 B of FEC (PCIe Base Spec r6.0 §4.2.3.1, flit layout; pcie-bench
// model/pcie.py `Gbs` charges the line as 242/256, i.e. TLP + DLP bytes). The line encoding
// is 242/256 as pcie-bench has it; with DllpIntervals::kSymbolTimes the DLP share (6 of the
// 242) is charged as the flit's DLLP overhead, so TLPs get exactly 236/256 of the raw rate, and
// TLPs carry no per-TLP framing, sequence number or LCRC (kLinkOverhead), since flits protect
// and sequence themselves. TLPs are packed back to back across flit boundaries, so a stream of
// TLPs fills flits completely; a lone TLP padded into a partly empty flit is not modelled.
constexpr double kEncoding8b10b = 8.0 / 10.0;
constexpr double kEncoding128b130b = 128.0 / 130.0;
constexpr double kEncodingFlit = 242.0 / 256.0;
constexpr double kFlitTlpBytes = 236.0;
constexpr double kFlitTlpAndDlpBytes = 242.0;

// Legal MPS / MRRS: 128..4096 B, powers of two (r5.0 §7.5.3.4, Device Control encodings 000b..
// 101b). Legal RCB: 64 or 128 B (r5.0 §7.5.3.7, Link Control RCB bit).
constexpr uint32_t kMinPayloadSetting = 128;
constexpr uint32_t kMaxPayloadSetting = 4096;
constexpr uint32_t kRcbSmall = 64;
constexpr uint32_t kRcbLarge = 128;

// Request header: 3 DW with a 32-bit address, 4 DW with a 64-bit one (r5.0 §2.2.4.1; pcie-bench
// TLP_Hdr + TLP_MWr_32_Hdr / TLP_MWr_64_Hdr). Completion header: 3 DW (r5.0 §2.2.9; pcie-bench
// TLP_Hdr + TLP_CplD_Hdr).
constexpr uint32_t kHeader3Dw = 12;
constexpr uint32_t kHeader4Dw = 16;
constexpr uint32_t kCompletionHeader = 12;

// Link-layer bytes around every TLP: 2 B framing + 2 B sequence number + 4 B LCRC = 8 B. Sequence
// number and LCRC: r5.0 §3.6.2. Framing: STP and END symbols at 8b/10b; at 128b/130b the 4 B STP
// token carries the sequence number and there is no END, still 8 B in all (r5.0 §4.2).
// pcie-bench `DLLP_Hdr` = 8.
constexpr uint32_t kLinkOverhead = 8;

// Optional TLP digest (ECRC), r5.0 §2.7; pcie-bench `TLP_Dig`.
constexpr uint32_t kEcrcBytes = 4;

// Upper bound accepted for fixed_tlp_overhead; the largest real per-TLP overhead is 16 + 8 + 4 =
// 28 B, so anything above 64 B is a configuration mistake rather than a model.
constexpr uint32_t kMaxFixedOverhead = 64;

// Payload is carried in whole DWs (r5.0 §2.2.1, Length field in DW).
constexpr uint64_t kDwBytes = 4;

// One flow-control data credit covers 4 DW = 16 B (r5.0 §2.6.1).
constexpr uint64_t kFcDataUnit = 16;

// ACK and UpdateFC DLLPs: 6 B DLLP (4 B content + 2 B CRC) + 2 B framing = 8 B on the wire
// (r5.0 §3.5; pcie-bench `Ack_Size`, `FC_Size`).
constexpr double kDllpWireBytes = 8.0;

// SKP ordered sets for clock compensation: 4 B per 1538 B (pcie-bench `SKIP_Length`,
// `SKIP_Interval`, derived from the 8b/10b SKP schedule of r5.0 §4.2.7; pcie-bench applies it to
// every generation and so do we).
constexpr double kSkpBytes = 4.0;
constexpr double kSkpInterval = 1538.0;

// Interval between ACK DLLPs and between UpdateFC DLLPs, indexed [width x1..x16][MPS 128..4096].
// Values: PCIe Base Spec r5.0 Tables 3-7/3-8/3-9 (Ack latency limits; the UpdateFC guidelines of
// Tables 2-46/2-47/2-48 match them for x1..x16), as transcribed in pcie-bench model/pcie.py
// `Ack_Limits` and `FC_Guide`. The spec states them in symbol times; pcie-bench divides the 8 B
// DLLP by them as if they were bytes on the link. We keep pcie-bench's reading so its published
// figures (57.88 Gb/s of TLP bandwidth on Gen3 x8, MPS 256) are reproduced; it overstates DLLP
// cost on wide links. DllpIntervals::kSymbolTimes reads them as the spec defines them (one symbol
// per lane per symbol time). pcie-bench applies the 8 GT/s table to Gen4 and Gen5 as well and
// copies it to Gen6 as a guess; so do we.
constexpr int kNumWidths = 5;
constexpr int kNumMps = 6;
using DllpTable = uint16_t[kNumWidths][kNumMps];
constexpr DllpTable kDllpInterval2g5 = {
    {237, 416, 559, 1071, 2095, 4143},  // x1
    {128, 217, 289, 545, 1057, 2081},   // x2
    {73, 118, 154, 282, 538, 1050},     // x4
    {67, 107, 86, 150, 278, 534},       // x8
    {48, 72, 86, 150, 278, 534},        // x16
};
constexpr DllpTable kDllpInterval5g = {
    {288, 467, 610, 1122, 2146, 4194},  // x1
    {179, 268, 340, 596, 1108, 2132},   // x2
    {124, 169, 205, 333, 589, 1101},    // x4
    {118, 158, 137, 201, 329, 585},     // x8
    {99, 123, 137, 201, 329, 585},      // x16
};
constexpr DllpTable kDllpInterval8gPlus = {
    {333, 512, 655, 1167, 2191, 4239},  // x1
    {224, 313, 385, 641, 1153, 2177},   // x2
    {169, 214, 250, 378, 634, 1146},    // x4
    {163, 203, 182, 246, 374, 630},     // x8
    {144, 168, 182, 246, 374, 630},     // x16
};

// Transfers longer than this are rejected so that byte and TLP counts cannot wrap; 256 TiB is far
// beyond any single DMA.
constexpr uint64_t kMaxTransferBytes = uint64_t{1} << 48;

// ---------------------------------------------------------------------------------------------
// Helpers.

bool is_pow2(uint32_t v) { return v != 0 && (v & (v - 1)) == 0; }

int gen_index(Gen gen) {
  const int g = static_cast<int>(gen);
  if (g < 1 || g > 6) {
    throw std::invalid_argument("pcie: illegal link generation " + std::to_string(g) +
                                " (legal: Gen1..Gen6)");
  }
  return g - 1;
}

int width_index(Width width) {
  switch (width) {
    case Width::kX1: return 0;
    case Width::kX2: return 1;
    case Width::kX4: return 2;
    case Width::kX8: return 3;
    case Width::kX16: return 4;
  }
  throw std::invalid_argument("pcie: illegal link width x" +
                              std::to_string(static_cast<int>(width)) +
                              " (legal: x1, x2, x4, x8, x16)");
}

void check_payload_setting(const char* name, uint32_t value) {
  if (value < kMinPayloadSetting || value > kMaxPayloadSetting || !is_pow2(value)) {
    throw std::invalid_argument(std::string("pcie: illegal ") + name + " " + std::to_string(value) +
                                " (legal: 128, 256, 512, 1024, 2048, 4096 bytes)");
  }
}

int mps_index(uint32_t mps) {
  check_payload_setting("MPS", mps);
  int index = 0;
  for (uint32_t v = kMinPayloadSetting; v < mps; v <<= 1) ++index;
  return index;
}

uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

// Whole DWs spanned by bytes [begin, end), end > begin. Computed from the distance so that an end
// near 2^64 cannot overflow.
uint64_t dw_span(uint64_t begin, uint64_t end) {
  const uint64_t from = begin & ~(kDwBytes - 1);
  return ceil_div(end - from, kDwBytes) * kDwBytes;
}

// TLPs of a byte range [begin, end) (end > begin) split at every address base + k * step, where
// base <= begin < base + step and step is a multiple of 16 (every legal MPS, MRRS and RCB is).
// Only the first and last pieces can be partial, so the sums are O(1).
struct Pieces {
  uint64_t count = 0;
  uint64_t dw_bytes = 0;      // payload padded to whole DWs, summed over pieces
  uint64_t data_credits = 0;  // per piece ceil(dw / 16), summed
};

Pieces split(uint64_t begin, uint64_t end, uint64_t base, uint64_t step) {
  const uint64_t n = (end - base - 1) / step + 1;
  if (n == 1) {
    const uint64_t dw = dw_span(begin, end);
    return {1, dw, ceil_div(dw, kFcDataUnit)};
  }
  const uint64_t first = dw_span(begin, base + step);
  const uint64_t last = dw_span(base + (n - 1) * step, end);
  const uint64_t middle = n - 2;
  return {
      n, first + last + middle * step,
      ceil_div(first, kFcDataUnit) + ceil_div(last, kFcDataUnit) + middle * (step / kFcDataUnit)};
}

void add(Pieces& into, const Pieces& p, uint64_t times = 1) {
  into.count += p.count * times;
  into.dw_bytes += p.dw_bytes * times;
  into.data_credits += p.data_credits * times;
}

void check_range(uint64_t addr, uint64_t len) {
  if (len > kMaxTransferBytes) {
    throw std::invalid_argument("pcie: transfer of " + std::to_string(len) +
                                " bytes exceeds the 2^48-byte guard");
  }
  if (len != 0 && addr > UINT64_MAX - (len - 1)) {
    throw std::invalid_argument("pcie: transfer wraps past the end of the 64-bit address space");
  }
}

// The zero-length form: one TLP with a 1 DW payload and no byte enabled (r5.0 §2.2.5).
constexpr Pieces kZeroLengthPiece = {1, kDwBytes, 1};

Pieces write_pieces(const TlpRules& rules, uint64_t addr, uint64_t len) {
  validate(rules);
  check_range(addr, len);
  if (len == 0) return kZeroLengthPiece;
  const uint64_t mps = rules.mps;
  return split(addr, addr + len, addr & ~(mps - 1), mps);
}

struct ReadPieces {
  uint64_t requests = 0;
  Pieces completions;
};

// Completions answering one request [begin, end): pieces end on RCB-aligned addresses and carry at
// most MPS (or RCB) bytes. Starting the grid at the RCB boundary below `begin` makes the first
// completion as long as the rules allow and every later one start RCB-aligned.
Pieces completion_pieces(const TlpRules& rules, uint64_t begin, uint64_t end) {
  const uint64_t rcb = rules.rcb;
  const uint64_t step = rules.rcb_chunks ? rcb : rules.mps;
  return split(begin, end, begin & ~(rcb - 1), step);
}

ReadPieces read_pieces(const TlpRules& rules, uint64_t addr, uint64_t len) {
  validate(rules);
  check_range(addr, len);
  if (len == 0) return {1, kZeroLengthPiece};
  const uint64_t mrrs = rules.mrrs;
  const uint64_t end = addr + len;
  const uint64_t base = addr & ~(mrrs - 1);
  ReadPieces r;
  r.requests = (end - base - 1) / mrrs + 1;
  if (r.requests == 1) {
    r.completions = completion_pieces(rules, addr, end);
    return r;
  }
  // First and last requests may be partial; every one between is a whole, aligned MRRS block and
  // therefore completes identically.
  add(r.completions, completion_pieces(rules, addr, base + mrrs));
  add(r.completions, completion_pieces(rules, base + (r.requests - 1) * mrrs, end));
  add(r.completions, completion_pieces(rules, 0, mrrs), r.requests - 2);
  return r;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

Gen gen_from_number(int generation) {
  if (generation < 1 || generation > 6) {
    throw std::invalid_argument("pcie: illegal link generation " + std::to_string(generation) +
                                " (legal: 1..6)");
  }
  return static_cast<Gen>(generation);
}

Width width_from_lanes(int lanes) {
  switch (lanes) {
    case 1: return Width::kX1;
    case 2: return Width::kX2;
    case 4: return Width::kX4;
    case 8: return Width::kX8;
    case 16: return Width::kX16;
    default:
      throw std::invalid_argument("pcie: illegal link width x" + std::to_string(lanes) +
                                  " (legal: x1, x2, x4, x8, x16)");
  }
}

void validate_link(Gen gen, Width width) {
  gen_index(gen);
  width_index(width);
}

double lane_gtps(Gen gen) { return kLaneGtps[gen_index(gen)]; }

double encoding_efficiency(Gen gen) {
  const int g = gen_index(gen) + 1;
  if (g <= 2) return kEncoding8b10b;
  if (g <= 5) return kEncoding128b130b;
  return kEncodingFlit;
}

double link_bytes_per_ns(Gen gen, Width width) {
  validate_link(gen, width);
  // GT/s per lane x lanes x encoding = Gb/s of symbols' payload; / 8 bits = bytes per ns.
  return lane_gtps(gen) * static_cast<int>(width) * encoding_efficiency(gen) / 8.0;
}

double dllp_skp_overhead(Gen gen, Width width, uint32_t mps, DllpIntervals intervals) {
  const int g = gen_index(gen) + 1;
  const int w = width_index(width);
  const int m = mps_index(mps);
  const double skp = kSkpBytes / kSkpInterval;
  // Flit mode: the DLP bytes of every flit (6 of its 242 after encoding) carry the DLLPs; SKP
  // ordered sets still go between flits.
  if (intervals == DllpIntervals::kSymbolTimes && g == 6) {
    return 1.0 - (kFlitTlpBytes / kFlitTlpAndDlpBytes) * (1.0 - skp);
  }
  const DllpTable& table = g == 1   ? kDllpInterval2g5
                           : g == 2 ? kDllpInterval5g
                                    : kDllpInterval8gPlus;
  double interval = table[w][m];
  // A symbol time moves one symbol on each lane (r5.0 §4.2: symbols are striped across lanes).
  if (intervals == DllpIntervals::kSymbolTimes) interval *= static_cast<int>(width);
  // One ACK and one UpdateFC per interval, plus the SKP share (pcie-bench model/pcie.py TLP_bw).
  return kDllpWireBytes / interval + kDllpWireBytes / interval + skp;
}

double tlp_bytes_per_ns(Gen gen, Width width, uint32_t mps, DllpIntervals intervals) {
  return link_bytes_per_ns(gen, width) * (1.0 - dllp_skp_overhead(gen, width, mps, intervals));
}

bool flit_mode(Gen gen, DllpIntervals intervals) {
  return gen == Gen::kGen6 && intervals == DllpIntervals::kSymbolTimes;
}

uint64_t link_wire_bytes(Gen gen, DllpIntervals intervals, const WireCost& cost,
                         const TlpRules& rules) {
  if (!flit_mode(gen, intervals) || rules.fixed_tlp_overhead) return cost.wire_bytes;
  return cost.wire_bytes - cost.tlps * kLinkOverhead;
}

uint64_t serialization_ps(Gen gen, Width width, uint64_t wire_bytes, uint32_t mps,
                          DllpIntervals intervals) {
  return serialization_ps_at(tlp_bytes_per_ns(gen, width, mps, intervals), wire_bytes);
}

uint64_t serialization_ps_at(double tlp_bytes_per_ns, uint64_t wire_bytes) {
  const double bytes_per_ps = tlp_bytes_per_ns / 1000.0;
  // std::llround of a non-negative quotient, without libm's call (one per
  // stage of every transfer): halves round up, as away from zero. The
  // fraction x - trunc(x) of a double is exact.
  const double ps = static_cast<double>(wire_bytes) / bytes_per_ps;
  const auto whole = static_cast<uint64_t>(ps);
  return ps - static_cast<double>(whole) >= 0.5 ? whole + 1 : whole;
}

void validate(const TlpRules& rules) {
  check_payload_setting("MPS", rules.mps);
  check_payload_setting("MRRS", rules.mrrs);
  if (rules.rcb != kRcbSmall && rules.rcb != kRcbLarge) {
    throw std::invalid_argument("pcie: illegal RCB " + std::to_string(rules.rcb) +
                                " (legal: 64 or 128 bytes)");
  }
  if (rules.fixed_tlp_overhead && *rules.fixed_tlp_overhead > kMaxFixedOverhead) {
    throw std::invalid_argument("pcie: fixed_tlp_overhead " +
                                std::to_string(*rules.fixed_tlp_overhead) +
                                " exceeds 64 bytes (real TLPs cost at most 28)");
  }
}

uint32_t request_tlp_overhead(const TlpRules& rules) {
  if (rules.fixed_tlp_overhead) return *rules.fixed_tlp_overhead;
  return (rules.addr64 ? kHeader4Dw : kHeader3Dw) + kLinkOverhead + (rules.ecrc ? kEcrcBytes : 0);
}

uint32_t completion_tlp_overhead(const TlpRules& rules) {
  if (rules.fixed_tlp_overhead) return *rules.fixed_tlp_overhead;
  return kCompletionHeader + kLinkOverhead + (rules.ecrc ? kEcrcBytes : 0);
}

WriteAccounting account_write(const TlpRules& rules, uint64_t addr, uint64_t len) {
  const Pieces p = write_pieces(rules, addr, len);
  WriteAccounting a;
  a.cost = {p.count, len, p.count * request_tlp_overhead(rules) + p.dw_bytes};
  a.credits = {p.count, p.data_credits};
  return a;
}

ReadAccounting account_read(const TlpRules& rules, uint64_t addr, uint64_t len) {
  const ReadPieces p = read_pieces(rules, addr, len);
  ReadAccounting a;
  a.cost.requests = {p.requests, 0, p.requests * request_tlp_overhead(rules)};
  a.cost.completions = {
      p.completions.count, len,
      p.completions.count * completion_tlp_overhead(rules) + p.completions.dw_bytes};
  a.credits.non_posted = {p.requests, 0};
  a.credits.completion = {p.completions.count, p.completions.data_credits};
  return a;
}

WireCost memory_write(const TlpRules& rules, uint64_t addr, uint64_t len) {
  return account_write(rules, addr, len).cost;
}

ReadCost memory_read(const TlpRules& rules, uint64_t addr, uint64_t len) {
  return account_read(rules, addr, len).cost;
}

Credits credits_for_write(const TlpRules& rules, uint64_t addr, uint64_t len) {
  return account_write(rules, addr, len).credits;
}

ReadCredits credits_for_read(const TlpRules& rules, uint64_t addr, uint64_t len) {
  return account_read(rules, addr, len).credits;
}

double effective_write_gbps(Gen gen, Width width, const TlpRules& rules, uint64_t size) {
  const double tlp_gbps = tlp_bytes_per_ns(gen, width, rules.mps) * 8.0;
  const WireCost w = memory_write(rules, 0, size);
  return tlp_gbps * static_cast<double>(size) / static_cast<double>(w.wire_bytes);
}

double effective_read_gbps(Gen gen, Width width, const TlpRules& rules, uint64_t size) {
  const double tlp_gbps = tlp_bytes_per_ns(gen, width, rules.mps) * 8.0;
  const ReadCost r = memory_read(rules, 0, size);
  const uint64_t limiting = std::max(r.requests.wire_bytes, r.completions.wire_bytes);
  return tlp_gbps * static_cast<double>(size) / static_cast<double>(limiting);
}

}  // namespace gpunvme::pcie
