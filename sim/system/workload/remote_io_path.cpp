#include "sim/system/workload/remote_io_path.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "models/host/host_specs.h"
#include "models/pcie/pcie_specs.h"
#include "models/pcie/routing.h"
#include "models/topology/topology_graph.h"
#include "sim/kernel/params/config_error.h"
#include "sim/kernel/params/json_path.h"
#include "sim/system/workload/scenario_spec.h"

namespace gpunvme {

namespace {

constexpr std::uint32_t kStagingChunk = 4096;  // staging buffers per host region
constexpr std::uint32_t kFlagWords = 4096;     // GPU completion flags (4 B each), reused
constexpr std::uint64_t kPage = 4096;
// Memory keys of the initiator's buffers: GPU memory and the staging buffers.
constexpr std::uint32_t kGpuBufferKey = 1;
constexpr std::uint32_t kStagingKey = 2;
// Keys of the capsule rings and target buffers, as nvmf::remote_read names them.
constexpr std::uint32_t kInitiatorCapsules = nvmf::kReservedMemoryKeys;
constexpr std::uint32_t kTargetCapsules = nvmf::kReservedMemoryKeys + 1;
constexpr std::uint32_t kTargetBuffers = nvmf::kReservedMemoryKeys + 2;

std::uint64_t round_up(std::uint64_t v, std::uint64_t to) { return (v + to - 1) / to * to; }

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

double per_io(Picoseconds total, std::uint64_t ios) {
  if (ios == 0) return 0.0;
  return std::round(static_cast<double>(total) / static_cast<double>(ios)) / 1000.0;
}

std::size_t first_in_host(const TopologyConfig& topo, const std::string& host,
                          const std::string& kind) {
  for (std::size_t i = 0; i < topo.nodes.size(); ++i) {
    if (topo.nodes[i].kind == kind && topo.nodes[i].host == host) return i;
  }
  return RemoteRoute::npos;
}

std::size_t index_of(const TopologyConfig& topo, const std::string& id) {
  for (std::size_t i = 0; i < topo.nodes.size(); ++i) {
    if (topo.nodes[i].id == id) return i;
  }
  return RemoteRoute::npos;
}

}  // namespace

bool is_remote_path(const RunConfig& config) {
  const IoPathKind path = ScenarioParams::from(config.scenario.params).path;
  return path == IoPathKind::remote_staged || path == IoPathKind::nvmf_gpudirect ||
         path == IoPathKind::dpu || path == IoPathKind::gpu_network;
}

RemoteRoute resolve_remote_route(const RunConfig& config) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  const TopologyConfig& topo = config.topology;
  const std::string& file = config.scenario.file;
  const std::string path_name = quoted(enum_name(s.path));
  RemoteRoute route;
  route.path = s.path == IoPathKind::remote_staged ? nvmf::RemotePath::remote_staged
               : s.path == IoPathKind::dpu         ? nvmf::RemotePath::dpu
                                                   : nvmf::RemotePath::nvmf_gpudirect;
  // gpu_network: the exchange of nvmf_gpudirect, posted and reaped by GPU warps.
  route.gpu_initiated = s.path == IoPathKind::gpu_network;
  if (s.kind != ScenarioKind::microbenchmark && s.kind != ScenarioKind::gather &&
      s.kind != ScenarioKind::graph && s.kind != ScenarioKind::kv_cache) {
    throw ConfigError(file, "$.path", path_name,
                      "the remote paths run the microbenchmark, gather, graph and kv_cache kinds; "
                      "this scenario is a " +
                          enum_name(s.kind));
  }
  const std::size_t gpu = index_of(topo, s.gpu);
  const std::string& gpu_host = topo.nodes[gpu].host;
  // The storage hosts: every SSD in another host than the GPU's.
  for (std::size_t k = 0; k < s.ssds.size(); ++k) {
    const NodeConfig& ssd = topo.nodes[index_of(topo, s.ssds[k])];
    const std::string at = index_path("$.ssds", k);
    if (topo.network_links.empty() || ssd.host == gpu_host) {
      throw ConfigError(file, at, quoted(ssd.id),
                        "a remote path reads SSDs of another host than the GPU's, joined to it "
                        "by network_links; " +
                            ssd.id + " is in the GPU's host" +
                            (gpu_host.empty() ? "" : " \"" + gpu_host + "\""));
    }
    auto host = std::find_if(route.storage.begin(), route.storage.end(),
                             [&ssd](const StorageRoute& h) { return h.host == ssd.host; });
    if (host == route.storage.end()) {
      route.storage.push_back(StorageRoute{});
      route.storage.back().host = ssd.host;
      host = route.storage.end() - 1;
    }
    host->ssds.push_back(k);
  }
  const bool dpu = route.path == nvmf::RemotePath::dpu;
  const std::string initiator_kind = dpu ? "dpu" : "rdma_nic";
  route.initiator = first_in_host(topo, gpu_host, initiator_kind);
  if (route.initiator == RemoteRoute::npos) {
    throw ConfigError(file, "$.path", path_name,
                      fmt::format("the GPU's host \"{}\" has no {} node for this path", gpu_host,
                                  initiator_kind));
  }
  // nvmf_target names the target of one storage host; the others use their
  // first nvmf_target node.
  std::size_t named_target = RemoteRoute::npos;
  if (!s.nvmf_target.empty()) {
    named_target = index_of(topo, s.nvmf_target);
    const bool in_a_storage_host =
        named_target != RemoteRoute::npos &&
        std::any_of(route.storage.begin(), route.storage.end(),
                    [&](const StorageRoute& h) { return h.host == topo.nodes[named_target].host; });
    if (!in_a_storage_host || topo.nodes[named_target].kind != "nvmf_target") {
      std::string hosts;
      for (const StorageRoute& h : route.storage)
        hosts += (hosts.empty() ? "" : ", ") + quoted(h.host);
      throw ConfigError(file, "$.nvmf_target", quoted(s.nvmf_target),
                        fmt::format("not an nvmf_target node of the SSDs' host{} {}",
                                    route.storage.size() > 1 ? "s" : "", hosts));
    }
  }
  for (StorageRoute& host : route.storage) {
    const std::size_t first_ssd = host.ssds.front();
    const std::string first_ssd_path = index_path("$.ssds", first_ssd);
    host.target = named_target != RemoteRoute::npos && topo.nodes[named_target].host == host.host
                      ? named_target
                      : first_in_host(topo, host.host, "nvmf_target");
    if (host.target != RemoteRoute::npos) {
      host.placement = nvmf::NvmfTargetParams::from(topo.nodes[host.target].params).placement;
    }
    // A target on a DPU takes its capsules through the DPU's own NIC.
    const bool target_on_dpu = host.placement == nvmf::TargetPlacement::dpu;
    host.target_nic = first_in_host(topo, host.host, target_on_dpu ? "dpu" : "rdma_nic");
    if (target_on_dpu && host.target_nic == RemoteRoute::npos) {
      throw ConfigError(
          topo.file, index_path("$.nodes", host.target) + ".placement", "\"dpu\"",
          fmt::format("the SSDs' host \"{}\" has no dpu node to run the target", host.host));
    }
    if (host.target_nic == RemoteRoute::npos || host.target == RemoteRoute::npos) {
      throw ConfigError(file, first_ssd_path, quoted(s.ssds[first_ssd]),
                        fmt::format("the SSDs' host \"{}\" needs an rdma_nic and an nvmf_target "
                                    "node to serve remote reads",
                                    host.host));
    }
    if (host.placement != nvmf::TargetPlacement::host_cpu) {
      // The DPU's or NIC's peer-to-peer traffic with the SSDs (data into the
      // DPU's memory; the NIC's doorbell writes) obeys the same ACS and IOMMU
      // rules as any other.
      const TopologyGraph graph(topo);
      const pcie::Router router(topo, graph);
      for (const std::size_t k : host.ssds) {
        const std::size_t ssd = index_of(topo, s.ssds[k]);
        const pcie::ResolvedPath p = target_on_dpu ? router.resolve(ssd, host.target_nic)
                                                   : router.resolve(host.target_nic, ssd);
        if (p.blocked) {
          throw ConfigError(
              topo.file, index_path("$.nodes", host.target) + ".placement",
              quoted(enum_name(host.placement)),
              fmt::format("{} and {} cannot reach each other peer to peer: {} (topology {} = {})",
                          s.ssds[k], topo.nodes[host.target_nic].id, p.why_blocked,
                          p.blocking_setting, p.blocking_value.empty() ? "?" : p.blocking_value));
        }
      }
    }
    // The ports are joined by cables, directly or through network switches.
    host.network = network::shortest_network_route(topo, route.initiator, host.target_nic);
    if (host.network.empty()) {
      const std::string joined_problem = fmt::format(
          "no network route between {} and {}: join their ports by network_links, directly "
          "or through network_switch nodes",
          topo.nodes[route.initiator].id, topo.nodes[host.target_nic].id);
      if (route.storage.size() == 1) {
        throw ConfigError(topo.file, "$.network_links", "", joined_problem);
      }
      throw ConfigError(file, first_ssd_path, quoted(s.ssds[first_ssd]),
                        fmt::format("{} is in host \"{}\", and there is {} (topology {})",
                                    s.ssds[first_ssd], host.host, joined_problem, topo.file));
    }
    // Each switch on the route forwards through one of its ports.
    for (std::size_t i = 1; i + 1 < host.network.nodes.size(); ++i) {
      const std::size_t node = host.network.nodes[i];
      const auto ports = network::NetworkSwitchParams::from(topo.nodes[node].params).ports;
      for (const std::size_t l : {host.network.links[i - 1], host.network.links[i]}) {
        if (network::switch_port(topo, node, l) >= static_cast<std::uint64_t>(ports)) {
          throw ConfigError(
              topo.file, index_path("$.network_links", l), "",
              fmt::format("{} has {} ports, and this is its cable number {}", topo.nodes[node].id,
                          ports, network::switch_port(topo, node, l) + 1));
        }
      }
    }
    if (host.placement != route.storage.front().placement) {
      throw ConfigError(
          topo.file, index_path("$.nodes", host.target) + ".placement",
          quoted(enum_name(host.placement)),
          fmt::format("the targets a scenario reads run in one placement; {} (host \"{}\") runs "
                      "in \"{}\"",
                      topo.nodes[route.storage.front().target].id, route.storage.front().host,
                      enum_name(route.storage.front().placement)));
    }
  }
  if (!dpu && !route.gpu_initiated) {
    // The GPU host's memory nearest the NIC, and its socket.
    const TopologyGraph graph(topo);
    std::size_t best = static_cast<std::size_t>(-1);
    for (std::size_t i = 0; i < topo.nodes.size(); ++i) {
      if (topo.nodes[i].kind != "host_memory" || topo.nodes[i].host != gpu_host) continue;
      const std::size_t hops = graph.route(i, route.initiator).size();
      if (hops == 0 || hops >= best) continue;
      best = hops;
      route.gpu_memory = i;
      route.gpu_cpu = index_of(topo, pcie::HostMemoryParams::from(topo.nodes[i].params).socket);
    }
    if (route.gpu_memory == RemoteRoute::npos || route.gpu_cpu == RemoteRoute::npos) {
      throw ConfigError(file, "$.path", path_name,
                        fmt::format("the GPU's host \"{}\" needs a cpu and a host_memory the NIC "
                                    "reaches for this path's host cores",
                                    gpu_host));
    }
  }
  if (route.path != nvmf::RemotePath::remote_staged) {
    // The NIC's (or DPU's) DMA into GPU memory is peer-to-peer traffic: the
    // same ACS and IOMMU rules as an SSD's.
    const TopologyGraph graph(topo);
    const pcie::Router router(topo, graph);
    const pcie::ResolvedPath p = router.resolve(route.initiator, gpu);
    if (p.blocked) {
      throw ConfigError(
          file, "$.path", path_name,
          fmt::format("{} cannot write into {}'s memory: {} (topology {} = {})",
                      topo.nodes[route.initiator].id, s.gpu, p.why_blocked, p.blocking_setting,
                      p.blocking_value.empty() ? "?" : p.blocking_value));
    }
    route.redirected =
        p.redirected_by != pcie::ResolvedPath::npos || p.translated_by != pcie::ResolvedPath::npos;
    route.gpu_dma_kind = p.kind;
    route.gpu_dma_taken = p.taken;
    route.gpu_dma_route = router.describe(p);
  }
  if (route.gpu_initiated) {
    // The GPU's stores into the NIC's doorbell register are peer-to-peer
    // traffic too, judged by the same rules.
    const TopologyGraph graph(topo);
    const pcie::Router router(topo, graph);
    const pcie::ResolvedPath p = router.resolve(gpu, route.initiator);
    if (p.blocked) {
      throw ConfigError(
          file, "$.path", path_name,
          fmt::format("{} cannot ring {}'s doorbell: {} (topology {} = {})", s.gpu,
                      topo.nodes[route.initiator].id, p.why_blocked, p.blocking_setting,
                      p.blocking_value.empty() ? "?" : p.blocking_value));
    }
    route.doorbell_kind = p.kind;
    route.doorbell_taken = p.taken;
    route.doorbell_route = router.describe(p);
  }
  return route;
}

