#include "tests/soak/config_generator.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "sim/system/run/invariants.h"
#include "sim/system/run/run.h"

namespace gpunvme::soak {

namespace {

// Shipped topologies the generator picks from (hw-soft-controller and
// hw-gpu-target are the hardware targets' shapes for `gpunvme validate`, not
// platforms to explore).
const std::vector<std::string>& topologies() {
  static const std::vector<std::string> t{
      "configs/topologies/default.json",          "configs/topologies/two-ssds.json",
      "configs/topologies/four-gen4-ssds.json",   "configs/topologies/two-root-ports.json",
      "configs/topologies/two-sockets.json",      "configs/topologies/acs-on.json",
      "configs/topologies/iommu-translating.json"};
  return t;
}

std::string scenario_file(const std::string& kind, const std::string& path) {
  static const std::map<std::string, std::string> stem{{"microbenchmark", "randread-4k"},
                                                       {"kv_cache", "kv-cache"},
                                                       {"graph", "graph-bfs"},
                                                       {"gather", "gather"}};
  const std::string& s = stem.at(kind);
  if (path == "gpu_initiated") {
    return "scenarios/" + s + (kind == "microbenchmark" ? "" : "-gpu") + ".json";
  }
  return "scenarios/" + s + "-" + path + ".json";
}

// The SSD ids of a shipped topology, read once per file.
const std::vector<std::string>& ssd_ids(const std::string& topology) {
  static std::map<std::string, std::vector<std::string>> cache;
  auto it = cache.find(topology);
  if (it != cache.end()) return it->second;
  std::vector<std::string> ids;
  const nlohmann::json doc = read_json_file(source_dir() + "/" + topology);
  for (const nlohmann::json& node : doc.at("nodes")) {
    if (node.at("kind") == "nvme_ssd") ids.push_back(node.at("id").get<std::string>());
  }
  return cache.emplace(topology, std::move(ids)).first->second;
}

template <typename T>
const T& pick(Choices& c, const std::vector<T>& options) {
  return options[c.below(options.size())];
}

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

}  // namespace

std::uint64_t RandomChoices::below(std::uint64_t n) { return random_below(engine_, n); }

std::uint64_t ByteChoices::below(std::uint64_t n) {
  std::uint64_t value = 0;
  for (std::uint64_t range = 1; range < n && at_ < size_; range <<= 8) {
    value = value << 8 | data_[at_++];
  }
  return value % n;
}

RunConfig GeneratedConfig::load() const {
  std::vector<std::string> sets;
  std::uint64_t seed = 1;
  for (const std::string& o : overrides) {
    if (o.rfind("seed=", 0) == 0) {
      seed = std::stoull(o.substr(5));
    } else {
      sets.push_back(o);
    }
  }
  return load_config(source_dir() + "/" + topology_file, source_dir() + "/" + scenario_file, sets,
                     seed);
}

std::string GeneratedConfig::command_line() const {
  std::string line =
      "build/gpunvme run --topology " + topology_file + " --scenario " + scenario_file;
  for (const std::string& o : overrides) {
    if (o.rfind("seed=", 0) == 0) {
      line += " --seed " + o.substr(5);
    } else {
      line += " --set '" + o + "'";
    }
  }
  return line;
}

GeneratedConfig generate(Choices& c, int kind_index, int path_index) {
  GeneratedConfig g;
  g.kind =
      kinds()[kind_index >= 0 ? static_cast<std::size_t>(kind_index) : c.below(kinds().size())];
  g.path =
      paths()[path_index >= 0 ? static_cast<std::size_t>(path_index) : c.below(paths().size())];
  g.topology_file = pick(c, topologies());
  g.scenario_file = scenario_file(g.kind, g.path);
  std::vector<std::string>& set = g.overrides;
  auto assign = [&](const std::string& field, const std::string& json_value) {
    set.push_back("scenario." + field + "=" + json_value);
  };

  // Which SSDs, and how many.
  const std::vector<std::string>& all_ssds = ssd_ids(g.topology_file);
  const std::size_t count = 1 + c.below(all_ssds.size());
  const std::size_t first = c.below(all_ssds.size() - count + 1);
  std::vector<std::string> ssds(all_ssds.begin() + static_cast<std::ptrdiff_t>(first),
                                all_ssds.begin() + static_cast<std::ptrdiff_t>(first + count));
  std::string list;
  for (const std::string& id : ssds) list += (list.empty() ? "" : ",") + quoted(id);
  assign("ssds", "[" + list + "]");

  // 32 threads is one warp: the request-driven GPU path (kv_cache, graph) on
  // a single warp is where a request submitted while that warp read its
  // mailbox once went unserved.
  assign("threads", std::to_string(pick(c, std::vector<int>{32, 64, 128, 256, 1024})));
  assign("iodepth", std::to_string(pick(c, std::vector<int>{1, 1, 2, 4, 8})));
  assign("queues", std::to_string(pick(c, std::vector<int>{1, 2, 4, 8, 16})));
  assign("queue_entries", std::to_string(pick(c, std::vector<int>{16, 64, 256, 1024})));
  if (g.path == "gpu_initiated") {
    assign("strategy",
           quoted(pick(c, std::vector<std::string>{"warp_batch", "all_threads", "bam_ticket",
                                                   "io_agents", "per_warp_queue"})));
    // The strategy's parts one at a time: some combinations are refused.
    switch (c.below(8)) {
      case 0:
        assign("cid_scheme",
               quoted(pick(c, std::vector<std::string>{"sq_slot", "counter", "counter_lock",
                                                       "warp_partition", "thread_pool"})));
        break;
      case 1:
        assign("completion",
               quoted(pick(c, std::vector<std::string>{"cq_scan", "cid_flags", "polling_warps",
                                                       "owner_drain"})));
        break;
      case 2:
        assign("queue_mapping",
               quoted(pick(c, std::vector<std::string>{"per_sm", "per_warp", "round_robin"})));
        break;
      case 3: assign("cq_doorbell_batch", std::to_string(1 + c.below(8))); break;
      default: break;
    }
  } else if (c.below(2) == 0) {
    assign("request_origin", quoted(pick(c, std::vector<std::string>{"gpu", "cpu"})));
  }

  if (g.kind == "microbenchmark") {
    assign("rw", quoted(pick(c, std::vector<std::string>{"randread", "randread", "read",
                                                         "randwrite", "write", "randrw"})));
    assign("distribution",
           quoted(pick(c, std::vector<std::string>{"uniform", "uniform", "sequential", "zipf"})));
    assign("bs", std::to_string(pick(c, std::vector<int>{4096, 4096, 8192, 16384, 131072})));
    assign("ios", std::to_string(64 + c.below(537)));
  } else if (g.kind == "kv_cache") {
    assign("layers", std::to_string(pick(c, std::vector<int>{1, 2, 4})));
    assign("context_tokens", std::to_string(pick(c, std::vector<int>{256, 512, 1024})));
    assign("batch", std::to_string(1 + c.below(2)));
    assign("decode_steps", std::to_string(1 + c.below(2)));
    assign("hbm_kv_gib", pick(c, std::vector<std::string>{"0.001", "0.004", "0.0625"}));
    assign("host_kv_gib", pick(c, std::vector<std::string>{"0", "0.001", "0.004"}));
    assign("eviction", quoted(pick(c, std::vector<std::string>{"pin", "lru"})));
    assign("placement", quoted(pick(c, std::vector<std::string>{"layer_order", "interleave"})));
    assign("prefetch_layers", std::to_string(c.below(3)));
    assign("layer_compute_us", pick(c, std::vector<std::string>{"1", "20", "150"}));
  } else if (g.kind == "graph") {
    assign("scale", std::to_string(9 + c.below(4)));
    assign("edge_factor", std::to_string(pick(c, std::vector<int>{2, 4, 8, 16})));
    assign("undirected", c.below(2) == 0 ? "true" : "false");
    assign("bs", std::to_string(pick(c, std::vector<int>{4096, 8192})));
    assign("cache_mib", pick(c, std::vector<std::string>{"0.0625", "0.25", "1"}));
  } else {
    assign("rows", std::to_string(pick(c, std::vector<int>{1000, 100000, 10000000})));
    assign("row_bytes", std::to_string(pick(c, std::vector<int>{64, 256, 1024, 4096})));
    assign("lookups", std::to_string(100 + c.below(1900)));
    assign("batch_lookups", std::to_string(pick(c, std::vector<int>{32, 256, 1024})));
    assign("distribution", quoted(pick(c, std::vector<std::string>{"uniform", "zipf"})));
    assign("coalesce", c.below(2) == 0 ? "true" : "false");
    assign("bs", std::to_string(pick(c, std::vector<int>{4096, 8192})));
  }

  // Injected faults on one of the SSDs, now and then.
  switch (c.below(6)) {
    case 0:
      set.push_back("topology.nodes." + pick(c, ssds) + ".fault_media_error_rate=0.02");
      g.faults = true;
      break;
    case 1:
      set.push_back("topology.nodes." + pick(c, ssds) + ".fault_command_error_rate=0.02");
      g.faults = true;
      break;
    default: break;
  }
  set.push_back("seed=" + std::to_string(1 + c.below(100000)));
  return g;
}

std::vector<invariants::Violation> check_result(const GeneratedConfig& generated,
                                                const nlohmann::json& result) {
  std::vector<invariants::Violation> violations = invariants::check(result);
  if (generated.faults && !result.at("summary").contains("submitted")) {
    violations.erase(std::remove_if(violations.begin(), violations.end(),
                                    [](const invariants::Violation& v) {
                                      return v.invariant == "io_accounting";
                                    }),
                     violations.end());
  }
  return violations;
}

}  // namespace gpunvme::soak
