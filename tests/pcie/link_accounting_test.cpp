// Tests of the PCIe link and TLP byte accounting against independent oracles:
//  * pcie-bench's closed-form model (Neugebauer et al., SIGCOMM 2018; github.com/pcie-bench/
//    pcie-model, model/pcie.py and model/mem_bw.py), re-derived here from its formulas and tables;
//  * a byte-walking splitter written in loop form, for unaligned and boundary-crossing transfers;
//  * the figures of seed 003's "PCIe Overhead per 4KB Read" table.

#include "models/pcie/link_accounting.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpunvme::pcie {
namespace {

// ---------------------------------------------------------------------------------------------
// pcie-bench oracle.

// One link under test with the values pcie-bench's model/pcie.py uses for it. ACK limits and FC
// update intervals come from its Ack_Limits / FC_Guide tables (PCIe Base Spec r5.0 Tables 3-9 and
// 2-48 for 8 GT/s and up), typed in here for MPS 128, 256, 512 only.
struct OracleLink {
  const char* name;
  Gen gen;
  Width width;
  double gtps;      // per lane
  double encoding;  // 128b/130b for Gen3..5
  int lanes;
  int ack[3];  // MPS 128, 256, 512
  int fc[3];
};

constexpr OracleLink kOracleLinks[] = {
    {"Gen3 x8", Gen::kGen3, Width::kX8, 8.0, 128.0 / 130.0, 8, {163, 203, 182}, {163, 203, 182}},
    {"Gen4 x4", Gen::kGen4, Width::kX4, 16.0, 128.0 / 130.0, 4, {169, 214, 250}, {169, 214, 250}},
    {"Gen4 x16",
     Gen::kGen4,
     Width::kX16,
     16.0,
     128.0 / 130.0,
     16,
     {144, 168, 182},
     {144, 168, 182}},
    {"Gen5 x16",
     Gen::kGen5,
     Width::kX16,
     32.0,
     128.0 / 130.0,
     16,
     {144, 168, 182},
     {144, 168, 182}},
};

int mps_slot(int mps) { return mps == 128 ? 0 : mps == 256 ? 1 : 2; }

// pcie.py: Raw = Gbs * lanes; TLP_bw = Raw - Raw * (Ack_Size/Ack_Limit + FC_Size/FC_Guide +
// SKIP_Length/SKIP_Interval), with Ack_Size = FC_Size = 8, SKIP 4 per 1538.
double oracle_tlp_gbps(const OracleLink& l, int mps) {
  const double raw = l.gtps * l.encoding * l.lanes;
  const int s = mps_slot(mps);
  const double overheads = 8.0 / l.ack[s] + 8.0 / l.fc[s] + 4.0 / 1538.0;
  return raw - raw * overheads;
}

// pcie.py: MWr/MRd header = DLLP_Hdr 8 + TLP_Hdr 4 + (8 for 32-bit, 12 for 64-bit) + ECRC 4;
// CplD = 8 + 4 + 8 + ECRC 4.
int oracle_req_hdr(int addr_bits, int ecrc) {
  return 8 + 4 + (addr_bits == 32 ? 8 : 12) + 4 * ecrc;
}
int oracle_cpl_hdr(int ecrc) { return 8 + 4 + 8 + 4 * ecrc; }

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// mem_bw.write: raw_bytes = ceil(size / mps) * MWr_Hdr + size; eff = size * raw_bw / raw_bytes.
int64_t oracle_write_bytes(int size, int mps, int addr_bits, int ecrc) {
  return ceil_div(size, mps) * oracle_req_hdr(addr_bits, ecrc) + size;
}
double oracle_write_gbps(const OracleLink& l, int size, int mps, int addr_bits, int ecrc) {
  return size * oracle_tlp_gbps(l, mps) / oracle_write_bytes(size, mps, addr_bits, ecrc);
}

// mem_bw.read with BW_RAW and equal TLP bandwidth both ways: TX carries ceil(size / mrrs)
// requests, RX carries ceil(size / mps) (or / rcb with rcb_chunks) completions plus the data; the
// transaction rate is what RX allows, unless the TX requests would then exceed TX bandwidth.
double oracle_read_gbps(const OracleLink& l, int size, int mps, int mrrs, int rcb, bool rcb_chunks,
                        int addr_bits, int ecrc) {
  const double bw = oracle_tlp_gbps(l, mps) * 1e9;
  const double raw_tx_b = 8.0 * ceil_div(size, mrrs) * oracle_req_hdr(addr_bits, ecrc);
  const int64_t rx_tlps = rcb_chunks ? ceil_div(size, rcb) : ceil_div(size, mps);
  const double raw_rx_b = 8.0 * (rx_tlps * oracle_cpl_hdr(ecrc) + size);
  double max_trans = bw / raw_rx_b;
  if (max_trans * raw_tx_b > bw) max_trans = bw / raw_tx_b;
  return 8.0 * size * max_trans / 1e9;
}

bool within(double actual, double expected, double rel) {
  return std::fabs(actual - expected) <= rel * std::fabs(expected);
}

TEST(PcieBenchOracle, EffectiveWriteAndReadBandwidthWithinOnePercent) {
  int checked = 0;
  double worst = 0.0;
  for (const OracleLink& link : kOracleLinks) {
    for (int mps : {128, 256, 512}) {
      for (int addr_bits : {32, 64}) {
        TlpRules rules;
        rules.mps = mps;
        rules.mrrs = 512;
        rules.addr64 = addr_bits == 64;
        for (int size = 64; size <= 4096; size += 4) {
          SCOPED_TRACE(std::string(link.name) + " mps=" + std::to_string(mps) +
                       " addr=" + std::to_string(addr_bits) + " size=" + std::to_string(size));
          const double wr = effective_write_gbps(link.gen, link.width, rules, size);
          const double wr_oracle = oracle_write_gbps(link, size, mps, addr_bits, 0);
          const double rd = effective_read_gbps(link.gen, link.width, rules, size);
          const double rd_oracle = oracle_read_gbps(link, size, mps, 512, 64, false, addr_bits, 0);
          EXPECT_TRUE(within(wr, wr_oracle, 0.01)) << wr << " vs " << wr_oracle;
          EXPECT_TRUE(within(rd, rd_oracle, 0.01)) << rd << " vs " << rd_oracle;
          worst = std::max({worst, std::fabs(wr / wr_oracle - 1), std::fabs(rd / rd_oracle - 1)});
          // The wire bytes themselves are integers and must match exactly.
          EXPECT_EQ(memory_write(rules, 0, size).wire_bytes,
                    static_cast<uint64_t>(oracle_write_bytes(size, mps, addr_bits, 0)));
          checked += 2;
        }
      }
    }
  }
  EXPECT_EQ(checked, 4 * 3 * 2 * 1009 * 2);
  // Same formulas, so agreement should be at rounding level, far inside the 1% budget.
  EXPECT_LT(worst, 1e-9);
}

TEST(PcieBenchOracle, EcrcAndRcbChunks) {
  for (const OracleLink& link : kOracleLinks) {
    for (int rcb : {64, 128}) {
      TlpRules rules;
      rules.mps = 256;
      rules.mrrs = 512;
      rules.rcb = static_cast<uint32_t>(rcb);
      rules.ecrc = true;
      rules.rcb_chunks = true;
      for (int size = 64; size <= 4096; size += 64) {
        SCOPED_TRACE(std::string(link.name) + " rcb=" + std::to_string(rcb) +
                     " size=" + std::to_string(size));
        EXPECT_TRUE(within(effective_read_gbps(link.gen, link.width, rules, size),
                           oracle_read_gbps(link, size, 256, 512, rcb, true, 64, 1), 0.01));
        EXPECT_TRUE(within(effective_write_gbps(link.gen, link.width, rules, size),
                           oracle_write_gbps(link, size, 256, 64, 1), 0.01));
      }
    }
  }
}

TEST(PcieBenchOracle, TlpBandwidthMatchesModelTables) {
  for (const OracleLink& link : kOracleLinks) {
    for (int mps : {128, 256, 512}) {
      EXPECT_TRUE(within(tlp_bytes_per_ns(link.gen, link.width, mps) * 8.0,
                         oracle_tlp_gbps(link, mps), 1e-12))
          << link.name << " mps " << mps;
    }
  }
  // 2.5 and 5 GT/s tables (pcie.py Ack_Limits gen1 x1 MPS 128 = 237, gen2 x4 MPS 256 = 169).
  EXPECT_NEAR(dllp_skp_overhead(Gen::kGen1, Width::kX1, 128), 16.0 / 237 + 4.0 / 1538, 1e-15);
  EXPECT_NEAR(dllp_skp_overhead(Gen::kGen2, Width::kX4, 256), 16.0 / 169 + 4.0 / 1538, 1e-15);
  // Gen6 reuses the 8 GT/s table, as pcie-bench does.
  EXPECT_DOUBLE_EQ(dllp_skp_overhead(Gen::kGen6, Width::kX16, 4096),
                   dllp_skp_overhead(Gen::kGen3, Width::kX16, 4096));
}

// The paper's worked example (§3): Gen3 x8 gives 8 x 7.87 Gb/s = 62.96 Gb/s after 128b/130b
// encoding, and about 57.88 Gb/s for TLPs once DLLPs and SKPs are deducted (MPS 256).
TEST(PaperFigures, Gen3x8) {
  EXPECT_NEAR(link_bytes_per_ns(Gen::kGen3, Width::kX8) * 8.0, 62.96, 0.06);
  EXPECT_NEAR(tlp_bytes_per_ns(Gen::kGen3, Width::kX8, 256) * 8.0, 57.88, 0.01);
  // MWr with 64-bit address costs 24 B per TLP, CplD 20 B (paper §3, pcie.py).
  TlpRules rules;
  EXPECT_EQ(request_tlp_overhead(rules), 24u);
  EXPECT_EQ(completion_tlp_overhead(rules), 20u);
}

// ---------------------------------------------------------------------------------------------
// Link rates.

TEST(LinkRates, RawRatesAndEncodings) {
  EXPECT_DOUBLE_EQ(link_bytes_per_ns(Gen::kGen1, Width::kX1), 2.5 * 0.8 / 8);
  EXPECT_DOUBLE_EQ(link_bytes_per_ns(Gen::kGen2, Width::kX2), 5.0 * 2 * 0.8 / 8);
  EXPECT_DOUBLE_EQ(link_bytes_per_ns(Gen::kGen4, Width::kX4), 16.0 * 4 * 128 / 130 / 8);
  EXPECT_DOUBLE_EQ(link_bytes_per_ns(Gen::kGen5, Width::kX16), 32.0 * 16 * 128 / 130 / 8);
  EXPECT_DOUBLE_EQ(link_bytes_per_ns(Gen::kGen6, Width::kX16), 64.0 * 16 * 242 / 256 / 8);
  const double gts[] = {2.5, 5, 8, 16, 32, 64};
  for (int g = 1; g <= 6; ++g) {
    EXPECT_DOUBLE_EQ(lane_gtps(gen_from_number(g)), gts[g - 1]);
    for (int lanes : {1, 2, 4, 8, 16}) {
      EXPECT_GT(tlp_bytes_per_ns(gen_from_number(g), width_from_lanes(lanes)), 0.0);
    }
  }
  EXPECT_DOUBLE_EQ(encoding_efficiency(Gen::kGen2), 0.8);
  EXPECT_DOUBLE_EQ(encoding_efficiency(Gen::kGen3), 128.0 / 130.0);
  EXPECT_DOUBLE_EQ(encoding_efficiency(Gen::kGen6), 242.0 / 256.0);
}

TEST(LinkRates, IllegalGenerationAndWidth) {
  EXPECT_THROW(gen_from_number(0), std::invalid_argument);
  EXPECT_THROW(gen_from_number(7), std::invalid_argument);
  for (int lanes : {0, 3, 12, 32}) EXPECT_THROW(width_from_lanes(lanes), std::invalid_argument);
  EXPECT_THROW(link_bytes_per_ns(static_cast<Gen>(7), Width::kX4), std::invalid_argument);
  EXPECT_THROW(link_bytes_per_ns(Gen::kGen4, static_cast<Width>(3)), std::invalid_argument);
  EXPECT_THROW(serialization_ps(static_cast<Gen>(0), Width::kX4, 100), std::invalid_argument);
  EXPECT_THROW(effective_read_gbps(Gen::kGen4, static_cast<Width>(32), TlpRules{}, 4096),
               std::invalid_argument);
  EXPECT_THROW(dllp_skp_overhead(Gen::kGen3, Width::kX8, 300), std::invalid_argument);
  try {
    validate_link(Gen::kGen4, static_cast<Width>(12));
    FAIL() << "x12 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("width x12"), std::string::npos) << e.what();
  }
}

// serialization_ps_at rounds the byte time to the nearest picosecond, halves
// up, as std::llround (the oracle here) does: exact halves (2,000 bytes/ns is
// 2 bytes/ps, so odd byte counts end on .5) and the rates of real links.
TEST(Serialization, RoundsToTheNearestPicosecondAsLlround) {
  for (const double rate : {2000.0, 4000.0 / 3.0, 7.877, 15.754, 31.508, 63.015, 3.9385}) {
    for (uint64_t wire = 0; wire <= 5000; ++wire) {
      const double quotient = static_cast<double>(wire) / (rate / 1000.0);
      ASSERT_EQ(serialization_ps_at(rate, wire), static_cast<uint64_t>(std::llround(quotient)))
          << wire << " B at " << rate << " B/ns";
    }
  }
  EXPECT_EQ(serialization_ps_at(2000.0, 1), 1u);  // 0.5 ps
  EXPECT_EQ(serialization_ps_at(2000.0, 3), 2u);  // 1.5 ps
}

TEST(Serialization, ChargesTlpBandwidthIncludingDllpAndSkp) {
  // Independent: wire bytes * 8 bits / TLP Gb/s, in ps.
  const OracleLink& gen4x4 = kOracleLinks[1];
  const uint64_t wire = 4096 + 16 * 24;  // one 4 KB write at MPS 256, 64-bit
  const double expected_ps = wire * 8.0 / oracle_tlp_gbps(gen4x4, 256) * 1000.0;
  EXPECT_NEAR(static_cast<double>(serialization_ps(Gen::kGen4, Width::kX4, wire)), expected_ps,
              0.5);
  EXPECT_EQ(serialization_ps(Gen::kGen4, Width::kX4, 0), 0u);
  // Splitting a transfer changes the total by rounding only.
  const uint64_t a = 1234, b = 98765;
  const int64_t whole = static_cast<int64_t>(serialization_ps(Gen::kGen5, Width::kX16, a + b));
  const int64_t parts = static_cast<int64_t>(serialization_ps(Gen::kGen5, Width::kX16, a) +
                                             serialization_ps(Gen::kGen5, Width::kX16, b));
  EXPECT_LE(std::abs(whole - parts), 1);
  // Larger MPS means fewer DLLPs (pcie.py tables), so less time per byte.
  EXPECT_LT(serialization_ps(Gen::kGen3, Width::kX4, 1 << 20, 4096),
            serialization_ps(Gen::kGen3, Width::kX4, 1 << 20, 128));
}

// ---------------------------------------------------------------------------------------------
// TLP rules and header sizes.

TEST(TlpRulesTest, IllegalRulesAreRejected) {
  auto with = [](auto mutate) {
    TlpRules r;
    mutate(r);
    return r;
  };
  const TlpRules bad[] = {
      with([](TlpRules& r) { r.mps = 64; }),
      with([](TlpRules& r) { r.mps = 384; }),
      with([](TlpRules& r) { r.mps = 8192; }),
      with([](TlpRules& r) { r.mps = 0; }),
      with([](TlpRules& r) { r.mrrs = 513; }),
      with([](TlpRules& r) { r.mrrs = 8192; }),
      with([](TlpRules& r) { r.rcb = 32; }),
      with([](TlpRules& r) { r.rcb = 256; }),
      with([](TlpRules& r) { r.fixed_tlp_overhead = 65; }),
  };
  for (const TlpRules& r : bad) {
    EXPECT_THROW(validate(r), std::invalid_argument);
    EXPECT_THROW(memory_write(r, 0, 64), std::invalid_argument);
    EXPECT_THROW(memory_read(r, 0, 64), std::invalid_argument);
    EXPECT_THROW(credits_for_write(r, 0, 64), std::invalid_argument);
    EXPECT_THROW(credits_for_read(r, 0, 64), std::invalid_argument);
  }
  try {
    validate(with([](TlpRules& r) { r.mrrs = 513; }));
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("MRRS 513"), std::string::npos) << e.what();
  }
  for (uint32_t v = 128; v <= 4096; v *= 2) {
    EXPECT_NO_THROW(validate(with([v](TlpRules& r) {
      r.mps = v;
      r.mrrs = v;
    })));
  }
  EXPECT_NO_THROW(validate(with([](TlpRules& r) {
    r.rcb = 128;
    r.fixed_tlp_overhead = 0;
  })));
}

