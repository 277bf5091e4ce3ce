// The topology as a graph (Boost.Graph): CPU sockets, root complexes, host
// memory, switches and endpoints joined by PCIe links, inter-socket links and
// the implicit attachments of root complexes and memory to their socket.
// Every route a transaction takes comes from here.
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <cstddef>
#include <string>
#include <vector>

#include "sim/kernel/params/param_table.h"
#include "sim/kernel/params/resolved_config.h"

namespace gpunvme {

// The GPU and SSDs a scenario names, typed (scenario_endpoints.def).
struct ScenarioEndpoints {
#define GPUNVME_PARAM GPUNVME_PARAM_MEMBER
#include "models/topology/scenario_endpoints.def"
#undef GPUNVME_PARAM
  static ScenarioEndpoints from(const ParamValues& values);
};

enum class EdgeKind { Pcie, InterSocket, Attachment };

struct TopologyVertex {
  std::string id;
  std::string kind;
  std::size_t node_index = 0;  // into TopologyConfig::nodes
};

struct TopologyEdge {
  EdgeKind kind = EdgeKind::Pcie;
  std::size_t link_index = 0;  // into TopologyConfig::links; unused for attachments
};

class TopologyGraph {
 public:
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, TopologyVertex,
                                      TopologyEdge>;

  explicit TopologyGraph(const TopologyConfig& topology);

  // Structural checks, throwing ConfigError with the node or link's JSON path.
  static void check(const TopologyConfig& topology);
  static void check_scenario(const TopologyConfig& topology, const ScenarioConfig& scenario);

  // Node indices along the route from `from` to `to`, both included; empty
  // when there is no route.
  std::vector<std::size_t> route(std::size_t from, std::size_t to) const;
  // Which nodes have a route from `from` (indexed by node).
  std::vector<bool> reachable_from(std::size_t from) const;
  // Link indices along that route (attachments left out).
  std::vector<std::size_t> route_links(std::size_t from, std::size_t to) const;

  // The PCIe parent of a node (switch or root complex above it), or npos.
  std::size_t upstream(std::size_t node) const { return upstream_[node]; }
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  std::string tree_text() const;
  std::string dot() const;
  const Graph& graph() const { return graph_; }

 private:
  const TopologyConfig& topology_;
  Graph graph_;
  std::vector<std::size_t> upstream_;
};

}  // namespace gpunvme
