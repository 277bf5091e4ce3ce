// Routes, tree text and DOT output of the topology graph.
#include "models/topology/topology_graph.h"

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

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
  EXPECT_EQ(ids(t, g.route(5, 7)),
            (std::vector<std::string>{"gpu0", "sw0", "rc0", "cpu0", "cpu1", "rc1", "ssd1"}));
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

// The parts of a DOT text the test reads: each cluster's label and the node
// ids inside it (from the node labels "ID\\nKIND"), and each edge's label by
// the ids it joins.
struct DotText {
  std::map<std::string, std::string> cluster_label;
  std::map<std::string, std::set<std::string>> cluster_nodes;
  std::set<std::string> unclustered;
  std::map<std::pair<std::string, std::string>, std::string> edge_label;
};

DotText parse_dot(const std::string& dot) {
  DotText parsed;
  std::map<std::string, std::string> id_of_vertex;
  std::vector<std::pair<std::pair<std::string, std::string>, std::string>> edges;
  std::istringstream in(dot);
  std::string line, cluster;
  const std::regex open_cluster(R"re(^subgraph "cluster_([^"]+)" \{$)re");
  const std::regex cluster_label(R"re(^label="([^"]*)";$)re");
  const std::regex vertex(R"re(^(\d+)\[label="([^\\"]+)\\n[^"]*".*\];$)re");
  const std::regex edge(R"re(^(\d+)--(\d+) \[(?:label="([^"]*)")?.*\];$)re");
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_match(line, m, open_cluster)) {
      cluster = m[1];
      parsed.cluster_nodes[cluster];
    } else if (line == "}") {
      cluster.clear();
    } else if (!cluster.empty() && std::regex_match(line, m, cluster_label)) {
      parsed.cluster_label[cluster] = m[1];
    } else if (std::regex_match(line, m, vertex)) {
      id_of_vertex[m[1]] = m[2];
      if (cluster.empty()) {
        parsed.unclustered.insert(m[2]);
      } else {
        parsed.cluster_nodes[cluster].insert(m[2]);
      }
    } else if (std::regex_match(line, m, edge)) {
      edges.push_back({{m[1], m[2]}, m[3]});
    }
  }
  for (const auto& [ends, label] : edges) {
    std::string a = id_of_vertex.at(ends.first), b = id_of_vertex.at(ends.second);
    if (b < a) std::swap(a, b);
    parsed.edge_label[{a, b}] = label;
  }
  return parsed;
}

TEST(TopologyGraph, DotGroupsEachSocketInAClusterAndLabelsLinks) {
  TopologyConfig t = two_socket();
  TopologyGraph g(t);
  const DotText dot = parse_dot(g.dot());
  // By hand from the fixture: rc0 (socket cpu0) holds sw0 and below it gpu0
  // and ssd0; rc1 (socket cpu1) holds ssd1.
  EXPECT_EQ(dot.cluster_label,
            (std::map<std::string, std::string>{{"cpu0", "socket cpu0"}, {"cpu1", "socket cpu1"}}));
  EXPECT_EQ(dot.cluster_nodes.at("cpu0"),
            (std::set<std::string>{"cpu0", "rc0", "sw0", "gpu0", "ssd0"}));
  EXPECT_EQ(dot.cluster_nodes.at("cpu1"), (std::set<std::string>{"cpu1", "rc1", "ssd1"}));
  EXPECT_TRUE(dot.unclustered.empty());
  using Ends = std::pair<std::string, std::string>;
  EXPECT_EQ(dot.edge_label.at(Ends("rc0", "sw0")), "Gen5 x16");
  EXPECT_EQ(dot.edge_label.at(Ends("gpu0", "sw0")), "Gen5 x16");
  EXPECT_EQ(dot.edge_label.at(Ends("ssd0", "sw0")), "Gen4 x4");
  EXPECT_EQ(dot.edge_label.at(Ends("rc1", "ssd1")), "Gen4 x4");
  EXPECT_EQ(dot.edge_label.at(Ends("cpu0", "cpu1")).rfind("inter-socket ", 0), 0u);
  EXPECT_EQ(dot.edge_label.at(Ends("cpu0", "rc0")), "");  // the attachment
  EXPECT_EQ(dot.edge_label.size(), 7u);
}

TEST(TopologyGraph, DotWithoutSocketsHasNoClusters) {
  TopologyConfig t = resolve_topology(catalog(), nlohmann::json::parse(R"({
    "nodes": [{"id": "rc0", "kind": "root_complex"}, {"id": "gpu0", "kind": "gpu"}],
    "links": [{"from": "rc0", "to": "gpu0", "gen": 4, "width": 8}]})"),
                                      "no-sockets.json");
  TopologyGraph g(t);
  const DotText dot = parse_dot(g.dot());
  EXPECT_TRUE(dot.cluster_nodes.empty());
  EXPECT_EQ(dot.unclustered, (std::set<std::string>{"rc0", "gpu0"}));
  EXPECT_EQ(dot.edge_label.at({"gpu0", "rc0"}), "Gen4 x8");
}

}  // namespace
}  // namespace gpunvme
