// KV-cache decode tiering against figures computed by hand from the model
// shape and tier capacities.
#include "sim/system/workload/kv_cache.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "sim/kernel/params/config_error.h"
#include "workload_test_util.h"

namespace gpunvme {
namespace {

// 4 layers, 2 KV heads of 64 dims in FP16: 2 x 2 x 64 x 2 = 512 B per token
// and layer; blocks of 16 tokens are 8 KiB. 2 sequences of 1000 tokens: 62
// full blocks per sequence and layer (992 tokens) plus a last block of 8.
std::vector<std::string> small(std::vector<std::string> more = {}) {
  std::vector<std::string> o{
      "scenario.layers=4",      "scenario.kv_heads=2",         "scenario.head_dim=64",
      "scenario.dtype_bytes=2", "scenario.block_tokens=16",    "scenario.context_tokens=1000",
      "scenario.batch=2",       "scenario.decode_steps=2",     "scenario.bs=8192",
      "scenario.threads=256",   "scenario.layer_compute_us=10"};
  o.insert(o.end(), more.begin(), more.end());
  return o;
}

// N MiB in GiB, written exactly (1 MiB = 2^-10 GiB).
std::string mib(int n) {
  char text[32];
  std::snprintf(text, sizeof text, "%.10f", n / 1024.0);
  return text;
}

TEST(KvCache, ShapeFollowsTheModel) {
  const KvShape k = kv_shape(test::scenario("kv-cache-gpu", small()));
  EXPECT_EQ(k.token_bytes, 512u);
  EXPECT_EQ(k.block_bytes, 8192u);
  EXPECT_EQ(k.full_blocks, 62u);
  // Llama 3.1 8B in FP16 (the defaults): 128 KiB of KV per token, so a 32K
  // context is 4 GiB (seed 000: ~4 GB).
  const RunConfig llama =
      test::scenario("kv-cache-gpu", {"scenario.layers=32", "scenario.context_tokens=32768"});
  const KvShape l = kv_shape(llama);
  EXPECT_EQ(l.token_bytes * l.layers, 131072u);
  EXPECT_EQ(l.token_bytes * l.layers * 32768, 4ull << 30);
}

TEST(KvCache, PinnedTiersMoveTheirBytesEveryStep) {
  // HBM and DRAM hold 128 blocks (1 MiB) each. HBM keeps the 8 last blocks
  // and 120 full ones; DRAM 128; NVMe the other 496 - 248 = 248.
  const nlohmann::json r = run(test::scenario(
      "kv-cache-gpu", small({"scenario.hbm_kv_gib=" + mib(1), "scenario.host_kv_gib=" + mib(1)})));
  const nlohmann::json& kv = r["kv_cache"];
  EXPECT_EQ(kv["tiers"]["initial_hbm_blocks"].get<std::uint64_t>(), 128u);
  EXPECT_EQ(kv["tiers"]["initial_dram_blocks"].get<std::uint64_t>(), 128u);
  EXPECT_EQ(kv["tiers"]["initial_nvme_blocks"].get<std::uint64_t>(), 248u);
  for (const auto& step : kv["steps"]) {
    EXPECT_EQ(step["dram_to_hbm_bytes"].get<std::uint64_t>(), 128u * 8192);
    EXPECT_EQ(step["nvme_to_hbm_bytes"].get<std::uint64_t>(), 248u * 8192);
  }
  // One 8 KiB read per NVMe block and step, and one per block of a whole
  // sequence (4 layers x 63 blocks) for the reload.
  EXPECT_EQ(r["summary"]["ios"].get<std::uint64_t>(), 2u * 248 + 4 * 63);
  EXPECT_EQ(kv["reload"]["bytes"].get<std::uint64_t>(), 4u * 1000 * 512);
  EXPECT_GT(kv["reload"]["nvme_ns"].get<double>(), kv["reload"]["dram_ns"].get<double>());
  // An HBM-resident context needs no reload: zero by definition.
  EXPECT_EQ(kv["reload"]["hbm_ns"].get<double>(), 0.0);
  EXPECT_EQ(kv["total_kv_bytes_without_gqa"].get<std::uint64_t>(),
            4 * kv["total_kv_bytes"].get<std::uint64_t>());
}

TEST(KvCache, AllInHbmRunsAtTheComputeBound) {
  // Nothing to fetch: each layer takes 10 us plus attention reading
  // 2 x (1000 + s + 1) tokens x 512 B at 100 GB/s.
  const nlohmann::json r = run(test::scenario(
      "kv-cache-gpu", small({"scenario.hbm_kv_gib=1", "scenario.hbm_bandwidth_gbps=100",
                             "scenario.measure_reload=false"})));
  const nlohmann::json& kv = r["kv_cache"];
  // No reload measured: every tier's figure is null, HBM's included.
  for (const char* tier : {"hbm_ns", "dram_ns", "nvme_ns"}) {
    EXPECT_TRUE(kv["reload"][tier].is_null()) << tier;
  }
  const double step0 = 4 * (10000.0 + 2 * 1001 * 512 / 100.0);
  const double step1 = 4 * (10000.0 + 2 * 1002 * 512 / 100.0);
  EXPECT_DOUBLE_EQ(kv["steps"][0]["time_ns"].get<double>(), step0);
  EXPECT_DOUBLE_EQ(kv["steps"][1]["time_ns"].get<double>(), step1);
  EXPECT_DOUBLE_EQ(kv["mean_stall_ns"].get<double>(), 0.0);
  EXPECT_NEAR(kv["tokens_per_s"].get<double>(), 4 / ((step0 + step1) * 1e-9), 0.01);
  EXPECT_EQ(r["summary"]["ios"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(kv["bytes"]["hbm_attention_read"].get<std::uint64_t>(), 4u * 2 * (1001 + 1002) * 512);
}

TEST(KvCache, PrefetchHidesPartOfTheFetchTime) {
  auto step_ns = [](int prefetch) {
    const nlohmann::json r = run(test::scenario(
        "kv-cache-gpu", small({"scenario.hbm_kv_gib=" + mib(1), "scenario.host_kv_gib=0",
                               "scenario.layer_compute_us=100", "scenario.measure_reload=false",
                               "scenario.prefetch_layers=" + std::to_string(prefetch)})));
    return r["kv_cache"]["mean_step_ns"].get<double>();
  };
  EXPECT_LT(step_ns(1), step_ns(0));
}

TEST(KvCache, LruThrashesOnTheCyclicLayerOrder) {
  // 2 MiB of HBM: 256 blocks, 248 cache slots besides the last blocks. The
  // first 248 blocks in layer order (layers 0 and 1) start cached. Step 0
  // hits layers 0 and 1 and misses 2 and 3 (evicting 0 and 1); from then on
  // every layer was evicted just before it is needed.
  const nlohmann::json r = run(test::scenario(
      "kv-cache-gpu", small({"scenario.hbm_kv_gib=" + mib(2), "scenario.host_kv_gib=" + mib(1),
                             "scenario.eviction=lru", "scenario.placement=layer_order",
                             "scenario.prefetch_layers=0", "scenario.measure_reload=false"})));
  EXPECT_EQ(r["kv_cache"]["lru"]["hits"].get<std::uint64_t>(), 248u);
  EXPECT_EQ(r["kv_cache"]["lru"]["misses"].get<std::uint64_t>(), 248u + 496u);
}

TEST(KvCache, BlocksThatFillMoveDownATier) {
  // 1007 tokens: the 63rd block fills with the first generated token, so
  // every (sequence, layer) moves one block down after step 0.
  const nlohmann::json r = run(test::scenario(
      "kv-cache-gds", small({"scenario.context_tokens=1007", "scenario.hbm_kv_gib=" + mib(1),
                             "scenario.host_kv_gib=" + mib(1), "scenario.measure_reload=false"})));
  const nlohmann::json& bytes = r["kv_cache"]["bytes"];
  EXPECT_EQ(bytes["hbm_to_nvme"].get<std::uint64_t>(), 8u * 8192);  // tiers above are full
  EXPECT_EQ(bytes["hbm_to_dram"].get<std::uint64_t>(), 0u);
  // Step 1 reads the 8 new blocks from NVMe too.
  const auto& steps = r["kv_cache"]["steps"];
  EXPECT_EQ(steps[0]["nvme_to_hbm_bytes"].get<std::uint64_t>(), 248u * 8192);
  EXPECT_EQ(steps[1]["nvme_to_hbm_bytes"].get<std::uint64_t>(), (248u + 8) * 8192);
}

}  // namespace
}  // namespace gpunvme
