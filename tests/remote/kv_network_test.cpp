// The KV cache's network tiers: remote NVMe through the remote paths and
// the remote-memory tier read by RDMA READ, against hand-worked figures, and
// the combinations they refuse.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/host/cpu_cores.h"
#include "models/host/host_specs.h"
#include "models/network/network.h"
#include "models/nic/rdma_nic.h"
#include "models/nvmf/nvmf.h"
#include "sim/kernel/params/config_error.h"
#include "sim/system/run/run.h"
#include "tests/cli/run_cli.h"
#include "tests/remote/test_nic.h"

namespace gpunvme {
namespace {

const std::string kTwoHosts =
    std::string(GPUNVME_SOURCE_DIR) + "/configs/topologies/two-hosts-rdma.json";

RunConfig kv_network_config(const std::string& scenario, std::vector<std::string> sets) {
  return load_config(kTwoHosts,
                     std::string(GPUNVME_SOURCE_DIR) + "/scenarios/remote/kv-" + scenario + ".json",
                     sets, 1);
}

// One sequence of 8 tokens over 2 layers of one KV head (128 dims, 2 B):
// 2 x 1 x 128 x 2 = 512 B per token and layer, so a block of 8 tokens is
// 4096 B and each layer has one full block besides its last (partial) one.
// HBM holds just the 2 last blocks (8192 B), DRAM nothing; 2 decode steps
// fill no block ((8 + 2) / 8 = 1 full block still).
std::vector<std::string> one_block_per_layer(const std::string& lower_tier_gib) {
  return {"scenario.layers=2",           "scenario.kv_heads=1",
          "scenario.head_dim=128",       "scenario.dtype_bytes=2",
          "scenario.gqa_group=1",        "scenario.batch=1",
          "scenario.context_tokens=8",   "scenario.block_tokens=8",
          "scenario.decode_steps=2",     "scenario.hbm_kv_gib=7.62939453125e-06",
          "scenario.host_kv_gib=0",      "scenario.remote_kv_gib=" + lower_tier_gib,
          "scenario.threads=4",          "scenario.request_origin=cpu",
          "scenario.layer_compute_us=20"};
}

double step_stall_ns(const nlohmann::json& r, std::size_t step) {
  return r["kv_cache"]["steps"][step]["stall_ns"].get<double>();
}

// An RDMA READ response, built by the responding NIC itself: no doorbell,
// no WQE fetch. 8192 B from address 0 of 4 KiB registered pages, asked for at
// 1000 ns (hand_worked_nic: 123 ns pipeline, 570 ns DMA reads, 460 Gb/s):
// rate slot 1000, pipeline 1123, two translation misses read together 1693,
// first payload read 2263; 4096 B by DMA (71.235 ns) each, so the packets are
// ready at 2334.235 and 2405.47; 4126 B on a 400 Gb/s cable take 82.52 ns, so
// the second waits for the first: it starts at 2416.755. Posted by a verb
// instead, the same message waits 855 ns more (doorbell 285 + WQE fetch 570).
TEST(KvNetwork, ReadResponseSkipsTheDoorbellAndWqeFetch) {
  network::NetworkLinkParams cable;
  cable.protocol = network::NetworkProtocol::infiniband;
  cable.gbps = 400.0;
  cable.mtu_bytes = 4096;
  cable.latency_ns = ns_to_ps(10.0);
  const nic::RdmaMessage response{network::RdmaOp::rdma_read_response, 8192, 3, 0};
  nic::RdmaNic responder(test::hand_worked_nic(16));
  network::NetworkLink responder_cable(cable);
  const nic::SentMessage sent = responder.originate(ns_to_ps(1000.0), response, responder_cable, 0);
  ASSERT_EQ(sent.packets.size(), 2u);
  EXPECT_EQ(sent.packets[0].start, ns_to_ps(2334.235));
  EXPECT_EQ(sent.packets[1].start, ns_to_ps(2416.755));
  EXPECT_EQ(sent.translation_misses, 2u);
  EXPECT_EQ(sent.mmio_bytes, 0u);
  EXPECT_EQ(sent.dma_read_bytes, 8192u + 2u * 8u);  // payload and two 8 B entries
  // 4096 + 26 B of headers + 4 B AETH on the first and on the last packet.
  EXPECT_EQ(sent.wire_bytes, 2u * 4126u);

  nic::RdmaNic poster(test::hand_worked_nic(16));
  network::NetworkLink poster_cable(cable);
  const nic::SentMessage posted = poster.transmit(ns_to_ps(1000.0), response, poster_cable, 0);
  EXPECT_EQ(posted.packets[0].start, ns_to_ps(2334.235 + 855.0));
}

// Bytes per decode step from the network tier: every full block of every
// layer and sequence not in HBM or DRAM crosses the network once a step.
// 2 sequences x 2048 tokens, blocks of 16 tokens of 2 x 8 x 128 x 2 = 4096 B
// per token and layer (65536 B a block): 128 full blocks per sequence and
// layer, 2048 over 8 layers. HBM (32 MiB, 512 blocks) keeps 16 last blocks
// and 496 full ones, DRAM (32 MiB) 512: 1040 full blocks (68157440 B) are
// remote, on NVMe or in the remote-memory tier.
TEST(KvNetwork, BytesPerDecodeStepFromTheNetworkTierMatchTheHandCount) {
  constexpr std::uint64_t kRemoteBlocks = 2048 - 496 - 512;
  constexpr std::uint64_t kPerStep = kRemoteBlocks * 65536;
  static_assert(kPerStep == 68157440, "hand count");
  for (const char* scenario : {"staged", "gpudirect", "dpu", "remote-memory"}) {
    SCOPED_TRACE(scenario);
    // One step, no reload measurement (it would read NVMe too).
    const nlohmann::json r = run(
        kv_network_config(scenario, {"scenario.decode_steps=1", "scenario.measure_reload=false"}));
    const nlohmann::json& tier = r["kv_cache"]["network_tier"];
    ASSERT_EQ(tier["bytes_per_step"].size(), 1u);
    EXPECT_EQ(tier["bytes_per_step"][0].get<std::uint64_t>(), kPerStep);
    const bool memory = std::string(scenario) == "remote-memory";
    // The remote-memory tier (72 MiB, 1152 blocks) holds all 1040: one READ
    // per block, no NVMe-oF command.
    EXPECT_EQ(tier["remote_memory_reads"].get<std::uint64_t>(), memory ? kRemoteBlocks : 0u);
    EXPECT_EQ(tier["remote_nvme_to_hbm"].get<std::uint64_t>(), memory ? 0u : kPerStep);
    EXPECT_EQ(r["summary"]["ios"].get<std::uint64_t>(), memory ? 0u : kRemoteBlocks);
    EXPECT_TRUE(r["kv_cache"]["data_complete"].get<bool>());
    // The staged path moves every byte through the GPU host's DRAM twice
    // (the NIC's write, the copy's read).
    const nlohmann::json& remote = r["remote"];
    const nlohmann::json& seams = memory ? remote["memory_tier"] : remote;
    const std::uint64_t staged = std::string(scenario) == "staged" ? 2 * kPerStep : 0;
    EXPECT_EQ(seams["initiator_host_memory_bytes"].get<std::uint64_t>(), staged);
  }
}

// One 4096 B RDMA READ of the remote-memory tier on nvmf_gpudirect, alone,
// worked by hand from the declared defaults (as tests/remote/remote_run_test
// does for NVMe-oF: rdma_nic host_read_ns 570, one way 285, pipeline 123,
// 5 ns message slots, DMA at 460 Gb/s; InfiniBand links of 400 Gb/s and
// 10 ns, a switch of 130 ns cut-through). From the post on the initiator:
//   READ request: doorbell 285 + WQE fetch 570 = 855, pipeline 978; one
//   42 B packet (26 B headers, 16 B RETH, 0.84 ns) reaches nic1 150.84 ns
//   later, 1128.84; nic1's pipeline: 1251.84.
//   Response: pipeline 1374.84, translation miss (first page) 1944.84,
//   first read 2514.84, 4096 B at 460 Gb/s (71.235) 2586.075; 4126 B on the
//   wire (AETH 4 B; 82.52 ns) reach nic0 at 2818.595; nic0 misses on the GPU
//   buffer (123 + 570): 3511.595, writes 71.235 and the 64 B CQE 1.113 and
//   it lands 285 later: 3868.943.
// The host core posts (cpu submit) and reaps it (complete_poll) around it.
constexpr double kFirstReadNs = 3868.943;
// A later READ of the same pages misses on neither NIC: 2 x 570 ns less.
constexpr double kWarmReadNs = kFirstReadNs - 1140.0;

double post_and_reap_ns() {
  const RunConfig c = kv_network_config("remote-memory", {});
  const host::CpuIoCosts costs = host::cpu_io_costs(c.topology.node("cpu0")->params);
  return static_cast<double>(costs.submit + costs.complete_poll) / 1000.0;
}

// Stall of a decode step: with prefetch_layers = 0 layer l's block is
// fetched only once layer l - 1 is done, so the GPU waits one whole read
// per layer; the first step's two reads are the first on their target
// pages (layer 0: both NICs miss; layer 1: the staging buffer is layer 0's,
// so only the target misses), the second step's are warm.
TEST(KvNetwork, StepStallWithoutOverlapIsOneRemoteReadPerLayer) {
  const double core = post_and_reap_ns();
  std::vector<std::string> sets = one_block_per_layer("7.62939453125e-06");
  sets.push_back("scenario.prefetch_layers=0");
  const nlohmann::json r = run(kv_network_config("remote-memory", sets));
  ASSERT_EQ(r["kv_cache"]["network_tier"]["remote_memory_reads"].get<std::uint64_t>(), 4u);
  const double first = kFirstReadNs + core;
  EXPECT_NEAR(step_stall_ns(r, 0), first + (first - 570.0), 0.01);
  EXPECT_NEAR(step_stall_ns(r, 1), 2 * (kWarmReadNs + core), 0.01);
}

// With prefetch_layers = 1 both layers' reads start together; the GPU waits
// for layer 0's (the first read, unaffected by the second behind it) and
// then computes for 20 us, far longer than layer 1's read. In step 1 each
// read starts a layer ahead and ends under the previous layer's compute:
// no stall.
TEST(KvNetwork, StepStallWithOverlapIsTheFirstReadOnly) {
  const double core = post_and_reap_ns();
  std::vector<std::string> sets = one_block_per_layer("7.62939453125e-06");
  sets.push_back("scenario.prefetch_layers=1");
  const nlohmann::json r = run(kv_network_config("remote-memory", sets));
  EXPECT_NEAR(step_stall_ns(r, 0), kFirstReadNs + core, 0.01);
  EXPECT_NEAR(step_stall_ns(r, 1), 0.0, 0.001);
}

// The remote-memory tier's seams on each path, four 4096 B READs (2 layers
// x 2 steps): staged, each block lands in the GPU host's DRAM and a copy
// engine reads it out (2 x 16384 B, 4 copies), and a host core spends the
// post, the reap and the copy's launch and synchronisation on each; the DPU
// path spends arm_io_ns of an Arm core and no host core; no path spends
// target core time or carries an NVMe-oF command.
TEST(KvNetwork, RemoteMemorySeamsPerPath) {
  const RunConfig base = kv_network_config("remote-memory", {});
  const host::CpuIoCosts costs = host::cpu_io_costs(base.topology.node("cpu0")->params);
  const double arm_io_ns =
      static_cast<double>(nvmf::DpuParams::from(base.topology.node("dpu0")->params).arm_io_ns) /
      1000.0;
  for (const char* path : {"remote_staged", "nvmf_gpudirect", "dpu"}) {
    SCOPED_TRACE(path);
    std::vector<std::string> sets = one_block_per_layer("7.62939453125e-06");
    sets.push_back(std::string("scenario.path=") + path);
    sets.push_back("scenario.measure_reload=false");  // its reload would read NVMe
    const nlohmann::json r = run(kv_network_config("remote-memory", sets));
    const nlohmann::json& tier = r["remote"]["memory_tier"];
    const bool staged = std::string(path) == "remote_staged";
    const bool dpu = std::string(path) == "dpu";
    EXPECT_EQ(tier["reads"].get<std::uint64_t>(), 4u);
    EXPECT_EQ(tier["bytes"].get<std::uint64_t>(), 4u * 4096u);
    EXPECT_EQ(tier["copies"].get<std::uint64_t>(), staged ? 4u : 0u);
    EXPECT_EQ(tier["initiator_host_memory_bytes"].get<std::uint64_t>(), staged ? 2u * 16384u : 0u);
    EXPECT_EQ(tier["target_host_memory_bytes"].get<std::uint64_t>(), 16384u);
    EXPECT_EQ(r["summary"]["ios"].get<std::uint64_t>(), 0u);
    double host_ns = static_cast<double>(costs.submit + costs.complete_poll) / 1000.0;
    if (staged) host_ns += static_cast<double>(costs.copy_launch + costs.copy_sync) / 1000.0;
    EXPECT_NEAR(tier["host_core_ns_per_read"].get<double>(), dpu ? 0.0 : host_ns, 0.001);
    EXPECT_NEAR(tier["dpu_core_ns_per_read"].get<double>(), dpu ? arm_io_ns : 0.0, 0.001);
    // Request and response: 1 + 1 packets per READ of one MTU.
    EXPECT_EQ(tier["packets"].get<std::uint64_t>(), 8u);
    // 42 B (headers and RETH) and 4126 B (headers, AETH and the block) a READ.
    EXPECT_EQ(tier["wire_bytes"].get<std::uint64_t>(), 4u * (42u + 4126u));
  }
}

// One sequence of 7 tokens over 1 layer (blocks of 8 tokens of 512 B per
// token, 4096 B): no full block before decoding, so nothing is read; the
// first decode step fills the block, HBM holds only the last block and DRAM
// nothing, so it goes to the remote-memory tier (one block) by one RDMA
// WRITE, or, without that tier, to the storage host's NVMe by one NVMe-oF
// write.
std::vector<std::string> one_block_fills(const std::string& remote_gib, const std::string& path) {
  return {"scenario.layers=1",
          "scenario.kv_heads=1",
          "scenario.head_dim=128",
          "scenario.dtype_bytes=2",
          "scenario.gqa_group=1",
          "scenario.batch=1",
          "scenario.context_tokens=7",
          "scenario.block_tokens=8",
          "scenario.decode_steps=1",
          "scenario.hbm_kv_gib=3.814697265625e-06",
          "scenario.host_kv_gib=0",
          "scenario.remote_kv_gib=" + remote_gib,
          "scenario.threads=4",
          "scenario.request_origin=cpu",
          "scenario.layer_compute_us=20",
          "scenario.measure_reload=false",
          "scenario.path=" + path};
}

// One 4096 B RDMA WRITE into the remote-memory tier on nvmf_gpudirect, alone,
// from the declared defaults (the figures of the READ above). From the post:
//   doorbell 285 + WQE fetch 570 = 855, pipeline 978, translation miss on the
//   GPU buffer 1548, first read 2118, 4096 B at 460 Gb/s 2189.235; 4138 B on
//   the wire (26 B headers, 16 B RETH; 82.76 ns) through cable, switch and
//   cable reach nic1 at 2421.995; nic1 misses on the KV region (123 + 570)
//   3114.995, writes 71.235 and it lands 285 later: 3471.23.
//   ACK from nic1: pipeline 3594.23, one 30 B packet (AETH; 0.6 ns) reaches
//   nic0 150.6 later, 3744.83; nic0's pipeline 3867.83, the 64 B CQE 1.113
//   and 285 to land: 4153.943.
// The host core posts (cpu submit) and reaps it (complete_poll) around it.
constexpr double kFirstWriteNs = 4153.943;

TEST(KvNetwork, ABlockFilledDuringDecodingIsOneRdmaWriteWorkedByHand) {
  const RunConfig c =
      kv_network_config("remote-memory", one_block_fills("3.814697265625e-06", "nvmf_gpudirect"));
  const host::CpuIoCosts costs = host::cpu_io_costs(c.topology.node("cpu0")->params);
  const double core = static_cast<double>(costs.submit + costs.complete_poll) / 1000.0;
  const nlohmann::json r = run(c);
  const nlohmann::json& tier = r["remote"]["memory_tier"];
  EXPECT_EQ(tier["reads"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(tier["writes"].get<std::uint64_t>(), 1u);
  EXPECT_EQ(tier["write_bytes"].get<std::uint64_t>(), 4096u);
  EXPECT_NEAR(tier["mean_write_ns"].get<double>(), kFirstWriteNs + core, 0.002);
  EXPECT_NEAR(tier["host_core_ns_per_write"].get<double>(), core, 0.001);
  // WRITE and ACK: 4138 + 30 B.
  EXPECT_EQ(tier["write_packets"].get<std::uint64_t>(), 2u);
  EXPECT_EQ(tier["write_wire_bytes"].get<std::uint64_t>(), 4138u + 30u);
  const nlohmann::json& hops = tier["write_per_hop_ns"];
  EXPECT_NEAR(
      hops["network"].get<double>() + hops["nic_pcie"].get<double>() + hops["nic"].get<double>(),
      kFirstWriteNs, 0.002);
  const nlohmann::json& net = r["kv_cache"]["network_tier"];
  EXPECT_EQ(net["hbm_to_remote_memory"].get<std::uint64_t>(), 4096u);
  EXPECT_EQ(net["remote_memory_writes"].get<std::uint64_t>(), 1u);
  ASSERT_EQ(net["write_bytes_per_step"].size(), 1u);
  EXPECT_EQ(net["write_bytes_per_step"][0].get<std::uint64_t>(), 4096u);
  // The write starts at the step's end.
  EXPECT_NEAR(net["write_ns_per_step"][0].get<double>(), kFirstWriteNs + core, 0.002);
  EXPECT_TRUE(r["kv_cache"]["data_complete"].get<bool>());
}

// Two layers of one sequence of 8 tokens (one full block each) decode 8
// steps: the 8th fills each layer's second block, 2 x 4096 B, written at
// step 7 into the network tier, by RDMA WRITE or by NVMe-oF writes whose
// 4 KiB fit the capsule; every path, the warps' included.
TEST(KvNetwork, FilledBlocksGoToEitherNetworkTierOnEveryPath) {
  for (const char* path : {"remote_staged", "nvmf_gpudirect", "dpu", "gpu_network"}) {
    for (const bool memory : {true, false}) {
      SCOPED_TRACE(std::string(path) + (memory ? " memory" : " nvme"));
      std::vector<std::string> sets =
          one_block_per_layer(memory ? "1.52587890625e-05" : "0");  // 4 blocks, or none
      sets.push_back("scenario.decode_steps=8");
      sets.push_back("scenario.measure_reload=false");
      sets.push_back(std::string("scenario.path=") + path);
      const nlohmann::json r = run(kv_network_config("remote-memory", sets));
      const nlohmann::json& net = r["kv_cache"]["network_tier"];
      ASSERT_EQ(net["write_bytes_per_step"].size(), 8u);
      for (std::size_t step = 0; step < 8; ++step) {
        EXPECT_EQ(net["write_bytes_per_step"][step].get<std::uint64_t>(), step == 7 ? 8192u : 0u);
        EXPECT_EQ(net["write_ns_per_step"][step].get<double>() > 0.0, step == 7);
      }
      EXPECT_EQ(net["hbm_to_remote_memory"].get<std::uint64_t>(), memory ? 8192u : 0u);
      EXPECT_EQ(net["hbm_to_remote_nvme"].get<std::uint64_t>(), memory ? 0u : 8192u);
      EXPECT_EQ(net["remote_memory_writes"].get<std::uint64_t>(), memory ? 2u : 0u);
      EXPECT_EQ(r["remote"]["writes_in_capsule"].get<std::uint64_t>(), memory ? 0u : 2u);
      // 8 steps x 2 layers read one full block each (16 x 4096 B).
      EXPECT_EQ(memory ? net["remote_memory_to_hbm"].get<std::uint64_t>()
                       : net["remote_nvme_to_hbm"].get<std::uint64_t>(),
                16u * 4096u);
      EXPECT_TRUE(r["kv_cache"]["data_complete"].get<bool>());
    }
  }
}

// One block read by the GPU's warps (gpu_network): a warp writes an RDMA READ
// WQE into its send queue and rings nic0's doorbell; the exchange from the
// doorbell's landing is the READ's above less its 285 ns doorbell leg (the
// fabric timed the warp's write): 3583.943 ns; with BlueFlame the WQE came
// in the write, 570 ns less. No core of either host.
TEST(KvNetwork, GpuNetworkWarpsPostTheRdmaReadWorkedByHand) {
  for (const bool blueflame : {false, true}) {
    SCOPED_TRACE(blueflame ? "blueflame" : "doorbell");
    std::vector<std::string> sets = one_block_per_layer("3.814697265625e-06");
    sets.push_back("scenario.layers=1");
    sets.push_back("scenario.decode_steps=1");
    sets.push_back("scenario.hbm_kv_gib=3.814697265625e-06");
    sets.push_back("scenario.measure_reload=false");
    sets.push_back("scenario.request_origin=gpu");
    sets.push_back("scenario.path=gpu_network");
    if (blueflame) sets.push_back("topology.nodes.nic0.wqe_posting=blueflame");
    const nlohmann::json r = run(kv_network_config("remote-memory", sets));
    const nlohmann::json& tier = r["remote"]["memory_tier"];
    ASSERT_EQ(tier["reads"].get<std::uint64_t>(), 1u);
    const nlohmann::json& hops = tier["per_hop_ns"];
    const double exchange =
        hops["network"].get<double>() + hops["nic_pcie"].get<double>() + hops["nic"].get<double>();
    EXPECT_NEAR(exchange, kFirstReadNs - 285.0 - (blueflame ? 570.0 : 0.0), 0.002);
    EXPECT_EQ(hops["initiator"].get<double>(), 0.0);
    EXPECT_EQ(tier["host_core_ns_per_read"].get<double>(), 0.0);
    // The warp's own time around it: noticing, writing the WQE, fences,
    // doorbell, polling the CQ.
    EXPECT_GT(tier["mean_read_ns"].get<double>(), exchange);
    const nlohmann::json& g = r["remote"]["gpu_network"];
    EXPECT_EQ(g["rdma_read_wqes"].get<std::uint64_t>(), 1u);
    EXPECT_EQ(g["requester_cqes"].get<std::uint64_t>(), 1u);
    EXPECT_EQ(g["wqe_fetches"].get<std::uint64_t>(), blueflame ? 0u : 1u);
    EXPECT_EQ(g["blueflame_writes"].get<std::uint64_t>(), blueflame ? 1u : 0u);
    EXPECT_EQ(r["summary"]["ios"].get<std::uint64_t>(), 0u);
  }
}

// Refusals, through the program (exit code 2 and the field's JSON path).
cli_test::Outcome kv_network_run(const std::string& scenario, const std::string& sets) {
  return cli_test::gpunvme("run --scenario " + std::string(GPUNVME_SOURCE_DIR) +
                           "/scenarios/remote/kv-" + scenario + ".json --topology " + kTwoHosts +
                           " " + sets + " --out /dev/null");
}

TEST(KvNetwork, RefusesTiersTheRunCannotServe) {
  struct Case {
    const char* sets;
    const char* expected;
  };
  const Case cases[] = {
      // Smaller than one block of 65536 B.
      {"--set scenario.remote_kv_gib=1e-9", "$.remote_kv_gib = 1e-09: holds no whole KV block"},
      // More than the storage host's 512 GiB.
      {"--set scenario.remote_kv_gib=1000", "has 512 GiB of host_memory"},
      // SSD-side attention and key commands are not carried over NVMe-oF.
      {"--set scenario.policy=in_storage", "$.policy = \"in_storage\": in_storage runs attention"},
      {"--set scenario.kv_request=key", "$.kv_request = \"key\": the remote paths carry"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.sets);
    const cli_test::Outcome o = kv_network_run("remote-memory", c.sets);
    EXPECT_EQ(o.code, 2) << o.output;
    EXPECT_NE(o.output.find(c.expected), std::string::npos) << o.output;
  }
  const cli_test::Outcome local = cli_test::gpunvme(
      "run --scenario " + std::string(GPUNVME_SOURCE_DIR) +
      "/scenarios/kv-cache-gds.json --set scenario.remote_kv_gib=0.1 --out /dev/null");
  EXPECT_EQ(local.code, 2) << local.output;
  EXPECT_NE(local.output.find("$.remote_kv_gib = 0.1: a remote-memory tier is read by RDMA READ"),
            std::string::npos)
      << local.output;
}

}  // namespace
}  // namespace gpunvme
