#include "sim/system/config/run_config.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "models/network/network.h"
#include "models/pcie/routing.h"
#include "models/topology/topology_graph.h"
#include "sim/kernel/params/config_error.h"
#include "sim/kernel/params/json_path.h"
#include "sim/kernel/params/resolve.h"
#include "sim/system/config/input_file.h"

namespace gpunvme {

const ComponentSpec* Catalog::node_kind(const std::string& kind) const {
  for (const ComponentSpec& spec : node_kinds) {
    if (spec.kind == kind) return &spec;
  }
  return nullptr;
}

nlohmann::json RunConfig::to_json() const {
  nlohmann::json nodes = nlohmann::json::array();
  for (const NodeConfig& n : topology.nodes) {
    nlohmann::json node = {{"id", n.id}, {"kind", n.kind}};
    if (!n.profile.empty()) node["profile"] = n.profile;
    if (!n.host.empty()) node["host"] = n.host;
    node["params"] = n.params.json();
    nodes.push_back(std::move(node));
  }
  nlohmann::json links = nlohmann::json::array();
  for (const LinkConfig& l : topology.links) {
    links.push_back({{"from", l.from}, {"to", l.to}, {"params", l.params.json()}});
  }
  nlohmann::json topo = topology.params.json();
  topo["nodes"] = std::move(nodes);
  topo["links"] = std::move(links);
  if (!topology.network_links.empty()) {
    nlohmann::json cables = nlohmann::json::array();
    for (const LinkConfig& l : topology.network_links) {
      cables.push_back({{"from", l.from}, {"to", l.to}, {"params", l.params.json()}});
    }
    topo["network_links"] = std::move(cables);
  }
  return {{"topology", std::move(topo)}, {"scenario", scenario.params.json()}, {"seed", seed}};
}

namespace {

// A folder holds the shipped data when it has both configs/ and scenarios/.
bool holds_data(const std::filesystem::path& dir) {
  std::error_code error;
  return std::filesystem::is_directory(dir / "configs", error) &&
         std::filesystem::is_directory(dir / "scenarios", error);
}

// The folders this code was loaded from: the shared object holding it (the
// Python module) when it is not the program itself, then the program.
std::vector<std::filesystem::path> own_folders() {
  std::vector<std::filesystem::path> folders;
  std::error_code error;
  const std::filesystem::path program = std::filesystem::canonical("/proc/self/exe", error);
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&data_dir), &info) != 0 && info.dli_fname != nullptr &&
      info.dli_fname[0] != '\0') {
    std::error_code object_error;
    const std::filesystem::path object = std::filesystem::canonical(info.dli_fname, object_error);
    if (!object_error && (error || object != program)) folders.push_back(object.parent_path());
  }
  if (!error) folders.push_back(program.parent_path());
  return folders;
}

// The folder the data really are in: the build tree's share/gpunvme links
// configs/ and scenarios/ to the sources, and paths (in messages, in results)
// name the sources, as they do when the data are given by their own path.
std::string real_data_dir(const std::filesystem::path& found) {
  std::error_code configs_error, scenarios_error;
  const std::filesystem::path configs =
      std::filesystem::canonical(found / "configs", configs_error);
  const std::filesystem::path scenarios =
      std::filesystem::canonical(found / "scenarios", scenarios_error);
  if (!configs_error && !scenarios_error && configs.parent_path() == scenarios.parent_path()) {
    return configs.parent_path().string();
  }
  return found.string();
}

std::string locate_data_dir() {
  if (const char* chosen = std::getenv("GPUNVME_DATA_DIR"); chosen != nullptr && *chosen) {
    if (!holds_data(chosen)) {
      throw ConfigError("GPUNVME_DATA_DIR", "", chosen,
                        "holds no shipped data (configs/ and scenarios/)");
    }
    return chosen;
  }
  std::vector<std::string> searched;
  for (const std::filesystem::path& start : own_folders()) {
    for (std::filesystem::path dir = start;; dir = dir.parent_path()) {
      const std::filesystem::path candidate = dir / "share" / "gpunvme";
      if (holds_data(candidate)) return real_data_dir(candidate);
      searched.push_back(candidate.string());
      if (dir == dir.root_path() || dir.empty()) break;
    }
  }
  std::string list;
  for (const std::string& s : searched) list += (list.empty() ? "" : ", ") + s;
  throw ConfigError("gpunvme", "", "",
                    "shipped data (configs/ and scenarios/) not found; searched " + list +
                        "; install gpunvme (cmake --install) or set GPUNVME_DATA_DIR");
}

}  // namespace

