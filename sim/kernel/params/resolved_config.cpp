#include "sim/kernel/params/resolved_config.h"

namespace gpunvme {

const NodeConfig* TopologyConfig::node(const std::string& id) const {
  for (const NodeConfig& n : nodes) {
    if (n.id == id) return &n;
  }
  return nullptr;
}

std::vector<const NodeConfig*> TopologyConfig::nodes_of_kind(const std::string& kind) const {
  std::vector<const NodeConfig*> out;
  for (const NodeConfig& n : nodes) {
    if (n.kind == kind) out.push_back(&n);
  }
  return out;
}

}  // namespace gpunvme
