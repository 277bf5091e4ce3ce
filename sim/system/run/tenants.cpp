#include "sim/system/run/tenants.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>
#include <sstream>

#include "models/host/nvme_driver.h"
#include "models/nvme/ssd_params.h"
#include "sim/kernel/build_info.h"
#include "sim/kernel/params/json_path.h"
#include "sim/kernel/params/resolve.h"
#include "sim/kernel/simulation.h"
#include "sim/system/config/resource_limits.h"
#include "sim/system/machine/machine.h"
#include "sim/system/run/catalog.h"
#include "sim/system/run/setup_checks.h"
#include "sim/system/run/tenant_isolation.h"
#include "sim/system/workload/io_path.h"
#include "sim/system/workload/kv_cache.h"
#include "sim/system/workload/kv_network.h"
#include "sim/system/workload/remote_io_path.h"
#include "sim/system/workload/scenario_spec.h"
#include "sim/system/workload/workload.h"

namespace gpunvme {

TenantsParams TenantsParams::from(const ParamValues& values) {
  TenantsParams out;
#define GPUNVME_TENANTS_TABLE
#define GPUNVME_PARAM GPUNVME_PARAM_READ
#include "sim/system/run/tenants_params.def"
#undef GPUNVME_PARAM
#undef GPUNVME_TENANTS_TABLE
  return out;
}

TenantParams TenantParams::from(const ParamValues& values) {
  TenantParams out;
#define GPUNVME_TENANT_TABLE
#define GPUNVME_PARAM GPUNVME_PARAM_READ
#include "sim/system/run/tenants_params.def"
#undef GPUNVME_PARAM
#undef GPUNVME_TENANT_TABLE
  return out;
}

const ComponentSpec& tenants_spec() {
  static const ComponentSpec spec{
      "tenants",
      "A scenario file of several tenants: its \"tenants\" list holds each tenant's fields "
      "(gpunvme describe tenant) and workload (\"scenario\": gpunvme describe scenario); these "
      "fields say how the shared SSDs arbitrate between them.",
      {
#define GPUNVME_TENANTS_TABLE
#define GPUNVME_PARAM GPUNVME_PARAM_SPEC
#include "sim/system/run/tenants_params.def"
#undef GPUNVME_PARAM
#undef GPUNVME_TENANTS_TABLE
      }};
  return spec;
}

const ComponentSpec& tenant_spec() {
  static const ComponentSpec spec{
      "tenant",
      "One tenant of a multi-tenant scenario: its name, share, priority class and rate limits; "
      "its workload is the scenario under its \"scenario\" key.",
      {
#define GPUNVME_TENANT_TABLE
#define GPUNVME_PARAM GPUNVME_PARAM_SPEC
#include "sim/system/run/tenants_params.def"
#undef GPUNVME_PARAM
#undef GPUNVME_TENANT_TABLE
      }};
  return spec;
}

bool is_tenants_document(const nlohmann::json& scenario) {
  return scenario.is_object() && scenario.contains("tenants");
}

double jain_index(const std::vector<double>& x) {
  double sum = 0.0;
  double squares = 0.0;
  for (const double v : x) {
    sum += v;
    squares += v * v;
  }
  if (x.empty() || squares == 0.0) return 1.0;
  return sum * sum / (static_cast<double>(x.size()) * squares);
}

namespace {

double round_to(double v, double unit) { return std::round(v / unit) * unit; }

// A path inside a tenant's scenario ("$.queues") as a path of the file.
std::string rebase(const std::string& path, const std::string& base) {
  if (path.empty() || path == "$") return base;
  if (path[0] == '$') return base + path.substr(1);
  return base + "." + path;
}

// Tenant names become model names: letters, digits, '_' and '-'.
bool plain_name(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

TenantQos tenant_qos(const TenantParams& t) {
  TenantQos qos;
  qos.name = t.name;
  qos.priority = static_cast<std::uint8_t>(t.priority);  // urgent = 0 ... low = 3, as QPRIO
  qos.rate_iops = t.rate_iops;
  qos.rate_bytes_per_s = t.rate_bytes_per_s;
  qos.burst_ios = static_cast<std::uint64_t>(t.burst_ios);
  qos.burst_bytes = static_cast<std::uint64_t>(t.burst_bytes);
  return qos;
}

// Checks a tenant's QoS fields against its workload and the run's
// arbitration; `where` is the tenant's JSON path.
void check_tenant_qos(const std::string& file, const std::string& where, const TenantsParams& top,
                      const TenantParams& t, const ScenarioParams& s) {
  if (t.priority != TenantPriority::medium &&
      top.arbitration != TenantArbitration::weighted_round_robin) {
    throw ConfigError(file, child_path(where, "priority"), "\"" + enum_name(t.priority) + "\"",
                      "priority classes need arbitration = weighted_round_robin (round robin "
                      "has none); allowed here: medium");
  }
  const std::string scenario = child_path(where, "scenario");
  if (t.rate_bytes_per_s > 0.0 && t.burst_bytes < s.bs) {
    throw ConfigError(file, child_path(where, "burst_bytes"), std::to_string(t.burst_bytes),
                      fmt::format("at least the tenant's I/O size (bs = {} B): the bucket must "
                                  "hold one I/O",
                                  s.bs));
  }
  if (s.fidelity != Fidelity::exact) {
    throw ConfigError(file, child_path(scenario, "fidelity"), "\"" + enum_name(s.fidelity) + "\"",
                      "tenants share one machine timed one way, and fast mode is validated on "
                      "single-workload scenarios only; allowed in tenants: exact");
  }
  if (s.shadow_doorbells) {
    throw ConfigError(file, child_path(scenario, "shadow_doorbells"), "true",
                      "a tenant's queues are created through the host driver the tenants share, "
                      "which sets no Doorbell Buffer Config; allowed in tenants: false");
  }
  if (!s.host_queues.empty()) {
    throw ConfigError(file, child_path(scenario, "host_queues"), "\"" + s.host_queues + "\"",
                      "a tenant's queues are created through the host driver the tenants share, "
                      "in the host memory nearest each SSD; allowed in tenants: \"\"");
  }
  const bool rate_limited = t.rate_iops > 0.0 || t.rate_bytes_per_s > 0.0;
  if (rate_limited && s.path == IoPathKind::gpu_initiated && s.queue_memory != QueueMemory::gpu) {
    throw ConfigError(file, child_path(scenario, "queue_memory"),
                      "\"" + enum_name(s.queue_memory) + "\"",
                      "a rate-limited tenant's I/Os go through the request-driven GPU path, "
                      "whose rings are in GPU memory; allowed with rate limits: gpu");
  }
}

// Tenants on remote paths share each storage host's NIC or DPU port, the
// cables, switch ports and target servers (Machine::shared_model). Refused:
// two tenants with one initiator (its host or Arm cores are each path's
// own), a shared NIC-offload target (its command contexts are each path's
// own), and tenants whose shared prefixes on one target differ in shape (one
// stored copy serves them all). A path reading several storage hosts is
// checked at each of their targets. A shared tier stays read only: a
// kv_cache tenant on a target another tenant uses is refused when blocks
// that fill during decoding would be written into the network tiers
// (tenants' private blocks share the SSDs' slots and the remote memory).
void check_remote_tenants(const std::string& file, const TenantSet& set) {
  std::map<std::size_t, std::size_t> initiator_user, target_user, prefix_user;
  std::map<std::size_t, std::size_t> target_tenants;
  for (const auto& tenant : set.tenants) {
    if (!is_remote_path(tenant.config)) continue;
    for (const StorageRoute& host : resolve_remote_route(tenant.config).storage) {
      ++target_tenants[host.target];
    }
  }
  for (std::size_t i = 0; i < set.tenants.size(); ++i) {
    const RunConfig& c = set.tenants[i].config;
    if (!is_remote_path(c)) continue;
    const ScenarioParams s = ScenarioParams::from(c.scenario.params);
    const RemoteRoute route = resolve_remote_route(c);
    const TopologyConfig& topo = c.topology;
    const std::string where = index_path("$.tenants", i) + ".scenario";
    auto [init, fresh] = initiator_user.emplace(route.initiator, i);
    if (!fresh) {
      throw ConfigError(
          file, where + ".gpu", "\"" + s.gpu + "\"",
          fmt::format("tenant {} already reads through {}, whose cores would serve "
                      "both unshared; each remote-path tenant needs a GPU in a host "
                      "of its own NIC or DPU",
                      set.tenants[init->second].name, topo.nodes[route.initiator].id));
    }
    for (const StorageRoute& host : route.storage) {
      auto [target, first] = target_user.emplace(host.target, i);
      if (!first && host.placement == nvmf::TargetPlacement::nic_offload) {
        throw ConfigError(file, where + ".nvmf_target", "\"" + topo.nodes[host.target].id + "\"",
                          fmt::format("tenant {} already uses this NIC-offload target, whose "
                                      "command contexts each path counts alone; allowed shared: a "
                                      "target on host cores or on a DPU",
                                      set.tenants[target->second].name));
      }
    }
    if (s.kind != ScenarioKind::kv_cache) continue;
    const KvShape k = kv_shape(c);
    const bool shared_tier =
        std::any_of(route.storage.begin(), route.storage.end(),
                    [&](const StorageRoute& host) { return target_tenants[host.target] > 1; });
    if (shared_tier) {
      // HBM less the last blocks under pin, and DRAM, against the full
      // blocks placed before decoding (the shared prefix once per layer).
      const bool lru = s.eviction == KvEviction::lru;
      const std::uint64_t pinned = k.batch * k.layers;
      const std::uint64_t above =
          (lru || k.hbm_blocks < pinned ? 0 : k.hbm_blocks - pinned) + k.dram_blocks;
      const std::uint64_t before =
          kv_blocks_before_decode(k) - k.layers * (k.batch - 1) * k.prefix_blocks;
      const std::uint64_t free_above = above > before ? above - before : 0;
      const std::uint64_t filled = kv_blocks_filled_in_decode(k);
      if (filled > free_above) {
        throw ConfigError(
            file, where + ".decode_steps", std::to_string(k.steps),
            fmt::format("{} KV blocks fill during decoding but HBM and DRAM have room for {}; a "
                        "network KV tier shared with another tenant is read only (their blocks "
                        "share its slots): fewer decode_steps or more hbm_kv_gib or host_kv_gib",
                        filled, free_above));
      }
    }
    if (s.shared_prefix_tokens == 0) continue;
    for (const StorageRoute& host : route.storage) {
      auto [other, alone] = prefix_user.emplace(host.target, i);
      if (alone) continue;
      const KvShape o = kv_shape(set.tenants[other->second].config);
      if (o.layers != k.layers || o.block_bytes != k.block_bytes ||
          o.prefix_blocks != k.prefix_blocks) {
        throw ConfigError(
            file, where + ".shared_prefix_tokens", std::to_string(s.shared_prefix_tokens),
            fmt::format("tenant {} stores a shared prefix on the same target {} with another "
                        "shape ({} layers, {} B blocks, {} prefix blocks; here {}, {}, {}): one "
                        "stored copy needs the same model, block and prefix",
                        set.tenants[other->second].name, topo.nodes[host.target].id, o.layers,
                        o.block_bytes, o.prefix_blocks, k.layers, k.block_bytes, k.prefix_blocks));
      }
    }
  }
}

}  // namespace

RunConfig resolve_tenants(const RawConfig& raw) {
  const std::string& file = raw.scenario_file;
  const nlohmann::json& doc = raw.scenario;
  const nlohmann::json& list = doc.at("tenants");
  if (!list.is_array() || list.empty()) {
    throw ConfigError(file, "$.tenants", render_value(list),
                      "a non-empty list of tenants, each an object with a name, QoS fields "
                      "(gpunvme describe tenant) and its workload under \"scenario\"");
  }
  auto set = std::make_shared<TenantSet>();
  set->file = file;
  set->params = resolve_params(tenants_spec(), doc, {file, "$"}, {"tenants"});
  const TenantsParams top = TenantsParams::from(set->params);
  std::set<std::string> names;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string where = index_path("$.tenants", i);
    const nlohmann::json& entry = list[i];
    if (!entry.is_object()) {
      throw ConfigError(file, where, render_value(entry),
                        "a tenant: an object with a name, QoS fields and \"scenario\"");
    }
    const TenantParams t =
        TenantParams::from(resolve_params(tenant_spec(), entry, {file, where}, {"scenario"}));
    if (!plain_name(t.name)) {
      throw ConfigError(file, child_path(where, "name"), "\"" + t.name + "\"",
                        "a tenant needs a name of letters, digits, '_' and '-'");
    }
    if (!names.insert(t.name).second) {
      throw ConfigError(file, child_path(where, "name"), "\"" + t.name + "\"",
                        "another tenant has this name; names must be unique");
    }
    const std::string scenario_path = child_path(where, "scenario");
    auto body = entry.find("scenario");
    if (body == entry.end() || !body->is_object()) {
      throw ConfigError(file, scenario_path,
                        body == entry.end() ? "(missing)" : render_value(*body),
                        "the tenant's workload: a scenario object (gpunvme describe scenario)");
    }
    RawConfig sub;
    sub.topology_file = raw.topology_file;
    sub.topology = raw.topology;
    sub.scenario_file = file;
    sub.scenario = *body;
    sub.seed = raw.seed + i;
    Tenant tenant;
    tenant.name = t.name;
    tenant.weight = t.weight;
    tenant.stray_dma_every = static_cast<std::uint64_t>(t.stray_dma_every);
    try {
      RunConfig c = resolve(catalog(), sub);
      apply_scenario_kind(sub.scenario, c);
      c.qos = tenant_qos(t);
      check_tenant_qos(file, where, top, t, ScenarioParams::from(c.scenario.params));
      check_resolved(c);
      tenant.config = std::move(c);
    } catch (const ConfigError& e) {
      // Errors about the tenant's own scenario name the field inside the file.
      if (e.file() != file || e.path().rfind("$.tenants", 0) == 0) throw;
      throw ConfigError(file, rebase(e.path(), scenario_path), e.value(), e.problem());
    }
    set->tenants.push_back(std::move(tenant));
  }