TEST(TlpRulesTest, RangeGuards) {
  const TlpRules r;
  EXPECT_THROW(memory_write(r, UINT64_MAX - 10, 100), std::invalid_argument);
  EXPECT_THROW(memory_read(r, 0, (uint64_t{1} << 48) + 1), std::invalid_argument);
  // A transfer ending on the very last byte of the address space is fine.
  const WireCost w = memory_write(r, UINT64_MAX - 99, 100);
  EXPECT_EQ(w.tlps, 1u);
  EXPECT_EQ(w.wire_bytes, 24u + 100u);
  EXPECT_EQ(memory_write(r, UINT64_MAX - 4, 5).wire_bytes, 24u + 8u);  // 3 B + 1 DW
  EXPECT_NO_THROW(memory_read(r, UINT64_MAX - 4095, 4096));
}

TEST(TlpRulesTest, HeaderAndLinkOverheads) {
  TlpRules r;
  r.addr64 = true;
  EXPECT_EQ(memory_write(r, 0, 64), (WireCost{1, 64, 16 + 8 + 64}));
  EXPECT_EQ(memory_read(r, 0, 64).requests, (WireCost{1, 0, 16 + 8}));
  EXPECT_EQ(memory_read(r, 0, 64).completions, (WireCost{1, 64, 12 + 8 + 64}));
  r.addr64 = false;
  EXPECT_EQ(memory_write(r, 0, 64).wire_bytes, 12u + 8 + 64);
  EXPECT_EQ(memory_read(r, 0, 64).requests.wire_bytes, 12u + 8);
  r.ecrc = true;
  EXPECT_EQ(memory_write(r, 0, 64).wire_bytes, 12u + 8 + 4 + 64);
  EXPECT_EQ(memory_read(r, 0, 64).completions.wire_bytes, 12u + 8 + 4 + 64);
  r.fixed_tlp_overhead = 24;  // replaces header, link overhead and ECRC alike
  EXPECT_EQ(memory_write(r, 0, 64).wire_bytes, 24u + 64);
  EXPECT_EQ(memory_read(r, 0, 64).requests.wire_bytes, 24u);
  EXPECT_EQ(memory_read(r, 0, 64).completions.wire_bytes, 24u + 64);
}

