// Several storage hosts and routes over more than one network switch: the
// shortest route and its tie-break, one read's network time over three
// switches worked by hand, two storage hosts sharing one uplink, and the
// configurations refused; credits and PFC pauses holding senders back when
// buffers are small.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "models/network/network.h"
#include "models/network/network_routes.h"
#include "sim/system/run/run.h"
#include "tests/cli/run_cli.h"

namespace gpunvme {
namespace {

const std::string kLeafSpineTopology =
    std::string(GPUNVME_SOURCE_DIR) + "/configs/topologies/three-hosts-leaf-spine.json";
const std::string kLeafSpineScenario =
    std::string(GPUNVME_SOURCE_DIR) + "/scenarios/remote/leaf-spine.json";

nlohmann::json leaf_spine_run(const std::vector<std::string>& sets) {
  return run(load_config(kLeafSpineTopology, kLeafSpineScenario, sets, 1));
}

// A topology of named ports and switches joined in the given order.
TopologyConfig cabled(const std::vector<std::pair<std::string, std::string>>& nodes,
                      const std::vector<std::pair<std::string, std::string>>& cables) {
  TopologyConfig topo;
  for (const auto& [id, kind] : nodes) topo.nodes.push_back({id, kind, "", "", {}});
  for (const auto& [from, to] : cables) topo.network_links.push_back({from, to, {}});
  return topo;
}

std::vector<std::string> route_ids(const TopologyConfig& topo, const network::NetworkRoute& r) {
  std::vector<std::string> out;
  for (const std::size_t n : r.nodes) out.push_back(topo.nodes[n].id);
  return out;
}

TEST(LeafSpine, TheRouteIsTheShortestWithTiesGoingToTheCableListedFirst) {
  // a - s1 - {s2, s3} - s4 - b: two routes of four cables, and a longer one
  // through s5; b's cable is listed before the others.
  const std::vector<std::pair<std::string, std::string>> nodes = {
      {"a", "rdma_nic"},        {"b", "rdma_nic"},        {"s1", "network_switch"},
      {"s2", "network_switch"}, {"s3", "network_switch"}, {"s4", "network_switch"},
      {"s5", "network_switch"}, {"c", "rdma_nic"}};
  const TopologyConfig topo = cabled(nodes, {{"b", "s4"},
                                             {"a", "s1"},
                                             {"s1", "s5"},
                                             {"s5", "s3"},
                                             {"s1", "s2"},
                                             {"s1", "s3"},
                                             {"s2", "s4"},
                                             {"s3", "s4"}});
  const network::NetworkRoute r = network::shortest_network_route(topo, 0, 1);
  EXPECT_EQ(route_ids(topo, r), (std::vector<std::string>{"a", "s1", "s2", "s4", "b"}));
  EXPECT_EQ(r.links, (std::vector<std::size_t>{1, 4, 6, 0}));
  EXPECT_EQ(r.switches(), 3u);
  // Listing s1-s3 before s1-s2 makes s3 the first reached: the other route.
  const TopologyConfig swapped = cabled(nodes, {{"b", "s4"},
                                                {"a", "s1"},
                                                {"s1", "s5"},
                                                {"s5", "s3"},
                                                {"s1", "s3"},
                                                {"s1", "s2"},
                                                {"s2", "s4"},
                                                {"s3", "s4"}});
  EXPECT_EQ(route_ids(swapped, network::shortest_network_route(swapped, 0, 1)),
            (std::vector<std::string>{"a", "s1", "s3", "s4", "b"}));
  // The way back is found alike; c has no cable: no route.
  EXPECT_EQ(route_ids(topo, network::shortest_network_route(topo, 1, 0)),
            (std::vector<std::string>{"b", "s4", "s2", "s1", "a"}));
  EXPECT_TRUE(network::shortest_network_route(topo, 0, 7).empty());
  // An RDMA port forwards nothing: a route from a to b may not pass c.
  const TopologyConfig through_port =
      cabled({{"a", "rdma_nic"}, {"b", "rdma_nic"}, {"c", "network_switch"}, {"d", "rdma_nic"}},
             {{"a", "c"}, {"c", "d"}});
  EXPECT_TRUE(network::shortest_network_route(through_port, 0, 1).empty());
  // Ports of a switch: its cables' order in network_links.
  EXPECT_EQ(network::switch_port(topo, 2, 1), 0u);
  EXPECT_EQ(network::switch_port(topo, 2, 5), 3u);
}

// One 4 KiB read alone, as in remote_run_test.cpp's two-host case (one
// switch: command to target 3,251.139 ns, data back 3,472.621 ns), but over
// nic0 - leaf0 - spine0 - leaf1 - nic1. Each switch beyond the first adds
// its cut-through (130 ns) and the next cable's propagation (10 ns) to every
// packet's tail: the ports are free, and a 400 Gb/s port serialises a packet
// as fast as it arrives from a 400 Gb/s cable, so the tail leaves when the
// head's cut-through and serialisation say (cut-through forwarding: the
// store-and-forward time of a 4,138 B packet, 82.76 ns, is paid once, on the
// sender's cable). Two more switches: +280 ns each way.
TEST(LeafSpine, OneReadsNetworkTimeOverThreeSwitchesMatchesTheHandWorkedFigures) {
  const nlohmann::json r =
      leaf_spine_run({"scenario.ios=1", "scenario.threads=1", "scenario.request_origin=cpu"});
  ASSERT_EQ(r["summary"]["ios"].get<std::uint64_t>(), 1u);
  EXPECT_NEAR(r["stages"]["command_to_target"]["mean"].get<double>(), 3251.139 + 280.0, 0.002);
  EXPECT_NEAR(r["stages"]["data_to_initiator"]["mean"].get<double>(), 3472.621 + 280.0, 0.002);
  // The command (90 B: 1.8 ns on nic0's cable) and the data and response
  // (4,138 B and 42 B: 82.76 + 0.84 ns) each cross 4 cables (10 ns) and 3
  // switches (130 ns): 1.8 + 40 + 390 and 83.6 + 40 + 390.
  EXPECT_NEAR(r["remote"]["per_hop_ns"]["network"].get<double>(), 431.8 + 513.6, 0.002);
  const nlohmann::json& hosts = r["remote"]["storage_hosts"];
  std::size_t used = hosts.size();
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    if (hosts[h]["ios"].get<std::uint64_t>() == 1) used = h;
  }
  ASSERT_LT(used, hosts.size());
  const nlohmann::json& host = hosts[used];
  EXPECT_EQ(host["network_switches"].get<std::size_t>(), 3u);
  EXPECT_EQ(host["route"][1].get<std::string>(), "leaf0");
  EXPECT_EQ(host["route"][2].get<std::string>(), "spine0");
  EXPECT_EQ(host["route"][3].get<std::string>(), "leaf1");
  // Per hop, per packet: the sender's cable (serialisation and 10 ns), then
  // each switch with the cable after it (130 + 10 ns). Towards the target,
  // the command alone; back, the data (92.76 ns on nic1's cable) and the
  // response (10.84 ns): a mean of 51.8 ns.
  const std::vector<double> to_target = {11.8, 140.0, 140.0, 140.0};
  const std::vector<double> to_initiator = {51.8, 140.0, 140.0, 140.0};
  ASSERT_EQ(host["hops_to_target"].size(), 4u);
  ASSERT_EQ(host["hops_to_initiator"].size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(host["hops_to_target"][i]["mean_ns"].get<double>(), to_target[i], 0.002) << i;
    EXPECT_NEAR(host["hops_to_initiator"][i]["mean_ns"].get<double>(), to_initiator[i], 0.002) << i;
  }
  EXPECT_EQ(host["hops_to_target"][0]["hop"].get<std::string>(), "nic0>leaf0");
  EXPECT_EQ(host["hops_to_initiator"][3]["hop"].get<std::string>(), "leaf0>nic0");
}

// Both storage hosts' data leaves leaf1 through its one port onto the
// spine. With leaf1's ports at 100 Gb/s, each 4 KiB read puts 4,138 B (the
// RDMA WRITE: 4,096 B, InfiniBand framing 26 B and the RETH 16 B) and 42 B
// (the response capsule's SEND) on that port: at most
// 100e9 / 8 / 4,180 = 2,990,431 reads/s in all, whichever host serves them,
// below what the initiator's cores, four SSDs and two targets sustain.
TEST(LeafSpine, TwoStorageHostsShareTheSpineUplinkAndItsBandwidthBoundsThroughput) {
  const double bound = 100e9 / 8.0 / 4180.0;
  const nlohmann::json r = leaf_spine_run(
      {"scenario.ios=16000", "scenario.request_origin=cpu", "topology.nodes.leaf1.port_gbps=100"});
  const double iops = r["summary"]["iops"].get<double>();
  EXPECT_LE(iops, bound * 1.001);
  EXPECT_GE(iops, bound * 0.9);
  // The uplink is busy almost all the run; both hosts served half the reads.
  bool found = false;
  for (const nlohmann::json& link : r["remote"]["links"]) {
    if (link["from"] == "leaf1" && link["to"] == "spine0") {
      found = true;
      EXPECT_GE(link["utilization"].get<double>(), 0.9);
    }
  }
  EXPECT_TRUE(found);
  const nlohmann::json& hosts = r["remote"]["storage_hosts"];
  ASSERT_EQ(hosts.size(), 2u);
  for (const nlohmann::json& host : hosts) {
    EXPECT_NEAR(host["ios"].get<double>(), 8000.0, 400.0) << host["host"];
  }
  // The same reads with the uplink at 400 Gb/s run faster than that bound:
  // the bound came from the shared port, not from elsewhere.
  const nlohmann::json fast = leaf_spine_run({"scenario.ios=16000", "scenario.request_origin=cpu"});
  EXPECT_GT(fast["summary"]["iops"].get<double>(), bound * 1.2);
}

// Credits on the InfiniBand cables: with the default 2 MiB port buffers no
// sender waits; with buffers of two 4 KiB packets (8,276 B) the two storage
// NICs, whose reads' data meet at leaf1's uplink, are held back, no switch
// port ever holds more than its buffer, and the run is slower.
TEST(LeafSpine, SmallBuffersHoldTheStorageNicsBackAndNeverOverflow) {
  const auto stalls_and_queues = [](const nlohmann::json& r, std::uint64_t buffer) {
    std::uint64_t stalls = 0;
    for (const auto& link : r["remote"]["links"]) {
      stalls += link["credit_stalls"].get<std::uint64_t>();
      if (link.contains("max_queue_bytes")) {
        EXPECT_LE(link["max_queue_bytes"].get<std::uint64_t>(), buffer) << link.dump();
      }
    }
    return stalls;
  };
  const nlohmann::json roomy = leaf_spine_run({});
  EXPECT_EQ(stalls_and_queues(roomy, 2097152), 0u);
  std::vector<std::string> sets;
  for (const char* sw : {"leaf0", "leaf1", "spine0"}) {
    const std::string node = std::string("topology.nodes.") + sw;
    sets.push_back(node + ".port_buffer_bytes=8276");
    sets.push_back(node + ".pfc_xoff_bytes=8276");
    sets.push_back(node + ".pfc_xon_bytes=4096");
  }
  const nlohmann::json tight = leaf_spine_run(sets);
  EXPECT_GT(stalls_and_queues(tight, 8276), 0u);
  for (const auto& link : tight["remote"]["links"]) {
    const bool storage_nic = link["from"] == "nic1" || link["from"] == "nic2";
    if (storage_nic) {
      EXPECT_GT(link["credit_stall_ns"].get<double>(), 0.0) << link.dump();
    }
  }
  EXPECT_LT(tight["summary"]["iops"].get<double>(), roomy["summary"]["iops"].get<double>());
}

// PFC on RoCEv2 cables: with XOFF at 16 KiB (XON 8 KiB, 64 KiB buffers)
// leaf1's uplink, where the two storage hosts' data meet, sends XOFFs and
// the two storage NICs are paused; the queue stays within its buffer (the
// headroom over XOFF takes what was in flight).
TEST(LeafSpine, RoceUplinkPassingXoffPausesTheStorageNics) {
  std::vector<std::string> sets;
  const nlohmann::json topology = nlohmann::json::parse(std::ifstream(kLeafSpineTopology));
  for (std::size_t i = 0; i < topology["network_links"].size(); ++i) {
    sets.push_back("topology.network_links." + std::to_string(i) + ".protocol=roce_v2");
  }
  for (const char* sw : {"leaf0", "leaf1", "spine0"}) {
    const std::string node = std::string("topology.nodes.") + sw;
    sets.push_back(node + ".port_buffer_bytes=65536");
    sets.push_back(node + ".pfc_xoff_bytes=16384");
    sets.push_back(node + ".pfc_xon_bytes=8192");
  }
  const nlohmann::json r = leaf_spine_run(sets);
  for (const auto& link : r["remote"]["links"]) {
    EXPECT_FALSE(link.contains("credit_stalls")) << link.dump();
    if (link.contains("max_queue_bytes")) {
      EXPECT_LE(link["max_queue_bytes"].get<std::uint64_t>(), 65536u) << link.dump();
    }
    if (link["from"] == "leaf1" && link["to"] == "spine0") {
      EXPECT_GT(link["xoffs_sent"].get<std::uint64_t>(), 0u) << link.dump();
    }
    if (link["from"] == "nic1" || link["from"] == "nic2") {
      EXPECT_GT(link["pause_stalls"].get<std::uint64_t>(), 0u) << link.dump();
      EXPECT_GT(link["pause_stall_ns"].get<double>(), 0.0) << link.dump();
    }
  }
}

TEST(LeafSpine, AnUnreachableStorageHostAMixOfPlacementsAndTooFewPortsAreRefused) {
  // storage_b's NIC without its cable: no route to ssd2's host.
  nlohmann::json topo;
  std::ifstream(kLeafSpineTopology) >> topo;
  topo["network_links"].erase(5);
  // Named by process: test runs of other checkouts may share the folder.
  const std::string cut =
      ::testing::TempDir() + "leaf-spine-cut-" + std::to_string(::getpid()) + ".json";
  std::ofstream(cut) << topo.dump();
  const cli_test::Outcome unreachable =
      cli_test::gpunvme("check --topology " + cut + " --scenario " + kLeafSpineScenario);
  EXPECT_EQ(unreachable.code, 2) << unreachable.output;
  EXPECT_NE(unreachable.output.find("$.ssds[2] = \"ssd2\": ssd2 is in host \"storage_b\", and "
                                    "there is no network route between nic0 and nic2"),
            std::string::npos)
      << unreachable.output;
  std::remove(cut.c_str());
  const std::string check =
      "check --topology " + kLeafSpineTopology + " --scenario " + kLeafSpineScenario + " ";
  // leaf1's third cable (to nic2) needs a third port.
  const cli_test::Outcome ports = cli_test::gpunvme(check + "--set topology.nodes.leaf1.ports=2");
  EXPECT_EQ(ports.code, 2) << ports.output;
  EXPECT_NE(ports.output.find("$.network_links[5]: leaf1 has 2 ports, and this is its cable "
                              "number 3"),
            std::string::npos)
      << ports.output;
  const cli_test::Outcome mixed =
      cli_test::gpunvme(check + "--set topology.nodes.target2.placement=nic_offload");
  EXPECT_EQ(mixed.code, 2) << mixed.output;
  EXPECT_NE(mixed.output.find("the targets a scenario reads run in one placement"),
            std::string::npos)
      << mixed.output;
  // Every piece present: accepted.
  EXPECT_EQ(cli_test::gpunvme(check).code, 0);
}

}  // namespace
}  // namespace gpunvme