RemoteIoPath::RemoteIoPath(const sc_core::sc_module_name& name, const RunConfig& config,
                           Machine& machine, std::uint64_t max_io_bytes)
    : Component(name, ParamValues{}),
      config_(config),
      machine_(machine),
      route_(resolve_remote_route(config)),
      gpu_(machine.gpu(ScenarioParams::from(config.scenario.params).gpu)),
      buffer_stride_(round_up(std::max<std::uint64_t>(max_io_bytes, 1), kPage)),
      from_gpu_(ScenarioParams::from(config.scenario.params).request_origin == RequestOrigin::gpu),
      cores_(1),
      stages_({"request_signal", "initiator_submit", "command_to_target", "target",
               "data_to_initiator", "initiator_completion", "copy_to_gpu", "delivery"},
              kSubmitted) {
  const TopologyConfig& topo = machine.topology();
  const NodeConfig& initiator = topo.nodes[route_.initiator];
  // The RDMA ports, one model per topology node for every path of the run
  // that reaches it (Machine::shared_model): tenants reading one storage
  // host queue at its NIC or DPU port.
  const auto nic_of = [&machine, &topo](std::size_t node) {
    return machine.shared_model<nic::RdmaNic>(fmt::format("rdma_port:{}", node), [&topo, node] {
      return new nic::RdmaNic(nic::RdmaNicParams::from(topo.nodes[node].params));
    });
  };
  initiator_nic_ = nic_of(route_.initiator);
  if (route_.path == nvmf::RemotePath::dpu) {
    dpu_ = nvmf::DpuParams::from(initiator.params);
    cores_ = host::CpuCores(static_cast<std::uint32_t>(dpu_.arm_cores));
    // The GPU host's cpu still sets how soon a polled request is seen.
    const std::size_t cpu = nearest_host_side(machine, route_.initiator).cpu;
    if (cpu != HostSide::npos) costs_ = host::cpu_io_costs(topo.nodes[cpu].params);
  } else if (!route_.gpu_initiated) {
    const NodeConfig& cpu = topo.nodes[route_.gpu_cpu];
    costs_ = host::cpu_io_costs(cpu.params);
    cores_ = host::CpuCores(static_cast<std::uint32_t>(host::CpuParams::from(cpu.params).cores));
  }
  const ScenarioParams scenario = ScenarioParams::from(config.scenario.params);
  side_of_ssd_.assign(scenario.ssds.size(), 0);
  local_ssd_.assign(scenario.ssds.size(), 0);
  for (std::size_t h = 0; h < route_.storage.size(); ++h) {
    const StorageRoute& host = route_.storage[h];
    auto side = std::make_unique<StorageSide>();
    side->route = h;
    side->nic = nic_of(host.target_nic);
    side->to_target = direction(host.network, true);
    side->to_initiator = direction(host.network, false);
    side->mtu = 0;
    for (const std::size_t l : host.network.links) {
      const auto mtu = static_cast<std::uint32_t>(
          network::NetworkLinkParams::from(topo.network_links[l].params).mtu_bytes);
      side->mtu = side->mtu == 0 ? mtu : std::min(side->mtu, mtu);
    }
    const nvmf::NvmfTargetParams target =
        nvmf::NvmfTargetParams::from(topo.nodes[host.target].params);
    side->in_capsule_data_bytes = static_cast<std::uint64_t>(target.in_capsule_data_bytes);
    nvmf::TargetSite& site = side->site;
    site.placement = host.placement;
    switch (host.placement) {
      case nvmf::TargetPlacement::host_cpu:
        site.servers = target.cores;
        site.io_time = target.io_ns;
        site.node = host.target;
        break;
      case nvmf::TargetPlacement::dpu: {
        // The DPU's Arm cores run the target; its memory holds the SSD queues
        // and buffers, and it rings the SSDs' doorbells.
        const nvmf::DpuParams dpu = nvmf::DpuParams::from(topo.nodes[host.target_nic].params);
        site.servers = dpu.arm_cores;
        site.io_time = dpu.arm_io_ns;
        site.mmio_node = host.target_nic;
        site.memory_node = host.target_nic;
        site.node = host.target_nic;
        side->target_switch = dpu.switch_ns;
        break;
      }
      case nvmf::TargetPlacement::nic_offload:
        // One command context per outstanding command, so the NIC's time per
        // command is latency; the contexts bound how many are held.
        site.servers = target.offload_max_outstanding;
        site.io_time = target.offload_command_ns;
        site.mmio_node = host.target_nic;
        side->contexts = static_cast<std::uint64_t>(target.offload_max_outstanding);
        break;
    }
    // Each target drives its own host's SSDs; with one storage host, all of
    // the scenario's.
    if (route_.storage.size() > 1) {
      for (const std::size_t k : host.ssds) site.ssds.push_back(scenario.ssds[k]);
    }
    for (std::size_t i = 0; i < host.ssds.size(); ++i) {
      side_of_ssd_[host.ssds[i]] = h;
      local_ssd_[host.ssds[i]] = static_cast<std::uint32_t>(i);
    }
    const std::string target_name =
        h == 0 ? fmt::format("{}_nvmf_target", basename())
               : fmt::format("{}_nvmf_target_{}", basename(), topo.nodes[host.target].id);
    side->target = std::make_unique<CpuInitiatedPath>(
        target_name.c_str(), config, machine, CpuInitiatedPath::Mode::Target, max_io_bytes, &site);
    sides_.push_back(std::move(side));
  }
  gpu_flags_ = gpu_.allocate(std::uint64_t{kFlagWords} * 4, 128);
}

