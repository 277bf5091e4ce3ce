// The kv_cache trace files: an attention-sparsity trace read by the sparse
// policy and a session trace replayed by the reuse policy, against bytes,
// hits and times worked by hand.
#include "sim/system/workload/kv_traces.h"

#include <gtest/gtest.h>

#include <fstream>

#include "sim/system/workload/kv_cache.h"
#include "workload_test_util.h"

namespace gpunvme {
namespace {

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/gpunvme-" + name;
  std::ofstream(path) << text;
  return path;
}

// As kv_policies_test's trace_tiers(): 4 layers, 512 B per token and layer,
// 16-token blocks, 2 sequences of 1000 tokens, 2 steps; interleaved, so
// every layer has 32 DRAM and 62 NVMe blocks (of both sequences).
std::vector<std::string> trace_tiers(std::vector<std::string> more) {
  std::vector<std::string> o{"scenario.layers=4",
                             "scenario.kv_heads=2",
                             "scenario.head_dim=64",
                             "scenario.block_tokens=16",
                             "scenario.context_tokens=1000",
                             "scenario.batch=2",
                             "scenario.decode_steps=2",
                             "scenario.bs=8192",
                             "scenario.threads=256",
                             "scenario.layer_compute_us=1000",
                             "scenario.hbm_kv_gib=0.0009765625",
                             "scenario.host_kv_gib=0.0009765625",
                             "scenario.placement=interleave"};
  o.insert(o.end(), more.begin(), more.end());
  return o;
}

TEST(KvTraces, SparsityTraceSetsEachLayersFetch) {
  // One traced step, used by both decode steps. Layers select 16, 8, 4 and 2
  // of a block's 16 tokens and miss 0, 4 (half of 8), 1 (a quarter of 4,
  // rounded up) and 0: 35 tokens of 512 B per lower-tier block and step.
  const std::string trace = write_file("sparsity.csv",
                                       "# a comment, then the header\n"
                                       "step,layer,fraction,miss_rate\n"
                                       "0,3,0.125,0\n"
                                       "0,0,1,0\n"
                                       "0,1,0.5,0.5\n"
                                       "\n"
                                       "0,2,0.25,0.25\n");
  const nlohmann::json r = run(test::scenario(
      "kv-cache-gpu",
      trace_tiers({"scenario.policy=sparse", "scenario.sparse_trace=\"" + trace + "\""})));
  const nlohmann::json& kv = r["kv_cache"];
  for (const auto& step : kv["steps"]) {
    EXPECT_EQ(step["dram_to_hbm_bytes"].get<std::uint64_t>(), 32u * 35 * 512);
    EXPECT_EQ(step["nvme_to_hbm_bytes"].get<std::uint64_t>(), 62u * 35 * 512);
  }
  // Selected: 94 blocks x (16 + 8 + 4 + 2) tokens, missed 94 x 5, two steps.
  EXPECT_EQ(kv["sparse"]["selected_bytes"].get<std::uint64_t>(), 2u * 94 * 30 * 512);
  EXPECT_EQ(kv["sparse"]["missed_bytes"].get<std::uint64_t>(), 2u * 94 * 5 * 512);
  EXPECT_EQ(kv["sparse"]["trace_steps"].get<std::uint64_t>(), 1u);
  EXPECT_TRUE(kv["sparse"]["selected_tokens_per_block"].is_null());
}

TEST(KvTraces, SessionReplayHandWorked) {
  // 1 B per token, replies of 10 tokens; 200 B of DRAM, 420 B of NVMe.
  // Turns by arrival: a0 0 s, b0 1 s, c0 2 s, d0 3 s, d1 4 s, a1 10 s,
  // b1 21 s. Saved after each turn (context + turn + reply): a 130, b 360,
  // c 70, d 30. d1 finds d first in the store (30 B <= 200: DRAM), then d is
  // saved as 30 + 10 + 10 = 50. a1: newer d 50, c 70, b 360, then a 130:
  // ends at 610 B, past DRAM, within 620: NVMe. a is saved as 160. b1: newer
  // a 160, d 50, c 70, then b 360: 640 B, past 620: dropped, a miss.
  const std::vector<KvSession> sessions{{"a", 0, 2, 10, 100, 20},
                                        {"b", 1, 2, 20, 300, 50},
                                        {"c", 2, 1, 0, 50, 10},
                                        {"d", 3, 2, 1, 10, 10}};
  const std::vector<KvTurn> turns = replay_sessions(sessions, 1, 10, 200, 420);
  ASSERT_EQ(turns.size(), 7u);
  const std::size_t order[] = {0, 1, 2, 3, 3, 0, 1};
  const KvStoreHit hits[] = {KvStoreHit::first, KvStoreHit::first, KvStoreHit::first,
                             KvStoreHit::first, KvStoreHit::dram,  KvStoreHit::nvme,
                             KvStoreHit::miss};
  const std::uint64_t cached[] = {100, 300, 50, 10, 30, 130, 360};
  for (std::size_t i = 0; i < turns.size(); ++i) {
    EXPECT_EQ(turns[i].session, order[i]) << i;
    EXPECT_EQ(turns[i].hit, hits[i]) << i;
    EXPECT_EQ(turns[i].cached_tokens, cached[i]) << i;
  }
  EXPECT_DOUBLE_EQ(turns[6].arrival_s, 21.0);
}

TEST(KvTraces, SessionTraceTimesEachTurn) {
  // One session of 2 turns: 1000 tokens of history (context_tokens, the
  // length whose reload is measured), 16-token turns, 2-token replies
  // (decode_steps). Roofline: 1e8 parameters per
  // layer, 200 us of weights per layer at 1000 GB/s, 100 TFLOP/s.
  const std::string trace = write_file("sessions.csv",
                                       "session,arrival_s,turns,think_s,context_tokens,"
                                       "turn_tokens\n"
                                       "s1,0,2,60,1000,16\n");
  const nlohmann::json r = run(test::scenario(
      "kv-cache-gpu",
      trace_tiers({"scenario.policy=reuse", "scenario.measure_reload=true",
                   "scenario.session_trace=\"" + trace + "\"", "scenario.params_billion=0.4",
                   "scenario.gpu_tflops=100", "scenario.hbm_bandwidth_gbps=1000"})));
  const nlohmann::json& reuse = r["kv_cache"]["reuse"];
  EXPECT_EQ(reuse["turns"].get<int>(), 2);
  EXPECT_EQ(reuse["returning_turns"].get<int>(), 1);
  EXPECT_EQ(reuse["dram_hits"].get<int>(), 1);
  EXPECT_DOUBLE_EQ(reuse["hit_rate"].get<double>(), 1.0);
  // First turn: prefill of 1016 tokens, per layer 2 x 1e8 x 1016 + 2 x 8 x
  // 64 x 1016^2 = 204,257,030,144 FLOPs -> 2,042,570,301.44 ps, x 4.
  EXPECT_NEAR(reuse["ttft_first_turn_ns"]["mean"].get<double>(), 8170281.206, 0.002);
  // Returning: 1018 tokens cached (1000 + 16 + 2) reloaded from DRAM, the
  // measured reload of 1000 tokens x 1.018, then 16 tokens prefilled against
  // them: 2 x 1e8 x 16 + 1024 x (2 x 16 x 1018 + 256) = 3,233,619,968 FLOPs
  // (32.3 us), below the 200 us of weights: 4 x 200 us.
  const double reload = r["kv_cache"]["reload"]["dram_ns"].get<double>();
  EXPECT_NEAR(reuse["ttft_ns"].get<double>(), reload * 1.018 + 800000.0, 0.01);
  EXPECT_NEAR(reuse["ttft_returning_ns"]["p99"].get<double>(), reload * 1.018 + 800000.0, 0.01);
}

}  // namespace
}  // namespace gpunvme