// ---------------------------------------------------------------------------------------------
// Splitting, checked against a byte-walking oracle.

struct Piece {
  uint64_t begin, end;
};

uint64_t dw_padded(const Piece& p) { return ((p.end + 3) / 4) * 4 - (p.begin / 4) * 4; }

// Writes: each TLP runs to the next MPS-aligned address or the end.
std::vector<Piece> walk_write(uint64_t addr, uint64_t len, uint64_t mps) {
  std::vector<Piece> out;
  for (uint64_t cur = addr; cur < addr + len;) {
    const uint64_t next = std::min(addr + len, (cur / mps + 1) * mps);
    out.push_back({cur, next});
    cur = next;
  }
  return out;
}

// Completions of one request: each runs to the furthest RCB multiple within cur + MPS (or just
// the next RCB multiple with rcb_chunks), or the end of the request.
std::vector<Piece> walk_completions(const Piece& req, const TlpRules& r) {
  std::vector<Piece> out;
  for (uint64_t cur = req.begin; cur < req.end;) {
    const uint64_t boundary =
        r.rcb_chunks ? (cur / r.rcb + 1) * r.rcb : ((cur + r.mps) / r.rcb) * r.rcb;
    const uint64_t next = std::min(req.end, boundary);
    out.push_back({cur, next});
    cur = next;
  }
  return out;
}

