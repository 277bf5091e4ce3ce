#include "models/network/network_routes.h"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/filtered_graph.hpp>
#include <functional>
#include <stdexcept>
#include <string>

namespace gpunvme::network {

namespace {

// Edge property: the cable's index in network_links.
using CableGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS,
                                         boost::no_property, std::size_t>;
using Edge = boost::graph_traits<CableGraph>::edge_descriptor;

std::size_t index_of(const TopologyConfig& topo, const std::string& id) {
  for (std::size_t i = 0; i < topo.nodes.size(); ++i) {
    if (topo.nodes[i].id == id) return i;
  }
  throw std::invalid_argument("network route: unknown node " + id);
}

// Records, for each node reached, the cable it was first reached by.
struct FirstCable : boost::default_bfs_visitor {
  std::vector<long long>* cable_in;
  template <class G>
  void tree_edge(Edge e, const G& g) const {
    (*cable_in)[boost::target(e, g)] = static_cast<long long>(g[e]);
  }
};

}  // namespace

NetworkRoute shortest_network_route(const TopologyConfig& topo, std::size_t from, std::size_t to) {
  const std::size_t n = topo.nodes.size();
  if (from >= n || to >= n) throw std::invalid_argument("network route: node out of range");
  NetworkRoute route;
  if (from == to) return route;
  CableGraph graph(n);
  for (std::size_t l = 0; l < topo.network_links.size(); ++l) {
    const LinkConfig& link = topo.network_links[l];
    boost::add_edge(index_of(topo, link.from), index_of(topo, link.to), l, graph);
  }
  // Only switches forward: the search runs over them and the two ends.
  const auto forwards = [&topo, from, to](std::size_t v) {
    return v == from || v == to || topo.nodes[v].kind == "network_switch";
  };
  const boost::filtered_graph<CableGraph, boost::keep_all, std::function<bool(std::size_t)>>
      switches(graph, boost::keep_all{}, forwards);
  std::vector<long long> cable_in(n, -1);
  std::vector<boost::default_color_type> colors(n);
  boost::breadth_first_search(switches, from,
                              boost::visitor(FirstCable{{}, &cable_in})
                                  .color_map(boost::make_iterator_property_map(
                                      colors.begin(), boost::get(boost::vertex_index, switches))));
  if (cable_in[to] < 0) return route;
  // Walk back from `to` along the cables that first reached each node.
  std::vector<std::size_t> nodes{to};
  std::vector<std::size_t> links;
  for (std::size_t v = to; v != from;) {
    const auto l = static_cast<std::size_t>(cable_in[v]);
    const LinkConfig& link = topo.network_links[l];
    const std::size_t a = index_of(topo, link.from);
    v = a == v ? index_of(topo, link.to) : a;
    links.push_back(l);
    nodes.push_back(v);
  }
  route.nodes.assign(nodes.rbegin(), nodes.rend());
  route.links.assign(links.rbegin(), links.rend());
  return route;
}

std::uint32_t switch_port(const TopologyConfig& topo, std::size_t network_switch,
                          std::size_t link) {
  const std::string& id = topo.nodes.at(network_switch).id;
  std::uint32_t port = 0;
  for (std::size_t l = 0; l < topo.network_links.size(); ++l) {
    const LinkConfig& c = topo.network_links[l];
    if (c.from != id && c.to != id) continue;
    if (l == link) return port;
    ++port;
  }
  throw std::invalid_argument("network route: cable " + std::to_string(link) + " is not at " + id);
}

}  // namespace gpunvme::network