RemoteIoPath::Direction RemoteIoPath::direction(const network::NetworkRoute& route, bool forward) {
  const TopologyConfig& topo = machine_.topology();
  std::vector<std::size_t> nodes = route.nodes;
  std::vector<std::size_t> links = route.links;
  if (!forward) {
    std::reverse(nodes.begin(), nodes.end());
    std::reverse(links.begin(), links.end());
  }
  const auto cable = [&](std::size_t l) -> network::NetworkLink& {
    auto it = cables_.find(l);
    if (it == cables_.end()) {
      it = cables_
               .emplace(l, machine_.shared_model<network::NetworkLink>(
                               fmt::format("network_link:{}", l),
                               [&topo, l] {
                                 return new network::NetworkLink(network::NetworkLinkParams::from(
                                     topo.network_links[l].params));
                               }))
               .first;
      cable_order_.push_back(l);
    }
    return *it->second;
  };
  Direction d;
  d.cable = &cable(links[0]);
  d.side = topo.network_links[links[0]].from == topo.nodes[nodes[0]].id ? 0 : 1;
  for (std::size_t i = 0; i < links.size(); ++i) {
    d.hop_names.push_back(topo.nodes[nodes[i]].id + ">" + topo.nodes[nodes[i + 1]].id);
  }
  for (std::size_t i = 1; i + 1 < nodes.size(); ++i) {
    const std::size_t node = nodes[i];
    auto it = switches_.find(node);
    if (it == switches_.end()) {
      it =
          switches_
              .emplace(node, machine_.shared_model<network::NetworkSwitch>(
                                 fmt::format("network_switch:{}", node),
                                 [&topo, node] {
                                   return new network::NetworkSwitch(
                                       network::NetworkSwitchParams::from(topo.nodes[node].params));
                                 }))
              .first;
    }
    SwitchHop hop;
    hop.forwarder = it->second.get();
    hop.node = node;
    hop.cable = links[i];
    hop.port = network::switch_port(topo, node, links[i]);
    hop.next_cable = cable(links[i]).params().latency_ns;
    const network::NetworkLinkParams& in = cable(links[i - 1]).params();
    hop.ingress = {in.protocol, in.latency_ns};
    hop.sender = nodes[i - 1];
    hop.in_cable = links[i - 1];
    d.hops.push_back(hop);
  }
  d.hop_ps.assign(links.size(), 0);
  return d;
}

