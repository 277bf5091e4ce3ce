#include "sim/system/workload/kv_network.h"

#include <fmt/format.h>

#include "models/pcie/pcie_specs.h"
#include "sim/kernel/params/config_error.h"
#include "sim/system/workload/remote_io_path.h"
#include "sim/system/workload/scenario_spec.h"

namespace gpunvme {

std::uint64_t kv_blocks_before_decode(const KvShape& k) {
  std::uint64_t blocks = 0;
  for (std::uint64_t c : k.contexts) blocks += c / k.block_tokens;
  return k.layers * blocks;
}

std::uint64_t kv_blocks_filled_in_decode(const KvShape& k) {
  std::uint64_t blocks = 0;
  for (std::uint64_t c : k.contexts) blocks += (c + k.steps) / k.block_tokens - c / k.block_tokens;
  return k.layers * blocks;
}

void check_kv_network(const RunConfig& config, const KvShape& k) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  const std::string& file = config.scenario.file;
  const bool remote = is_remote_path(config);
  const std::string gib = fmt::format("{}", s.remote_kv_gib);
  if (s.remote_kv_gib > 0 && !remote) {
    throw ConfigError(file, "$.remote_kv_gib", gib,
                      "a remote-memory tier is read by RDMA READ from the storage host: path "
                      "must be remote_staged, nvmf_gpudirect, dpu or gpu_network, not \"" +
                          enum_name(s.path) + "\"");
  }
  if (s.remote_kv_gib > 0 && k.remote_blocks == 0) {
    throw ConfigError(file, "$.remote_kv_gib", gib,
                      fmt::format("holds no whole KV block of {} B", k.block_bytes));
  }
  if (!remote) return;
  if (s.policy == KvPolicy::in_storage) {
    throw ConfigError(file, "$.policy", "\"in_storage\"",
                      "in_storage runs attention on the SSDs where the KV lies; a remote path "
                      "reads the KV over the network (use tiered, sparse or reuse)");
  }
  if (s.kv_request == KvRequest::key) {
    throw ConfigError(file, "$.kv_request", "\"key\"",
                      "the remote paths carry block-address reads over NVMe-oF; key-value "
                      "commands are not modelled there (use lba)");
  }
  // The storage host's memory holds the remote-memory tier.
  if (k.remote_blocks > 0 && !s.ssds.empty()) {
    const NodeConfig* ssd = config.topology.node(s.ssds[0]);
    if (ssd != nullptr) {
      double capacity_gib = 0;
      for (const NodeConfig& n : config.topology.nodes) {
        if (n.kind == "host_memory" && n.host == ssd->host) {
          capacity_gib += pcie::HostMemoryParams::from(n.params).capacity_gib;
        }
      }
      if (s.remote_kv_gib > capacity_gib) {
        throw ConfigError(file, "$.remote_kv_gib", gib,
                          fmt::format("the storage host \"{}\" has {} GiB of host_memory",
                                      ssd->host, capacity_gib));
      }
    }
  }
}

}  // namespace gpunvme