struct Walked {
  WireCost requests, completions;
  Credits np, cpl;
};

Walked walk_read(const TlpRules& r, uint64_t addr, uint64_t len) {
  Walked w;
  for (const Piece& req : walk_write(addr, len, r.mrrs)) {
    EXPECT_LE(req.end - req.begin, r.mrrs);
    EXPECT_EQ(req.begin / 4096, (req.end - 1) / 4096) << "request crosses 4 KB";
    ++w.requests.tlps;
    w.requests.wire_bytes += request_tlp_overhead(r);
    ++w.np.header;
    for (const Piece& c : walk_completions(req, r)) {
      EXPECT_LE(c.end - c.begin, r.rcb_chunks ? r.rcb : r.mps);
      if (c.end != req.end) {
        EXPECT_EQ(c.end % r.rcb, 0u) << "split off an RCB boundary";
      }
      ++w.completions.tlps;
      w.completions.payload_bytes += c.end - c.begin;
      w.completions.wire_bytes += completion_tlp_overhead(r) + dw_padded(c);
      ++w.cpl.header;
      w.cpl.data += (dw_padded(c) + 15) / 16;
    }
  }
  return w;
}

TEST(Splitting, MatchesByteWalkerOnPseudoRandomTransfers) {
  uint64_t state = 0x9E3779B97F4A7C15ull;  // fixed seed: the test is deterministic
  auto next = [&state]() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 17;
  };
  for (int i = 0; i < 20000; ++i) {
    TlpRules r;
    r.mps = 128u << (next() % 6);
    r.mrrs = 128u << (next() % 6);
    r.rcb = next() % 2 ? 64 : 128;
    r.rcb_chunks = next() % 4 == 0;
    r.addr64 = next() % 2;
    r.ecrc = next() % 3 == 0;
    const uint64_t addr = (next() % 4 == 0 ? (uint64_t{1} << 40) : 0) + next() % 65536;
    const uint64_t len = 1 + next() % (next() % 2 ? 300 : 20000);
    SCOPED_TRACE("mps=" + std::to_string(r.mps) + " mrrs=" + std::to_string(r.mrrs) +
                 " rcb=" + std::to_string(r.rcb) + " addr=" + std::to_string(addr) +
                 " len=" + std::to_string(len));

    WireCost ww{0, len, 0};
    Credits wc;
    for (const Piece& p : walk_write(addr, len, r.mps)) {
      EXPECT_EQ(p.begin / 4096, (p.end - 1) / 4096) << "write crosses 4 KB";
      ++ww.tlps;
      ww.wire_bytes += request_tlp_overhead(r) + dw_padded(p);
      ++wc.header;
      wc.data += (dw_padded(p) + 15) / 16;
    }
    ASSERT_EQ(memory_write(r, addr, len), ww);
    ASSERT_EQ(credits_for_write(r, addr, len), wc);

    const Walked w = walk_read(r, addr, len);
    const ReadCost rc = memory_read(r, addr, len);
    ASSERT_EQ(rc.requests, w.requests);
    ASSERT_EQ(rc.completions, w.completions);
    const ReadCredits cr = credits_for_read(r, addr, len);
    ASSERT_EQ(cr.non_posted, w.np);
    ASSERT_EQ(cr.completion, w.cpl);
  }
}

