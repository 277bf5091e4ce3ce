// Flow control: the credit pool on its own, credit exhaustion throttling a flow to the closed
// form credits x bytes / credit loop, back-pressure from a slow egress stalling a shared ingress
// (head-of-line), and read tags limiting a requester to tags x bytes / round trip.
#include "models/pcie/flow_control.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/pcie/fabric_bench.h"

namespace gpunvme::pcie::testing {
namespace {

TEST(CreditPool, FreeCreditsAndKnownReleases) {
  CreditPool pool({4, 64});
  EXPECT_FALSE(pool.infinite());
  EXPECT_EQ(pool.clamp({10, 10}), (Credits{4, 10}));  // a burst larger than the buffer streams
  EXPECT_EQ(pool.earliest({2, 32}, 100), 100u);
  pool.take({2, 32});
  pool.take({2, 16});
  EXPECT_EQ(pool.free_at(100), (Credits{0, 16}));
  // Both bursts still in the buffer with unknown release: nobody can say when room comes back.
  EXPECT_FALSE(pool.earliest({1, 1}, 100).has_value());
  pool.release_at({2, 16}, 500);
  EXPECT_EQ(pool.earliest({1, 1}, 100), 500u);
  EXPECT_EQ(pool.earliest({2, 32}, 100), 500u);
  EXPECT_EQ(pool.earliest({3, 17}, 100), std::nullopt);  // needs the other burst's room too
  pool.release_at({2, 32}, 300);
  EXPECT_EQ(pool.earliest({2, 17}, 100), 300u);
  EXPECT_EQ(pool.earliest({3, 17}, 100), 500u);
  EXPECT_EQ(pool.earliest({3, 17}, 600), 600u);
  EXPECT_EQ(pool.free_at(600), (Credits{4, 64}));
  EXPECT_THROW(pool.release_at({1, 0}, 700), std::logic_error);  // never taken
}

TEST(CreditPool, ZeroMeansInfinite) {
  CreditPool infinite({0, 0});
  EXPECT_TRUE(infinite.infinite());
  EXPECT_EQ(infinite.clamp({1000, 100000}), (Credits{0, 0}));
  EXPECT_EQ(infinite.earliest(infinite.clamp({1000, 100000}), 7), 7u);
  CreditPool headers_only({2, 0});  // finite headers, infinite data
  headers_only.take(headers_only.clamp({2, 5000}));
  EXPECT_FALSE(headers_only.earliest(headers_only.clamp({1, 5000}), 0).has_value());
}

// ssd0 and gpu0 behind sw0, both Gen5 x16, and gpu1 behind a Gen1 x1 link; the ssd0 link is
// long (500 ns each way by default) so the credit loop, not the wire, sets the pace of ssd0's
// writes.
std::string long_link(const std::string& sw0, int ssd_latency_ns = 500) {
  return R"({"name": "credits", "nodes": [
      {"id": "cpu0", "kind": "cpu"},
      {"id": "rc0", "kind": "root_complex", "socket": "cpu0"},
      {"id": "sw0", "kind": "switch")" +
         sw0 + R"(},
      {"id": "gpu0", "kind": "gpu"}, {"id": "gpu1", "kind": "gpu"},
      {"id": "ssd0", "kind": "nvme_ssd"}],
    "links": [
      {"from": "rc0", "to": "sw0", "gen": 5, "width": 16},
      {"from": "sw0", "to": "gpu0", "gen": 5, "width": 16},
      {"from": "sw0", "to": "gpu1", "gen": 1, "width": 1},
      {"from": "sw0", "to": "ssd0", "gen": 5, "width": 16, "latency_ns": )" +
         std::to_string(ssd_latency_ns) + "}]}";
}

std::vector<Picoseconds> write_stream(Bench& b, int count, std::uint32_t bytes) {
  std::vector<Picoseconds> done;
  b.at(0, [&b, &done, count, bytes] {
    for (int i = 0; i < count; ++i) {
      b.fabric.write(b.node("ssd0"), b.base["gpu0"] + 4096ull * i, bytes, nullptr,
                     [&done] { done.push_back(Simulation::now()); });
    }
  });
  b.run();
  return done;
}

TEST(Credits, ExhaustionThrottlesAFlowToCreditsOverTheCreditLoop) {
  // 256 B writes, one TLP each (280 B on the wire). A TLP's posted credits at sw0's port to ssd0
  // come back when it has left on the link to gpu0, plus the UpdateFC flight back to ssd0.
  const double s = ps_for(280, tlp_bytes_per_ns(32, 16));
  // Loop: on the ssd0 link, 500 ns flight, 115 ns switch, on the gpu0 link, 500 ns back.
  const double loop = s + 500e3 + 115e3 + s + 500e3;
  for (const std::string& buffer :
       {std::string(R"(, "posted_header_credits": 1)"),
        std::string(R"(, "posted_header_credits": 2)"),
        std::string(R"(, "posted_header_credits": 4)"),
        std::string(R"(, "posted_data_credits": 32)")}) {  // 2 x 256 B of data
    SCOPED_TRACE(buffer);
    Bench b(long_link(buffer));
    const std::vector<Picoseconds> done = write_stream(b, 60, 256);
    const int credits = buffer.find("data") != std::string::npos ? 2 : buffer.back() - '0';
    // Every TLP can start only when the TLP `credits` ahead of it has returned its credits.
    for (std::size_t i = 10; i + credits < done.size(); ++i) {
      EXPECT_NEAR(static_cast<double>(done[i + credits] - done[i]), loop, 3.0) << i;
    }
    // The wait shows as credit stall on the link that waited.
    const Picoseconds stalled = b.fabric.credit_stall_ps("ssd0->sw0");
    if (credits == 1) {
      EXPECT_NEAR(static_cast<double>(stalled), 59 * (loop - s), 60 * 3.0);
    }
    EXPECT_GT(stalled, 0u);
    // One stall per group of `credits` TLPs: the rest of the group follows the first on the
    // busy link.
    EXPECT_EQ(b.link("ssd0->sw0", Simulation::now())["by_class"]["posted_write"]["credit_stalls"],
              (60 - credits) / credits);
  }
  // With the default buffers the same stream runs at the wire's pace.
  Bench b(long_link(""));
  const std::vector<Picoseconds> done = write_stream(b, 60, 256);
  EXPECT_NEAR(static_cast<double>(done[30] - done[29]), s, 3.0);
  EXPECT_EQ(b.fabric.credit_stall_ps("ssd0->sw0"), 0u);
}

TEST(Credits, SlowEgressFillsTheBufferAndStallsTheSharedIngress) {
  // ssd0 writes 24 bursts of 4 KB to gpu1 behind a Gen1 x1 link (~18 us each), then 24 to gpu0
  // behind a Gen5 x16 link. PCIe credits are per link and class, not per egress: once the slow
  // bursts fill sw0's posted buffer, the fast ones wait behind them on the ssd0 link.
  auto run = [](const std::string& sw0) {
    Bench b(long_link(sw0, 30));
    Picoseconds fast_done = 0;
    b.at(0, [&] {
      for (int i = 0; i < 24; ++i) {
        b.fabric.write(b.node("ssd0"), b.base["gpu1"] + 4096ull * i, 4096, nullptr, nullptr);
      }
      for (int i = 0; i < 24; ++i) {
        b.fabric.write(b.node("ssd0"), b.base["gpu0"] + 4096ull * i, 4096, nullptr,
                       [&] { fast_done = Simulation::now(); });
      }
    });
    b.run();
    return std::pair{fast_done, b.fabric.credit_stall_ps("ssd0->sw0")};
  };
  // Gen1 x1: 2.5 GT/s x 8b/10b; one 4 KB burst is 16 x 280 B on the wire.
  // Its ACK / UpdateFC interval at 2.5 GT/s, x1, MPS 256 is 416 symbol times (r5.0 Table 3-7).
  const double slow_burst = ps_for(16 * 280, 2.5 * 0.8 / 8 * (1 - 16.0 / 416 - 4.0 / 1538));
  const auto [infinite_done, infinite_stall] = run(R"(, "posted_header_credits": 0,
      "posted_data_credits": 0)");
  EXPECT_EQ(infinite_stall, 0u);
  EXPECT_LT(static_cast<double>(infinite_done), 2 * slow_burst);  // passes the slow traffic
  // A buffer of 4 bursts (1024 data credits): the fast bursts enter only once the slow queue has
  // drained to 3 bursts, i.e. after 21 slow bursts have left.
  const auto [finite_done, finite_stall] = run(R"(, "posted_data_credits": 1024)");
  EXPECT_GT(static_cast<double>(finite_done), 20 * slow_burst);
  EXPECT_LT(static_cast<double>(finite_done), 22 * slow_burst);
  EXPECT_GT(finite_stall, 0u);
}

TEST(Tags, ReadTagsLimitARequesterToTagsTimesBytesPerRoundTrip) {
  const std::string machine = R"({"name": "tags", "read_tags": TAGS, "nodes": [
      {"id": "cpu0", "kind": "cpu"},
      {"id": "rc0", "kind": "root_complex", "socket": "cpu0"},
      {"id": "sw0", "kind": "switch"},
      {"id": "gpu0", "kind": "gpu"}, {"id": "ssd0", "kind": "nvme_ssd"}],
    "links": [
      {"from": "rc0", "to": "sw0", "gen": 5, "width": 16},
      {"from": "sw0", "to": "gpu0", "gen": 5, "width": 16},
      {"from": "sw0", "to": "ssd0", "gen": 5, "width": 4}]})";
  // One 512 B read: one MRd (24 B), two CplDs (2 x (20 + 256) B); unloaded round trip through
  // the switch, as the sum of its hops (cut-through: the completions' head leaves the first
  // link after one CplD, their tail follows the slower x4 link).
  const double x4 = tlp_bytes_per_ns(32, 4), x16 = tlp_bytes_per_ns(32, 16);
  const double request = ps_for(24, x4) + 30e3 + 115e3 + ps_for(24, x16) + 30e3;
  const double completion = ps_for(552, x16) / 2 + 30e3 + 115e3 + ps_for(552, x4) + 30e3;
  const double round_trip = request + 250e3 + completion;
  for (int tags : {1, 2, 3}) {
    std::string json = machine;
    json.replace(json.find("TAGS"), 4, std::to_string(tags));
    Bench b(json);
    std::vector<Picoseconds> done;
    b.at(0, [&] {
      for (int i = 0; i < 30; ++i) {
        b.fabric.read(b.node("ssd0"), b.base["gpu0"] + 512ull * i, 512,
                      [&](auto, auto) { done.push_back(Simulation::now()); });
      }
    });
    b.run();
    for (std::size_t i = 0; i + tags < done.size(); ++i) {
      EXPECT_NEAR(static_cast<double>(done[i + tags] - done[i]), round_trip, 3.0) << tags;
    }
    const nlohmann::json report = b.fabric.report(Simulation::now())["read_tags"][0];
    EXPECT_EQ(report["requester"], "ssd0");
    EXPECT_EQ(report["waits"], 30 - tags);
    EXPECT_GT(report["wait_ns"].get<double>(), 0.0);
  }
}

}  // namespace
}  // namespace gpunvme::pcie::testing
