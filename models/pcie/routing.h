// The path a TLP actually takes between two nodes once the platform's policies apply (seed 003,
// P2P truth table; PCIe Base Spec r5.0 §6.12 for ACS):
//  * a switch turns traffic between two of its downstream ports inside itself, unless ACS P2P
//    Request Redirect (requests) or Completion Redirect (completions) is set on the port it
//    arrives on, or its firmware sends such traffic upstream: then the TLPs climb to the root
//    complex (through every port above, which needs ACS Upstream Forwarding) and come back down;
//  * a root complex forwards, confines to its own root ports, or refuses peer-to-peer traffic;
//  * with a translating IOMMU the devices below a root complex are given I/O virtual addresses,
//    so every request they issue climbs to that root complex and is translated there; a request
//    to a peer whose BAR is not mapped in the requester's context faults. Completions are routed
//    by requester ID and never translated. (A device given a raw bus address of a peer below the
//    same switch would bypass the IOMMU; Linux prevents that by turning ACS redirect on whenever
//    an IOMMU is in use.)
//  * devices under different root complexes talk through the CPU fabric, unless the platform
//    refuses it.
// The path is reported as taken (direct, root complex, redirected, translated, CPU fabric,
// blocked), never assumed from the tree alone.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "models/pcie/pcie_specs.h"
#include "models/topology/topology_graph.h"
#include "sim/kernel/params/resolved_config.h"

namespace gpunvme::pcie {

// Requests (posted writes and read requests) are routed by address; completions by ID.
enum class Traffic { Request, Completion };

struct ResolvedPath {
  static constexpr std::size_t npos = TopologyGraph::npos;

  // Node indices in the order TLPs visit them, both ends included. A redirected path visits its
  // switch twice.
  std::vector<std::size_t> nodes;
  // Where the two ends sit, in the vocabulary of `nvidia-smi topo`: PIX (one switch), PXB
  // (several switches, no root complex), PHB (through one root complex), NODE (between root
  // complexes of one socket), SYS (across sockets); X from a node to itself.
  std::string kind;
  // What the traffic does: "direct" (turns in a switch), "root_complex" (turns in the root
  // complex, or reaches host memory through it), "redirected" (ACS or switch firmware sent it
  // up), "translated" (the IOMMU translated it), "cpu_fabric" (between root complexes or
  // sockets), "local" (to itself); "blocked" when refused.
  std::string taken;
  bool peer_to_peer = false;         // both ends are devices (not host memory, not a CPU)
  std::size_t redirected_by = npos;  // the switch whose ACS or firmware sent the TLPs upstream
  // The root complex whose IOMMU translates these requests, and its position in `nodes`.
  std::size_t translated_by = npos;
  std::size_t translate_position = npos;
  bool blocked = false;
  std::size_t blocked_by = npos;  // the node whose setting refuses; npos: the platform or no route
  std::string blocking_setting;   // JSON path of that setting in the topology file
  std::string blocking_value;     // its value, as written in JSON
  std::string why_blocked;
};

class Router {
 public:
  Router(const TopologyConfig& topology, const TopologyGraph& graph);

  ResolvedPath resolve(std::size_t from, std::size_t to, Traffic traffic = Traffic::Request) const;

  // Throws ConfigError naming the topology setting that stops `a` and `b` from exchanging
  // traffic: requests either way, and the completions of reads either way.
  void require_path(std::size_t a, std::size_t b) const;

  // "ssd0 -> sw0 -> rc0 -> sw0 -> gpu0".
  std::string describe(const ResolvedPath& path) const;

  // The root complex above a node of a PCIe tree; npos for CPUs and host memory.
  std::size_t root_of(std::size_t v) const;

 private:
  const NodeConfig& node(std::size_t i) const { return topology_.nodes[i]; }
  bool is_device(std::size_t v) const;
  // ACS control `setting` of the downstream port of switch `sw` that leads to `child`.
  // Whether switch `sw` applies its ACS `setting` on the port to `child`.
  bool acs(std::size_t sw, std::size_t child, bool SwitchParams::*setting) const;
  void block(ResolvedPath& path, std::size_t by, const std::string& setting,
             const std::string& why) const;
  void block_platform(ResolvedPath& path, const std::string& why) const;

  const TopologyConfig& topology_;
  const TopologyGraph& graph_;
};

// What becomes of a device's request whose target is, or is not, mapped in the IOMMU domain it
// is made in (a tenant's domain, through the PASID its device tags it with). Only an IOMMU that
// translates the request checks the domain: on a translated path an unmapped target is refused
// there (VT-d: a DMA remapping fault; with ATS the device's translation request fails);
// a path that no IOMMU translates (iommu off or passthrough, whether ACS sends the request up
// to the root complex or the switch turns it) performs the request whatever the domain says.
// A path the platform blocks is refused by its blocking setting.
struct DomainOutcome {
  bool performed = false;
  std::string taken;                            // the path's `taken`, or "refused"
  std::size_t refused_by = ResolvedPath::npos;  // the root complex whose IOMMU refused it
  bool checked = false;                         // an IOMMU looked the domain up
};
DomainOutcome domain_outcome(const ResolvedPath& path, bool mapped_in_domain);

// Settings that refer to other nodes (a switch's acs_ports must name nodes directly below it).
// Throws ConfigError with the JSON path.
void check_fabric_settings(const TopologyConfig& topology);

}  // namespace gpunvme::pcie
