// The fabric's memo of stage costs (Fabric::set_stage_cost_memo) against the fabric computing
// every stage's cost afresh at each use: randomized streams of posted writes and reads of many
// sizes, between GPUs, SSDs, host and CXL memory, on shipped topologies (one switch, four SSDs,
// two sockets, IOMMU translation, CXL), on a switch with round-robin egress arbitration and on
// one whose small buffers pace bursts by credits. Each transfer's delivery time and the
// fabric's whole report and paths must be the same byte for byte.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "tests/pcie/random_stream.h"

namespace gpunvme::pcie::testing {
namespace {

std::function<void(Fabric&)> with_memo(bool on) {
  return [on](Fabric& f) { f.set_stage_cost_memo(on); };
}

void expect_memo_matches_recomputation(const nlohmann::json& topology, const std::string& label) {
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    const std::vector<StreamOp> ops = random_stream(topology, seed, 300);
    const StreamRun memoized = run_stream(topology, ops, with_memo(true));
    const StreamRun recomputed = run_stream(topology, ops, with_memo(false));
    EXPECT_EQ(memoized.deliveries.find("never"), std::string::npos) << label;
    EXPECT_EQ(memoized.text(), recomputed.text()) << label << ", seed " << seed;
  }
}

TEST(StageCostMemo, SameResultsAsRecomputingOnShippedTopologies) {
  for (const char* name : kStreamTopologies) {
    expect_memo_matches_recomputation(shipped_topology(name), name);
  }
}

TEST(StageCostMemo, SameResultsWithRoundRobinEgressAndCreditPacing) {
  expect_memo_matches_recomputation(round_robin_small_buffers(),
                                    "four-gen4-ssds, round robin, small buffers");
}

// The streams are not idle: bursts share links, wait for credits and are paced by them, so a
// memo that handed a burst another burst's cost would show in the comparisons above.
TEST(StageCostMemo, StreamsLoadTheFabric) {
  const nlohmann::json topology = shipped_topology("four-gen4-ssds");
  const StreamRun run = run_stream(topology, random_stream(topology, 1, 300), with_memo(true));
  EXPECT_GT(run.report.at("posted_write_tlps").get<std::uint64_t>(), 1000u);
  EXPECT_GT(run.report.at("read_request_tlps").get<std::uint64_t>(), 100u);
  EXPECT_GT(run.report.at("credit_stall_ns").get<double>(), 0.0);
}

}  // namespace
}  // namespace gpunvme::pcie::testing
