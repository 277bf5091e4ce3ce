// What the GPU model charges a warp for one post of the gpu_network path
// (algo::post_reads: capsules and SEND WQEs, a system fence, the doorbell
// record, a system fence, the doorbell write), worked by hand from the
// profile's costs; and the comparison of that charge with the H100
// measurement of tests/hardware/gpu_wqe_posting.cu
// (configs/measurements/gpu-wqe-posting-h100-2026-11-27.json), which the
// READMEs quote: the recorded figures must follow the model and the data.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "sim/core/algo/gpu_network.h"
#include "sim/system/run/gpu_bench.h"

namespace gpunvme::gpu_wqe_posting_test {
namespace {

const std::string kMeasurement =
    std::string(GPUNVME_SOURCE_DIR) + "/configs/measurements/gpu-wqe-posting-h100-2026-11-27.json";

// One post_reads of `lanes` reads by one warp on the GPU node's declared
// defaults (as configs/topologies/two-hosts-rdma.json's gpu0, which names no
// profile), or on `profile`:
// queue, capsules and record in GPU memory, the doorbell word in host
// memory, as the microbenchmark placed them (with `host_queue`, queue,
// capsules and record in host memory too). Returns the post's time.
Picoseconds simulated_post(std::uint32_t lanes, bool blueflame, bool host_queue = false,
                           const char* profile = nullptr) {
  GpuBench bench(profile == nullptr ? nlohmann::json::object()
                                    : nlohmann::json{{"profile", profile}});
  algo::NicQueuePair q;
  q.send_entries = 64;
  const std::uint64_t queue_bytes = std::uint64_t{q.send_entries} * rdma::kWqeBasicBlock;
  const std::uint64_t capsule_bytes = std::uint64_t{q.send_entries} * rdma::kCommandCapsuleBytes;
  if (host_queue) {
    q.send_queue = GpuBench::host_memory() + rdma::kUarPageBytes;
    q.capsules = q.send_queue + queue_bytes;
    q.doorbell_record = q.capsules + capsule_bytes;
  } else {
    q.send_queue = bench.gpu().allocate(queue_bytes);
    q.capsules = bench.gpu().allocate(capsule_bytes);
    q.doorbell_record = bench.gpu().allocate(64);
  }
  q.doorbell = GpuBench::host_memory() + rdma::kUarDoorbellOffset;
  q.qpn = 0x100;
  q.lkey = 0x1111;
  q.rkey = 0x2222;
  q.blueflame = blueflame;
  Picoseconds elapsed = 0;
  bench.spawn({0, 0}, [&](platform::SimWarp& p) {
    algo::NicQueueState s{};
    algo::Lanes<algo::NetRead> reads{};
    for (std::uint32_t l = 0; l < algo::kWarpLanes; ++l) {
      reads[static_cast<int>(l)].cid = static_cast<std::uint16_t>(l);
      reads[static_cast<int>(l)].bytes = 4096;
      reads[static_cast<int>(l)].nlb_zero_based = 7;
    }
    const algo::LaneMask mask = lanes >= 32 ? algo::kAllLanes : ((1u << lanes) - 1u);
    const Picoseconds start = p.clock();
    algo::post_reads(p, q, s, mask, reads);
    elapsed = p.clock() - start;
  });
  bench.run();
  if (!host_queue) {
    EXPECT_EQ(bench.counters().pcie_stores, 1u) << "one doorbell write per post";
  }
  return elapsed;
}

double ns(Picoseconds t) { return static_cast<double>(t) / 1000.0; }

// Each lane stores its 64 B capsule (an entry: the larger of entry_store_ns
// and its 4 store instructions) and the WQE's control and data segments (2);
// the lanes store side by side, so the for_lanes costs one lane's. Both fences follow stores to GPU memory
// only (fence_system, not fence_system_after_pcie_store) and each ends with
// the L1 reload. The record is one store; the doorbell one store
// instruction to host memory: 8 B, or with BlueFlame the 64 B WQE (4), read
// back from the queue first (one load).
TEST(GpuWqePosting, OnePostCostsTheHandSummedCharges) {
  GpuBench bench;
  const gpu::GpuCosts c = bench.gpu().costs();
  const Picoseconds fence = c.fence_system + c.fence_l1_reload;
  const Picoseconds entries = std::max(4 * c.store_issue, c.entry_store) + 2 * c.store_issue;
  const Picoseconds plain = entries + fence + c.store_issue + fence + c.pcie_store_issue;
  EXPECT_EQ(simulated_post(1, false), plain);
  EXPECT_EQ(simulated_post(32, false), plain) << "lanes store side by side";
  const Picoseconds blueflame =
      entries + fence + c.store_issue + fence + c.load_latency + 4 * c.pcie_store_issue;
  EXPECT_EQ(simulated_post(1, true), blueflame);
  EXPECT_EQ(simulated_post(2, true), plain) << "BlueFlame carries a batch of one only";
  // A queue in host memory: every store is a posted PCIe write, and each
  // fence follows one.
  const Picoseconds pcie_fence = c.fence_system_after_pcie_store + c.fence_l1_reload;
  EXPECT_EQ(
      simulated_post(1, false, true),
      std::max(4 * c.pcie_store_issue, c.entry_store) + 2 * c.pcie_store_issue + pcie_fence +
          c.pcie_store_issue + pcie_fence + c.pcie_store_issue);
}

// The measured side: per case and phase, the lowest and highest of the runs.
struct Range {
  double low = 1e300, high = -1e300;
};

Range measured(const nlohmann::json& m, const std::string& memory, unsigned warps, unsigned batch,
               bool blueflame, const std::string& phase) {
  Range r;
  for (const auto& run : m["runs"]) {
    for (const auto& c : run["cases"]) {
      if (c["queue_memory"] != memory || c["warps"] != warps || c["batch"] != batch ||
          c["blueflame"] != blueflame)
        continue;
      const double v = c["phase_ns"][phase].get<double>();
      r.low = std::min(r.low, v);
      r.high = std::max(r.high, v);
    }
  }
  return r;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The comparison the measurement file records (and the READMEs quote) is
// the model's charge today and the runs' range: a change of either makes
// this fail until the comparison is redone.
TEST(GpuWqePosting, RecordedComparisonFollowsTheModelAndTheRuns) {
  std::ifstream in(kMeasurement);
  ASSERT_TRUE(in) << kMeasurement;
  const nlohmann::json m = nlohmann::json::parse(in);
  ASSERT_EQ(m["runs"].size(), 2u);
  for (const auto& run : m["runs"]) {
    EXPECT_EQ(run["cases"].size(), 24u);
    for (const auto& c : run["cases"]) {
      EXPECT_TRUE(c["complete"].get<bool>()) << "every WQE seen by the host, every check passed";
      EXPECT_EQ(c["host_bad_entries"].get<int>(), 0);
    }
  }
  const nlohmann::json& cmp = m["comparison"];
  struct Model {
    const char* profile;
    const char* prefix;  // of the comparison's totals
    const char* row_key;
  };
  for (const Model& model :
       {Model{nullptr, "simulated_", "simulated_ns"},
        Model{"h100-sxm", "simulated_h100_profile_", "simulated_h100_profile_ns"}}) {
    const std::string prefix = model.prefix;
    EXPECT_NEAR(cmp[prefix + "post_ns"].get<double>(),
                ns(simulated_post(1, false, false, model.profile)), 0.05);
    EXPECT_NEAR(cmp[prefix + "post_blueflame_ns"].get<double>(),
                ns(simulated_post(1, true, false, model.profile)), 0.05);
    EXPECT_NEAR(cmp[prefix + "post_host_queue_ns"].get<double>(),
                ns(simulated_post(1, false, true, model.profile)), 0.05);
    for (const auto& row : cmp["rows"]) {
      const Range r =
          measured(m, row["queue_memory"], row["warps"].get<unsigned>(),
                   row["batch"].get<unsigned>(), row["blueflame"].get<bool>(), row["phase"]);
      EXPECT_NEAR(row["measured_low_ns"].get<double>(), r.low, 0.05) << row.dump();
      EXPECT_NEAR(row["measured_high_ns"].get<double>(), r.high, 0.05) << row.dump();
      const double simulated = row[model.row_key].get<double>();
      if (row["phase"] == "post_reads_total") {
        const std::string total = prefix + (row["queue_memory"] == "host"  ? "post_host_queue_ns"
                                            : row["blueflame"].get<bool>() ? "post_blueflame_ns"
                                                                           : "post_ns");
        EXPECT_NEAR(simulated, cmp[total].get<double>(), 0.05) << row.dump();
      }
      const double mid = (r.low + r.high) / 2;
      const std::string ratio =
          model.profile == nullptr ? "measured_over_simulated" : "measured_over_h100_profile";
      EXPECT_NEAR(row[ratio].get<double>(), mid / simulated, 0.005) << row.dump();
    }
  }
  // The READMEs quote the whole post of one warp, batch of one, queue in GPU
  // memory.
  const Range post = measured(m, "gpu", 1, 1, false, "post_reads_total");
  const std::string figure =
      fmt::format("{:.1f} ns simulated against {:.1f}-{:.1f} ns measured",
                  cmp["simulated_post_ns"].get<double>(), post.low, post.high);
  for (const char* doc : {"/README.md", "/tests/hardware/README.md"}) {
    const std::string text = read_text(std::string(GPUNVME_SOURCE_DIR) + doc);
    EXPECT_NE(text.find(figure), std::string::npos) << doc << " quotes " << figure;
  }
}

}  // namespace
}  // namespace gpunvme::gpu_wqe_posting_test