TEST(Splitting, UnalignedAddresses) {
  TlpRules r;  // MPS 256, MRRS 512, RCB 64, 64-bit
  // 256 B straddling an MPS boundary needs two TLPs; pcie-bench's ceil(256 / 256) = 1 assumes
  // alignment.
  EXPECT_EQ(memory_write(r, 0x80, 256), (WireCost{2, 256, 2 * 24 + 256}));
  // A 4 B doorbell at a non-DW address spans two DWs.
  EXPECT_EQ(memory_write(r, 0x1003, 4), (WireCost{1, 4, 24 + 8}));
  EXPECT_EQ(credits_for_write(r, 2, 100), (Credits{1, 7}));  // 104 B of DWs -> 7 credits
  // Read of 256 B at 0x20: first completion runs to the RCB multiple within MPS (224 B), then 32.
  EXPECT_EQ(memory_read(r, 0x20, 256).completions, (WireCost{2, 256, 2 * 20 + 256}));
  r.rcb = 128;
  EXPECT_EQ(memory_read(r, 0x20, 256).completions.tlps, 2u);
  r.rcb = 64;
  r.rcb_chunks = true;  // 0x20-0x40, then four 64 B blocks to 0x120
  EXPECT_EQ(memory_read(r, 0x20, 256).completions.tlps, 5u);
  r.rcb_chunks = false;
  // 4 KB at 0x100 with MRRS 512: 9 requests; completions 1 + 7 x 2 + 1.
  const ReadCost rc = memory_read(r, 0x100, 4096);
  EXPECT_EQ(rc.requests, (WireCost{9, 0, 9 * 24}));
  EXPECT_EQ(rc.completions.tlps, 16u);
  EXPECT_EQ(credits_for_read(r, 0x100, 4096).completion, (Credits{16, 256}));
}