std::string data_dir() {
  // Found once; a failure is not kept, so a later call searches again.
  static const std::string dir = locate_data_dir();
  return dir;
}
std::string source_dir() { return data_dir(); }
std::string shipped_configs_dir() { return data_dir() + "/configs"; }
std::string default_topology_file() { return shipped_configs_dir() + "/topologies/default.json"; }
std::string default_scenario_file() { return data_dir() + "/scenarios/randread-4k.json"; }

void require_readable_input(const std::string& path, const std::string& what) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (std::filesystem::is_directory(status)) {
    throw ConfigError(path, "", "", "is a directory, not a " + what);
  }
  // A device (/dev/zero, a terminal) never ends; pipes and regular files do.
  if (std::filesystem::is_character_file(status) || std::filesystem::is_block_file(status) ||
      std::filesystem::is_socket(status)) {
    throw ConfigError(path, "", "", "is a device or socket, not a " + what);
  }
}

nlohmann::json read_json_file(const std::string& path) {
  const std::string text = read_input_file(path, "JSON file");
  return parse_json_text(text, stored_file_of(path));
}

RawConfig load_raw_config(const std::string& topology_file, const std::string& scenario_file) {
  RawConfig raw;
  raw.topology_file = topology_file.empty() ? default_topology_file() : topology_file;
  raw.scenario_file = scenario_file.empty() ? default_scenario_file() : scenario_file;
  raw.topology = read_json_file(raw.topology_file);
  raw.scenario = read_json_file(raw.scenario_file);
  return raw;
}

std::uint64_t parse_seed(const std::string& text, const std::string& origin) {
  const bool digits = !text.empty() && text.size() <= 20 &&
                      text.find_first_not_of("0123456789") == std::string::npos;
  if (digits) {
    try {
      return std::stoull(text);
    } catch (const std::out_of_range&) {
    }
  }
  throw ConfigError(origin, "seed", text.size() > 60 ? text.substr(0, 57) + "..." : text,
                    "expected a non-negative integer below 2^64");
}

void apply_set(RawConfig& raw, const std::string& assignment) {
  // The origin names the assignment; a long one (a whole document) is elided.
  constexpr std::size_t kShown = 80;
  std::string shown = assignment;
  if (shown.size() > kShown) {
    std::size_t cut = kShown - 3;
    while (cut > 0 && (static_cast<unsigned char>(shown[cut]) & 0xC0) == 0x80) --cut;
    shown = shown.substr(0, cut) + "...";
  }
  const std::string origin = "--set " + shown;
  const std::string encoding = utf8_problem(assignment);
  if (!encoding.empty()) throw ConfigError(origin, "", "", "the assignment is " + encoding);
  auto starts = [&](const std::string& prefix) { return assignment.rfind(prefix, 0) == 0; };
  if (starts("topology.")) {
    raw.overrides.push_back(OverrideOrigin{
        raw.topology_file, apply_override(raw.topology, assignment.substr(9), origin), origin});
  } else if (starts("scenario.")) {
    raw.overrides.push_back(OverrideOrigin{
        raw.scenario_file, apply_override(raw.scenario, assignment.substr(9), origin), origin});
  } else if (starts("seed=")) {
    raw.seed = parse_seed(assignment.substr(5), origin);
  } else {
    throw ConfigError(origin, "", shown,
                      "path must start with 'topology.', 'scenario.' or be 'seed=N'");
  }
}

ConfigError blame_override(const RawConfig& raw, const ConfigError& error) {
  const std::string& at = error.path();
  for (auto o = raw.overrides.rbegin(); o != raw.overrides.rend(); ++o) {
    if (o->file != error.file()) continue;
    const bool inside = at.size() > o->path.size() && at.compare(0, o->path.size(), o->path) == 0 &&
                        (at[o->path.size()] == '.' || at[o->path.size()] == '[');
    if (at == o->path || inside) {
      return ConfigError(o->origin, error.path(), error.value(), error.problem());
    }
  }
  return error;
}

