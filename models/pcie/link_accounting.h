// Byte-exact accounting of PCIe links and TLPs.
//
// The fabric model moves each DMA burst as one event per hop; this library tells it how many
// TLPs the burst becomes, how many bytes they put on the wire, how many flow-control credits they
// consume, and how long the wire bytes take to serialise. Every function is pure, allocation-free
// and deterministic, so it can be called once per burst per hop.
//
// Reference model: pcie-bench (Neugebauer et al., "Understanding PCIe performance for end host
// networking", SIGCOMM 2018; github.com/pcie-bench/pcie-model, model/pcie.py and model/mem_bw.py).
// Where this library is more detailed than that model (address-aligned splitting, DW padding,
// completions bounded by their request), the difference vanishes for aligned, DW-multiple
// transfers with MPS <= MRRS, which is where the tests hold it to the model.

#ifndef GPUNVME_MODELS_PCIE_LINK_ACCOUNTING_H_
#define GPUNVME_MODELS_PCIE_LINK_ACCOUNTING_H_

#include <cstdint>
#include <optional>

#include "sim/kernel/params/enum_names.h"

namespace gpunvme::pcie {

// Link generation; the enumerator value is the generation number.
enum class Gen : uint8_t { kGen1 = 1, kGen2 = 2, kGen3 = 3, kGen4 = 4, kGen5 = 5, kGen6 = 6 };

// Negotiated link width; the enumerator value is the lane count. The spec also defines x12 and
// x32, but no GPU, switch or SSD modelled here trains to them.
enum class Width : uint8_t { kX1 = 1, kX2 = 2, kX4 = 4, kX8 = 8, kX16 = 16 };

// Default MPS for the timing functions: the common platform setting (CALIBRATION.md, PCIe table).
inline constexpr uint32_t kDefaultMps = 256;

// Conversions from configuration numbers; throw std::invalid_argument on anything else.
Gen gen_from_number(int generation);
Width width_from_lanes(int lanes);

// Throws std::invalid_argument if gen or width is not one of the enumerators (e.g. a cast int).
void validate_link(Gen gen, Width width);

// ---------------------------------------------------------------------------------------------
// Physical and data link layer rates.

// Signalling rate of one lane in GT/s.
double lane_gtps(Gen gen);

// Fraction of the raw bit rate left after line encoding (8b/10b, 128b/130b, or Gen6 FLIT).
double encoding_efficiency(Gen gen);

// Bytes per nanosecond (= GB/s) one direction of the link carries after line encoding, before
// DLLPs and ordered sets.
double link_bytes_per_ns(Gen gen, Width width);

// How the spec's ACK and UpdateFC intervals (PCIe Base Spec r5.0 Tables 3-7..3-9 and
// 2-46..2-48, stated in symbol times) are turned into link bytes.
enum class DllpIntervals : uint8_t {
  // As the spec defines them: one symbol time carries one byte on every lane, so an interval is
  // interval x lanes bytes. In flit mode (Gen6) DLLPs travel in the 6 DLP bytes of each flit:
  // TLPs get 236 of every 256 flit bytes (less SKP ordered sets), and carry no per-TLP framing,
  // sequence number or LCRC (see link_wire_bytes).
  kSymbolTimes,
  // As pcie-bench's model/pcie.py does: one interval = that many bytes on the link. Reproduces
  // its published figures; overstates DLLP cost by the lane count (x16: 9.8 % instead of ~0.9 %
  // at 8 GT/s, MPS 256).
  kPcieBench,
};
// The names of DllpIntervals, in enumerator order: the topology's dllp_intervals.
inline const EnumNameTable& enum_names(DllpIntervals) {
  static const EnumNameTable table("symbol_times, pcie_bench");
  return table;
}

// Share of the link, after encoding, taken by ACK DLLPs, UpdateFC DLLPs and SKP ordered sets:
// 8/ack_interval + 8/fc_interval + 4/1538, the intervals in bytes as `intervals` says (default:
// pcie-bench's reading, which the oracle tests hold it to). Depends on MPS because the spec's ACK
// and FC update intervals do. Throws std::invalid_argument on an illegal MPS.
double dllp_skp_overhead(Gen gen, Width width, uint32_t mps = kDefaultMps,
                         DllpIntervals intervals = DllpIntervals::kPcieBench);

// Whether TLPs on this link travel in flits: Gen6 read as the spec defines it (kSymbolTimes).
// pcie-bench's reading (kPcieBench) keeps its Gen6 guess: 242/256, DLLP intervals and per-TLP
// link bytes as on Gen5, so its figures stay reproducible.
bool flit_mode(Gen gen, DllpIntervals intervals);

// Bytes the TLPs of `cost` (computed with `rules`) occupy on a link: cost.wire_bytes, less the
// 8 B of framing, sequence number and LCRC per TLP in flit mode, where the flit carries those
// (PCIe Base Spec r6.0 §4.2.3.1). A fixed_tlp_overhead is a whole-TLP figure and is kept.
struct WireCost;
struct TlpRules;
uint64_t link_wire_bytes(Gen gen, DllpIntervals intervals, const WireCost& cost,
                         const TlpRules& rules);

// Bytes per nanosecond left for TLPs (framing, headers and payload): link_bytes_per_ns * (1 -
// dllp_skp_overhead). With kPcieBench it equals pcie-bench's TLP_bw / 8.
double tlp_bytes_per_ns(Gen gen, Width width, uint32_t mps = kDefaultMps,
                        DllpIntervals intervals = DllpIntervals::kPcieBench);

// Picoseconds one direction of the link is busy sending `wire_bytes` of TLPs (as returned in
// WireCost::wire_bytes), rounded to the nearest picosecond. DLLP and SKP traffic is charged
// proportionally: each TLP byte takes 1 / tlp_bytes_per_ns, i.e. the link also carries the
// ACKs, UpdateFCs and SKPs of the spec's intervals, spread evenly. pcie-bench deducts them from
// both directions alike (it assumes traffic both ways); so does this. Zero bytes take zero time.
uint64_t serialization_ps(Gen gen, Width width, uint64_t wire_bytes, uint32_t mps = kDefaultMps,
                          DllpIntervals intervals = DllpIntervals::kPcieBench);
// The same at a TLP rate already known (tlp_bytes_per_ns of the link): for a caller that
// serializes burst after burst on one link, as computing the rate validates the link and the
// MPS and looks up the DLLP intervals every time.
uint64_t serialization_ps_at(double tlp_bytes_per_ns, uint64_t wire_bytes);

// ---------------------------------------------------------------------------------------------
// Transaction layer.

struct TlpRules {
  // Max Payload Size: the largest data payload of one TLP (Device Control register). Legal: 128,
  // 256, ..., 4096 B. PCIe Base Spec r5.0 §2.2.2 and §7.5.3.4.
  uint32_t mps = 256;
  // Max Read Request Size: the largest read one request may ask for. Legal: 128..4096 B, powers of
  // two. PCIe Base Spec r5.0 §2.2.7 and §7.5.3.4.
  uint32_t mrrs = 512;
  // Read Completion Boundary of the completer: split completions end on multiples of it. Legal:
  // 64 or 128 B. PCIe Base Spec r5.0 §2.3.1.1 (a root port's RCB is 64 or 128, an endpoint's
  // inherits it via Link Control).
  uint32_t rcb = 64;
  // 4 DW request headers (64-bit address format) when true, 3 DW when false. The spec requires the
  // 3 DW format for addresses below 4 GB (r5.0 §2.2.4.1); the caller knows where the target lives.
  bool addr64 = true;
  // End-to-end CRC digest appended to every TLP (TLP Digest, 4 B). r5.0 §2.7.
  bool ecrc = false;
  // When set, every TLP costs exactly this many bytes besides its payload, replacing header, link
  // overhead and ECRC. Seed 003's "PCIe Overhead per 4KB Read" table uses 24 B.
  std::optional<uint32_t> fixed_tlp_overhead;
  // Completers that return reads in RCB-sized completions instead of MPS-sized ones; pcie-bench's
  // `rcb_chunks` option, which its authors observed on several older chipsets.
  bool rcb_chunks = false;
};

// Throws std::invalid_argument naming the offending field.
void validate(const TlpRules& rules);

// Bytes a memory request TLP (MWr or MRd) puts on the wire besides its data payload.
uint32_t request_tlp_overhead(const TlpRules& rules);
// Bytes a completion TLP (CplD) puts on the wire besides its data payload.
uint32_t completion_tlp_overhead(const TlpRules& rules);

// The TLPs of one transfer in one direction.
struct WireCost {
  uint64_t tlps = 0;
  // Bytes the caller asked to move (zero for read requests, which carry no data).
  uint64_t payload_bytes = 0;
  // Everything on the wire: per-TLP overhead plus data payload padded to whole DWs.
  uint64_t wire_bytes = 0;
};

// A read: requests flow requester -> completer, completions flow back.
struct ReadCost {
  WireCost requests;
  WireCost completions;
};

// Flow-control credits (PCIe Base Spec r5.0 §2.6.1): one header credit per TLP, one data credit
// per 4 DW (16 B) of payload, each TLP's payload rounded up separately.
struct Credits {
  uint64_t header = 0;
  uint64_t data = 0;
};

// A read consumes non-posted credits at the completer (NPH; a memory read carries no data, so
// NPD stays 0) and completion credits at the requester (CplH, CplD).
struct ReadCredits {
  Credits non_posted;
  Credits completion;
};

// A posted memory write of `len` bytes starting at `addr`, split as requesters do: no TLP carries
// more than MPS bytes or crosses an MPS-aligned address (hence never a 4 KB boundary, r5.0
// §2.2.7). A zero-length write is sent as PCIe sends it: one TLP with a 1 DW payload and no byte
// enabled (r5.0 §2.2.5); payload_bytes is then 0. Throws std::invalid_argument on illegal rules
// or if addr + len wraps past 2^64 or len exceeds 2^48.
WireCost memory_write(const TlpRules& rules, uint64_t addr, uint64_t len);

// A memory read of `len` bytes at `addr`. Requests: at most MRRS bytes each, never crossing an
// MRRS-aligned address (hence never 4 KB). Completions of each request: at most MPS bytes (RCB
// bytes with rcb_chunks), every split on an RCB-aligned address (r5.0 §2.3.1.1), as few as those
// rules allow. A zero-length read is one 1 DW request with no byte enabled, answered by one
// completion carrying 1 DW (r5.0 §2.2.5; used to flush posted writes); payload_bytes is then 0.
ReadCost memory_read(const TlpRules& rules, uint64_t addr, uint64_t len);

// Credits the TLPs of memory_write / memory_read with the same arguments consume.
Credits credits_for_write(const TlpRules& rules, uint64_t addr, uint64_t len);
ReadCredits credits_for_read(const TlpRules& rules, uint64_t addr, uint64_t len);

// Cost and credits together, from one split into TLPs, for a caller that needs both for every
// transfer (the fabric): each of the functions above splits the transfer and checks the rules.
struct WriteAccounting {
  WireCost cost;
  Credits credits;
};
struct ReadAccounting {
  ReadCost cost;
  ReadCredits credits;
};
WriteAccounting account_write(const TlpRules& rules, uint64_t addr, uint64_t len);
ReadAccounting account_read(const TlpRules& rules, uint64_t addr, uint64_t len);

// ---------------------------------------------------------------------------------------------
// Effective bandwidth of a back-to-back stream of aligned transfers of `size` bytes, in Gb/s
// (10^9 bits of payload per second), as pcie-bench's mem_bw.write / mem_bw.read compute it with
// the link's TLP bandwidth (tlp_bytes_per_ns at rules.mps) available in each direction.
// Write: payload share of the wire bytes times the TLP bandwidth. Read: completions and requests
// travel in opposite directions, so the stream runs at the pace of whichever direction needs more
// wire bytes per read (in practice the completions).
double effective_write_gbps(Gen gen, Width width, const TlpRules& rules, uint64_t size);
double effective_read_gbps(Gen gen, Width width, const TlpRules& rules, uint64_t size);

inline bool operator==(const WireCost& a, const WireCost& b) {
  return a.tlps == b.tlps && a.payload_bytes == b.payload_bytes && a.wire_bytes == b.wire_bytes;
}
inline bool operator==(const Credits& a, const Credits& b) {
  return a.header == b.header && a.data == b.data;
}

}  // namespace gpunvme::pcie

#endif  // GPUNVME_MODELS_PCIE_LINK_ACCOUNTING_H_