RemoteIoPath::~RemoteIoPath() = default;

void RemoteIoPath::start(std::function<void()> ready) {
  if (sides_.size() == 1) {
    sides_.front()->target->start(std::move(ready));
    return;
  }
  // Every target starts now (each creates its SSDs' queues); the path is
  // ready once the last of them is.
  auto pending = std::make_shared<std::size_t>(sides_.size());
  auto all_ready = std::make_shared<std::function<void()>>(std::move(ready));
  for (const auto& side : sides_) {
    side->target->start([pending, all_ready] {
      if (--*pending == 0 && *all_ready) (*all_ready)();
    });
  }
}

std::uint64_t RemoteIoPath::timeouts() const {
  std::uint64_t n = 0;
  for (const auto& side : sides_) n += side->target->timeouts();
  return n;
}

std::uint64_t RemoteIoPath::reset_aborted() const {
  std::uint64_t n = 0;
  for (const auto& side : sides_) n += side->target->reset_aborted();
  return n;
}

std::uint64_t RemoteIoPath::io_bytes(const BlockIo& io) const {
  return std::uint64_t{io.lbas} *
         machine_.ssd(ScenarioParams::from(config_.scenario.params).ssds[io.ssd]).lba_bytes();
}

std::uint64_t RemoteIoPath::staging_buffer(std::uint32_t r) {
  const std::uint32_t chunk = r / kStagingChunk;
  while (staging_chunks_.size() <= chunk) {
    staging_chunks_.push_back(machine_.memory()
                                  .allocate(std::uint64_t{kStagingChunk} * buffer_stride_,
                                            route_.gpu_memory, RegionKind::HostMemory,
                                            fmt::format("{}.staging", id()), 4096)
                                  .base);
  }
  return staging_chunks_[chunk] + std::uint64_t{r % kStagingChunk} * buffer_stride_;
}

void RemoteIoPath::submit(const BlockIo& io, IoDone done) {
  std::uint32_t r = 0;
  if (!free_requests_.empty()) {
    r = free_requests_.back();
    free_requests_.pop_back();
  } else {
    requests_.emplace_back();
    r = static_cast<std::uint32_t>(requests_.size() - 1);
  }
  Request& req = requests_[r];
  req.io = io;
  req.done = std::move(done);
  std::fill(std::begin(req.times), std::end(req.times), PathStages::kNotReached);
  req.times[kRequested] = now();
  ++submitted_;
  if (!from_gpu_) {
    noticed(r);
    return;
  }
  // The GPU thread posts its request to a ring the initiator's core (or Arm
  // core) polls; it is seen one cache miss and half a poll loop later.
  schedule_in(costs_.request_wait(), [this, r] { noticed(r); });
}

void RemoteIoPath::noticed(std::uint32_t r) {
  Request& req = requests_[r];
  req.times[kNoticed] = now();
  const std::uint32_t core = req.io.issuer % cores_.size();
  // remote_staged writes: the data goes from the GPU to the staging buffer
  // first, a copy the core launches and learns the end of.
  const bool copy_in = route_.path == nvmf::RemotePath::remote_staged && req.io.write;
  Picoseconds work = 0;
  if (route_.path == nvmf::RemotePath::dpu) {
    work = dpu_.arm_io_ns;
  } else {
    // The NVMe-oF host driver builds the command capsule and posts it.
    work = costs_.submit;
    ledger_.add(host::HostCost::driver_submit, costs_.submit);
    if (from_gpu_) {
      work += costs_.request;
      ledger_.add(host::HostCost::request, costs_.request);
    }
    if (copy_in) {
      work += costs_.copy_launch;
      ledger_.add(host::HostCost::copy_launch, costs_.copy_launch);
    }
  }
  const Picoseconds end = cores_.book(core, now(), work);
  if (!copy_in) {
    schedule_at(end, [this, r] { send_command(r); });
    return;
  }
  schedule_at(end, [this, r, core] {
    ++copies_;
    const std::uint64_t bytes = io_bytes(requests_[r].io);
    initiator_memory_bytes_ += bytes;  // the copy engine writes the staging buffer
    machine_.copy_engine(gpu_.id()).write(staging_buffer(r), bytes, [this, r, core] {
      ledger_.add(host::HostCost::copy_sync, costs_.copy_sync);
      schedule_at(cores_.book(core, now(), costs_.copy_sync), [this, r] { send_command(r); });
    });
  });
}

bool RemoteIoPath::data_in_capsule(const StorageSide& side, const BlockIo& io) const {
  return io.write && io_bytes(io) <= side.in_capsule_data_bytes;
}

std::uint32_t RemoteIoPath::buffer_key() const {
  return route_.path == nvmf::RemotePath::remote_staged ? kStagingKey : kGpuBufferKey;
}

std::uint64_t RemoteIoPath::initiator_buffer(std::uint32_t r) {
  return route_.path == nvmf::RemotePath::remote_staged ? staging_buffer(r)
                                                        : requests_[r].io.buffer;
}

std::vector<Picoseconds> RemoteIoPath::arrivals(const nic::SentMessage& sent, Direction& d) {
  std::vector<Picoseconds> out;
  out.reserve(sent.packets.size());
  // A packet the sending RDMA port held back delays the ones after it.
  Picoseconds port_free = 0;
  for (const network::PacketTransit& p : sent.packets) {
    // Each switch forwards the packet onto the next cable; its head and
    // tail reach the next hop that cable's propagation delay later.
    const Picoseconds late = port_free > p.start ? port_free - p.start : 0;
    Picoseconds head = p.head_arrival + late;
    Picoseconds tail = p.tail_arrival + late;
    Picoseconds sent_end = p.end + late;
    d.hop_ps[0] += tail - p.start;
    for (std::size_t i = 0; i < d.hops.size(); ++i) {
      const SwitchHop& hop = d.hops[i];
      const network::PacketTransit f =
          hop.forwarder->forward(hop.port, head, tail, p.wire_bytes, hop.ingress);
      if (f.stall > 0) {
        // Flow control held the sender back: the packet left it later, and
        // the sender sent nothing else in the meantime.
        SenderStalls& held = sender_stalls_[{hop.sender, hop.in_cable}];
        held.stall_ps += f.stall;
        ++held.stalls;
        d.hop_ps[i] += f.stall;
        tail += f.stall;
        if (i == 0) {
          sent_end += f.stall;
          d.cable->hold(d.side, sent_end);
        } else {
          d.hops[i - 1].forwarder->delay_last(d.hops[i - 1].port, f.stall);
        }
      }
      PortCounters& port = port_counters_[{hop.node, hop.cable}];
      ++port.packets;
      port.bytes += p.wire_bytes;
      head = f.head_arrival + hop.next_cable;
      const Picoseconds next_tail = f.tail_arrival + hop.next_cable;
      d.hop_ps[i + 1] += next_tail - tail;
      tail = next_tail;
    }
    port_free = sent_end;
    ++d.packets;
    out.push_back(tail);
  }
  return out;
}

