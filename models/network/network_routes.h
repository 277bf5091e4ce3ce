// Routes between RDMA ports over a topology's network_links: the fewest
// cables from one port to another, through network switches only.
//
// The cables form an undirected graph (Boost.Graph). A route may pass through
// network_switch nodes; an RDMA port (rdma_nic or dpu, one cable each) is
// only ever an end. Among routes of equally few cables, the one breadth-first
// search reaches first wins, visiting the nodes' cables in the order
// network_links lists them: a topology with loops (two spines, a ring of
// switches) routes the same way on every run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/kernel/params/resolved_config.h"

namespace gpunvme::network {

struct NetworkRoute {
  // Node indices from the sending port to the receiving port, both included.
  std::vector<std::size_t> nodes;
  // network_links indices, one per step: links[i] joins nodes[i] and nodes[i + 1].
  std::vector<std::size_t> links;

  bool empty() const { return links.empty(); }
  // Network switches crossed.
  std::size_t switches() const { return nodes.size() < 2 ? 0 : nodes.size() - 2; }
};

// The route from port `from` to port `to` (node indices), empty when the
// network joins them by no route.
NetworkRoute shortest_network_route(const TopologyConfig& topo, std::size_t from, std::size_t to);

// The output port of `network_switch` onto cable `link`: the cable's rank
// among the switch's cables in network_links order.
std::uint32_t switch_port(const TopologyConfig& topo, std::size_t network_switch, std::size_t link);

}  // namespace gpunvme::network
