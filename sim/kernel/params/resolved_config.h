// A resolved configuration as plain data: every node and link of a topology
// and the scenario, each with its parameters resolved from declared defaults,
// device profiles and the user's values. The device models and the topology
// graph are built from these; loading and resolving them is the config
// loader's work (sim/system/config/run_config.h).
#pragma once

#include <string>
#include <vector>

#include "sim/kernel/params/param_spec.h"

namespace gpunvme {

struct NodeConfig {
  std::string id;
  std::string kind;
  std::string profile;  // empty when none
  // The machine the node belongs to when a topology holds several (nodes of
  // one host meet others only through network links); empty: the only one.
  std::string host;
  ParamValues params;
};

struct LinkConfig {
  std::string from;
  std::string to;
  ParamValues params;
};

struct TopologyConfig {
  std::string file;
  ParamValues params;
  std::vector<NodeConfig> nodes;
  std::vector<LinkConfig> links;
  // Network cables between RDMA NICs, DPUs and network switches (params of
  // the network_link kind); empty in a topology of one host.
  std::vector<LinkConfig> network_links;

  const NodeConfig* node(const std::string& id) const;
  std::vector<const NodeConfig*> nodes_of_kind(const std::string& kind) const;
};

struct ScenarioConfig {
  std::string file;
  ParamValues params;
};

}  // namespace gpunvme
