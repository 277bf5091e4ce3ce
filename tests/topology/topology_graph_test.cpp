// Routes, tree text and DOT output of the topology graph.
#include <gtest/gtest.h>

#include "models/topology/topology_graph.h"
#include "sim/system/config/run_config.h"
#include "sim/system/run/catalog.h"

namespace gpunvme {
namespace {

TopologyConfig two_socket() {
  return resolve_topology(catalog(), nlohmann::json::parse(R"({
    "name": "two-socket",
    "nodes": [
      {"id": "cpu0", "kind": "cpu"}, {"id": "cpu1", "kind": "cpu"},
      {"id": "rc0", "kind": "root_complex", "socket": "cpu0"},
      {"id": "rc1", "kind": "root_complex", "socket": "cpu1"},
      {"id": "sw0", "kind": "switch"},
      {"id": "gpu0", "kind": "gpu"},
      {"id": "ssd0", "kind": "nvme_ssd"}, {"id": "ssd1", "kind": "nvme_ssd"}
    ],
    "links": [
      {"from": "rc0", "to": "sw0", "gen": 5, "width": 16},
      {"from": "sw0", "to": "gpu0", "gen": 5, "width": 16},
      {"from": "sw0", "to": "ssd0", "gen": 4, "width": 4},
      {"from": "rc1", "to": "ssd1", "gen": 4, "width": 4},
      {"type": "inter_socket", "from": "cpu0", "to": "cpu1"}
    ]})"),
                           "two-socket.json");
}

std::vector<std::string> ids(const TopologyConfig& t, const std::vector<std::size_t>& nodes) {
  std::vector<std::string> out;
  for (auto n : nodes) out.push_back(t.nodes[n].id);
  return out;
}

TEST(TopologyGraph, RouteWithinASwitchStaysBelowIt) {
  TopologyConfig t = two_socket();
  TopologyGraph g(t);
  EXPECT_EQ(ids(t, g.route(5, 6)), (std::vector<std::string>{"gpu0", "sw0", "ssd0"}));
  EXPECT_EQ(g.route_links(5, 6), (std::vector<std::size_t>{1, 2}));
}

TEST(TopologyGraph, RouteAcrossSocketsCrossesTheInterSocketLink) {
  TopologyConfig t = two_socket();
  TopologyGraph g(t);
  EXPECT_EQ(ids(t, g.route(5, 7)), (std::vector<std::string>{"gpu0", "sw0", "rc0", "cpu0", "cpu1",
                                                              "rc1", "ssd1"}));
  EXPECT_EQ(g.route_links(5, 7), (std::vector<std::size_t>{1, 0, 4, 3}));
}

TEST(TopologyGraph, UpstreamFollowsThePcieTree) {
  TopologyConfig t = two_socket();
  TopologyGraph g(t);
  EXPECT_EQ(g.upstream(5), 4u);  // gpu0 under sw0
  EXPECT_EQ(g.upstream(4), 2u);  // sw0 under rc0
  EXPECT_EQ(g.upstream(2), TopologyGraph::npos);
}

TEST(TopologyGraph, TreeTextAndDotNameEveryNodeAndLink) {
  TopologyConfig t = two_socket();
  TopologyGraph g(t);
  const std::string tree = g.tree_text();
  for (const auto& n : t.nodes) EXPECT_NE(tree.find(n.id), std::string::npos) << n.id;
  EXPECT_NE(tree.find("[Gen4 x4]"), std::string::npos);
  EXPECT_NE(tree.find("cpu0 <-> cpu1"), std::string::npos);
  const std::string dot = g.dot();
  EXPECT_EQ(dot.rfind("graph G {", 0), 0u);
  EXPECT_NE(dot.find("label=\"gpu0\\ngpu\""), std::string::npos);
  EXPECT_NE(dot.find("label=\"Gen5 x16\""), std::string::npos);
  EXPECT_NE(dot.find("style=dashed"), std::string::npos);  // socket attachments
}

}  // namespace
}  // namespace gpunvme