  // Stray DMAs point at another tenant of the file.
  for (std::size_t i = 0; i < set->tenants.size(); ++i) {
    const TenantParams t = TenantParams::from(
        resolve_params(tenant_spec(), list[i], {file, index_path("$.tenants", i)}, {"scenario"}));
    if (t.stray_dma_every == 0) continue;
    const std::string where = index_path("$.tenants", i) + ".stray_dma_target";
    std::size_t victim = set->tenants.size();
    for (std::size_t k = 0; k < set->tenants.size(); ++k) {
      if (set->tenants[k].name == t.stray_dma_target) victim = k;
    }
    if (victim == set->tenants.size() || victim == i) {
      std::string others;
      for (std::size_t k = 0; k < set->tenants.size(); ++k) {
        if (k != i) others += (others.empty() ? "" : ", ") + set->tenants[k].name;
      }
      throw ConfigError(file, where, "\"" + t.stray_dma_target + "\"",
                        "stray_dma_every needs the name of another tenant of this file (" +
                            (others.empty() ? std::string("there is none") : others) + ")");
    }
    set->tenants[i].stray_dma_target = victim;
  }

  // GPU warps of two tenants on one GPU would share its SMs unmodelled.
  std::map<std::string, std::size_t> gpu_user;
  std::map<std::string, std::vector<std::size_t>> ssd_users;
  for (std::size_t i = 0; i < set->tenants.size(); ++i) {
    const ScenarioParams s = ScenarioParams::from(set->tenants[i].config.scenario.params);
    if (s.path == IoPathKind::gpu_initiated) {
      auto [it, fresh] = gpu_user.emplace(s.gpu, i);
      if (!fresh) {
        throw ConfigError(file, index_path("$.tenants", i) + ".scenario.gpu", "\"" + s.gpu + "\"",
                          fmt::format("tenant {} already runs GPU-initiated I/O on this GPU; "
                                      "each gpu_initiated tenant needs a GPU of its own",
                                      set->tenants[it->second].name));
      }
    }
    for (const std::string& ssd : s.ssds) ssd_users[ssd].push_back(i);
  }
  check_remote_tenants(file, *set);
  for (const auto& [ssd, users] : ssd_users) {
    const nvme::SsdParams limits =
        nvme::SsdParams::from(set->tenants[users.front()].config.topology.node(ssd)->params);
    if (top.arbitration == TenantArbitration::weighted_round_robin && !limits.wrr_supported) {
      throw ConfigError(file, "$.arbitration", "\"weighted_round_robin\"",
                        fmt::format("{} does not offer weighted round robin (wrr_supported = "
                                    "false in its profile or node)",
                                    ssd));
    }
    if (top.iommu_domains == TenantIommuDomains::per_tenant) {
      // Only a translating IOMMU checks a DMA against a domain (pcie::domain_outcome).
      const TopologyConfig& topology = set->tenants[users.front()].config.topology;
      const TopologyGraph graph(topology);
      const pcie::Router router(topology, graph);
      const NodeConfig* node = topology.node(ssd);
      const std::size_t root =
          router.root_of(static_cast<std::size_t>(node - topology.nodes.data()));
      const bool translating = root != pcie::ResolvedPath::npos &&
                               pcie::RootComplexParams::from(topology.nodes[root].params).iommu ==
                                   pcie::IommuMode::translate;
      if (!translating) {
        throw ConfigError(
            file, "$.iommu_domains", "\"per_tenant\"",
            fmt::format(
                "per-tenant IOMMU domains need a translating IOMMU above {} (iommu = "
                "translate on {}): without translation no DMA is checked against a "
                "domain; allowed here: shared",
                ssd,
                root == pcie::ResolvedPath::npos ? "its root complex" : topology.nodes[root].id));
      }
    }
    if (users.size() < 2) continue;
    std::uint32_t next_qid = 1;
    for (const std::size_t i : users) {
      RunConfig& c = set->tenants[i].config;
      const auto queues =
          static_cast<std::uint32_t>(ScenarioParams::from(c.scenario.params).queues);
      if (next_qid - 1 + queues > static_cast<std::uint32_t>(limits.max_io_queues)) {
        throw ConfigError(file, index_path("$.tenants", i) + ".scenario.queues",
                          std::to_string(queues),
                          fmt::format("the tenants sharing {} ask {} I/O queues together, above "
                                      "the {} it grants (max_io_queues)",
                                      ssd, next_qid - 1 + queues, limits.max_io_queues));
      }
      c.qos.first_qid[ssd] = static_cast<std::uint16_t>(next_qid);
      next_qid += queues;
    }
    set->shared_queues[ssd] = next_qid - 1;
  }
  RunConfig config = set->tenants.front().config;
  config.seed = raw.seed;
  config.qos = TenantQos{};
  config.tenants = set;
  const std::uint64_t needed = estimate_memory(config).bytes();
  if (needed > max_memory_bytes()) {
    throw ConfigError(file, "$.tenants", fmt::format("({} tenants)", set->tenants.size()),
                      fmt::format("the tenants together need an estimated {} MiB of memory, "
                                  "above the cap of {} MiB (--max-memory-gib)",
                                  needed >> 20, max_memory_bytes() >> 20));
  }
  return config;
}

namespace {

nlohmann::json tenants_config_json(const RunConfig& config) {
  const TenantSet& set = *config.tenants;
  nlohmann::json out = config.to_json();
  out["scenario"] = set.params.json();
  nlohmann::json tenants = nlohmann::json::array();
  for (const Tenant& t : set.tenants) {
    const TenantQos& q = t.config.qos;
    nlohmann::json first_qid = nlohmann::json::object();
    for (const auto& [ssd, qid] : q.first_qid) first_qid[ssd] = qid;
    tenants.push_back(
        {{"name", t.name},
         {"weight", t.weight},
         {"stray_dma_every", t.stray_dma_every},
         {"stray_dma_target", t.stray_dma_every == 0 ? "" : set.tenants[t.stray_dma_target].name},
         {"priority", enum_name(static_cast<TenantPriority>(q.priority))},
         {"rate_iops", q.rate_iops},
         {"rate_bytes_per_s", q.rate_bytes_per_s},
         {"burst_ios", q.burst_ios},
         {"burst_bytes", q.burst_bytes},
         {"first_qid", first_qid},
         {"seed", t.config.seed},
         {"scenario", t.config.scenario.params.json()}});
  }
  out["tenants"] = tenants;
  return out;
}

// Brings each SSD that several tenants share up once, for all their queues.
void share_drivers(const TenantSet& set, const TenantsParams& top, Machine& machine) {
  for (const auto& [ssd_id, queues] : set.shared_queues) {
    gpu::Gpu* gpu = nullptr;
    for (const Tenant& t : set.tenants) {
      const ScenarioParams s = ScenarioParams::from(t.config.scenario.params);
      if (std::find(s.ssds.begin(), s.ssds.end(), ssd_id) != s.ssds.end()) {
        gpu = &machine.gpu(s.gpu);
        break;
      }
    }
    const HostSide side = nearest_host_side(machine, machine.node_index(ssd_id));
    const std::size_t cpu = side.cpu == HostSide::npos ? gpu->node() : side.cpu;
    const std::size_t memory =
        side.memory == HostSide::npos ? host::NvmeDriver::kNoHostMemory : side.memory;
    auto driver =
        std::make_unique<host::NvmeDriver>((ssd_id + "_shared_driver").c_str(), machine.ssd(ssd_id),
                                           machine.fabric(), machine.memory(), cpu, memory, gpu);
    host::BringUpOptions options;
    options.io_queues = static_cast<std::uint16_t>(queues);
    options.interrupts = true;
    if (top.arbitration == TenantArbitration::weighted_round_robin) {
      options.weighted_round_robin = true;
      options.set_arbitration = true;
      options.arbitration = nvme::Arbitration{static_cast<std::uint8_t>(top.arbitration_burst_log2),
                                              static_cast<std::uint8_t>(top.low_weight - 1),
                                              static_cast<std::uint8_t>(top.medium_weight - 1),
                                              static_cast<std::uint8_t>(top.high_weight - 1)};
    }
    driver->bring_up(options, nullptr);
    machine.add_shared_driver(ssd_id, std::move(driver));
  }
}

// The shared network KV tier: kv_cache tenants reading one NVMe-oF target
// (or one set of them, when their SSDs are in several storage hosts: the
// targets' ids joined by "+", in the order of the tenant's $.ssds). Capacity: each tenant's
// prompts' full blocks (every layer), the shared prefix stored once for all of them, against every
// sequence keeping its own; per tenant its decode figures and what each token cost the tier.
nlohmann::json shared_kv_tier(const TenantSet& set, const nlohmann::json& tenants) {
  std::map<std::string, std::vector<std::size_t>> by_target;
  for (std::size_t i = 0; i < set.tenants.size(); ++i) {
    const RunConfig& c = set.tenants[i].config;
    if (!is_remote_path(c) ||
        ScenarioParams::from(c.scenario.params).kind != ScenarioKind::kv_cache) {
      continue;
    }
    std::string targets;
    for (const StorageRoute& host : resolve_remote_route(c).storage) {
      targets += (targets.empty() ? "" : "+") + c.topology.nodes[host.target].id;
    }
    by_target[targets].push_back(i);
  }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [target, users] : by_target) {
    std::uint64_t stored = 0, private_copies = 0, prefix_once = 0;
    nlohmann::json per_tenant = nlohmann::json::array();
    for (const std::size_t i : users) {
      const KvShape k = kv_shape(set.tenants[i].config);
      private_copies += kv_stored_bytes_private(k);
      stored += kv_stored_bytes(k);
      // Every tenant's own figure holds the prefix once; the tier holds it once in all.
      const std::uint64_t prefix = k.layers * k.prefix_blocks * k.block_bytes;
      if (prefix_once == 0) {
        prefix_once = prefix;
      } else {
        stored -= prefix;
      }
      const nlohmann::json& t = tenants[i];
      const nlohmann::json& kv = t["kv_cache"];
      const nlohmann::json& remote = t["remote"];
      const nlohmann::json& tier = kv["network_tier"];
      const auto tokens = kv["tokens"].get<std::uint64_t>();
      const auto ios = t["summary"]["ios"].get<std::uint64_t>();
      const std::uint64_t tier_bytes = tier["remote_nvme_to_hbm"].get<std::uint64_t>() +
                                       tier["remote_memory_to_hbm"].get<std::uint64_t>();
      const double per_token = tokens == 0 ? 0.0 : 1.0 / static_cast<double>(tokens);
      const double ios_d = static_cast<double>(ios);
      per_tenant.push_back(
          {{"name", t["name"]},
           {"gpu", ScenarioParams::from(set.tenants[i].config.scenario.params).gpu},
           {"tokens_per_s", kv["tokens_per_s"]},
           {"ttft_ns", kv["ttft_ns"]},
           {"tpot_ns", kv["tpot_ns"]},
           {"tier_bytes", tier_bytes},
           {"tier_bytes_per_token", round_to(static_cast<double>(tier_bytes) * per_token, 0.001)},
           {"tier_ios", ios},
           // Core time the tier's I/Os took per token: the target's (on the
           // storage side's DPU or cores) and the initiator DPU's Arm cores.
           {"target_dpu_core_ns_per_token",
            round_to(remote["target_dpu_core_ns_per_io"].get<double>() * ios_d * per_token, 0.001)},
           {"target_host_core_ns_per_token",
            round_to(remote["target_core_ns_per_io"].get<double>() * ios_d * per_token, 0.001)},
           {"initiator_dpu_core_ns_per_token",
            round_to(remote["dpu_core_ns_per_io"].get<double>() * ios_d * per_token, 0.001)},
           {"initiator_host_core_ns_per_token",
            round_to(remote["host_core_ns_per_io"].get<double>() * ios_d * per_token, 0.001)}});
    }
    const nlohmann::json& first = tenants[users.front()]["remote"];
    out.push_back({{"target", target},
                   {"target_placement", first["target_placement"]},
                   {"tenants", users.size()},
                   {"stored_bytes", stored},
                   {"stored_bytes_private_prefix", private_copies},
                   {"saved_bytes", private_copies - stored},
                   // The target's servers, shared: their busy time over all tenants.
                   {"target_cores_busy_ns", first["target_cores_busy_ns"]},
                   {"per_tenant", per_tenant}});
  }
  return out;
}

nlohmann::json fairness(const nlohmann::json& tenants) {
  std::vector<double> normalised;
  double max_p99 = 0.0;
  double min_p99 = 0.0;
  std::string slowest, fastest;
  for (const nlohmann::json& t : tenants) {
    normalised.push_back(t["summary"]["iops"].get<double>() / t["weight"].get<double>());
    const double p99 = t["summary"]["latency_ns"]["p99"].get<double>();
    if (slowest.empty() || p99 > max_p99) {
      max_p99 = p99;
      slowest = t["name"].get<std::string>();
    }
    if (fastest.empty() || p99 < min_p99) {
      min_p99 = p99;
      fastest = t["name"].get<std::string>();
    }
  }
  nlohmann::json out = {
      {"jain_index", round_to(jain_index(normalised), 1e-9)},
      {"max_p99_ns", max_p99},
      {"max_p99_tenant", slowest},
      {"min_p99_ns", min_p99},
      {"min_p99_tenant", fastest},
      {"p99_ratio", min_p99 > 0 ? round_to(max_p99 / min_p99, 1e-6) : 0.0},
  };
  return out;
}

}  // namespace