namespace {

const char* kind_dir(const std::string& kind) {
  if (kind == "nvme_ssd") return "ssd";
  if (kind == "gpu") return "gpu";
  return "other";
}

// A profile holds {"value": V, "source": "..."} per parameter; the sources are
// documentation for people, the values sit between defaults and the node.
nlohmann::json load_profile(const std::string& topology_file, const std::string& kind,
                            const std::string& name, const std::string& path) {
  std::vector<std::string> candidates;
  auto slash = topology_file.find_last_of('/');
  std::string dir = slash == std::string::npos ? "." : topology_file.substr(0, slash);
  candidates.push_back(dir + "/" + kind_dir(kind) + "/" + name + ".json");
  candidates.push_back(shipped_configs_dir() + "/" + kind_dir(kind) + "/" + name + ".json");
  for (const std::string& candidate : candidates) {
    std::ifstream probe(candidate);
    if (!probe) continue;
    nlohmann::json doc = read_json_file(candidate);
    const bool right_kind = doc.is_object() && doc.contains("kind") && doc["kind"].is_string() &&
                            doc["kind"].get<std::string>() == kind;
    if (!right_kind) {
      throw ConfigError(candidate, "$.kind",
                        render_value(doc.is_object() ? doc.value("kind", nlohmann::json()) : doc),
                        "profile '" + name + "' is not a " + kind + " profile");
    }
    if (!doc.contains("params") || !doc["params"].is_object()) {
      throw ConfigError(candidate, "$.params", "", "a profile needs a \"params\" object");
    }
    nlohmann::json values = nlohmann::json::object();
    for (auto it = doc["params"].begin(); it != doc["params"].end(); ++it) {
      const nlohmann::json& entry = it.value();
      if (!entry.is_object() || !entry.contains("value") || !entry.contains("source") ||
          !entry["source"].is_string() || entry["source"].get<std::string>().empty()) {
        throw ConfigError(candidate, "$.params." + it.key(), render_value(entry),
                          "each profile figure needs {\"value\": ..., \"source\": \"...\"}");
      }
      values[it.key()] = entry["value"];
    }
    return values;
  }
  throw ConfigError(topology_file, path, "\"" + name + "\"",
                    fmt::format("no {} profile of that name (looked in {} and {})", kind,
                                candidates[0], candidates[1]));
}

void require_object(const nlohmann::json& doc, const std::string& file, const std::string& path) {
  if (!doc.is_object()) {
    throw ConfigError(file, path, render_value(doc), "expected an object");
  }
}

std::string require_string(const nlohmann::json& obj, const std::string& key,
                           const std::string& file, const std::string& path) {
  if (!obj.contains(key)) {
    throw ConfigError(file, child_path(path, key), "", "missing required field (string)");
  }
  if (!obj[key].is_string() || obj[key].get<std::string>().empty()) {
    throw ConfigError(file, child_path(path, key), render_value(obj[key]),
                      "expected a non-empty string");
  }
  return obj[key].get<std::string>();
}

}  // namespace

