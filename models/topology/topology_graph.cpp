#include "models/topology/topology_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/graph/breadth_first_search.hpp>
#include <map>
#include <numeric>
#include <queue>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "models/pcie/pcie_specs.h"
#include "sim/kernel/params/config_error.h"
#include "sim/kernel/params/json_path.h"

namespace gpunvme {

namespace {

// The socket a root complex or a host memory names.
std::string socket_of(const NodeConfig& n) {
  return n.kind == "root_complex" ? pcie::RootComplexParams::from(n.params).socket
                                  : pcie::HostMemoryParams::from(n.params).socket;
}

bool is_endpoint(const std::string& kind) {
  return kind == "gpu" || kind == "nvme_ssd" || kind == "rdma_nic" || kind == "dpu" ||
         kind == "cxl_memory";
}
bool is_pcie_kind(const std::string& kind) {
  return kind == "root_complex" || kind == "switch" || is_endpoint(kind);
}
// Nodes a network link may join: RDMA ports and network switches.
bool is_network_kind(const std::string& kind) {
  return kind == "rdma_nic" || kind == "dpu" || kind == "network_switch";
}

// Node index by id, built once per pass so that looking up every link's
// ends costs linear time in the topology's size.
class NodeIndex {
 public:
  explicit NodeIndex(const TopologyConfig& topo) {
    index_.reserve(topo.nodes.size());
    for (std::size_t i = 0; i < topo.nodes.size(); ++i) index_.emplace(topo.nodes[i].id, i);
  }
  std::size_t operator()(const std::string& id) const {
    auto it = index_.find(id);
    return it == index_.end() ? TopologyGraph::npos : it->second;
  }

