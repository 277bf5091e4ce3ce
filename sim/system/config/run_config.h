// The validated, fully resolved configuration of one run: the topology (nodes
// and links with every parameter resolved from defaults, device profiles and
// the user's values), the scenario, and the seed.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/kernel/params/config_error.h"
#include "sim/kernel/params/param_spec.h"
#include "sim/kernel/params/resolved_config.h"

namespace gpunvme {

// Every component kind a topology may use, with its declared parameters.
struct Catalog {
  std::vector<ComponentSpec> node_kinds;
  ComponentSpec link;
  ComponentSpec topology;  // top-level topology fields other than nodes/links
  ComponentSpec scenario;

  const ComponentSpec* node_kind(const std::string& kind) const;
};

// How one workload shares the SSDs with other tenants of a multi-tenant run
// (sim/system/run/tenants.h). The defaults are a run of one workload: queue ids
// from 1, medium priority, no rate limit.
struct TenantQos {
  std::string name;                                // "" outside a multi-tenant run
  std::map<std::string, std::uint16_t> first_qid;  // by SSD id: its first I/O queue id (else 1)
  std::uint8_t priority = 2;                       // QPRIO of its SQs (nvme::QueuePriority)
  double rate_iops = 0.0;                          // token-bucket limits, 0 = none
  double rate_bytes_per_s = 0.0;
  std::uint64_t burst_ios = 1;
  std::uint64_t burst_bytes = 0;

  bool rate_limited() const { return rate_iops > 0.0 || rate_bytes_per_s > 0.0; }
  std::uint16_t qid_base(const std::string& ssd) const {
    auto it = first_qid.find(ssd);
    return it == first_qid.end() ? std::uint16_t{1} : it->second;
  }
};

struct TenantSet;  // sim/system/run/tenants.h

struct RunConfig {
  TopologyConfig topology;
  ScenarioConfig scenario;
  std::uint64_t seed = 1;
  // A tenant's share of the SSDs (defaults outside a multi-tenant run).
  TenantQos qos;
  // A multi-tenant run: every tenant's configuration; `scenario` is then the
  // first tenant's. Null for a run of one workload.
  std::shared_ptr<const TenantSet> tenants;

  // The resolved configuration as written into every result.
  nlohmann::json to_json() const;
};

// The shipped data (configs/, scenarios/ with budgets and sweeps):
// $GPUNVME_DATA_DIR when set, else share/gpunvme in the nearest folder above
// the program or the Python module (<prefix>/share/gpunvme once installed;
// the build tree's share/gpunvme links to the sources, and the source tree is
// returned). ConfigError naming every folder searched when there is none.
std::string data_dir();
// The same folder, under the name the Python package exports
// (gpunvme.source_dir()).
std::string source_dir();
// Where profiles are looked up: `<dir of topology file>/<kind dir>/NAME.json`
// first, then the shipped `configs/` tree.
std::string shipped_configs_dir();

// ConfigError when `path` is a directory, a device or a socket, which a
// reader would take for an empty or a never-ending input; `what` names the
// kind of file expected ("JSON file", "graph file").
void require_readable_input(const std::string& path, const std::string& what);

// Reads and parses a JSON file, or its gzip-compressed copy `path`.gz when
// only that exists (read_input_file); ConfigError on I/O or syntax errors.
nlohmann::json read_json_file(const std::string& path);

// Raw documents plus their origin, before validation; overrides are applied
// to these (`topology.…` and `scenario.…` paths) before resolving.
// A field an override set: a validation error at this path (or inside it) is
// the override's doing, and names the override, not the file it changed.
struct OverrideOrigin {
  std::string file;    // the document's file (RawConfig::topology_file or scenario_file)
  std::string path;    // the field, elements by index: `$.nodes[5].mqes`
  std::string origin;  // how the user wrote it: `--set scenario.iodepth=0`
};

struct RawConfig {
  std::string topology_file;
  nlohmann::json topology;
  std::string scenario_file;
  nlohmann::json scenario;
  std::uint64_t seed = 1;
  std::vector<OverrideOrigin> overrides;  // in the order applied
};

RawConfig load_raw_config(const std::string& topology_file, const std::string& scenario_file);
// A seed as the user wrote it (--seed N, seed=N): a decimal integer, 0 to
// 2^64 - 1; anything else (a sign, a fraction) is a ConfigError naming `origin`.
std::uint64_t parse_seed(const std::string& text, const std::string& origin);
// Applies `topology.PATH=V`, `scenario.PATH=V` or `seed=N`. Errors name the
// assignment (`--set scenario.bs=3`); so do later validation errors at the
// field it set (blame_override).
void apply_set(RawConfig& raw, const std::string& assignment);
// `error` naming the last override that set the field it is about (or a
// field around it), when there is one; otherwise `error` as it is.
ConfigError blame_override(const RawConfig& raw, const ConfigError& error);

TopologyConfig resolve_topology(const Catalog& catalog, const nlohmann::json& doc,
                                const std::string& file);
ScenarioConfig resolve_scenario(const Catalog& catalog, const nlohmann::json& doc,
                                const std::string& file, const TopologyConfig& topology);
RunConfig resolve(const Catalog& catalog, const RawConfig& raw);

// Paths of the shipped defaults.
std::string default_topology_file();
std::string default_scenario_file();

}  // namespace gpunvme