TopologyConfig resolve_topology(const Catalog& catalog, const nlohmann::json& doc,
                                const std::string& file) {
  require_object(doc, file, "$");
  TopologyConfig topo;
  topo.file = file;
  topo.params =
      resolve_params(catalog.topology, doc, {file, "$"}, {"nodes", "links", "network_links"});

  if (!doc.contains("nodes")) throw ConfigError(file, "$.nodes", "", "missing required field");
  if (!doc["nodes"].is_array() || doc["nodes"].empty()) {
    throw ConfigError(file, "$.nodes", render_value(doc["nodes"]),
                      "expected a non-empty array of nodes");
  }
  std::vector<std::string> kinds;
  for (const ComponentSpec& spec : catalog.node_kinds) kinds.push_back(spec.kind);
  std::set<std::string> seen;
  // Profiles by kind and name: thousands of drives of one model read their
  // profile once.
  std::map<std::pair<std::string, std::string>, nlohmann::json> profiles;
  for (std::size_t i = 0; i < doc["nodes"].size(); ++i) {
    const nlohmann::json& node = doc["nodes"][i];
    const std::string path = index_path("$.nodes", i);
    require_object(node, file, path);
    NodeConfig config;
    config.id = require_string(node, "id", file, path);
    if (!seen.insert(config.id).second) {
      throw ConfigError(file, path + ".id", "\"" + config.id + "\"", "duplicate node id");
    }
    config.kind = require_string(node, "kind", file, path);
    const ComponentSpec* spec = catalog.node_kind(config.kind);
    if (spec == nullptr) {
      std::string hint = nearest_name(config.kind, kinds);
      std::string all;
      for (const auto& k : kinds) all += (all.empty() ? "" : ", ") + k;
      throw ConfigError(file, path + ".kind", "\"" + config.kind + "\"",
                        "unknown kind; expected one of: " + all +
                            (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
    }
    nlohmann::json base = nlohmann::json::object();
    if (node.contains("profile")) {
      config.profile = require_string(node, "profile", file, path);
      auto cached = profiles.find({config.kind, config.profile});
      if (cached == profiles.end()) {
        cached = profiles
                     .emplace(std::make_pair(config.kind, config.profile),
                              load_profile(file, config.kind, config.profile, path + ".profile"))
                     .first;
      }
      base = cached->second;
      // A profile's values are validated as if the user had written them.
      ResolveContext where{file, path + ".profile(" + config.profile + ")"};
      for (auto it = base.begin(); it != base.end(); ++it) {
        const ParamSpec* p = spec->find(it.key());
        if (p == nullptr) {
          // Profiles may carry datasheet figures that no model consumes;
          // those are kept in the profile file, not in the resolved config.
          continue;
        }
        check_param_value(*p, it.value(), where);
      }
    }
    if (node.contains("host")) config.host = require_string(node, "host", file, path);
    config.params =
        resolve_params(*spec, node, {file, path}, {"id", "kind", "profile", "doc", "host"}, base);
    topo.nodes.push_back(std::move(config));
  }

  // `links` (PCIe) and `network_links` (cables) are read alike: each joins two
  // different nodes the list above names, with the parameters of its spec.
  const auto read_links = [&](const char* key, const std::string& what, const ComponentSpec& spec) {
    std::vector<LinkConfig> links;
    if (!doc.contains(key)) return links;
    const std::string list_path = std::string("$.") + key;
    if (!doc[key].is_array()) {
      throw ConfigError(file, list_path, render_value(doc[key]), "expected an array of " + what);
    }
    for (std::size_t i = 0; i < doc[key].size(); ++i) {
      const nlohmann::json& link = doc[key][i];
      const std::string path = index_path(list_path, i);
      require_object(link, file, path);
      LinkConfig config;
      config.from = require_string(link, "from", file, path);
      config.to = require_string(link, "to", file, path);
      for (const char* end : {"from", "to"}) {
        const std::string& id = std::string(end) == "from" ? config.from : config.to;
        if (!seen.count(id)) {
          std::string hint = nearest_name(id, std::vector<std::string>(seen.begin(), seen.end()));
          throw ConfigError(
              file, path + "." + end, "\"" + id + "\"",
              "link to unknown node" + (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
        }
      }
      if (config.from == config.to) {
        throw ConfigError(file, path + ".to", "\"" + config.to + "\"",
                          "a link must join two different nodes");
      }
      config.params = resolve_params(spec, link, {file, path}, {"from", "to"});
      links.push_back(std::move(config));
    }
    return links;
  };
  topo.links = read_links("links", "links", catalog.link);
  topo.network_links = read_links("network_links", "network links", network::network_link_spec());
  // Structure: references to sockets, tree shape, reachability; then the
  // fabric settings that name other nodes (ACS ports).
  TopologyGraph::check(topo);
  pcie::check_fabric_settings(topo);
  return topo;
}

ScenarioConfig resolve_scenario(const Catalog& catalog, const nlohmann::json& doc,
                                const std::string& file, const TopologyConfig& topology) {
  require_object(doc, file, "$");
  ScenarioConfig scenario;
  scenario.file = file;
  scenario.params = resolve_params(catalog.scenario, doc, {file, "$"});
  TopologyGraph::check_scenario(topology, scenario);
  return scenario;
}

RunConfig resolve(const Catalog& catalog, const RawConfig& raw) {
  RunConfig config;
  config.topology = resolve_topology(catalog, raw.topology, raw.topology_file);
  config.scenario = resolve_scenario(catalog, raw.scenario, raw.scenario_file, config.topology);
  config.seed = raw.seed;
  return config;
}

}  // namespace gpunvme