 private:
  std::unordered_map<std::string, std::size_t> index_;
};

std::string node_path(std::size_t i) { return index_path("$.nodes", i); }
std::string link_path(std::size_t i) { return index_path("$.links", i); }

// Union-find, for loop detection in the PCIe forest.
struct Forest {
  std::vector<std::size_t> parent;
  explicit Forest(std::size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  std::size_t find(std::size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  bool join(std::size_t a, std::size_t b) {
    a = find(a);
    b = find(b);
    if (a == b) return false;
    parent[a] = b;
    return true;
  }
};

}  // namespace

void TopologyGraph::check(const TopologyConfig& topo) {
  const std::string& file = topo.file;
  const NodeIndex index_of(topo);
  // Socket references of root complexes and host memory.
  const bool has_sockets = !topo.nodes_of_kind("cpu").empty();
  for (std::size_t i = 0; i < topo.nodes.size(); ++i) {
    const NodeConfig& n = topo.nodes[i];
    if (n.kind != "root_complex" && n.kind != "host_memory") continue;
    const std::string socket = socket_of(n);
    if (socket.empty()) {
      if (has_sockets) {
        throw ConfigError(
            file, node_path(i) + ".socket", "\"\"",
            "this topology has CPU sockets; name the socket this " + n.kind + " belongs to");
      }
      continue;
    }
    std::size_t s = index_of(socket);
    if (s == npos || topo.nodes[s].kind != "cpu") {
      throw ConfigError(file, node_path(i) + ".socket", "\"" + socket + "\"",
                        "expected the id of a node of kind cpu");
    }
  }
  // Link kinds and the PCIe tree.
  Forest forest(topo.nodes.size());
  std::vector<int> degree(topo.nodes.size(), 0);
  std::vector<std::size_t> first_link(topo.nodes.size(), npos);  // an endpoint's PCIe link
  for (std::size_t l = 0; l < topo.links.size(); ++l) {
    const LinkConfig& link = topo.links[l];
    std::size_t a = index_of(link.from);
    std::size_t b = index_of(link.to);
    const pcie::LinkType type = pcie::LinkParams::from(link.params).type;
    if (type == pcie::LinkType::pcie) {
      for (std::size_t end : {a, b}) {
        if (!is_pcie_kind(topo.nodes[end].kind)) {
          throw ConfigError(file, link_path(l), "\"" + topo.nodes[end].id + "\"",
                            "a pcie link joins root complexes, switches, GPUs, NVMe SSDs, "
                            "RDMA NICs, DPUs and CXL memory; " +
                                topo.nodes[end].id + " is a " + topo.nodes[end].kind);
        }
      }
      for (std::size_t end : {a, b}) {
        if (!is_endpoint(topo.nodes[end].kind)) continue;
        if (first_link[end] != npos) {
          const LinkConfig& first = topo.links[first_link[end]];
          throw ConfigError(
              file, link_path(l), fmt::format("\"{}\" - \"{}\"", link.from, link.to),
              fmt::format("{} is a PCIe endpoint ({}) and already has its one link, {} (\"{}\" - "
                          "\"{}\"); a second link to it is not allowed",
                          topo.nodes[end].id, topo.nodes[end].kind, link_path(first_link[end]),
                          first.from, first.to));
        }
        first_link[end] = l;
      }
      if (!forest.join(a, b)) {
        throw ConfigError(file, link_path(l), fmt::format("\"{}\" - \"{}\"", link.from, link.to),
                          "this link closes a loop in the PCIe tree (PCIe is a tree: each "
                          "device has one path to its root complex)");
      }
      ++degree[a];
      ++degree[b];
    } else {
      for (std::size_t end : {a, b}) {
        if (topo.nodes[end].kind != "cpu") {
          throw ConfigError(file, link_path(l), "\"" + topo.nodes[end].id + "\"",
                            "an inter_socket link joins two cpu nodes; " + topo.nodes[end].id +
                                " is a " + topo.nodes[end].kind);
        }
      }
    }
  }
  // Hosts meet only through network links: a PCIe or inter-socket link, or a
  // socket reference, stays within one host.
  for (std::size_t l = 0; l < topo.links.size(); ++l) {
    const NodeConfig& a = topo.nodes[index_of(topo.links[l].from)];
    const NodeConfig& b = topo.nodes[index_of(topo.links[l].to)];
    if (a.host != b.host) {
      throw ConfigError(file, link_path(l), fmt::format("\"{}\" - \"{}\"", a.id, b.id),
                        fmt::format("joins host \"{}\" ({}) and host \"{}\" ({}); hosts meet "
                                    "only through network_links",
                                    a.host, a.id, b.host, b.id));
    }
  }
  for (std::size_t i = 0; i < topo.nodes.size(); ++i) {
    const NodeConfig& n = topo.nodes[i];
    if (n.kind != "root_complex" && n.kind != "host_memory") continue;
    const std::size_t s = index_of(socket_of(n));
    if (s != npos && topo.nodes[s].host != n.host) {
      throw ConfigError(file, node_path(i) + ".socket", "\"" + socket_of(n) + "\"",
                        fmt::format("the socket is in host \"{}\" and {} in host \"{}\"",
                                    topo.nodes[s].host, n.id, n.host));
    }
  }
  if (!topo.network_links.empty()) {
    for (std::size_t i = 0; i < topo.nodes.size(); ++i) {
      const NodeConfig& n = topo.nodes[i];
      if (n.host.empty() && n.kind != "network_switch") {
        throw ConfigError(file, node_path(i) + ".host", "",
                          "a topology with network_links groups every node but network "
                          "switches by host; name the host " +
                              n.id + " belongs to");
      }
    }
  }
  // Network links join RDMA ports (one cable each) and network switches.
  std::vector<int> ports_used(topo.nodes.size(), 0);
  for (std::size_t l = 0; l < topo.network_links.size(); ++l) {
    const LinkConfig& link = topo.network_links[l];
    const std::string path = index_path("$.network_links", l);
    for (const char* end : {"from", "to"}) {
      const std::string& id = std::string(end) == "from" ? link.from : link.to;
      const std::size_t v = index_of(id);
      const NodeConfig& n = topo.nodes[v];
      if (!is_network_kind(n.kind)) {
        throw ConfigError(file, path + "." + end, "\"" + id + "\"",
                          "a network link joins rdma_nic, dpu and network_switch nodes; " + id +
                              " is a " + n.kind);
      }
      if (n.kind != "network_switch" && ++ports_used[v] > 1) {
        throw ConfigError(file, path + "." + end, "\"" + id + "\"",
                          id + " is an RDMA port with one cable, and another network link "
                               "already joins it");
      }
    }
  }
  // Each PCIe tree hangs from exactly one root complex; endpoints are leaves.
  std::map<std::size_t, std::size_t> root_of_tree;
  for (std::size_t i = 0; i < topo.nodes.size(); ++i) {
    if (topo.nodes[i].kind != "root_complex") continue;
    auto [it, inserted] = root_of_tree.emplace(forest.find(i), i);
    if (!inserted) {
      throw ConfigError(file, node_path(i), "\"" + topo.nodes[i].id + "\"",
                        "two root complexes (" + topo.nodes[it->second].id + " and " +
                            topo.nodes[i].id + ") in one PCIe tree");
    }
  }
  for (std::size_t i = 0; i < topo.nodes.size(); ++i) {
    const NodeConfig& n = topo.nodes[i];
    if (!is_pcie_kind(n.kind) || n.kind == "root_complex") continue;
    if (!root_of_tree.count(forest.find(i))) {
      throw ConfigError(
          file, node_path(i), "\"" + n.id + "\"",
          "no path to a root complex: link this " + n.kind + " to a switch or root complex");
    }
    if (is_endpoint(n.kind) && degree[i] != 1) {
      throw ConfigError(file, node_path(i), "\"" + n.id + "\"",
                        fmt::format("a {} is a PCIe endpoint with exactly one link; it has {}",
                                    n.kind, degree[i]));
    }
  }
}

ScenarioEndpoints ScenarioEndpoints::from(const ParamValues& values) {
  ScenarioEndpoints out;
#define GPUNVME_PARAM GPUNVME_PARAM_READ
#include "models/topology/scenario_endpoints.def"
#undef GPUNVME_PARAM
  return out;
}

void TopologyGraph::check_scenario(const TopologyConfig& topo, const ScenarioConfig& scenario) {
  const std::string& file = scenario.file;
  const NodeIndex index_of(topo);
  TopologyGraph graph(topo);
  const ScenarioEndpoints endpoints = ScenarioEndpoints::from(scenario.params);
  const std::string& gpu = endpoints.gpu;
  std::size_t g = index_of(gpu);
  if (g == npos || topo.nodes[g].kind != "gpu") {
    std::vector<std::string> gpus;
    for (const NodeConfig* n : topo.nodes_of_kind("gpu")) gpus.push_back(n->id);
    std::string all;
    for (const auto& id : gpus) all += (all.empty() ? "" : ", ") + id;
    throw ConfigError(file, "$.gpu", "\"" + gpu + "\"",
                      "expected the id of a gpu in the topology (" +
                          (all.empty() ? std::string("it has none") : all) + ")");
  }
  const std::vector<std::string>& ssds = endpoints.ssds;
  if (ssds.empty()) {
    throw ConfigError(file, "$.ssds", "[]", "expected at least one nvme_ssd id");
  }
  // One search from the GPU tells which SSDs it reaches.
  const std::vector<bool> reached = graph.reachable_from(g);
  for (std::size_t k = 0; k < ssds.size(); ++k) {
    std::size_t s = index_of(ssds[k]);
    std::string path = index_path("$.ssds", k);
    if (s == npos || topo.nodes[s].kind != "nvme_ssd") {
      throw ConfigError(file, path, "\"" + ssds[k] + "\"",
                        "expected the id of an nvme_ssd in the topology");
    }
    // An SSD of another host is reached through the network; the scenario's
    // path decides whether it may be (sim/system/workload/remote_io_path.h).
    if (!reached[s] && topo.network_links.empty()) {
      throw ConfigError(file, path, "\"" + ssds[k] + "\"",
                        "no path between " + gpu + " and " + ssds[k] +
                            " (are their sockets joined by an inter_socket link?)");
    }
  }
}

TopologyGraph::TopologyGraph(const TopologyConfig& topology)
    : topology_(topology), graph_(topology.nodes.size()), upstream_(topology.nodes.size(), npos) {
  const NodeIndex index_of(topology);
  for (std::size_t i = 0; i < topology.nodes.size(); ++i) {
    graph_[i] = TopologyVertex{topology.nodes[i].id, topology.nodes[i].kind, i};
  }
  for (std::size_t l = 0; l < topology.links.size(); ++l) {
    const LinkConfig& link = topology.links[l];
    EdgeKind kind = pcie::LinkParams::from(link.params).type == pcie::LinkType::pcie
                        ? EdgeKind::Pcie
                        : EdgeKind::InterSocket;
    boost::add_edge(index_of(link.from), index_of(link.to), TopologyEdge{kind, l}, graph_);
  }
  for (std::size_t i = 0; i < topology.nodes.size(); ++i) {
    const NodeConfig& n = topology.nodes[i];
    if (n.kind != "root_complex" && n.kind != "host_memory") continue;
    std::size_t s = index_of(socket_of(n));
    if (s != npos) boost::add_edge(i, s, TopologyEdge{EdgeKind::Attachment, 0}, graph_);
  }
  // Orient each PCIe tree from its root complex.
  for (std::size_t r = 0; r < topology.nodes.size(); ++r) {
    if (topology.nodes[r].kind != "root_complex") continue;
    std::queue<std::size_t> frontier;
    frontier.push(r);
    std::vector<bool> seen(topology.nodes.size(), false);
    seen[r] = true;
    while (!frontier.empty()) {
      std::size_t v = frontier.front();
      frontier.pop();
      for (auto [e, end] = boost::out_edges(v, graph_); e != end; ++e) {
        if (graph_[*e].kind != EdgeKind::Pcie) continue;
        std::size_t w = boost::target(*e, graph_);
        if (seen[w]) continue;
        seen[w] = true;
        upstream_[w] = v;
        frontier.push(w);
      }
    }
  }
}

std::vector<std::size_t> TopologyGraph::route(std::size_t from, std::size_t to) const {
  const std::size_t n = boost::num_vertices(graph_);
  std::vector<std::size_t> predecessor(n, npos);
  predecessor[from] = from;
  // Breadth-first search with a predecessor recorder gives the route with the
  // fewest hops; in a PCIe tree it is the only route.
  auto recorder = boost::record_predecessors(predecessor.data(), boost::on_tree_edge());
  std::vector<boost::default_color_type> colors(n);
  boost::breadth_first_search(graph_, from,
                              boost::visitor(boost::make_bfs_visitor(recorder))
                                  .color_map(boost::make_iterator_property_map(
                                      colors.begin(), boost::get(boost::vertex_index, graph_))));
  if (predecessor[to] == npos) return {};
  std::vector<std::size_t> path;
  for (std::size_t v = to; v != from; v = predecessor[v]) path.push_back(v);
  path.push_back(from);
  std::reverse(path.begin(), path.end());
  return path;
}

std::vector<bool> TopologyGraph::reachable_from(std::size_t from) const {
  std::vector<bool> seen(boost::num_vertices(graph_), false);
  std::queue<std::size_t> frontier;
  frontier.push(from);
  seen[from] = true;
  while (!frontier.empty()) {
    const std::size_t v = frontier.front();
    frontier.pop();
    for (auto [e, end] = boost::out_edges(v, graph_); e != end; ++e) {
      const std::size_t w = boost::target(*e, graph_);
      if (!seen[w]) {
        seen[w] = true;
        frontier.push(w);
      }
    }
  }
  return seen;
}

std::vector<std::size_t> TopologyGraph::route_links(std::size_t from, std::size_t to) const {
  std::vector<std::size_t> nodes = route(from, to);
  std::vector<std::size_t> links;
  for (std::size_t i = 1; i < nodes.size(); ++i) {
    auto [e, found] = boost::edge(nodes[i - 1], nodes[i], graph_);
    if (found && graph_[e].kind != EdgeKind::Attachment) links.push_back(graph_[e].link_index);
  }
  return links;
}

std::string TopologyGraph::tree_text() const {
  std::ostringstream out;
  const auto& nodes = topology_.nodes;
  auto link_label = [&](std::size_t a, std::size_t b) -> std::string {
    auto [e, found] = boost::edge(a, b, graph_);
    if (!found || graph_[e].kind == EdgeKind::Attachment) return "";
    const pcie::LinkParams p = pcie::LinkParams::from(topology_.links[graph_[e].link_index].params);
    if (graph_[e].kind == EdgeKind::InterSocket) {
      return fmt::format("  [inter-socket {} GB/s]", p.bandwidth_gbps);
    }
    return fmt::format("  [Gen{} x{}]", p.gen, p.width);
  };
  auto describe = [&](std::size_t i) {
    std::string text = nodes[i].id + " (" + nodes[i].kind;
    if (!nodes[i].profile.empty()) text += ", " + nodes[i].profile;
    return text + ")";
  };
  std::function<void(std::size_t, const std::string&)> walk = [&](std::size_t v,
                                                                  const std::string& indent) {
    std::vector<std::size_t> children;
    for (std::size_t w = 0; w < nodes.size(); ++w) {
      if (upstream_[w] == v) children.push_back(w);
    }
    for (std::size_t k = 0; k < children.size(); ++k) {
      bool last = k + 1 == children.size();
      out << indent << (last ? "`-- " : "|-- ") << describe(children[k])
          << link_label(v, children[k]) << "\n";
      walk(children[k], indent + (last ? "    " : "|   "));
    }
  };
  std::vector<bool> printed(nodes.size(), false);
  auto print_root = [&](std::size_t r, const std::string& indent) {
    out << indent << describe(r) << "\n";
    printed[r] = true;
    walk(r, indent + "  ");
  };
  for (std::size_t s = 0; s < nodes.size(); ++s) {
    if (nodes[s].kind != "cpu") continue;
    out << describe(s) << "\n";
    printed[s] = true;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if ((nodes[i].kind == "root_complex" || nodes[i].kind == "host_memory") &&
          socket_of(nodes[i]) == nodes[s].id) {
        print_root(i, "  ");
      }
    }
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!printed[i] && (nodes[i].kind == "root_complex" || nodes[i].kind == "host_memory")) {
      print_root(i, "");
    }
  }
  for (std::size_t l = 0; l < topology_.links.size(); ++l) {
    const LinkConfig& link = topology_.links[l];
    const pcie::LinkParams p = pcie::LinkParams::from(link.params);
    if (p.type == pcie::LinkType::inter_socket) {
      out << link.from << " <-> " << link.to
          << fmt::format("  [inter-socket {} GB/s, {} ns]\n", p.bandwidth_gbps,
                         ps_to_ns(p.latency_ns));
    }
  }
  // Several hosts: where each node without a PCIe link runs (the network
  // links' own lines are the network model's: gpunvme topo).
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].kind == "nvmf_target") {
      out << describe(i) << "  [on host " << nodes[i].host << "]\n";
    }
  }
  return out.str();
}