TEST(Splitting, FourKilobyteBoundaries) {
  TlpRules r;
  r.mps = 4096;
  r.mrrs = 4096;
  EXPECT_EQ(memory_write(r, 0x800, 4096), (WireCost{2, 4096, 2 * 24 + 4096}));
  EXPECT_EQ(memory_write(r, 0x1000, 4096).tlps, 1u);
  const ReadCost rc = memory_read(r, 0x800, 4096);
  EXPECT_EQ(rc.requests.tlps, 2u);
  EXPECT_EQ(rc.completions.tlps, 2u);
  r.mps = 512;
  EXPECT_EQ(memory_write(r, 0xFF0, 300).tlps, 2u);  // 16 B, then 284 B after 0x1000
  EXPECT_EQ(memory_write(r, 0xFF0, 300).wire_bytes, 2u * 24 + 300);
}

TEST(Splitting, CompletionsNeverExceedTheirRequest) {
  // MPS above MRRS: each 512 B request is answered by one completion. pcie-bench's
  // ceil(size / MPS) would count 4 for 4 KB; real completions cannot merge requests.
  TlpRules r;
  r.mps = 1024;
  r.mrrs = 512;
  const ReadCost rc = memory_read(r, 0, 4096);
  EXPECT_EQ(rc.requests.tlps, 8u);
  EXPECT_EQ(rc.completions.tlps, 8u);
}

TEST(Splitting, ZeroLengthTransfers) {
  const TlpRules r;
  // One TLP with a 1 DW payload and no byte enabled.
  EXPECT_EQ(memory_write(r, 0x1000, 0), (WireCost{1, 0, 24 + 4}));
  EXPECT_EQ(credits_for_write(r, 0x1000, 0), (Credits{1, 1}));
  const ReadCost rc = memory_read(r, 0x1000, 0);
  EXPECT_EQ(rc.requests, (WireCost{1, 0, 24}));
  EXPECT_EQ(rc.completions, (WireCost{1, 0, 20 + 4}));
  const ReadCredits cr = credits_for_read(r, 0x1000, 0);
  EXPECT_EQ(cr.non_posted, (Credits{1, 0}));
  EXPECT_EQ(cr.completion, (Credits{1, 1}));
}