Picoseconds RemoteIoPath::pcie_legs(const nic::RdmaNic& sender, const nic::SentMessage& sent,
                                    bool reads_payload, const nic::RdmaNic& receiver,
                                    bool posted) const {
  const nic::RdmaNicParams& s = sender.params();
  // The doorbell or BlueFlame write (none when the NIC started the message
  // itself), and the WQE fetch; a GPU that rings the doorbell through the
  // fabric timed its write itself (sent.rung).
  Picoseconds legs = 0;
  if (posted) {
    legs += sent.rung - sent.posted;
    if (sent.wqe_fetched) legs += s.host_read_ns;
  }
  if (reads_payload) {
    legs += s.host_read_ns;  // first payload read
    if (sent.translation_misses > 0) legs += s.host_read_ns;
  }
  return legs + receiver.params().host_read_ns / 2;  // the last write lands
}

nic::SentMessage RemoteIoPath::from_target(StorageSide& side, Picoseconds at,
                                           const nic::RdmaMessage& message) {
  // An offloading NIC starts the target's transfers itself; otherwise the
  // target's core (or Arm core) posts them.
  if (side.site.placement == nvmf::TargetPlacement::nic_offload) {
    return side.nic->originate(at, message, *side.to_initiator.cable, side.to_initiator.side);
  }
  return side.nic->transmit(at, message, *side.to_initiator.cable, side.to_initiator.side);
}

void RemoteIoPath::send_command(std::uint32_t r) {
  Request& req = requests_[r];
  StorageSide& side = side_of(r);
  req.times[kSubmitted] = now();
  // The SQE comes from the capsule ring; a write's in-capsule data from the
  // initiator's buffer, which the NIC reads (and translates) with it.
  const std::uint64_t bytes = io_bytes(req.io);
  const bool with_data = data_in_capsule(side, req.io);
  const std::uint64_t capsule =
      nvmf::command_capsule_bytes(req.io.write, bytes, side.in_capsule_data_bytes);
  const nic::RdmaMessage command =
      with_data
          ? nic::RdmaMessage{network::RdmaOp::send, capsule, buffer_key(), initiator_buffer(r)}
          : nic::RdmaMessage{network::RdmaOp::send, capsule, kInitiatorCapsules, 0};
  if (with_data) {
    ++writes_in_capsule_;
    if (route_.path == nvmf::RemotePath::remote_staged) {
      initiator_memory_bytes_ += bytes;
    } else if (route_.redirected) {
      ++redirected_transfers_;  // the NIC's read of GPU memory is sent up by ACS
    }
  }
  const nic::SentMessage sent = post_command(r, command);
  const std::vector<Picoseconds> tails = arrivals(sent, side.to_target);
  const nic::DeliveredMessage at_target =
      side.nic->receive(tails, {network::RdmaOp::send, capsule, kTargetCapsules, 0}, side.mtu);
  network_ps_ += tails.back() - sent.packets.front().start;
  const bool reads =
      capsule > static_cast<std::uint64_t>(initiator_nic_->params().max_inline_bytes);
  pcie_ps_ += pcie_legs(*initiator_nic_, sent, reads, *side.nic);
  packets_ += sent.packets.size();
  wire_bytes_ += sent.wire_bytes;
  schedule_at(at_target.completed, [this, r] { capsule_in(r); });
}

void RemoteIoPath::capsule_in(std::uint32_t r) {
  StorageSide& side = side_of(r);
  if (side.contexts != 0 && side.held >= side.contexts) {
    ++side.waits;
    side.waiting.push_back(r);
    return;
  }
  ++side.held;
  taken(r);
}

void RemoteIoPath::taken(std::uint32_t r) {
  const BlockIo& io = requests_[r].io;
  StorageSide& side = side_of(r);
  if (!io.write || data_in_capsule(side, io)) {
    to_ssd(r);
    return;
  }
  // The target's NIC RDMA READs the data from the initiator's buffer into a
  // target buffer; the initiator's NIC answers by itself.
  ++writes_rdma_read_;
  const std::uint64_t bytes = io_bytes(io);
  const nic::SentMessage request =
      from_target(side, now(), {network::RdmaOp::rdma_read_request, bytes, kTargetBuffers, 0});
  const std::vector<Picoseconds> request_tails = arrivals(request, side.to_initiator);
  const nic::SentMessage response = initiator_nic_->originate(
      request_tails.back(),
      {network::RdmaOp::rdma_read_response, bytes, buffer_key(), initiator_buffer(r)},
      *side.to_target.cable, side.to_target.side);
  const std::vector<Picoseconds> response_tails = arrivals(response, side.to_target);
  const nic::DeliveredMessage in = side.nic->receive(
      response_tails, {network::RdmaOp::rdma_read_response, bytes, kTargetBuffers, 0}, side.mtu);
  if (route_.path == nvmf::RemotePath::remote_staged) initiator_memory_bytes_ += bytes;
  network_ps_ += (request_tails.back() - request.packets.front().start) +
                 (response_tails.back() - response.packets.front().start);
  // The request's posting (none when the NIC starts it), the initiator
  // NIC's payload read and the data landing in the target's buffer.
  Picoseconds legs = pcie_legs(*initiator_nic_, response, true, *side.nic, false);
  if (side.site.placement != nvmf::TargetPlacement::nic_offload) {
    const nic::RdmaNicParams& t = side.nic->params();
    legs += t.host_read_ns / 2;
    if (t.wqe_posting == nic::WqePosting::doorbell) legs += t.host_read_ns;
  }
  pcie_ps_ += legs;
  packets_ += request.packets.size() + response.packets.size();
  wire_bytes_ += request.wire_bytes + response.wire_bytes;
  if (route_.redirected && route_.path != nvmf::RemotePath::remote_staged) {
    ++redirected_transfers_;
  }
  schedule_at(in.completed, [this, r] { to_ssd(r); });
}

