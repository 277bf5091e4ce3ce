// NVMe-oF target placements (host cores, the storage host's DPU, offloaded to
// its NIC) and writes through the remote paths, one I/O at a time, against
// figures worked by hand from the declared defaults; and the configurations
// they refuse.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/network/network.h"
#include "sim/system/run/run.h"
#include "tests/cli/run_cli.h"

namespace gpunvme::target_placement_test {
namespace {

const std::string kTopology =
    std::string(GPUNVME_SOURCE_DIR) + "/configs/topologies/two-hosts-rdma.json";
const std::string kScenario = std::string(GPUNVME_SOURCE_DIR) + "/scenarios/remote/gpudirect.json";

// The three targets of the two-host topology.
struct Placement {
  const char* target;
  const char* placement;
};
const std::vector<Placement> kPlacements = {
    {"target1", "host_cpu"}, {"target1_dpu", "dpu"}, {"target1_offload", "nic_offload"}};

// One I/O alone (one host thread, nvmf_gpudirect unless `sets` says so).
nlohmann::json one_io(const char* target, const std::string& rw, std::vector<std::string> sets) {
  sets.insert(sets.end(), {"scenario.ios=1", "scenario.threads=1", "scenario.request_origin=cpu",
                           "scenario.rw=" + rw, std::string("scenario.nvmf_target=") + target});
  return run(load_config(kTopology, kScenario, sets, 1));
}

double stage_ns(const nlohmann::json& r, const char* stage) {
  return r["stages"][stage]["mean"].get<double>();
}

// Declared defaults the figures below use: rdma_nic host_read_ns 570 (a
// one-way PCIe write 285), pipeline_ns 123, 200 M messages/s (a 5 ns slot),
// DMA at 460 Gb/s; InfiniBand framing 26 B per packet, 400 Gb/s, 10 ns
// cables; network_switch 130 ns cut-through. The DPU's NIC and cable have the
// same defaults as nic1's. nvmf_target io_ns 731, offload_command_ns 246;
// dpu arm_io_ns 1462, switch_ns 115.
//
// A read's command capsule and data, worked in remote_run_test: 3251.139 ns
// from the initiator's doorbell to the capsule's CQE in the target's memory,
// and 3472.621 ns from the target's SSD completion to the response capsule's
// CQE in the initiator's memory, when the target's core posts the data and
// the response (doorbell 285 + WQE fetch 570 first).
constexpr double kReadCommandNs = 3251.139;
constexpr double kReadDataNs = 3472.621;
// The offloading NIC starts its own messages: no doorbell or WQE fetch.
constexpr double kPostingNs = 285.0 + 570.0;

// A 4 KiB write travels in its command capsule: a 4160 B SEND read from GPU
// memory. nic0: doorbell 285 + WQE 570 = 855, pipeline 978, translation miss
// 1548, first read 2118; packet 0 (4096 B) read at 460 Gb/s (71.235) =
// 2189.235, on the cable as 4122 B (82.44 ns) until 2271.675; packet 1 (64
// B, 1.113) waits for the cable and is on it until 2273.475. The switch
// forwards packet 0 130 ns after its head arrives (2199.235 + 130 =
// 2329.235), its tail reaches nic1 82.44 + 10 later (2421.675); packet 1
// follows on the port (2411.675 + 1.8 + 10 = 2423.475). nic1: a miss on the
// capsule ring, 2421.675 + 123 + 570 = 3114.675; 4096 B written (71.235),
// 64 B (1.113), the CQE (1.113) and a one-way 285: 3473.136 ns.
constexpr double kWriteCommandNs = 3473.136;
// The write's response alone: nic1 posts it (855), pipeline 978, the 16 B
// read (no miss: the capsule's receive translated that page) 1548, 0.278 ns
// of DMA; its 42 B reach the switch's port 10 ns after they leave, leave it
// 130 ns later and reach nic0 0.84 + 10 ns after that (150.84), at
// 1699.118; nic0 misses on its capsule ring (the write's capsule came from
// GPU memory, so the ring was never translated): 1699.118 + 123 + 570 =
// 2392.118, 16 B (0.278), the CQE (1.113), a one-way 285: 2678.509 ns.
constexpr double kWriteResponseNs = 2678.509;

TEST(TargetPlacement, OneReadPerPlacement) {
  for (const Placement& p : kPlacements) {
    SCOPED_TRACE(p.placement);
    const nlohmann::json r = one_io(p.target, "randread", {});
    ASSERT_EQ(r["summary"]["ios"].get<std::uint64_t>(), 1u);
    const nlohmann::json& remote = r["remote"];
    EXPECT_EQ(remote["target_placement"].get<std::string>(), p.placement);
    const std::string where = p.placement;
    // The command reaches every target the same way (the DPU's NIC is alike).
    EXPECT_NEAR(stage_ns(r, "command_to_target"), kReadCommandNs, 0.002);
    // The data and response: the DPU's data crosses its own switch first
    // (115 ns); the offloading NIC posts nothing.
    const double data = where == "dpu"           ? kReadDataNs + 115.0
                        : where == "nic_offload" ? kReadDataNs - kPostingNs
                                                 : kReadDataNs;
    EXPECT_NEAR(stage_ns(r, "data_to_initiator"), data, 0.002);
    // The target's time per I/O, on host cores, Arm cores or the NIC.
    EXPECT_NEAR(remote["target_core_ns_per_io"].get<double>(), where == "host_cpu" ? 731.0 : 0.0,
                0.001);
    EXPECT_NEAR(remote["target_dpu_core_ns_per_io"].get<double>(), where == "dpu" ? 1462.0 : 0.0,
                0.001);
    EXPECT_NEAR(remote["target_nic_ns_per_io"].get<double>(), where == "nic_offload" ? 246.0 : 0.0,
                0.001);
    // The SSD writes 4096 B into the target's buffer and its NIC reads them:
    // host memory, or the DPU's.
    EXPECT_EQ(remote["target_host_memory_bytes"].get<std::uint64_t>(),
              where == "dpu" ? 0u : 2u * 4096u);
    EXPECT_EQ(remote["target_dpu_memory_bytes"].get<std::uint64_t>(),
              where == "dpu" ? 2u * 4096u : 0u);
    EXPECT_EQ(remote["nvmf_target"]["node"].get<std::string>(), where == "host_cpu" ? "cpu1"
                                                                : where == "dpu"    ? "dpu1"
                                                                                    : "nic1");
    // 64 B capsule (90 B), 4096 B RDMA WRITE (4096 + 26 + 16 RETH), 16 B
    // response (42 B).
    EXPECT_EQ(remote["wire_bytes"].get<std::uint64_t>(), 90u + 4138u + 42u);
    EXPECT_EQ(remote["packets"].get<std::uint64_t>(), 3u);
  }
}

TEST(TargetPlacement, OneWritePerPlacement) {
  for (const Placement& p : kPlacements) {
    SCOPED_TRACE(p.placement);
    const nlohmann::json r = one_io(p.target, "randwrite", {});
    ASSERT_EQ(r["summary"]["ios"].get<std::uint64_t>(), 1u);
    EXPECT_EQ(r["summary"]["writes"].get<std::uint64_t>(), 1u);
    const nlohmann::json& remote = r["remote"];
    const std::string where = p.placement;
    EXPECT_EQ(remote["writes_in_capsule"].get<std::uint64_t>(), 1u);
    EXPECT_EQ(remote["writes_rdma_read"].get<std::uint64_t>(), 0u);
    EXPECT_NEAR(stage_ns(r, "command_to_target"), kWriteCommandNs, 0.002);
    // Only the response comes back; a DPU's data crossed its switch on the
    // way to the SSD, inside the target's stage.
    EXPECT_NEAR(stage_ns(r, "data_to_initiator"),
                where == "nic_offload" ? kWriteResponseNs - kPostingNs : kWriteResponseNs, 0.002);
    // 4160 B capsule in two packets (4160 + 2 x 26) and the response (42).
    EXPECT_EQ(remote["wire_bytes"].get<std::uint64_t>(), 4160u + 52u + 42u);
    EXPECT_EQ(remote["packets"].get<std::uint64_t>(), 3u);
    // The GPU's data never crosses the GPU host's memory on this path.
    EXPECT_EQ(remote["initiator_host_memory_bytes"].get<std::uint64_t>(), 0u);
    EXPECT_EQ(remote["target_host_memory_bytes"].get<std::uint64_t>(),
              where == "dpu" ? 0u : 2u * 4096u);
  }
}

TEST(TargetPlacement, AWriteBeyondTheCapsuleIsReadByTheTarget) {
  for (const Placement& p : kPlacements) {
    SCOPED_TRACE(p.placement);
    const nlohmann::json r = one_io(p.target, "randwrite", {"scenario.bs=16384"});
    ASSERT_EQ(r["summary"]["ios"].get<std::uint64_t>(), 1u);
    const nlohmann::json& remote = r["remote"];
    EXPECT_EQ(remote["writes_in_capsule"].get<std::uint64_t>(), 0u);
    EXPECT_EQ(remote["writes_rdma_read"].get<std::uint64_t>(), 1u);
    // 64 B capsule (90), READ request (26 + 16 RETH), READ response of
    // 16384 B in 4 packets (4 x 26, AETH 4 on the first and the last),
    // response capsule (42).
    EXPECT_EQ(remote["wire_bytes"].get<std::uint64_t>(), 90u + 42u + 16384u + 104u + 8u + 42u);
    EXPECT_EQ(remote["packets"].get<std::uint64_t>(), 1u + 1u + 4u + 1u);
    // The command stage holds the READ's round trip: at least its request's
    // and response's serialisation on both cables and the switch's two
    // cut-throughs beyond the capsule's own exchange.
    EXPECT_GT(stage_ns(r, "command_to_target"),
              kReadCommandNs + 2 * 130.0 + 2 * 10.0 + 16496.0 * 8.0 / 400.0);
  }
}

TEST(TargetPlacement, AReadRequestIsOnePacketWhateverItsLength) {
  // IBTA: an RDMA READ request carries a RETH and no payload.
  EXPECT_EQ(network::message_packets(network::RdmaOp::rdma_read_request, 16384, 4096), 1u);
  EXPECT_EQ(network::message_wire_bytes(network::NetworkProtocol::infiniband,
                                        network::RdmaOp::rdma_read_request, 16384, 4096),
            26u + 16u);
  EXPECT_EQ(network::message_packets(network::RdmaOp::rdma_read_response, 16384, 4096), 4u);
}

TEST(TargetPlacement, AWritesReadOfGpuMemoryIsRedirectedLikeARead) {
  // ACS sends the NIC's peer-to-peer reads of GPU memory up as it does its
  // writes: one in-capsule write and one RDMA READ response, one each.
  for (const char* bs : {"4096", "16384"}) {
    SCOPED_TRACE(bs);
    const nlohmann::json r =
        one_io("target1", "randwrite",
               {std::string("scenario.bs=") + bs, "topology.nodes.sw0.acs_request_redirect=true"});
    EXPECT_EQ(r["remote"]["redirected_transfers"].get<std::uint64_t>(), 1u);
  }
}

TEST(TargetPlacement, StagedWritesCopyToHostMemoryFirst) {
  const nlohmann::json r = one_io("target1", "randwrite", {"scenario.path=remote_staged"});
  ASSERT_EQ(r["summary"]["ios"].get<std::uint64_t>(), 1u);
  const nlohmann::json& remote = r["remote"];
  // The copy engine writes the staging buffer and the NIC reads it into the
  // capsule: 4096 B twice; one copy.
  EXPECT_EQ(remote["initiator_host_memory_bytes"].get<std::uint64_t>(), 2u * 4096u);
  EXPECT_EQ(remote["copies"].get<std::uint64_t>(), 1u);
  EXPECT_EQ(remote["writes_in_capsule"].get<std::uint64_t>(), 1u);
  // No copy back to the GPU after the response.
  EXPECT_EQ(r["stages"].value("copy_to_gpu", nlohmann::json::object()).value("count", 0u), 0u);
}

TEST(TargetPlacement, TheOffloadHoldsAtMostItsContexts) {
  // One context: eight I/Os take the target one after another, so seven
  // wait, and the target never holds two.
  const nlohmann::json one =
      run(load_config(kTopology, kScenario,
                      {"scenario.ios=8", "scenario.threads=8", "scenario.request_origin=cpu",
                       "scenario.nvmf_target=target1_offload",
                       "topology.nodes.target1_offload.offload_max_outstanding=1"},
                      1));
  ASSERT_EQ(one["summary"]["ios"].get<std::uint64_t>(), 8u);
  EXPECT_EQ(one["remote"]["target_offload_waits"].get<std::uint64_t>(), 7u);
  const nlohmann::json many =
      run(load_config(kTopology, kScenario,
                      {"scenario.ios=8", "scenario.threads=8", "scenario.request_origin=cpu",
                       "scenario.nvmf_target=target1_offload"},
                      1));
  EXPECT_EQ(many["remote"]["target_offload_waits"].get<std::uint64_t>(), 0u);
  EXPECT_GT(one["summary"]["simulated_time_ns"].get<double>(),
            many["summary"]["simulated_time_ns"].get<double>());
}

}  // namespace
}  // namespace gpunvme::target_placement_test