TEST(Credits, WholeTlps) {
  const TlpRules r;
  EXPECT_EQ(credits_for_write(r, 0, 256), (Credits{1, 16}));
  EXPECT_EQ(credits_for_write(r, 0, 4096), (Credits{16, 256}));
  EXPECT_EQ(credits_for_write(r, 0, 17), (Credits{1, 2}));
  const ReadCredits cr = credits_for_read(r, 0, 4096);
  EXPECT_EQ(cr.non_posted, (Credits{8, 0}));
  EXPECT_EQ(cr.completion, (Credits{16, 256}));
}

// ---------------------------------------------------------------------------------------------
// Seed 003, "PCIe Overhead per 4KB Read": fixed 24 B per TLP, data in 2 TLPs (MPS 2048). The
// read request TLP of the SQE fetch is not counted there, so only its completion is added.

struct CommandBytes {
  uint64_t payload, wire;
};

CommandBytes nvme_read_command(const TlpRules& r, uint64_t data_addr, uint64_t data_len) {
  const WireCost parts[] = {
      memory_write(r, 0x10001000, 4),               // SQ tail doorbell, GPU -> SSD BAR
      memory_read(r, 0x7f0000040, 64).completions,  // SQE fetch, returned to the SSD
      memory_write(r, data_addr, data_len),         // data, SSD -> GPU memory
      memory_write(r, 0x7f1000030, 16),             // CQE, SSD -> GPU memory
      memory_write(r, 0x10001004, 4),               // CQ head doorbell, GPU -> SSD BAR
  };
  CommandBytes total{0, 0};
  for (const WireCost& w : parts) {
    total.payload += w.payload_bytes;
    total.wire += w.wire_bytes;
  }
  return total;
}

TEST(Seed003, FourKilobyteReadCommand) {
  TlpRules r;
  r.mps = 2048;
  r.fixed_tlp_overhead = 24;
  EXPECT_EQ(memory_write(r, 0x200000000, 4096), (WireCost{2, 4096, 4144}));
  const CommandBytes c = nvme_read_command(r, 0x200000000, 4096);
  EXPECT_EQ(c.payload, 4184u);
  EXPECT_EQ(c.wire, 4328u);
  EXPECT_NEAR(100.0 * 4096 / c.wire, 94.6, 0.05);
}

TEST(Seed003, FiveHundredTwelveByteReadCommand) {
  TlpRules r;
  r.fixed_tlp_overhead = 24;
  // The seed's 744 B (68.8 %) keeps the 4 KB row's 144 B of overhead, i.e. the 512 B of data in
  // two TLPs. That holds with MPS 256, or with MPS 2048 when the buffer straddles a 2 KB boundary.
  r.mps = 256;
  EXPECT_EQ(nvme_read_command(r, 0x200000000, 512).wire, 744u);
  EXPECT_NEAR(100.0 * 512 / 744, 68.8, 0.05);
  r.mps = 2048;
  EXPECT_EQ(nvme_read_command(r, 0x200000700, 512).wire, 744u);
  // An aligned 512 B buffer at MPS 2048 is one TLP: 720 B, 71.1 %.
  EXPECT_EQ(nvme_read_command(r, 0x200000000, 512).wire, 720u);
}

// ---------------------------------------------------------------------------------------------
// Effective bandwidth figures the fabric model relies on.

TEST(EffectiveBandwidth, ReadsAreCompletionLimitedAndBelowWrites) {
  const TlpRules r;  // MPS 256, MRRS 512, 64-bit
  for (uint64_t size : {64u, 256u, 1024u, 4096u}) {
    const double wr = effective_write_gbps(Gen::kGen4, Width::kX4, r, size);
    const double rd = effective_read_gbps(Gen::kGen4, Width::kX4, r, size);
    EXPECT_GT(rd, wr) << "CplD headers (12 B) are smaller than 64-bit MWr headers (16 B)";
    EXPECT_LT(rd, tlp_bytes_per_ns(Gen::kGen4, Width::kX4) * 8.0);
  }
  // With fixed per-TLP cost the request and completion directions weigh the same per TLP, and a
  // 64 B read moves more wire bytes back than forward.
  TlpRules f;
  f.fixed_tlp_overhead = 24;
  const ReadCost rc = memory_read(f, 0, 64);
  EXPECT_GT(rc.completions.wire_bytes, rc.requests.wire_bytes);
}

