// GPU-initiated networking (path gpu_network): GPU warps post NVMe-oF capsules
// as SENDs to the NIC's queues in GPU memory, ring its doorbell and poll its
// CQ. One read's hops worked by hand, the seams counted, BlueFlame, and the
// PCIe rules that refuse the NIC's peer DMA or the GPU's doorbell stores.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/system/run/run.h"
#include "tests/cli/run_cli.h"

namespace gpunvme::gpu_network_test {
namespace {

const std::string kTopology =
    std::string(GPUNVME_SOURCE_DIR) + "/configs/topologies/two-hosts-rdma.json";
const std::string kScenario =
    std::string(GPUNVME_SOURCE_DIR) + "/scenarios/remote/gpu-network.json";

nlohmann::json gpu_network_run(const std::vector<std::string>& sets) {
  return run(load_config(kTopology, kScenario, sets, 1));
}

double stage_ns(const nlohmann::json& r, const char* stage) {
  return r["stages"][stage]["mean"].get<double>();
}

// One 4 KiB read alone, from the declared defaults (rdma_nic: host_read_ns
// 570, a one-way PCIe write 285, pipeline_ns 123, a 5 ns message slot, DMA at
// 460 Gb/s; InfiniBand cables of 400 Gb/s and 10 ns; a switch of 130 ns
// cut-through). Every translation misses on a first I/O.
//
// The capsule's SEND starts where the GPU's doorbell write lands in nic0's
// UAR page (the fabric timed its crossing): WQE fetch by DMA 570; pipeline
// 693; translation miss 1263; the capsule's first bytes 1833; 64 B at 460
// Gb/s (1.113) = 1834.113; 90 B on the cable (1.8), 10 ns to the switch, 130
// ns through it, 10 ns to nic1: its tail is there at 1985.913. nic1: miss,
// pipeline and entry read, + 123 + 570 = 2678.913; 64 B written (1.113), its
// CQE (1.113) and a one-way 285: 2966.139 ns.
constexpr double kCommandToTargetNs = 2966.139;
// With BlueFlame the WQE came in the doorbell write: no fetch, 570 ns less.
constexpr double kBlueFlameCommandToTargetNs = kCommandToTargetNs - 570.0;
// Data (4096 B RDMA WRITE) and response (16 B SEND) from nic1 into the GPU:
// its doorbell, WQE fetch, pipeline, miss and first read (285 + 570 + 123 + 570
// + 570 = 2118), 4096
// B read (71.235), 4138 B on the wire (82.76) through cable, switch and
// cable to nic0 (2421.995); the response one message slot later follows it
// (tail at 2422.835). nic0 writes the data after a miss (2421.995 + 123 +
// 570, + 71.235), the response's 16 B (0.278) and its CQE (1.113) and they
// land 285 later: 3472.621 ns, when the CQE is in the GPU's CQ.
constexpr double kDataToInitiatorNs = 3472.621;

TEST(GpuNetwork, OneReadsHopsMatchTheHandWorkedFigures) {
  const nlohmann::json r = gpu_network_run({"scenario.ios=1", "scenario.threads=1"});
  ASSERT_EQ(r["summary"]["ios"].get<std::uint64_t>(), 1u);
  EXPECT_EQ(r["summary"]["errors"].get<std::uint64_t>(), 0u);
  EXPECT_NEAR(stage_ns(r, "command_to_target"), kCommandToTargetNs, 0.002);
  EXPECT_NEAR(stage_ns(r, "data_to_initiator"), kDataToInitiatorNs, 0.002);
  // The NICs' PCIe crossings: the capsule's WQE fetch, translation miss and
  // read (3 x 570) and its landing in nic1 (285), 1995; the data's doorbell
  // from the target's core (285), WQE fetch, miss and read (3 x 570) and its
  // landing in the GPU (285), 2280. The wire: 151.8 + 233.6 as on
  // nvmf_gpudirect.
  EXPECT_NEAR(r["remote"]["per_hop_ns"]["nic_pcie"].get<double>(), 1995.0 + 2280.0, 0.002);
  EXPECT_NEAR(r["remote"]["per_hop_ns"]["network"].get<double>(), 151.8 + 233.6, 0.002);
  // The warp's side before the doorbell lands: its stores, two system fences
  // (700 ns each, as declared for the H100, plus the 135 ns L1 reload that
  // ends a fence), the doorbell record, the doorbell's posted write and its
  // crossing of gpu0 -> sw0 -> nic0 (two Gen5 links and the switch, a few
  // hundred ns at most).
  EXPECT_GT(stage_ns(r, "initiator_submit"), 2 * (700.0 + 135.0));
  EXPECT_LT(stage_ns(r, "initiator_submit"), 2 * (700.0 + 135.0) + 400.0);
  // No copy: the data is in GPU memory.
  EXPECT_FALSE(r["stages"].contains("copy_to_gpu"));
  const nlohmann::json& remote = r["remote"];
  EXPECT_EQ(remote["path"], "gpu_network");
  // The seams: no byte through the GPU host's memory, no core of it.
  EXPECT_EQ(remote["initiator_host_memory_bytes"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(remote["copies"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(remote["host_core_ns_per_io"].get<double>(), 0.0);
  EXPECT_EQ(remote["initiator_core_ns_per_io"].get<double>(), 0.0);
  EXPECT_FALSE(r.contains("cpu"));
  const nlohmann::json& g = remote["gpu_network"];
  EXPECT_EQ(g["queue_pairs"].get<std::uint64_t>(), 1u);
  EXPECT_EQ(g["doorbells"].get<std::uint64_t>(), 1u);
  EXPECT_EQ(g["blueflame_writes"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(g["doorbell_bytes"].get<std::uint64_t>(), 8u);
  EXPECT_EQ(g["wqe_fetches"].get<std::uint64_t>(), 1u);
  EXPECT_EQ(g["wqe_fetch_bytes"].get<std::uint64_t>(), 64u);
  EXPECT_EQ(g["cqes_written"].get<std::uint64_t>(), 1u);
  EXPECT_EQ(g["responses_written"].get<std::uint64_t>(), 1u);
  // The doorbell write goes from gpu0 through sw0 to nic0, a peer path.
  EXPECT_NE(g["doorbell_path"]["route"].get<std::string>().find("sw0"), std::string::npos)
      << g["doorbell_path"];
  // The warp's one PCIe store is the doorbell; it polled GPU memory only.
  EXPECT_EQ(r["gpus"]["gpu0"]["pcie_stores"].get<std::uint64_t>(), 1u) << r["gpus"];
  EXPECT_EQ(r["gpus"]["gpu0"]["pcie_loads"].get<std::uint64_t>(), 0u) << r["gpus"];
}

TEST(GpuNetwork, BlueFlameCarriesTheWqeAndSavesItsFetch) {
  const nlohmann::json r = gpu_network_run(
      {"scenario.ios=1", "scenario.threads=1", "topology.nodes.nic0.wqe_posting=blueflame"});
  ASSERT_EQ(r["summary"]["ios"].get<std::uint64_t>(), 1u);
  EXPECT_NEAR(stage_ns(r, "command_to_target"), kBlueFlameCommandToTargetNs, 0.002);
  const nlohmann::json& g = r["remote"]["gpu_network"];
  EXPECT_EQ(g["blueflame_writes"].get<std::uint64_t>(), 1u);
  EXPECT_EQ(g["doorbells"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(g["doorbell_bytes"].get<std::uint64_t>(), 64u);
  EXPECT_EQ(g["wqe_fetches"].get<std::uint64_t>(), 0u);
}

TEST(GpuNetwork, ManyWarpsCompleteEveryReadWithOneDoorbellPerBatch) {
  const nlohmann::json r = gpu_network_run({"scenario.ios=400", "scenario.threads=64"});
  EXPECT_EQ(r["summary"]["ios"].get<std::uint64_t>(), 400u);
  EXPECT_EQ(r["summary"]["errors"].get<std::uint64_t>(), 0u);
  const nlohmann::json& remote = r["remote"];
  const nlohmann::json& g = remote["gpu_network"];
  EXPECT_EQ(g["queue_pairs"].get<std::uint64_t>(), 2u);
  EXPECT_EQ(g["wqe_fetches"].get<std::uint64_t>(), 400u);
  EXPECT_EQ(g["cqes_written"].get<std::uint64_t>(), 400u);
  // A warp rings once for its batch of up to 32 reads.
  const auto doorbells = g["doorbells"].get<std::uint64_t>();
  EXPECT_GE(doorbells, 400u / 32u);
  EXPECT_LT(doorbells, 400u);
  EXPECT_EQ(remote["initiator_host_memory_bytes"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(remote["target_host_memory_bytes"].get<std::uint64_t>(), 2u * 400u * 4096u);
  EXPECT_NEAR(remote["target_core_ns_per_io"].get<double>(), 731.0, 0.5);
  EXPECT_GT(remote["per_hop_ns"]["ssd"].get<double>(), 45000.0);  // PM1743: tR 45 us
}

// Writes: a 4 KiB write fits the target's 4 KiB of in-capsule data, so the
// warp's SEND gathers capsule and GPU buffer and the target reads nothing
// back; an 8 KiB write's capsule names the GPU buffer, which the target's
// NIC RDMA READs. The 4 KiB write's command-to-target hops are the read's
// but for the 4160 B SEND, two packets at a 4096 B MTU: the first's 4096 B
// read by DMA in 71.235 ns instead of 1.113 and its 4122 B on the wire in
// 82.44 ns instead of 1.8 (the second, 64 B, follows it); nic1 writes the
// 4096 B (71.235) before the 64 B (1.113) and the CQE as for the read.
constexpr double kInCapsuleWriteToTargetNs =
    kCommandToTargetNs + (71.235 - 1.113) + (82.44 - 1.8) + 71.235;

TEST(GpuNetwork, WarpsPostWriteCapsulesInCapsuleOrForTheTargetToRead) {
  for (const int kib : {4, 8}) {
    SCOPED_TRACE(kib);
    const nlohmann::json r =
        gpu_network_run({"scenario.ios=1", "scenario.threads=1", "scenario.rw=randwrite",
                         "scenario.bs=" + std::to_string(kib * 1024)});
    ASSERT_EQ(r["summary"]["ios"].get<std::uint64_t>(), 1u);
    EXPECT_EQ(r["summary"]["errors"].get<std::uint64_t>(), 0u);
    const nlohmann::json& remote = r["remote"];
    EXPECT_EQ(remote["writes_in_capsule"].get<std::uint64_t>(), kib == 4 ? 1u : 0u);
    EXPECT_EQ(remote["writes_rdma_read"].get<std::uint64_t>(), kib == 4 ? 0u : 1u);
    EXPECT_EQ(remote["gpu_network"]["write_capsules"].get<std::uint64_t>(), 1u);
    EXPECT_EQ(remote["initiator_host_memory_bytes"].get<std::uint64_t>(), 0u);
    if (kib == 4) {
      EXPECT_NEAR(stage_ns(r, "command_to_target"), kInCapsuleWriteToTargetNs, 0.002);
    }
  }
}

TEST(GpuNetwork, GatherAndGraphReadRemoteNamespacesThroughTheWarpsQueues) {
  const std::string remote = std::string(GPUNVME_SOURCE_DIR) + "/scenarios/remote/";
  const nlohmann::json gather = run(load_config(
      kTopology, remote + "gather-gpudirect.json",
      {"scenario.path=gpu_network", "scenario.lookups=2000", "scenario.batch_lookups=1000"}, 1));
  EXPECT_GT(gather["summary"]["ios"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(gather["summary"]["errors"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(gather["remote"]["gpu_network"]["cqes_written"].get<std::uint64_t>(),
            gather["summary"]["ios"].get<std::uint64_t>());
  const nlohmann::json graph =
      run(load_config(kTopology, std::string(GPUNVME_SOURCE_DIR) + "/scenarios/graph-bfs-gpu.json",
                      {"scenario.path=gpu_network"}, 1));
  EXPECT_GT(graph["summary"]["ios"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(graph["summary"]["errors"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(graph["remote"]["gpu_network"]["wqe_fetches"].get<std::uint64_t>(),
            graph["summary"]["ios"].get<std::uint64_t>());
}

TEST(GpuNetwork, ARefusedPeerPathIsAConfigError) {
  const std::string check = "check --topology " + kTopology + " --scenario " + kScenario + " ";
  const cli_test::Outcome refused =
      cli_test::gpunvme(check +
                        "--set topology.nodes.sw0.acs_request_redirect=true"
                        " --set topology.nodes.rc0.peer_to_peer=block");
  EXPECT_EQ(refused.code, 2) << refused.output;
  EXPECT_NE(refused.output.find("$.path = \"gpu_network\": nic0 cannot write into gpu0"),
            std::string::npos)
      << refused.output;
  // Redirected but admitted: the run counts the NIC's redirected writes.
  const nlohmann::json r = gpu_network_run(
      {"scenario.ios=50", "scenario.threads=16", "topology.nodes.sw0.acs_request_redirect=true"});
  EXPECT_EQ(r["summary"]["ios"].get<std::uint64_t>(), 50u);
  EXPECT_EQ(r["remote"]["redirected_transfers"].get<std::uint64_t>(), 50u);
}

}  // namespace
}  // namespace gpunvme::gpu_network_test
