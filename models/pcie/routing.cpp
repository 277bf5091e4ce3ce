#include "models/pcie/routing.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "sim/kernel/params/config_error.h"
#include "sim/kernel/params/json_path.h"

namespace gpunvme::pcie {

namespace {
std::string quoted(const std::string& s) { return "\"" + s + "\""; }

// `a` followed by `b` without repeating the node where they meet.
std::vector<std::size_t> joined(std::vector<std::size_t> a, const std::vector<std::size_t>& b) {
  a.insert(a.end(), b.begin() + 1, b.end());
  return a;
}
}  // namespace

Router::Router(const TopologyConfig& topology, const TopologyGraph& graph)
    : topology_(topology), graph_(graph) {}

std::size_t Router::root_of(std::size_t v) const {
  const std::string& kind = node(v).kind;
  if (kind == "cpu" || kind == "host_memory") return ResolvedPath::npos;
  while (graph_.upstream(v) != TopologyGraph::npos) v = graph_.upstream(v);
  return v;
}

bool Router::is_device(std::size_t v) const {
  const std::string& kind = node(v).kind;
  return kind == "gpu" || kind == "nvme_ssd" || kind == "rdma_nic" || kind == "dpu" ||
         kind == "cxl_memory";
}

bool Router::acs(std::size_t sw, std::size_t child, bool SwitchParams::*setting) const {
  const SwitchParams p = SwitchParams::from(node(sw).params);
  if (!(p.*setting)) return false;
  const std::vector<std::string>& ports = p.acs_ports;
  return ports.empty() || std::find(ports.begin(), ports.end(), node(child).id) != ports.end();
}

void Router::block(ResolvedPath& path, std::size_t by, const std::string& setting,
                   const std::string& why) const {
  path.blocked = true;
  path.taken = "blocked";
  path.blocked_by = by;
  path.blocking_setting = child_path(index_path("$.nodes", by), setting);
  path.blocking_value = node(by).params.json().at(setting).dump();
  path.why_blocked = why;
}

void Router::block_platform(ResolvedPath& path, const std::string& why) const {
  path.blocked = true;
  path.taken = "blocked";
  path.blocking_setting = "$.p2p_across_root_complexes";
  path.blocking_value =
      quoted(enum_name(TopologyParams::from(topology_.params).p2p_across_root_complexes));
  path.why_blocked = why;
}

ResolvedPath Router::resolve(std::size_t from, std::size_t to, Traffic traffic) const {
  ResolvedPath path;
  if (from == to) {
    path.nodes = {from};
    path.kind = "X";
    path.taken = "local";
    return path;
  }
  const std::vector<std::size_t> tree = graph_.route(from, to);
  if (tree.empty()) {
    path.blocked = true;
    path.taken = "blocked";
    path.blocking_setting = "$.links";
    path.why_blocked = fmt::format(
        "no route between {} and {} (are their sockets joined by an "
        "inter_socket link?)",
        node(from).id, node(to).id);
    return path;
  }
  std::set<std::size_t> sockets, root_complexes, switches;
  for (std::size_t v : tree) {
    const std::string& kind = node(v).kind;
    if (kind == "cpu") sockets.insert(v);
    if (kind == "root_complex") root_complexes.insert(v);
    if (kind == "switch") switches.insert(v);
  }
  path.kind = sockets.size() >= 2          ? "SYS"
              : root_complexes.size() >= 2 ? "NODE"
              : !root_complexes.empty()    ? "PHB"
              : switches.size() >= 2       ? "PXB"
                                           : "PIX";
  // Host memory and the CPU itself (MMIO from its cores) are the host, not peers.
  path.peer_to_peer = is_device(from) && is_device(to);
  // CXL memory is system memory that the host bridge decodes (HDM): a device's DMA to it is
  // routed by address like peer traffic (switch ACS and the IOMMU apply), but the root
  // complex's peer-to-peer policies, meant for device BARs, do not.
  const bool to_host_managed_memory =
      node(from).kind == "cxl_memory" || node(to).kind == "cxl_memory";
  const bool request = traffic == Traffic::Request;
  const std::size_t root = root_of(from);
  const bool translating = request && is_device(from) && root != ResolvedPath::npos &&
                           RootComplexParams::from(node(root).params).iommu == IommuMode::translate;
  path.nodes = tree;
  path.taken = path.peer_to_peer ? "direct" : "root_complex";
  if (translating) {
    // I/O virtual addresses: the request climbs to the root complex whatever it targets.
    if (path.peer_to_peer && !to_host_managed_memory &&
        !RootComplexParams::from(node(root).params).iommu_maps_peer_bars) {
      block(path, root, "iommu_maps_peer_bars",
            fmt::format("{}'s IOMMU translates (iommu = translate) and no peer BAR is mapped "
                        "in {}'s context, so a request from {} to {} faults (seed 003: the "
                        "IOMMU intercepts P2P DMA)",
                        node(root).id, node(from).id, node(from).id, node(to).id));
      return path;
    }
    path.nodes = joined(graph_.route(from, root), graph_.route(root, to));
    path.translated_by = root;
    path.translate_position = graph_.route(from, root).size() - 1;
    path.taken = "translated";
  } else if (path.peer_to_peer && root == root_of(to)) {
    // One PCIe tree: the path climbs to one turning point and descends from there.
    for (std::size_t i = 1; i + 1 < tree.size(); ++i) {
      const std::size_t v = tree[i];
      if (graph_.upstream(tree[i - 1]) != v || graph_.upstream(tree[i + 1]) != v) continue;
      if (node(v).kind == "root_complex") {
        path.taken = "root_complex";
        break;
      }
      const PeerRouting firmware = SwitchParams::from(node(v).params).peer_routing;
      const bool redirect = firmware == PeerRouting::upstream ||
                            acs(v, tree[i - 1],
                                request ? &SwitchParams::acs_request_redirect
                                        : &SwitchParams::acs_completion_redirect);
      if (!redirect && firmware == PeerRouting::block) {
        block(path, v, "peer_routing",
              fmt::format("{}'s firmware refuses traffic between its downstream ports "
                          "(peer_routing = block), so {} cannot reach {}",
                          node(v).id, node(from).id, node(to).id));
        return path;
      }
      if (!redirect) break;
      // Redirected: up through every port above the switch, then down from the root complex.
      const std::vector<std::size_t> up = graph_.route(from, root);
      for (std::size_t k = 1; k + 1 < up.size(); ++k) {
        if (up[k] == v || node(up[k]).kind != "switch") continue;
        if (!acs(up[k], up[k - 1], &SwitchParams::acs_upstream_forwarding)) {
          block(path, up[k], "acs_upstream_forwarding",
                fmt::format("{} redirects {}'s traffic to {} upstream, but {}'s port to {} does "
                            "not forward redirected TLPs (acs_upstream_forwarding = false)",
                            node(v).id, node(from).id, node(to).id, node(up[k]).id,
                            node(up[k - 1]).id));
          return path;
        }
      }
      path.nodes = joined(up, graph_.route(root, to));
      path.redirected_by = v;
      path.taken = "redirected";
      break;
    }
  } else if (path.peer_to_peer) {
    path.taken = "cpu_fabric";
    if (!to_host_managed_memory &&
        TopologyParams::from(topology_.params).p2p_across_root_complexes ==
            P2pAcrossRootComplexes::refuse) {
      block_platform(path, fmt::format("{} and {} are below different root complexes and the "
                                       "platform refuses peer-to-peer traffic between root "
                                       "complexes (p2p_across_root_complexes = refuse)",
                                       node(from).id, node(to).id));
      return path;
    }
  } else if (sockets.size() >= 2) {
    path.taken = "cpu_fabric";  // host memory of another socket (NUMA remote)
  }

  // Root complexes between two devices must be willing to forward.
  if (path.peer_to_peer && !to_host_managed_memory) {
    const std::vector<std::size_t>& nodes = path.nodes;
    for (std::size_t i = 1; i + 1 < nodes.size(); ++i) {
      const std::size_t v = nodes[i];
      if (node(v).kind != "root_complex") continue;
      const PeerToPeer mode = RootComplexParams::from(node(v).params).peer_to_peer;
      const bool leaves_root_complex =
          node(nodes[i - 1]).kind == "cpu" || node(nodes[i + 1]).kind == "cpu";
      std::string why;
      if (mode == PeerToPeer::block) {
        why = fmt::format("{} does not forward peer-to-peer traffic (peer_to_peer = block)",
                          node(v).id);
      } else if (mode == PeerToPeer::same_root_complex && leaves_root_complex) {
        why = fmt::format(
            "{} forwards peer-to-peer traffic only between its own root ports (peer_to_peer = "
            "same_root_complex), and {} and {} are below different root complexes",
            node(v).id, node(from).id, node(to).id);
      } else {
        continue;
      }
      if (path.redirected_by != ResolvedPath::npos) {
        why += fmt::format("; {} sends the traffic there (ACS redirect or peer_routing)",
                           node(path.redirected_by).id);
      }
      if (path.translated_by != ResolvedPath::npos) {
        why += fmt::format("; the IOMMU of {} sends the traffic there", node(root).id);
      }
      block(path, v, "peer_to_peer", why);
      return path;
    }
  }
  return path;
}

void Router::require_path(std::size_t a, std::size_t b) const {
  for (auto [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
    for (Traffic traffic : {Traffic::Request, Traffic::Completion}) {
      const ResolvedPath path = resolve(from, to, traffic);
      if (!path.blocked) continue;
      throw ConfigError(topology_.file, path.blocking_setting, path.blocking_value,
                        fmt::format("{} from {} to {} is blocked: {}",
                                    traffic == Traffic::Request ? "traffic" : "completion traffic",
                                    node(from).id, node(to).id, path.why_blocked));
    }
  }
}

std::string Router::describe(const ResolvedPath& path) const {
  std::string text;
  for (std::size_t v : path.nodes) text += (text.empty() ? "" : " -> ") + node(v).id;
  return text;
}

DomainOutcome domain_outcome(const ResolvedPath& path, bool mapped_in_domain) {
  DomainOutcome out;
  if (path.blocked) {
    out.taken = "blocked";
    return out;
  }
  out.checked = path.translated_by != ResolvedPath::npos;
  if (out.checked && !mapped_in_domain) {
    out.taken = "refused";
    out.refused_by = path.translated_by;
    return out;
  }
  out.performed = true;
  out.taken = path.taken;
  return out;
}

void check_fabric_settings(const TopologyConfig& topology) {
  TopologyGraph graph(topology);
  for (std::size_t i = 0; i < topology.nodes.size(); ++i) {
    const NodeConfig& n = topology.nodes[i];
    if (n.kind != "switch") continue;
    const std::vector<std::string> ports = SwitchParams::from(n.params).acs_ports;
    for (std::size_t k = 0; k < ports.size(); ++k) {
      const NodeConfig* child = topology.node(ports[k]);
      const bool below =
          child != nullptr &&
          graph.upstream(static_cast<std::size_t>(child - topology.nodes.data())) == i;
      if (!below) {
        std::vector<std::string> children;
        for (std::size_t c = 0; c < topology.nodes.size(); ++c) {
          if (graph.upstream(c) == i) children.push_back(topology.nodes[c].id);
        }
        std::string list;
        for (const auto& c : children) list += (list.empty() ? "" : ", ") + c;
        throw ConfigError(topology.file, index_path(index_path("$.nodes", i) + ".acs_ports", k),
                          quoted(ports[k]),
                          "expected the id of a node directly below " + n.id + " (" +
                              (list.empty() ? std::string("it has none") : list) + ")");
      }
    }
  }
}

}  // namespace gpunvme::pcie
