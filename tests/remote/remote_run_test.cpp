// Remote reads in runs: the two-host topology, the three remote paths through
// the event simulation, and the configurations they refuse.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/network/network.h"
#include "models/nic/rdma_nic.h"
#include "models/nvmf/nvmf.h"
#include "sim/system/run/run.h"
#include "tests/cli/run_cli.h"

namespace gpunvme {
namespace {

const std::string kTopology =
    std::string(GPUNVME_SOURCE_DIR) + "/configs/topologies/two-hosts-rdma.json";

nlohmann::json remote_run(const std::string& path, std::vector<std::string> sets) {
  sets.push_back("scenario.path=" + path);
  return run(load_config(kTopology,
                         std::string(GPUNVME_SOURCE_DIR) + "/scenarios/remote/" +
                             (path == "remote_staged"    ? "staged"
                              : path == "nvmf_gpudirect" ? "gpudirect"
                                                         : "dpu") +
                             ".json",
                         sets, 1));
}

double stage_ns(const nlohmann::json& r, const char* stage) {
  return r["stages"][stage]["mean"].get<double>();
}

// One 4 KiB read alone, worked by hand from the declared defaults (rdma_nic:
// host_read_ns 570, so a one-way PCIe write 285; pipeline_ns 123; 200 M
// messages/s, a 5 ns slot; DMA at 460 Gb/s; network_link: InfiniBand, 26 B of
// framing, 400 Gb/s, 10 ns cables; network_switch: 130 ns cut-through, 400 Gb/s
// ports). Every translation misses on a first I/O.
//
// Command capsule (64 B SEND) from nic0: doorbell 285 + WQE fetch 570 = 855;
// pipeline 978; translation miss 1548; first read 2118; 64 B at 460 Gb/s
// (1.113) = 2119.113; 90 B on the cable (1.8) leaves 2119.113, its head is at
// the switch at 2129.113, leaves the port 130 ns later and its tail reaches
// nic1 at 2270.913. nic1: miss, pipeline and entry read, 2270.913 + 123 + 570
// = 2963.913; 64 B written (1.113), the CQE behind it (1.113) and a one-way
// 285: 3251.139 ns.
constexpr double kCommandToTargetNs = 3251.139;
// Data (4096 B RDMA WRITE) and response (16 B SEND) from nic1 at once: the
// data's WQE and miss as above (2118), 4096 B read at 460 Gb/s (71.235) =
// 2189.235; 4138 B on the wire (82.76 ns) reaches nic0 at 2421.995 (cable,
// cut-through, port, cable). The response takes the next message slot (5 ns
// later), misses on the second page of the capsule ring, and follows the data
// on the cable and the port: its tail reaches nic0 at 2422.835. nic0 writes
// the data after a miss (2421.995 + 123 + 570 = 3114.995, + 71.235), then the
// response's 16 B (0.278) and its CQE (1.113), landing 285 later: 3472.621 ns.
constexpr double kDataToInitiatorNs = 3472.621;

TEST(RemoteRun, OneReadsHopsMatchTheHandWorkedFiguresAndTheModelLevelExchange) {
  const nlohmann::json r = remote_run(
      "nvmf_gpudirect", {"scenario.ios=1", "scenario.threads=1", "scenario.request_origin=cpu"});
  ASSERT_EQ(r["summary"]["ios"].get<std::uint64_t>(), 1u);
  EXPECT_NEAR(stage_ns(r, "command_to_target"), kCommandToTargetNs, 0.002);
  EXPECT_NEAR(stage_ns(r, "data_to_initiator"), kDataToInitiatorNs, 0.002);
  // The network part of both exchanges: the command's 1.8 + 10 + 130 + 10
  // (151.8) and the data and response's 82.76 + 10 + 130 + 0.84 + 10 (233.6).
  EXPECT_NEAR(r["remote"]["per_hop_ns"]["network"].get<double>(), 151.8 + 233.6, 0.002);

  // Uncontended, the model-level exchange (nvmf::remote_read, which
  // remote_paths builds on) gives the same times for the same SSD time: the
  // target's stage less its core time.
  const nvmf::NvmfTargetParams target_params = nvmf::NvmfTargetParams::from(
      ParamValues(nlohmann::json{{"cores", 8}, {"io_ns", 731.0}, {"in_capsule_data_bytes", 4096}}));
  nvmf::TargetCores cores(target_params.cores, target_params.io_ns * 1000);
  const auto nic_params = [] {
    nlohmann::json values = nlohmann::json::object();
    for (const ParamSpec& p : nic::rdma_nic_spec().params) values[p.name] = p.default_value;
    return nic::RdmaNicParams::from(ParamValues(values));
  }();
  nlohmann::json link_values = nlohmann::json::object();
  for (const ParamSpec& p : network::network_link_spec().params) {
    link_values[p.name] = p.default_value;
  }
  nlohmann::json switch_values = nlohmann::json::object();
  for (const ParamSpec& p : network::network_switch_spec().params) {
    switch_values[p.name] = p.default_value;
  }
  nic::RdmaNic initiator(nic_params);
  nic::RdmaNic target(nic_params);
  network::NetworkLink link(network::NetworkLinkParams::from(ParamValues(link_values)));
  network::NetworkSwitch net_switch(network::NetworkSwitchParams::from(ParamValues(switch_values)));
  nvmf::SwitchHop via{net_switch, 1, 0};
  const double target_stage = stage_ns(r, "target");
  const auto ssd_ps = static_cast<Picoseconds>(std::llround((target_stage - 731.0) * 1000.0));
  const nvmf::RemoteRead model =
      nvmf::remote_read(0, 4096, 1, 0x10000, initiator, target, link, cores, ssd_ps, &via);
  EXPECT_NEAR(static_cast<double>(model.command_at_target) / 1000.0, kCommandToTargetNs, 0.001);
  EXPECT_NEAR(static_cast<double>(model.completed - model.ssd_done) / 1000.0, kDataToInitiatorNs,
              0.002);
}

TEST(RemoteRun, EveryPathCompletesWithItsSeams) {
  for (const char* path : {"remote_staged", "nvmf_gpudirect", "dpu"}) {
    SCOPED_TRACE(path);
    const nlohmann::json r = remote_run(path, {"scenario.ios=400", "scenario.threads=64"});
    EXPECT_EQ(r["summary"]["ios"].get<std::uint64_t>(), 400u);
    EXPECT_EQ(r["summary"]["errors"].get<std::uint64_t>(), 0u);
    const nlohmann::json& remote = r["remote"];
    const bool staged = std::string(path) == "remote_staged";
    // Staged: the NIC writes each 4 KiB into host memory and the copy reads it.
    EXPECT_EQ(remote["initiator_host_memory_bytes"].get<std::uint64_t>(),
              staged ? 2u * 400u * 4096u : 0u);
    EXPECT_EQ(remote["copies"].get<std::uint64_t>(), staged ? 400u : 0u);
    EXPECT_EQ(remote["target_host_memory_bytes"].get<std::uint64_t>(), 2u * 400u * 4096u);
    // The target's core time per I/O is its fitted 731 ns.
    EXPECT_NEAR(remote["target_core_ns_per_io"].get<double>(), 731.0, 0.5);
    const bool dpu = std::string(path) == "dpu";
    EXPECT_EQ(remote["dpu_core_ns_per_io"].get<double>() > 0.0, dpu);
    EXPECT_EQ(remote["host_core_ns_per_io"].get<double>() > 0.0, !dpu);
    EXPECT_GT(remote["registrations"]["initiator_nic"]["translation_misses"].get<std::uint64_t>(),
              0u);
    EXPECT_GT(remote["per_hop_ns"]["ssd"].get<double>(), 45000.0);  // PM1743: tR 45 us
  }
}

// 64 KiB reads over 25 Gb/s cables: the storage host's cable carries each
// read's 16 packets of 4096 B (26 B of framing each, and a 16 B RETH on the
// first) and the response (16 B + 26), 66010 B in all, and saturates: the
// reads arrive at 25 Gb/s x 65536 / 66010 = 3.1026 GB/s.
TEST(RemoteRun, ASlowLinkSaturatesAtItsSerialisationRate) {
  const nlohmann::json r = remote_run(
      "nvmf_gpudirect", {"scenario.ios=1500", "scenario.threads=128", "scenario.bs=65536",
                         "topology.network_links.0.gbps=25", "topology.network_links.1.gbps=25",
                         "topology.network_links.2.gbps=25"});
  const double wire = 16.0 * (4096 + 26) + 16 + 16 + 26;
  EXPECT_NEAR(r["summary"]["bandwidth_gbps"].get<double>(), 25.0 / 8.0 * 65536.0 / wire,
              0.01 * 3.1);
}

TEST(RemoteRun, AcsRedirectIsCountedAndARefusingRootComplexIsAConfigError) {
  const nlohmann::json r = remote_run(
      "nvmf_gpudirect",
      {"scenario.ios=100", "scenario.threads=16", "topology.nodes.sw0.acs_request_redirect=true"});
  EXPECT_EQ(r["remote"]["redirected_transfers"].get<std::uint64_t>(), 100u);

  const std::string scenario = std::string(GPUNVME_SOURCE_DIR) + "/scenarios/remote/gpudirect.json";
  const cli_test::Outcome refused =
      cli_test::gpunvme("check --topology " + kTopology + " --scenario " + scenario +
                        " --set topology.nodes.sw0.acs_request_redirect=true"
                        " --set topology.nodes.rc0.peer_to_peer=block");
  EXPECT_EQ(refused.code, 2) << refused.output;
  EXPECT_NE(refused.output.find("$.path = \"nvmf_gpudirect\": nic0 cannot write into gpu0"),
            std::string::npos)
      << refused.output;
  // The staged path does not need the peer path.
  const cli_test::Outcome staged = cli_test::gpunvme(
      "check --topology " + kTopology + " --scenario " + scenario +
      " --set scenario.path=remote_staged --set topology.nodes.sw0.acs_request_redirect=true"
      " --set topology.nodes.rc0.peer_to_peer=block");
  EXPECT_EQ(staged.code, 0) << staged.output;
}

TEST(RemoteRun, BadNodesAndMissingPiecesAreConfigErrors) {
  const std::string scenario = std::string(GPUNVME_SOURCE_DIR) + "/scenarios/remote/gpudirect.json";
  const std::string check = "check --topology " + kTopology + " --scenario " + scenario + " ";
  struct Case {
    std::string sets;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {"--set topology.network_links.0.to=gpu0",
            "$.network_links[0].to = \"gpu0\": a network link joins rdma_nic, dpu and "
            "network_switch nodes; gpu0 is a gpu"},
           {"--set topology.nodes.nic0.host=storage_host",
            "joins host \"gpu_host\" (sw0) and host \"storage_host\" (nic0)"},
           {"--set scenario.path=gds",
            "$.ssds[0] = \"ssd0\": no path between gpu0 and ssd0 over PCIe"},
           {"--set topology.nodes.target1.host=gpu_host"
            " --set topology.nodes.target1_dpu.host=gpu_host"
            " --set topology.nodes.target1_offload.host=gpu_host",
            "needs an rdma_nic and an nvmf_target node"},
           {"--set topology.nodes.nic0.frobnicate=1", "frobnicate"},
           {"--set topology.nodes.ib0.pfc_xon_bytes=1600000",
            ".pfc_xon_bytes = 1600000: expected at most pfc_xoff_bytes (1572864)"},
           {"--set topology.nodes.ib0.pfc_xoff_bytes=3000000",
            ".pfc_xoff_bytes = 3000000: expected at most port_buffer_bytes (2097152)"},
           {"--set topology.nodes.ib0.port_buffer_bytes=4096"
            " --set topology.nodes.ib0.pfc_xoff_bytes=2048"
            " --set topology.nodes.ib0.pfc_xon_bytes=1024",
            ".port_buffer_bytes = 4096: expected at least one packet of its cable "
            "$.network_links[0] (4138 B: a 4096 B MTU with its headers)"},
       }) {
    SCOPED_TRACE(c.sets);
    const cli_test::Outcome o = cli_test::gpunvme(check + c.sets);
    EXPECT_EQ(o.code, 2) << o.output;
    EXPECT_NE(o.output.find(c.message), std::string::npos) << o.output;
  }
}

}  // namespace
}  // namespace gpunvme