void RemoteIoPath::to_ssd(std::uint32_t r) {
  requests_[r].times[kAtTarget] = now();
  StorageSide& side = side_of(r);
  BlockIo inner = requests_[r].io;
  inner.buffer = 0;  // the target moves the data through its own buffers
  inner.ssd = local_ssd_[inner.ssd];
  // A target on a DPU: a write's data crosses the DPU's own switch on its
  // way to the SSD.
  auto submit = [this, r, inner, target = side.target.get()] {
    target->submit(inner, [this, r](std::uint16_t status) { data_back(r, status); });
  };
  if (inner.write && side.target_switch > 0) {
    schedule_in(side.target_switch, std::move(submit));
  } else {
    submit();
  }
}

nic::SentMessage RemoteIoPath::post_command(std::uint32_t r, const nic::RdmaMessage& capsule) {
  const Direction& to_target = side_of(r).to_target;
  return initiator_nic_->transmit(now(), capsule, *to_target.cable, to_target.side);
}

void RemoteIoPath::data_back(std::uint32_t r, std::uint16_t status) {
  Request& req = requests_[r];
  StorageSide& side = side_of(r);
  req.times[kTargetDone] = now();
  if (side.contexts != 0) {
    // The command's offload context is free: the next waiting one takes it.
    --side.held;
    if (!side.waiting.empty()) {
      const std::uint32_t next = side.waiting.front();
      side.waiting.pop_front();
      ++side.held;
      taken(next);
    }
  }
  const std::uint64_t bytes = io_bytes(req.io);
  const bool staged = route_.path == nvmf::RemotePath::remote_staged;
  const bool read_data = status == 0 && !req.io.write;
  const bool posted = side.site.placement != nvmf::TargetPlacement::nic_offload;
  // A target on a DPU: a read's data crosses the DPU's own switch from the
  // SSD before its NIC sends it.
  const Picoseconds start = now() + (req.io.write ? 0 : side.target_switch);
  Picoseconds data_in = start;
  Picoseconds first_start = std::numeric_limits<Picoseconds>::max();
  Picoseconds last_arrival = start;
  Picoseconds pcie = 0;
  if (read_data) {
    // RDMA WRITE of the data from the target's buffer into the initiator's.
    const nic::SentMessage sent =
        from_target(side, start, {network::RdmaOp::rdma_write, bytes, kTargetBuffers, 0});
    const std::vector<Picoseconds> tails = arrivals(sent, side.to_initiator);
    const nic::DeliveredMessage data = initiator_nic_->receive(
        tails, {network::RdmaOp::rdma_write, bytes, buffer_key(), initiator_buffer(r)}, side.mtu);
    data_in = data.data_written;
    first_start = sent.packets.front().start;
    last_arrival = tails.back();
    pcie = pcie_legs(*side.nic, sent, true, *initiator_nic_, posted);
    packets_ += sent.packets.size();
    wire_bytes_ += sent.wire_bytes;
    if (staged) {
      initiator_memory_bytes_ += bytes;
    } else if (route_.redirected) {
      ++redirected_transfers_;
    }
  }
  // The response capsule follows on the same queue pair.
  const nic::SentMessage sent = from_target(
      side, start, {network::RdmaOp::send, nvmf::kResponseCapsuleBytes, kTargetCapsules, 4096});
  const std::vector<Picoseconds> tails = arrivals(sent, side.to_initiator);
  const nic::DeliveredMessage response = initiator_nic_->receive(
      tails, {network::RdmaOp::send, nvmf::kResponseCapsuleBytes, kInitiatorCapsules, 4096},
      side.mtu);
  packets_ += sent.packets.size();
  wire_bytes_ += sent.wire_bytes;
  first_start = std::min(first_start, sent.packets.front().start);
  last_arrival = std::max(last_arrival, tails.back());
  network_ps_ += last_arrival - first_start;
  if (!read_data) pcie = pcie_legs(*side.nic, sent, true, *initiator_nic_, posted);
  pcie_ps_ += pcie;
  const Picoseconds completed = std::max(response.completed, data_in);
  schedule_at(completed, [this, r, status] { at_initiator(r, status); });
}

void RemoteIoPath::at_initiator(std::uint32_t r, std::uint16_t status) {
  Request& req = requests_[r];
  req.times[kDataIn] = now();
  exchange_ps_ += (req.times[kAtTarget] - req.times[kSubmitted]) +
                  (req.times[kDataIn] - req.times[kTargetDone]);
  ++exchanges_;
  const std::uint32_t core = req.io.issuer % cores_.size();
  switch (route_.path) {
    case nvmf::RemotePath::remote_staged: {
      const bool copy = status == 0 && !req.io.write;
      const Picoseconds work = costs_.complete_poll + (copy ? costs_.copy_launch : 0);
      ledger_.add(host::HostCost::completion, costs_.complete_poll);
      if (copy) ledger_.add(host::HostCost::copy_launch, costs_.copy_launch);
      schedule_at(cores_.book(core, now(), work), [this, r, status, copy, core] {
        requests_[r].times[kReaped] = now();
        if (!copy) {
          deliver(r, status);
          return;
        }
        ++copies_;
        const std::uint64_t bytes = io_bytes(requests_[r].io);
        initiator_memory_bytes_ += bytes;  // the copy engine reads the staging buffer
        machine_.copy_engine(gpu_.id()).read(staging_buffer(r), bytes, [this, r, status, core] {
          requests_[r].times[kCopiedOut] = now();
          ledger_.add(host::HostCost::copy_sync, costs_.copy_sync);
          schedule_at(cores_.book(core, now(), costs_.copy_sync),
                      [this, r, status] { deliver(r, status); });
        });
      });
      return;
    }
    case nvmf::RemotePath::nvmf_gpudirect: {
      const Picoseconds work = costs_.complete_poll + (from_gpu_ ? costs_.notify : 0);
      ledger_.add(host::HostCost::completion, costs_.complete_poll);
      if (from_gpu_) ledger_.add(host::HostCost::notify, costs_.notify);
      schedule_at(cores_.book(core, now(), work), [this, r, status] {
        requests_[r].times[kReaped] = now();
        deliver(r, status);
      });
      return;
    }
    case nvmf::RemotePath::dpu:
      // The DPU's NIC wrote the data through the DPU's own PCIe switch.
      schedule_in(dpu_.switch_ns, [this, r, status] {
        requests_[r].times[kReaped] = now();
        deliver(r, status);
      });
      return;
  }
}

void RemoteIoPath::deliver(std::uint32_t r, std::uint16_t status) {
  if (!from_gpu_) {
    finish(r, status);
    return;
  }
  if (route_.path == nvmf::RemotePath::nvmf_gpudirect) {
    // The core posts the completion flag to GPU memory; the waiting thread
    // sees it one load after it lands.
    const std::uint64_t flag = gpu_flags_ + std::uint64_t{r % kFlagWords} * 4;
    machine_.fabric().write(route_.gpu_cpu, flag, 4, nullptr, [this, r, status] {
      schedule_in(gpu_.costs().load_latency, [this, r, status] { finish(r, status); });
    });
    return;
  }
  // A stream-ordered flag behind the copy (remote_staged), or the DPU's
  // flag behind the data: seen one GPU load later.
  schedule_in(gpu_.costs().load_latency, [this, r, status] { finish(r, status); });
}

