// The KV offload policies, the model table and the compute model against
// figures worked by hand from the shape, tier capacities and parameters.
#include <gtest/gtest.h>

#include <cstdio>

#include "sim/system/workload/kv_cache.h"
#include "workload_test_util.h"

namespace gpunvme {
namespace {

// 4 layers, 2 KV heads of 64 dims in FP16 (512 B per token and layer), 8
// query heads (gqa_group 4); 16-token blocks of 8 KiB. 2 sequences of 1000
// tokens: 62 full blocks per sequence and layer (496 in all) and a last
// block of 8 tokens. No block fills in 2 steps (the 63rd fills at 1008).
std::vector<std::string> small_policy_run(std::vector<std::string> more = {}) {
  std::vector<std::string> o{
      "scenario.layers=4",      "scenario.kv_heads=2",          "scenario.head_dim=64",
      "scenario.dtype_bytes=2", "scenario.block_tokens=16",     "scenario.context_tokens=1000",
      "scenario.batch=2",       "scenario.decode_steps=2",      "scenario.bs=8192",
      "scenario.threads=256",   "scenario.layer_compute_us=10", "scenario.measure_reload=false"};
  o.insert(o.end(), more.begin(), more.end());
  return o;
}

// 1 MiB of HBM (8 last blocks + 120 full ones), 1 MiB of DRAM (128 blocks),
// the other 248 blocks on NVMe; interleaved, so every layer has 30 HBM, 32
// DRAM and 62 NVMe blocks.
std::vector<std::string> tiers(std::vector<std::string> more = {}) {
  std::vector<std::string> o{"scenario.hbm_kv_gib=0.0009765625",
                             "scenario.host_kv_gib=0.0009765625", "scenario.placement=interleave"};
  o.insert(o.end(), more.begin(), more.end());
  return small_policy_run(o);
}

TEST(KvModels, NamedModelsSetTheShape) {
  // Llama 3.1 70B: 80 layers, 8 KV heads of 128 in FP16: 4 KiB per token and
  // layer, 320 KiB per token.
  // The scenario's 8 layers back to the declared default, which yields to
  // the model's.
  const KvShape big = kv_shape(
      test::scenario("kv-cache-gpu", {"scenario.layers=32", "scenario.model=\"llama-3.1-70b\""}));
  EXPECT_EQ(big.layers, 80u);
  EXPECT_EQ(big.token_bytes, 4096u);
  EXPECT_EQ(big.token_bytes * big.layers, 327680u);
  EXPECT_DOUBLE_EQ(big.params, 70.6e9);
  // Llama 2 7B is MHA: 32 KV heads, four times Llama 3.1 8B's 128 KiB.
  const KvShape mha = kv_shape(test::scenario(
      "kv-cache-gpu",
      {"scenario.layers=32", "scenario.model=\"llama-2-7b\"", "scenario.host_kv_gib=8"}));
  EXPECT_EQ(mha.token_bytes * mha.layers, 4u * 131072);
  EXPECT_EQ(mha.gqa_group, 1u);
}

TEST(KvModels, RooflineComputeAndPrefill) {
  // 0.4e9 parameters over 4 layers: 1e8 per layer, 2e8 B in BF16. Decode:
  // max(2e8 B / 1000 GB/s = 200 us, 2 x 1e8 x 2 / 100 TFLOP/s = 4 us).
  // Prefill per layer: 2 x 1e8 x 2 x 1000 + 2 x 2 x 8 x 64 x 1000^2 =
  // 4.02048e11 FLOPs = 4.02048 ms at 100 TFLOP/s (above 200 us), x 4 layers.
  const nlohmann::json r = run(test::scenario(
      "kv-cache-gpu", small_policy_run({"scenario.hbm_kv_gib=1", "scenario.compute_model=roofline",
                                        "scenario.params_billion=0.4", "scenario.gpu_tflops=100",
                                        "scenario.hbm_bandwidth_gbps=1000"})));
  const nlohmann::json& kv = r["kv_cache"];
  EXPECT_DOUBLE_EQ(kv["layer_compute_ns"].get<double>(), 200000.0);
  EXPECT_DOUBLE_EQ(kv["ttft_ns"].get<double>(), 16081920.0);
  EXPECT_DOUBLE_EQ(r["summary"]["ttft_ns"].get<double>(), 16081920.0);
  // Everything in HBM: a step is 4 x (200 us + attention over 2 x (1001 + s)
  // tokens x 512 B at 1000 GB/s); TPOT is their mean.
  const double step0 = 4 * (200000.0 + 2 * 1001 * 512 / 1000.0);
  const double step1 = 4 * (200000.0 + 2 * 1002 * 512 / 1000.0);
  EXPECT_NEAR(kv["tpot_ns"].get<double>(), (step0 + step1) / 2, 0.002);
  EXPECT_NEAR(r["summary"]["tpot_ns"].get<double>(), (step0 + step1) / 2, 0.002);
}

TEST(KvPolicies, OverlapHidesTheFetchBehindCompute) {
  // 1 ms of compute per layer is far above one layer's fetch (32 DRAM and
  // 62 NVMe blocks). Without prefetch every layer waits for its own fetch, T:
  // a step stalls 4 T. With one layer ahead only the first layer of the run
  // waits, for its fetch sharing the links with layer 1's (T to 2 T); step 1
  // does not stall at all.
  auto stalls = [](int prefetch) {
    const nlohmann::json r = run(test::scenario(
        "kv-cache-gpu", tiers({"scenario.layer_compute_us=1000",
                               "scenario.prefetch_layers=" + std::to_string(prefetch)})));
    const auto& steps = r["kv_cache"]["steps"];
    return std::make_pair(steps[0]["stall_ns"].get<double>(), steps[1]["stall_ns"].get<double>());
  };
  const auto [serial0, serial1] = stalls(0);
  const double fetch = serial1 / 4;  // T
  EXPECT_GT(fetch, 1000.0);
  EXPECT_NEAR(serial0, 4 * fetch, 0.05 * serial0);
  const auto [overlap0, overlap1] = stalls(1);
  EXPECT_GE(overlap0, 0.95 * fetch);
  EXPECT_LE(overlap0, 2.05 * fetch);
  EXPECT_DOUBLE_EQ(overlap1, 0.0);
}

TEST(KvPolicies, SparseFetchMovesTheSelectedTokensAndPaysForMisses) {
  // sparse_fraction 0.5: 8 of a block's 16 tokens, 4 KiB of each lower-tier
  // block; miss rate 0.25: 2 more tokens (1 KiB) per block once the layer is
  // next. Per step: 128 DRAM blocks and 248 NVMe blocks.
  auto sparse = [](const char* miss) {
    return run(test::scenario(
        "kv-cache-gpu",
        tiers({"scenario.policy=sparse", "scenario.sparse_fraction=0.5",
               std::string("scenario.sparse_miss_rate=") + miss,
               "scenario.speculation_key_fraction=0.25", "scenario.layer_compute_us=1000"})));
  };
  const nlohmann::json r = sparse("0.25");
  const nlohmann::json& kv = r["kv_cache"];
  for (const auto& step : kv["steps"]) {
    EXPECT_EQ(step["dram_to_hbm_bytes"].get<std::uint64_t>(), 128u * (4096 + 1024));
    EXPECT_EQ(step["nvme_to_hbm_bytes"].get<std::uint64_t>(), 248u * (4096 + 1024));
  }
  EXPECT_EQ(kv["sparse"]["selected_tokens_per_block"].get<std::uint64_t>(), 8u);
  EXPECT_EQ(kv["sparse"]["selected_bytes"].get<std::uint64_t>(), 2u * 376 * 4096);
  EXPECT_EQ(kv["sparse"]["missed_bytes"].get<std::uint64_t>(), 2u * 376 * 1024);
  // The speculation reads a quarter of every key (half a token's entry) of
  // every token: 2 x (1001 + 1002) tokens x 4 layers x 64 B.
  EXPECT_EQ(kv["sparse"]["speculation_hbm_bytes"].get<std::uint64_t>(),
            4u * 2 * (1001 + 1002) * 64);
  // Attention reads HBM-resident tokens and the fetched ones only:
  // per layer and step 2 x (1001 + s) - 94 x 16 tokens in full, plus the
  // fetched 94 x 5 KiB.
  const std::uint64_t attention =
      4 * ((2 * 1001 - 94 * 16) * 512 + (2 * 1002 - 94 * 16) * 512 + 2 * 94 * 5120);
  EXPECT_EQ(kv["bytes"]["hbm_attention_read"].get<std::uint64_t>(), attention);
  // The misses are fetched on the critical path: step 1 stalls, where the
  // selected tokens alone are hidden behind 1 ms of compute.
  EXPECT_GT(kv["steps"][1]["stall_ns"].get<double>(), 4 * 1000.0);
  const nlohmann::json exact = sparse("0");
  EXPECT_DOUBLE_EQ(exact["kv_cache"]["steps"][1]["stall_ns"].get<double>(), 0.0);
  EXPECT_EQ(exact["kv_cache"]["sparse"]["missed_bytes"].get<std::uint64_t>(), 0u);
}

TEST(KvPolicies, InStorageAttentionSendsOnlyResults) {
  // The 248 NVMe blocks never cross PCIe: per layer and step the SSD reads
  // its 62 blocks (992 tokens, 496 KiB) and returns, per sequence and query
  // head, 64 FP16 values and two FP32 softmax figures: 2 x 8 x (128 + 8) =
  // 2176 B, 2560 B in 512 B LBAs.
  const nlohmann::json r = run(test::scenario(
      "kv-cache-gpu", tiers({"scenario.policy=in_storage", "scenario.csd_attention_gflops=1"})));
  const nlohmann::json& kv = r["kv_cache"];
  const nlohmann::json& csd = kv["in_storage"];
  EXPECT_EQ(kv["bytes"]["nvme_to_hbm"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(csd["flash_bytes_read"].get<std::uint64_t>(), 2u * 248 * 8192);
  EXPECT_EQ(csd["result_bytes_per_ssd_layer"].get<std::uint64_t>(), 2176u);
  EXPECT_EQ(csd["result_bytes"].get<std::uint64_t>(), 2u * 4 * 2560);
  EXPECT_DOUBLE_EQ(csd["data_reduction"].get<double>(),
                   std::round(2.0 * 248 * 8192 / (8 * 2560) * 1000) / 1000);
  // At 1 GFLOP/s the SSD's attention is compute-bound: 992 tokens x 4 x 8
  // heads x 64 dims = 2,031,616 FLOPs, 2.031616 ms per layer, far above the
  // GPU's 10 us and the flash read (496 KiB at tens of GB/s). A step is 4
  // such layers plus each result's read: an NVMe read command, whose page
  // read (tR, 45 us on this drive) stands for the flash pipeline's first
  // page, and a 2.5 KiB transfer.
  for (const auto& step : kv["steps"]) {
    const double t = step["time_ns"].get<double>();
    EXPECT_GE(t, 4 * 2031616.0);
    EXPECT_LE(t, 4 * (2031616.0 + 45000.0 + 30000.0));
  }
  EXPECT_EQ(kv["steps"][0]["dram_to_hbm_bytes"].get<std::uint64_t>(), 128u * 8192);
}

TEST(KvPolicies, KeyRequestsMoveABlockPerCommandAfterTheLookup) {
  // bs 4 KiB: block-address reads split each 8 KiB block in two; a
  // key-value Retrieve moves it whole. 248 NVMe blocks per step, 2 steps.
  auto nvme_run = [](std::vector<std::string> more) {
    more.insert(more.end(), {"scenario.bs=4096", "scenario.prefetch_layers=0"});
    return run(test::scenario("kv-cache-gpu", tiers(more)));
  };
  const nlohmann::json lba = nvme_run({});
  EXPECT_EQ(lba["summary"]["ios"].get<std::uint64_t>(), 2u * 248 * 2);
  EXPECT_EQ(lba["kv_cache"]["request"].get<std::string>(), "lba");
  const nlohmann::json key = nvme_run({"scenario.kv_request=key", "scenario.kv_lookup_us=0"});
  EXPECT_EQ(key["summary"]["ios"].get<std::uint64_t>(), 2u * 248);
  EXPECT_EQ(key["kv_cache"]["key_commands"].get<std::uint64_t>(), 2u * 248);
  EXPECT_EQ(key["kv_cache"]["bytes"]["nvme_to_hbm"].get<std::uint64_t>(), 2u * 248 * 8192);
  // Without prefetch each layer waits for its own fetch: a 100 us lookup
  // ahead of every command of the layer delays it by 100 us, 4 layers a step.
  const nlohmann::json slow = nvme_run({"scenario.kv_request=key", "scenario.kv_lookup_us=100"});
  for (int step = 0; step < 2; ++step) {
    const double added = slow["kv_cache"]["steps"][step]["stall_ns"].get<double>() -
                         key["kv_cache"]["steps"][step]["stall_ns"].get<double>();
    EXPECT_NEAR(added, 4 * 100000.0, 0.02 * 4 * 100000.0) << "step " << step;
  }
}

TEST(KvPolicies, ReuseTimesAReturningTurnFromTheSavedKv) {
  // Roofline prefill of one session, 1e8 weights per layer at 100 TFLOP/s
  // (weights: 200 us per layer at 1000 GB/s). A 100-token turn against 1000
  // cached tokens: 2 x 1e8 x 100 + 2 x 8 x 64 x (2 x 100 x 1000 + 100^2) =
  // 2.021504e10 FLOPs, 202.1504 us per layer (above 200 us), 808.6016 us in
  // all. A miss recomputes 1100 tokens: 2 x 1e8 x 1100 + 1024 x 1100^2 =
  // 2.2123904e11 FLOPs, 8.8495616 ms over 4 layers. A hit adds the measured
  // reload of the context from DRAM or NVMe.
  const nlohmann::json r = run(test::scenario(
      "kv-cache-gpu", tiers({"scenario.policy=reuse", "scenario.measure_reload=true",
                             "scenario.compute_model=roofline", "scenario.params_billion=0.4",
                             "scenario.gpu_tflops=100", "scenario.hbm_bandwidth_gbps=1000",
                             "scenario.turn_tokens=100", "scenario.reuse_hit_rate=0.8",
                             "scenario.reuse_dram_share=0.25"})));
  const nlohmann::json& kv = r["kv_cache"];
  const nlohmann::json& reuse = kv["reuse"];
  const double dram = kv["reload"]["dram_ns"].get<double>();
  const double nvme = kv["reload"]["nvme_ns"].get<double>();
  EXPECT_NEAR(reuse["ttft_hit_dram_ns"].get<double>(), dram + 808601.6, 0.002);
  EXPECT_NEAR(reuse["ttft_hit_nvme_ns"].get<double>(), nvme + 808601.6, 0.002);
  EXPECT_NEAR(reuse["ttft_miss_ns"].get<double>(), 8849561.6, 0.002);
  const double expected =
      0.8 * (0.25 * (dram + 808601.6) + 0.75 * (nvme + 808601.6)) + 0.2 * 8849561.6;
  EXPECT_NEAR(reuse["ttft_ns"].get<double>(), expected, 0.01);
}

}  // namespace
}  // namespace gpunvme