// ---------------------------------------------------------------------------------------------
// The spec's reading of the ACK / UpdateFC intervals: symbol times, one byte per lane each
// (PCIe Base Spec r5.0 §4.2), so the DLLP share is 16 / (interval x lanes).

TEST(DllpIntervals, SymbolTimesScaleTheIntervalsByTheLaneCount) {
  for (const OracleLink& link : kOracleLinks) {
    for (int mps : {128, 256, 512}) {
      const int s = mps_slot(mps);
      const double expected =
          8.0 / (link.ack[s] * link.lanes) + 8.0 / (link.fc[s] * link.lanes) + 4.0 / 1538.0;
      EXPECT_NEAR(dllp_skp_overhead(link.gen, link.width, mps, DllpIntervals::kSymbolTimes),
                  expected, 1e-15)
          << link.name << " mps " << mps;
    }
  }
  // On x1 both readings agree; on x16 at 8 GT/s and MPS 256 pcie-bench's is 9.8 %, the spec's
  // 0.86 %.
  EXPECT_DOUBLE_EQ(dllp_skp_overhead(Gen::kGen3, Width::kX1, 256, DllpIntervals::kSymbolTimes),
                   dllp_skp_overhead(Gen::kGen3, Width::kX1, 256, DllpIntervals::kPcieBench));
  EXPECT_NEAR(dllp_skp_overhead(Gen::kGen5, Width::kX16, 256), 0.0978, 0.0005);
  EXPECT_NEAR(dllp_skp_overhead(Gen::kGen5, Width::kX16, 256, DllpIntervals::kSymbolTimes), 0.0086,
              0.0005);
  // Flit mode (Gen6) carries DLLPs in the 6 DLP bytes of each flit: TLPs get 236 of the 256
  // flit bytes, less SKPs; per-TLP link bytes are dropped (PCIe Base Spec r6.0 §4.2.3.1).
  EXPECT_NEAR(tlp_bytes_per_ns(Gen::kGen6, Width::kX16, 256, DllpIntervals::kSymbolTimes),
              64.0 * 16 / 8 * 236.0 / 256.0 * (1.0 - 4.0 / 1538.0), 1e-9);
  EXPECT_TRUE(flit_mode(Gen::kGen6, DllpIntervals::kSymbolTimes));
  EXPECT_FALSE(flit_mode(Gen::kGen6, DllpIntervals::kPcieBench));
  EXPECT_FALSE(flit_mode(Gen::kGen5, DllpIntervals::kSymbolTimes));
  TlpRules rules;  // MPS 256, 64-bit: 16 MWr of 256 + 16 + 8 B for 4 KB
  const WireCost w = memory_write(rules, 0, 4096);
  EXPECT_EQ(link_wire_bytes(Gen::kGen6, DllpIntervals::kSymbolTimes, w, rules), 16u * 272);
  EXPECT_EQ(link_wire_bytes(Gen::kGen5, DllpIntervals::kSymbolTimes, w, rules), 16u * 280);
  // Serialization follows the chosen reading.
  EXPECT_LT(serialization_ps(Gen::kGen5, Width::kX16, 1 << 20, 256, DllpIntervals::kSymbolTimes),
            serialization_ps(Gen::kGen5, Width::kX16, 1 << 20, 256, DllpIntervals::kPcieBench));
}

TEST(DllpIntervals, SpecReadingIsTheCloserPredictionOfTheMeasuredH200Copies) {
  // Pinned cudaMemcpy on the lent H200 (Gen5 x16), 256 MiB: H2D 55.11 GB/s (reads: the copy
  // engine reads host memory, 256 B completions), D2H 55.25 GB/s (posted 256 B writes,
  // configs/measurements/gpu-microbench-h200-2026-11-22.json). Mean absolute error of each
  // reading over both.
  const TlpRules rules;  // MPS 256, MRRS 512, 64-bit
  auto error = [&](DllpIntervals intervals) {
    const double tlp = tlp_bytes_per_ns(Gen::kGen5, Width::kX16, 256, intervals);
    const double h2d = tlp * 4096.0 / memory_read(rules, 0, 4096).completions.wire_bytes;
    const double d2h = tlp * 4096.0 / memory_write(rules, 0, 4096).wire_bytes;
    return (std::fabs(h2d / 55.11 - 1) + std::fabs(d2h / 55.25 - 1)) / 2;
  };
  EXPECT_LT(error(DllpIntervals::kSymbolTimes), error(DllpIntervals::kPcieBench));
  EXPECT_LT(error(DllpIntervals::kSymbolTimes), 0.05);
}

}  // namespace
}  // namespace gpunvme::pcie