void RemoteIoPath::finish(std::uint32_t r, std::uint16_t status) { finish(r, status, now(), 0, 0); }

void RemoteIoPath::finish(std::uint32_t r, std::uint16_t status, Picoseconds when,
                          std::uint32_t queue, std::uint16_t cid) {
  Request& req = requests_[r];
  req.times[kDelivered] = when;
  stages_.record(req.times, machine_.topology().nodes[route_.initiator].id,
                 ScenarioParams::from(config_.scenario.params).ssds[req.io.ssd], queue, cid);
  StorageSide& side = side_of(r);
  ++side.ios;
  if (status != 0) {
    ++errors_;
  } else {
    bytes_ += io_bytes(req.io);
    side.bytes += io_bytes(req.io);
  }
  IoDone done = std::move(req.done);
  req.done = nullptr;
  free_requests_.push_back(r);
  if (done) done(status);
}

nlohmann::json RemoteIoPath::sections(Picoseconds elapsed) const {
  const TopologyConfig& topo = machine_.topology();
  const std::uint64_t ios = completed();
  const bool dpu = route_.path == nvmf::RemotePath::dpu;
  Picoseconds initiator_busy = 0;
  for (std::uint32_t c = 0; c < cores_.size(); ++c) initiator_busy += cores_.busy(c);
  // The remote-memory tier's core time is its own (memory_tier).
  const Picoseconds memory_core = memory_.core_ps + memory_.write_core_ps;
  // The target fields are the first storage host's (that of $.ssds[0]);
  // storage_hosts gives every host's.
  const StorageSide& first = *sides_.front();
  const StorageRoute& first_route = route_.storage.front();
  const auto target_cpu = [&](const StorageSide& side) {
    nlohmann::json cpu = side.target->sections(elapsed).at("cpu");
    if (side.site.placement != nvmf::TargetPlacement::host_cpu) {
      cpu["node"] = topo.nodes[route_.storage[side.route].target_nic].id;
    }
    return cpu;
  };
  const nlohmann::json target = target_cpu(first);
  const bool on_host = first.site.placement == nvmf::TargetPlacement::host_cpu;
  const bool on_dpu = first.site.placement == nvmf::TargetPlacement::dpu;
  const bool offloaded = first.site.placement == nvmf::TargetPlacement::nic_offload;
  const nlohmann::json target_stages = first.target->stages();
  auto stage_mean = [](const nlohmann::json& stages, const char* name) {
    return stages.contains(name) ? stages[name].value("mean", 0.0) : 0.0;
  };
  // The SSD's and the target software's time per I/O: the first host's, or
  // with several hosts the mean over all of them, weighted by their I/Os.
  double ssd_ns = stage_mean(target_stages, "completion_wait");
  double target_software_ns = stage_mean(stages(), "target") - ssd_ns;
  if (sides_.size() > 1 && ios > 0) {
    ssd_ns = 0.0;
    for (const auto& side : sides_) {
      ssd_ns += stage_mean(side->target->stages(), "completion_wait") *
                static_cast<double>(side->ios) / static_cast<double>(ios);
    }
    target_software_ns = stage_mean(stages(), "target") - ssd_ns;
  }
  std::uint64_t target_host_memory_bytes = 0;
  std::uint64_t target_dpu_memory_bytes = 0;
  std::uint64_t target_waits = 0;
  for (const auto& side : sides_) {
    // The SSD writes the data into the storage host's memory and its NIC
    // reads it (or the NIC writes it and the SSD reads it); a target on a
    // DPU keeps it in the DPU's memory.
    (side->site.placement == nvmf::TargetPlacement::dpu ? target_dpu_memory_bytes
                                                        : target_host_memory_bytes) +=
        2 * side->bytes;
    target_waits += side->waits;
  }
  const double exchange_ns = per_io(exchange_ps_, exchanges_);
  const double network_ns = per_io(network_ps_, exchanges_);
  const double pcie_ns = per_io(pcie_ps_, exchanges_);
  // Each cable direction: a sender's port onto the cable (the cable's own
  // server), or a switch output port onto it (the switch's).
  auto utilization = [elapsed](Picoseconds busy) {
    return elapsed == 0
               ? 0.0
               : std::round(static_cast<double>(busy) / static_cast<double>(elapsed) * 1e4) / 1e4;
  };
  nlohmann::json cables = nlohmann::json::array();
  for (const std::size_t l : cable_order_) {
    const network::NetworkLink& c = *cables_.at(l);
    const LinkConfig& link = topo.network_links[l];
    for (int d = 0; d < 2; ++d) {
      const std::string from = d == 0 ? link.from : link.to;
      const std::string to = d == 0 ? link.to : link.from;
      const bool switch_port = topo.node(from)->kind == "network_switch";
      const std::size_t node = static_cast<std::size_t>(topo.node(from) - topo.nodes.data());
      // Flow control: how long this port was held back from sending onto
      // the cable (credits on InfiniBand, PFC pauses on RoCEv2).
      const auto stalled = sender_stalls_.find({node, l});
      const SenderStalls held = stalled == sender_stalls_.end() ? SenderStalls{} : stalled->second;
      const bool credits = c.params().protocol == network::NetworkProtocol::infiniband;
      const char* stall_ns_key = credits ? "credit_stall_ns" : "pause_stall_ns";
      const char* stalls_key = credits ? "credit_stalls" : "pause_stalls";
      if (!switch_port) {
        cables.push_back({{"from", from},
                          {"to", to},
                          {"packets", c.packets(d)},
                          {"wire_bytes", c.wire_bytes(d)},
                          {"utilization", utilization(c.busy_ps(d))},
                          {stall_ns_key, static_cast<double>(held.stall_ps) / 1000.0},
                          {stalls_key, held.stalls}});
        continue;
      }
      const auto counted = port_counters_.find({node, l});
      const PortCounters port = counted == port_counters_.end() ? PortCounters{} : counted->second;
      cables.push_back(
          {{"from", from},
           {"to", to},
           {"packets", port.packets},
           {"wire_bytes", port.bytes},
           {"utilization", utilization(network::serialization_ps(
                               port.bytes, switches_.at(node)->params().port_gbps))},
           {stall_ns_key, static_cast<double>(held.stall_ps) / 1000.0},
           {stalls_key, held.stalls},
           {"max_queue_bytes",
            switches_.at(node)->port_flow(network::switch_port(topo, node, l)).max_queue_bytes},
           {"xoffs_sent",
            switches_.at(node)->port_flow(network::switch_port(topo, node, l)).pauses}});
    }
  }
  auto nic_json = [](const nic::RdmaNic& n, const std::string& id) {
    return nlohmann::json{{"node", id},
                          {"messages", n.messages()},
                          {"translation_lookups", n.translations().lookups()},
                          {"translation_misses", n.translations().misses()}};
  };
  // The target's core time per I/O and busy time: the first host's, or
  // with several hosts the mean over all I/Os and the sum.
  double target_ns_per_io = target.value("core_time_per_io_ns", 0.0);
  double target_busy_ns = target.value("busy_ns", 0.0);
  nlohmann::json storage_hosts = nlohmann::json::array();
  if (sides_.size() > 1) {
    target_ns_per_io = 0.0;
    target_busy_ns = 0.0;
  }
  for (const auto& side : sides_) {
    const StorageRoute& host = route_.storage[side->route];
    const nlohmann::json cpu = target_cpu(*side);
    if (sides_.size() > 1) {
      target_busy_ns += cpu.value("busy_ns", 0.0);
      if (ios > 0) {
        target_ns_per_io += cpu.value("core_time_per_io_ns", 0.0) * static_cast<double>(side->ios) /
                            static_cast<double>(ios);
      }
    }
    // Per hop of each direction, the mean time of a packet's tail on it:
    // serialisation onto the sender's cable and its propagation, then per
    // network switch its cut-through, output queue and port serialisation
    // and the next cable's propagation.
    const auto hops = [](const Direction& d) {
      nlohmann::json out = nlohmann::json::array();
      for (std::size_t i = 0; i < d.hop_names.size(); ++i) {
        out.push_back({{"hop", d.hop_names[i]},
                       {"mean_ns", d.packets == 0 ? 0.0 : per_io(d.hop_ps[i], d.packets)}});
      }
      return out;
    };
    nlohmann::json ssds = nlohmann::json::array();
    for (const std::size_t k : host.ssds) {
      ssds.push_back(ScenarioParams::from(config_.scenario.params).ssds[k]);
    }
    nlohmann::json nodes = nlohmann::json::array();
    for (const std::size_t n : host.network.nodes) nodes.push_back(topo.nodes[n].id);
    storage_hosts.push_back({{"host", host.host},
                             {"target", topo.nodes[host.target].id},
                             {"target_nic", topo.nodes[host.target_nic].id},
                             {"target_placement", enum_name(side->site.placement)},
                             {"ssds", ssds},
                             {"ios", side->ios},
                             {"bytes", side->bytes},
                             {"network_switches", host.network.switches()},
                             {"route", nodes},
                             {"packets_to_target", side->to_target.packets},
                             {"packets_to_initiator", side->to_initiator.packets},
                             {"hops_to_target", hops(side->to_target)},
                             {"hops_to_initiator", hops(side->to_initiator)},
                             {"target_core_ns_per_io", cpu.value("core_time_per_io_ns", 0.0)},
                             {"target_offload_waits", side->waits}});
  }
  Picoseconds max_queued = 0;
  for (const auto& [node, sw] : switches_) max_queued = std::max(max_queued, sw->max_queued_ps());
  // The network switch the initiator's cable reaches, if any.
  const std::string first_switch =
      first_route.network.switches() == 0 ? "" : topo.nodes[first_route.network.nodes[1]].id;
  nlohmann::json remote = {
      {"path", enum_name(route_.path)},
      {"initiator", topo.nodes[route_.initiator].id},
      {"target", topo.nodes[first_route.target].id},
      {"network_switch", first_switch},
      // Payload bytes that crossed the GPU host's memory, and host-to-GPU copies.
      {"initiator_host_memory_bytes", initiator_memory_bytes_},
      {"initiator_host_memory_bytes_per_io",
       ios == 0 ? 0.0 : static_cast<double>(initiator_memory_bytes_) / static_cast<double>(ios)},
      {"copies", copies_},
      {"target_host_memory_bytes", target_host_memory_bytes},
      {"target_dpu_memory_bytes", target_dpu_memory_bytes},
      {"target_placement", enum_name(first.site.placement)},
      {"writes_in_capsule", writes_in_capsule_},
      {"writes_rdma_read", writes_rdma_read_},
      {"target_offload_waits", target_waits},
      {"redirected_transfers", redirected_transfers_},
      {"gpu_dma_path",
       {{"kind", route_.gpu_dma_kind},
        {"taken", route_.gpu_dma_taken},
        {"route", route_.gpu_dma_route}}},
      {"registrations",
       {{"initiator_nic", nic_json(*initiator_nic_, topo.nodes[route_.initiator].id)},
        {"target_nic", nic_json(*first.nic, topo.nodes[first_route.target_nic].id)}}},
      // Core time per completed I/O.
      {"host_core_ns_per_io", dpu ? 0.0 : per_io(initiator_busy - memory_core, ios)},
      {"dpu_core_ns_per_io", dpu ? per_io(initiator_busy - memory_core, ios) : 0.0},
      // The target's time per I/O: host cores, the DPU's Arm cores, or the
      // offloading NIC's (no core).
      {"target_core_ns_per_io", on_host ? target_ns_per_io : 0.0},
      {"target_dpu_core_ns_per_io", on_dpu ? target_ns_per_io : 0.0},
      {"target_nic_ns_per_io", offloaded ? target_ns_per_io : 0.0},
      {"target_cores_busy_ns", target_busy_ns},
      // One I/O's time by hop (means): the two network exchanges split into
      // the wire (links, switch), the NICs' PCIe crossings and the NICs'
      // own processing; the SSD from the target's doorbell to its completion
      // entry; the target's software; the initiator's host or Arm cores.
      {"per_hop_ns",
       {{"network", network_ns},
        {"nic_pcie", pcie_ns},
        {"nic", std::max(0.0, exchange_ns - network_ns - pcie_ns)},
        {"ssd", ssd_ns},
        {"target_software", target_software_ns},
        {"initiator",
         stage_mean(stages(), "initiator_submit") + stage_mean(stages(), "initiator_completion")}}},
      {"packets", packets_},
      {"wire_bytes", wire_bytes_},
      {"links", cables},
      {"switch_max_queued_ns", static_cast<double>(max_queued) / 1000.0},
      {"nvmf_target", target},
      {"nvmf_target_stages", target_stages},
      {"storage_hosts", storage_hosts}};
  if (memory_.reads > 0 || memory_.writes > 0) remote["memory_tier"] = memory_tier_json();
  nlohmann::json out = {{"remote", remote}};
  if (route_.gpu_initiated) return out;  // no core of the GPU's host
  if (!dpu) {
    nlohmann::json cpu = cores_.statistics(elapsed);
    cpu["node"] = topo.nodes[route_.gpu_cpu].id;
    cpu["host_cost_per_io_ns"] = ledger_.per_io_ns(ios);
    out["cpu"] = std::move(cpu);
  } else {
    nlohmann::json arm = cores_.statistics(elapsed);
    arm["node"] = topo.nodes[route_.initiator].id;
    out["dpu"] = std::move(arm);
  }
  return out;
}

}  // namespace gpunvme