std::string TopologyGraph::dot() const {
  const auto& nodes = topology_.nodes;
  // The socket each node belongs to: a CPU is its own; a root complex or
  // host memory names its socket; a switch or device belongs to the socket of
  // the root complex above it. Nodes of a topology without CPUs belong to none.
  auto node_index = [&](const std::string& id) {
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i].id == id) return i;
    }
    return npos;
  };
  std::vector<std::size_t> socket(nodes.size(), npos);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    std::size_t top = i;
    while (upstream_[top] != npos) top = upstream_[top];
    if (nodes[top].kind == "cpu") {
      socket[i] = top;
    } else if (nodes[top].kind == "root_complex" || nodes[top].kind == "host_memory") {
      socket[i] = node_index(socket_of(nodes[top]));
    }
  }
  auto vertex_line = [&](std::size_t v) {
    const std::string& kind = nodes[v].kind;
    const char* shape = kind == "switch"         ? "diamond"
                        : kind == "root_complex" ? "box3d"
                        : kind == "cpu"          ? "box"
                                                 : "ellipse";
    return fmt::format("{}[label=\"{}\\n{}\", shape={}];\n", v, nodes[v].id, kind, shape);
  };
  std::ostringstream out;
  out << "graph G {\n";
  for (std::size_t s = 0; s < nodes.size(); ++s) {
    if (nodes[s].kind != "cpu") continue;
    out << fmt::format("subgraph \"cluster_{}\" {{\nlabel=\"socket {}\";\n", nodes[s].id,
                       nodes[s].id);
    for (std::size_t v = 0; v < nodes.size(); ++v) {
      if (socket[v] == s) out << vertex_line(v);
    }
    out << "}\n";
  }
  for (std::size_t v = 0; v < nodes.size(); ++v) {
    if (socket[v] == npos) out << vertex_line(v);
  }
  Graph::edge_iterator e, end;
  for (std::tie(e, end) = boost::edges(graph_); e != end; ++e) {
    const TopologyEdge& edge = graph_[*e];
    out << boost::source(*e, graph_) << "--" << boost::target(*e, graph_) << " ";
    if (edge.kind == EdgeKind::Attachment) {
      out << "[style=dashed];\n";
      continue;
    }
    const pcie::LinkParams p = pcie::LinkParams::from(topology_.links[edge.link_index].params);
    if (edge.kind == EdgeKind::InterSocket) {
      out << fmt::format("[label=\"inter-socket {} GB/s\", penwidth=2];\n", p.bandwidth_gbps);
    } else {
      out << fmt::format("[label=\"Gen{} x{}\"];\n", p.gen, p.width);
    }
  }
  out << "}\n";
  return out.str();
}

}  // namespace gpunvme