nlohmann::json run_tenants(const RunConfig& config, const RunOptions& options) {
  if (!options.trace_file.empty()) {
    throw ConfigError("", "--trace", options.trace_file,
                      "traces follow a run of one workload; a multi-tenant run writes none");
  }
  const auto wall_start = std::chrono::steady_clock::now();
  const TenantSet& set = *config.tenants;
  const TenantsParams top = TenantsParams::from(set.params);
  nlohmann::json result;
  result["schema"] = "gpunvme.result/1";
  result["gpunvme"] = build_info_json();
  result["config"] = tenants_config_json(config);
  nlohmann::json tenants = nlohmann::json::array();
  {
    for (const Tenant& t : set.tenants) check_workload(t.config);
    Simulation simulation;
    Machine machine(config.topology);
    share_drivers(set, top, machine);
    const bool per_tenant = top.iommu_domains == TenantIommuDomains::per_tenant;
    TenantIsolation isolation(set.tenants.size(), per_tenant, machine.memory(),
                              machine.fabric().router());
    machine.fabric().set_tenant_pasids(per_tenant);
    std::vector<std::unique_ptr<Workload>> workloads;
    for (std::size_t i = 0; i < set.tenants.size(); ++i) {
      const Tenant& t = set.tenants[i];
      // Its domain: what its workload allocates, in host memory and in every GPU.
      const std::uint64_t host_from = machine.memory().next_base();
      std::map<std::string, std::uint64_t> gpu_from;
      for (const auto& [id, gpu] : machine.gpus()) gpu_from[id] = gpu->next_free();
      workloads.push_back(make_workload(t.config, machine, "tenant_" + t.name));
      isolation.map(i, host_from, machine.memory().next_base() - host_from);
      for (const auto& [id, gpu] : machine.gpus()) {
        isolation.map(i, gpu_from[id], gpu->next_free() - gpu_from[id]);
      }
      if (t.stray_dma_every != 0) isolation.stray(i, t.stray_dma_every, t.stray_dma_target);
    }
    // Each SSD's I/O queues belong to the tenants that created them.
    for (const auto& [id, ssd] : machine.ssds()) {
      std::map<std::uint16_t, std::size_t> queue_tenant;
      for (std::size_t i = 0; i < set.tenants.size(); ++i) {
        const RunConfig& c = set.tenants[i].config;
        const ScenarioParams s = ScenarioParams::from(c.scenario.params);
        if (std::find(s.ssds.begin(), s.ssds.end(), id) == s.ssds.end()) continue;
        auto first = c.qos.first_qid.find(id);
        const std::uint16_t from = first == c.qos.first_qid.end() ? 1 : first->second;
        for (std::int64_t q = 0; q < s.queues; ++q) {
          queue_tenant[static_cast<std::uint16_t>(from + q)] = i;
        }
      }
      ssd->gate_data(isolation.gate(machine.node_index(id), std::move(queue_tenant)));
    }
    simulation.run();
    const Picoseconds elapsed = Simulation::now();
    for (const auto& [id, ssd] : machine.ssds()) ssd->check_drained();
    std::uint64_t submitted = 0, succeeded = 0, failed = 0, bytes = 0;
    Picoseconds first_start = elapsed, last_end = 0;
    for (std::size_t i = 0; i < set.tenants.size(); ++i) {
      const Tenant& t = set.tenants[i];
      const Workload& w = *workloads[i];
      require_complete(w, fmt::format("tenant {}: ", t.name));
      nlohmann::json entry = workload_figures(w, t.config, elapsed);
      entry["name"] = t.name;
      entry["weight"] = t.weight;
      entry["priority"] = enum_name(static_cast<TenantPriority>(t.config.qos.priority));
      entry["stage_order"] = w.stage_order();
      entry.update(w.sections(elapsed));
      // A GPU tenant's error handling through the host (error_policy).
      const nlohmann::json error_handling = w.error_handling();
      if (!error_handling.is_null()) {
        entry["summary"]["error_handling"] = error_handling.at("summary");
      }
      entry["isolation"] = isolation.report(i, machine.fabric());
      const platform::WarpCounters& c = w.counters();
      if (w.path() == "gpu_initiated") {
        entry["gpu"] = {{"polls", c.polls},
                        {"fences", c.fences},
                        {"mmio_stores", c.mmio_stores},
                        {"instructions", c.instructions},
                        {"wait_ns", round_to(ps_to_ns(c.wait_ps), 0.001)}};
      }
      tenants.push_back(entry);
      submitted += w.ios();
      failed += w.errors();
      succeeded += w.completed() - w.errors();
      bytes += w.bytes();
      first_start = std::min(first_start, std::min(w.started_at(), elapsed));
      last_end = std::max(last_end, std::min(w.finished_at(), elapsed));
    }
    last_end = std::max(last_end, first_start);
    const double seconds = static_cast<double>(last_end - first_start) * 1e-12;
    LatencyHistogram fetch, service;
    nlohmann::json ssds = nlohmann::json::object();
    for (const auto& [id, ssd] : machine.ssds()) {
      fetch.merge(ssd->fetch_wait());
      service.merge(ssd->service());
      ssds[id] = ssd->statistics(elapsed);
    }
    result["summary"] = {
        {"path", "tenants"},
        {"tenants", set.tenants.size()},
        {"submitted", submitted},
        {"ios", succeeded},
        {"failed", failed},
        {"bytes", bytes},
        {"iops", round_to(seconds > 0 ? static_cast<double>(succeeded) / seconds : 0.0, 0.001)},
        {"bandwidth_gbps",
         round_to(seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0.0, 1e-6)},
        {"io_time_ns", round_to(ps_to_ns(last_end - first_start), 0.001)},
        {"simulated_time_ns", round_to(ps_to_ns(elapsed), 0.001)},
        {"events", Simulation::events()},
    };
    result["stages"] = {{"ssd_fetch_wait", fetch.summary_ns()},
                        {"ssd_service", service.summary_ns()}};
    result["ssds"] = ssds;
    nlohmann::json gpus = nlohmann::json::object();
    for (const auto& [id, gpu] : machine.gpus()) {
      gpus[id] = {{"atomics", gpu->atomics()},
                  {"atomic_queueing_ns", round_to(ps_to_ns(gpu->atomic_queueing_ps()), 0.001)},
                  {"issue_stall_ns", round_to(ps_to_ns(gpu->issue_stall_ps()), 0.001)}};
    }
    result["gpus"] = gpus;
    result["pcie"] = machine.fabric().report(elapsed);
    result["pcie"]["dma_engines"] = machine.dma_engines();
    result["paths"] = machine.fabric().paths();
  }
  if (top.compare_alone) {
    for (std::size_t i = 0; i < set.tenants.size(); ++i) {
      RunConfig alone = set.tenants[i].config;
      alone.qos.first_qid.clear();
      const nlohmann::json solo = run(alone);
      nlohmann::json& entry = tenants[i];
      const double shared_mean = entry["summary"]["latency_ns"]["mean"].get<double>();
      const double solo_mean = solo["summary"]["latency_ns"]["mean"].get<double>();
      const double solo_iops = solo["summary"]["iops"].get<double>();
      entry["alone"] = {
          {"iops", solo_iops},
          {"latency_ns", solo["summary"]["latency_ns"]},
          {"slowdown", solo_mean > 0 ? round_to(shared_mean / solo_mean, 1e-6) : 0.0},
          {"throughput_ratio",
           solo_iops > 0 ? round_to(entry["summary"]["iops"].get<double>() / solo_iops, 1e-6)
                         : 0.0},
      };
    }
  }
  const nlohmann::json kv_tier = shared_kv_tier(set, tenants);
  if (!kv_tier.empty()) result["shared_kv_tier"] = kv_tier;
  result["tenants"] = tenants;
  result["fairness"] = fairness(tenants);
  if (top.compare_alone) {
    double worst = 0.0;
    for (const nlohmann::json& t : tenants) {
      worst = std::max(worst, t["alone"]["slowdown"].get<double>());
    }
    result["fairness"]["max_slowdown"] = worst;
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  result["summary"]["wall_time_s"] = round_to(wall, 1e-6);
  return result;
}

}  // namespace gpunvme
