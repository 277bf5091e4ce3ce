// The shared network KV tier (CMX-like): kv_cache tenants on several GPU
// servers reading one NVMe-oF target run on a DPU, with a prompt prefix all
// sequences share. Against hand counts: the bytes each tenant reads from the
// tier per decode step, the bytes the tier stores with the prefix shared and
// private, the target's shared Arm-core time, and one fetch's wait at a
// target core another tenant holds.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/nvmf/nvmf.h"
#include "sim/kernel/params/config_error.h"
#include "sim/system/run/run.h"
#include "sim/system/run/tenants.h"

namespace gpunvme {
namespace {

const std::string kFourGpus =
    std::string(GPUNVME_SOURCE_DIR) + "/configs/topologies/four-gpus-shared-kv-tier.json";

// Two layers of one KV head (128 dims, 2 B): 2 x 1 x 128 x 2 = 512 B per
// token and layer, blocks of 8 tokens = 4096 B. Two sequences of 32 tokens:
// 4 full blocks per sequence and layer besides the last (empty) one; 2
// decode steps fill none. HBM holds only the 2 x 2 last blocks (16384 B),
// no DRAM: every full block lives on the network tier.
nlohmann::json small_decode(int gpu, int prefix_tokens) {
  return {{"kind", "kv_cache"},
          {"path", "dpu"},
          {"gpu", "gpu" + std::to_string(gpu)},
          {"ssds", {"ssd0", "ssd1", "ssd2", "ssd3"}},
          {"queues", 2},
          {"queue_entries", 256},
          {"threads", 4},
          {"request_origin", "cpu"},
          {"bs", 65536},
          {"layers", 2},
          {"kv_heads", 1},
          {"head_dim", 128},
          {"dtype_bytes", 2},
          {"gqa_group", 1},
          {"context_tokens", 32},
          {"batch", 2},
          {"block_tokens", 8},
          {"decode_steps", 2},
          {"shared_prefix_tokens", prefix_tokens},
          {"hbm_kv_gib", 16384.0 / 1073741824.0},
          {"host_kv_gib", 0},
          {"prefetch_layers", 1},
          {"layer_compute_us", 20},
          {"measure_reload", false}};
}

RawConfig four_gpus(const std::vector<std::string>& topology_sets = {}) {
  RawConfig raw = load_raw_config(kFourGpus, default_scenario_file());
  for (const std::string& set : topology_sets) apply_set(raw, set);
  raw.scenario_file = "shared-tier.json";
  raw.seed = 1;
  return raw;
}

RunConfig shared_tier_config(int tenants, int prefix_tokens) {
  nlohmann::json list = nlohmann::json::array();
  for (int g = 0; g < tenants; ++g) {
    list.push_back(
        {{"name", "t" + std::to_string(g)}, {"scenario", small_decode(g, prefix_tokens)}});
  }
  RawConfig raw = four_gpus();
  raw.scenario = {{"tenants", list}};
  return resolve_config(raw);
}

// Per tenant, layer and step the tier sends each block once: the 2 prefix
// blocks (16 tokens) once for the batch, the 2 other blocks of each of the 2
// sequences: 2 layers x (2 + 2 x 2) x 4096 = 49152 B a step, 12 NVMe-oF
// reads (one 4 KiB command a block). Private prefixes: 2 x 8 x 4096 = 65536 B.
TEST(SharedKvTier, BytesPerStepPerTenantFromTheTierMatchTheHandCount) {
  for (const int prefix : {16, 0}) {
    SCOPED_TRACE(prefix);
    const std::uint64_t per_step = prefix > 0 ? 49152 : 65536;
    const nlohmann::json r = run(shared_tier_config(2, prefix));
    ASSERT_EQ(r["tenants"].size(), 2u);
    for (const nlohmann::json& t : r["tenants"]) {
      const nlohmann::json& tier = t["kv_cache"]["network_tier"];
      ASSERT_EQ(tier["bytes_per_step"].size(), 2u);
      EXPECT_EQ(tier["bytes_per_step"][0].get<std::uint64_t>(), per_step);
      EXPECT_EQ(tier["bytes_per_step"][1].get<std::uint64_t>(), per_step);
      EXPECT_EQ(t["summary"]["ios"].get<std::uint64_t>(), 2 * per_step / 4096);
      EXPECT_TRUE(t["kv_cache"]["data_complete"].get<bool>());
    }
    const nlohmann::json& shared = r["shared_kv_tier"][0]["per_tenant"];
    EXPECT_EQ(shared[0]["tier_bytes"].get<std::uint64_t>(), 2 * per_step);
    // 2 steps x 2 sequences = 4 tokens.
    EXPECT_DOUBLE_EQ(shared[1]["tier_bytes_per_token"].get<double>(),
                     static_cast<double>(2 * per_step) / 4.0);
  }
}

// Stored: each tenant's 2 sequences x 4 full blocks x 2 layers x 4096 B =
// 65536 B with private prefixes, 131072 B for two tenants. With the 2-block
// prefix shared, a tenant stores 65536 - 2 layers x 2 blocks x 4096 = 49152 B
// and the tier keeps one prefix (16384 B) for both: 49152 + 49152 - 16384 =
// 81920 B, saving 49152 B.
TEST(SharedKvTier, StoredBytesSharedAgainstPrivatePrefixMatchTheHandCount) {
  const nlohmann::json r = run(shared_tier_config(2, 16));
  const nlohmann::json& tier = r["shared_kv_tier"][0];
  EXPECT_EQ(tier["target"].get<std::string>(), "cmx_target");
  EXPECT_EQ(tier["target_placement"].get<std::string>(), "dpu");
  EXPECT_EQ(tier["tenants"].get<std::uint64_t>(), 2u);
  EXPECT_EQ(tier["stored_bytes_private_prefix"].get<std::uint64_t>(), 131072u);
  EXPECT_EQ(tier["stored_bytes"].get<std::uint64_t>(), 81920u);
  EXPECT_EQ(tier["saved_bytes"].get<std::uint64_t>(), 49152u);
  const nlohmann::json& own = r["tenants"][0]["kv_cache"]["shared_prefix"];
  EXPECT_EQ(own["stored_bytes"].get<std::uint64_t>(), 49152u);
  EXPECT_EQ(own["saved_bytes"].get<std::uint64_t>(), 16384u);

  const nlohmann::json alone = run(shared_tier_config(2, 0));
  const nlohmann::json& p = alone["shared_kv_tier"][0];
  EXPECT_EQ(p["stored_bytes"].get<std::uint64_t>(), 131072u);
  EXPECT_EQ(p["saved_bytes"].get<std::uint64_t>(), 0u);
}

// The target's Arm cores are one set for all tenants: their busy time is
// every tenant's reads times the DPU's time per I/O (arm_io_ns, split between
// submission and completion), and each tenant's Arm time per token is its
// own 24 reads x arm_io_ns over its 4 tokens.
TEST(SharedKvTier, TargetArmCoresAreSharedByTheTenants) {
  const RunConfig c = shared_tier_config(2, 16);
  const nvmf::DpuParams dpu = nvmf::DpuParams::from(c.topology.node("dpu_s")->params);
  const double io_ns = static_cast<double>(dpu.arm_io_ns) / 1000.0;
  const nlohmann::json r = run(c);
  const nlohmann::json& tier = r["shared_kv_tier"][0];
  EXPECT_DOUBLE_EQ(tier["target_cores_busy_ns"].get<double>(), 2 * 24 * io_ns);
  EXPECT_DOUBLE_EQ(tier["per_tenant"][0]["target_dpu_core_ns_per_token"].get<double>(),
                   24 * io_ns / 4);
}

// One fetch's wait at the target: a target DPU of one Arm core whose time
// per I/O (1 ms, split 0.5 ms at submission and 0.5 ms at completion) is
// far above the SSD's read S and the wire. One layer of one full block and
// one sequence: each tenant's step reads one block. Alone, the target stage
// is 0.5 + S + 0.5 ms. With a second tenant's identical read reaching the
// core first, by d: the first submits [0, 0.5], the second [0.5, 1]; the
// first's completion waits for the core until 1 and runs to 1.5, the
// second's runs [1.5, 2]. So the first's stage grows by 0.5 - S and the
// second's by 1 - S - d: one between 0 and 0.5 ms, the other between
// 0.5 and 1 ms.
TEST(SharedKvTier, OneFetchWaitsForTheOtherTenantsHalfAtASharedTargetCore) {
  const std::vector<std::string> one_slow_core = {"topology.nodes.dpu_s.arm_cores=1",
                                                  "topology.nodes.dpu_s.arm_io_ns=1000000"};
  auto one_block = [](nlohmann::json s) {
    s["layers"] = 1;
    s["batch"] = 1;
    s["context_tokens"] = 8;
    s["decode_steps"] = 1;
    s["shared_prefix_tokens"] = 8;
    s["hbm_kv_gib"] = 4096.0 / 1073741824.0;
    return s;
  };
  auto config = [&](int tenants) {
    nlohmann::json list = nlohmann::json::array();
    for (int g = 0; g < tenants; ++g) {
      list.push_back(
          {{"name", "t" + std::to_string(g)}, {"scenario", one_block(small_decode(g, 8))}});
    }
    RawConfig raw = four_gpus(one_slow_core);
    raw.scenario = {{"tenants", list}};
    return resolve_config(raw);
  };
  auto target_ns = [](const nlohmann::json& t) {
    return t["stages"]["target"]["mean"].get<double>();
  };
  const nlohmann::json alone = run(config(1));
  const nlohmann::json both = run(config(2));
  ASSERT_EQ(alone["tenants"][0]["summary"]["ios"].get<std::uint64_t>(), 1u);
  const double base = target_ns(alone["tenants"][0]);
  EXPECT_GE(base, 1e6);  // both halves of the one core's 1 ms
  const double first = target_ns(both["tenants"][0]);
  const double second = target_ns(both["tenants"][1]);
  const double later = std::max(first, second) - base;
  const double earlier = std::min(first, second) - base;
  EXPECT_GT(later, 0.5e6);
  EXPECT_LT(later, 1e6);
  EXPECT_GT(earlier, 0.0);
  EXPECT_LT(earlier, 0.5e6);
}

// Refused: two tenants reading through one initiator DPU (its Arm cores are
// each path's own), and shared prefixes of different shapes on one target.
TEST(SharedKvTier, RefusesASharedInitiatorAndMismatchedPrefixes) {
  nlohmann::json list = {{{"name", "a"}, {"scenario", small_decode(0, 16)}},
                         {{"name", "b"}, {"scenario", small_decode(0, 16)}}};
  RawConfig raw = four_gpus();
  raw.scenario = {{"tenants", list}};
  try {
    resolve_config(raw);
    FAIL() << "two tenants on one initiator DPU were accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "$.tenants[1].scenario.gpu");
  }
  list[1]["scenario"] = small_decode(1, 8);
  raw.scenario = {{"tenants", list}};
  try {
    resolve_config(raw);
    FAIL() << "prefixes of 2 and 1 blocks were stored as one copy";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "$.tenants[1].scenario.shared_prefix_tokens");
  }
  // Not a whole number of blocks.
  list[1]["scenario"] = small_decode(1, 12);
  raw.scenario = {{"tenants", list}};
  try {
    resolve_config(raw);
    FAIL() << "a prefix of 1.5 blocks was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "$.tenants[1].scenario.shared_prefix_tokens");
  }
}

// A shared tier is read only: 8 decode steps fill one block per sequence
// and layer ((32 + 8) / 8 - 32 / 8 = 1; 2 x 2 = 4 blocks) and HBM's 4
// blocks are the pinned last ones, no DRAM: the 4 would be written into the
// tier, refused while another tenant reads that target; one tenant alone
// may write them.
TEST(SharedKvTier, RefusesWritesIntoATierAnotherTenantReads) {
  nlohmann::json writer = small_decode(0, 16);
  writer["decode_steps"] = 8;
  nlohmann::json list = {{{"name", "a"}, {"scenario", writer}},
                         {{"name", "b"}, {"scenario", small_decode(1, 16)}}};
  RawConfig raw = four_gpus();
  raw.scenario = {{"tenants", list}};
  try {
    resolve_config(raw);
    FAIL() << "blocks filled in decoding were written into a shared tier";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "$.tenants[0].scenario.decode_steps");
    EXPECT_NE(std::string(e.what()).find("4 KV blocks fill"), std::string::npos) << e.what();
  }
  raw.scenario = {{"tenants", nlohmann::json::array({list[0]})}};
  EXPECT_NO_THROW(resolve_config(raw));
  // Two steps fill none: both tenants run.
  raw.scenario = {{"tenants", {{{"name", "a"}, {"scenario", small_decode(0, 16)}}, list[1]}}};
  EXPECT_NO_THROW(resolve_config(raw));
}

}  // namespace
}  // namespace gpunvme
