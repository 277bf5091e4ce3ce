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

// The network link at `node`'s port, or npos.
std::size_t cable_of(const TopologyConfig& topo, std::size_t node) {
  for (std::size_t l = 0; l < topo.network_links.size(); ++l) {
    const LinkConfig& link = topo.network_links[l];
    if (link.from == topo.nodes[node].id || link.to == topo.nodes[node].id) return l;
  }
  return RemoteRoute::npos;
}

// The node at the other end of network link `l` from `node`.
std::size_t far_end(const TopologyConfig& topo, std::size_t l, std::size_t node) {
  const LinkConfig& link = topo.network_links[l];
  return index_of(topo, link.from == topo.nodes[node].id ? link.to : link.from);
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
  // Every SSD in one storage host, other than the GPU's.
  std::string storage_host;
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
    if (k == 0) storage_host = ssd.host;
    if (ssd.host != storage_host) {
      throw ConfigError(file, at, quoted(ssd.id),
                        fmt::format("the SSDs of a remote path are in one host; {} is in \"{}\", "
                                    "{} in \"{}\"",
                                    ssd.id, ssd.host, s.ssds[0], storage_host));
    }
  }
  const bool dpu = route.path == nvmf::RemotePath::dpu;
  const std::string initiator_kind = dpu ? "dpu" : "rdma_nic";
  route.initiator = first_in_host(topo, gpu_host, initiator_kind);
  if (route.initiator == RemoteRoute::npos) {
    throw ConfigError(file, "$.path", path_name,
                      fmt::format("the GPU's host \"{}\" has no {} node for this path", gpu_host,
                                  initiator_kind));
  }
  if (s.nvmf_target.empty()) {
    route.target = first_in_host(topo, storage_host, "nvmf_target");
  } else {
    route.target = index_of(topo, s.nvmf_target);
    if (route.target == RemoteRoute::npos || topo.nodes[route.target].kind != "nvmf_target" ||
        topo.nodes[route.target].host != storage_host) {
      throw ConfigError(
          file, "$.nvmf_target", quoted(s.nvmf_target),
          fmt::format("not an nvmf_target node of the SSDs' host \"{}\"", storage_host));
    }
  }
  if (route.target != RemoteRoute::npos) {
    route.placement = nvmf::NvmfTargetParams::from(topo.nodes[route.target].params).placement;
  }
  // A target on a DPU takes its capsules through the DPU's own NIC.
  const bool target_on_dpu = route.placement == nvmf::TargetPlacement::dpu;
  route.target_nic = first_in_host(topo, storage_host, target_on_dpu ? "dpu" : "rdma_nic");
  if (target_on_dpu && route.target_nic == RemoteRoute::npos) {
    throw ConfigError(
        topo.file, index_path("$.nodes", route.target) + ".placement", "\"dpu\"",
        fmt::format("the SSDs' host \"{}\" has no dpu node to run the target", storage_host));
  }
  if (route.target_nic == RemoteRoute::npos || route.target == RemoteRoute::npos) {
    throw ConfigError(file, "$.ssds[0]", quoted(s.ssds[0]),
                      fmt::format("the SSDs' host \"{}\" needs an rdma_nic and an nvmf_target "
                                  "node to serve remote reads",
                                  storage_host));
  }
  if (route.placement != nvmf::TargetPlacement::host_cpu) {
    // The DPU's or NIC's peer-to-peer traffic with the SSDs (data into the
    // DPU's memory; the NIC's doorbell writes) obeys the same ACS and IOMMU
    // rules as any other.
    const TopologyGraph graph(topo);
    const pcie::Router router(topo, graph);
    for (std::size_t k = 0; k < s.ssds.size(); ++k) {
      const std::size_t ssd = index_of(topo, s.ssds[k]);
      const pcie::ResolvedPath p = target_on_dpu ? router.resolve(ssd, route.target_nic)
                                                 : router.resolve(route.target_nic, ssd);
      if (p.blocked) {
        throw ConfigError(
            topo.file, index_path("$.nodes", route.target) + ".placement",
            quoted(enum_name(route.placement)),
            fmt::format("{} and {} cannot reach each other peer to peer: {} (topology {} = {})",
                        s.ssds[k], topo.nodes[route.target_nic].id, p.why_blocked,
                        p.blocking_setting, p.blocking_value.empty() ? "?" : p.blocking_value));
      }
    }
  }
  // The ports are joined by one cable, or by two through one network switch.
  const std::string joined_problem = fmt::format(
      "no network between {} and {}: join them by a network link, or each to one "
      "network_switch",
      topo.nodes[route.initiator].id, topo.nodes[route.target_nic].id);
  route.initiator_cable = cable_of(topo, route.initiator);
  route.target_cable = cable_of(topo, route.target_nic);
  if (route.initiator_cable == RemoteRoute::npos || route.target_cable == RemoteRoute::npos) {
    throw ConfigError(topo.file, "$.network_links", "", joined_problem);
  }
  if (route.initiator_cable != route.target_cable) {
    const std::size_t a = far_end(topo, route.initiator_cable, route.initiator);
    const std::size_t b = far_end(topo, route.target_cable, route.target_nic);
    if (a != b || topo.nodes[a].kind != "network_switch") {
      throw ConfigError(topo.file, "$.network_links", "", joined_problem);
    }
    route.network_switch = a;
    std::uint32_t rank = 0;
    for (std::size_t l = 0; l < topo.network_links.size(); ++l) {
      const LinkConfig& link = topo.network_links[l];
      if (link.from != topo.nodes[a].id && link.to != topo.nodes[a].id) continue;
      if (l == route.initiator_cable) route.initiator_port = rank;
      if (l == route.target_cable) route.target_port = rank;
      ++rank;
    }
    const auto ports = network::NetworkSwitchParams::from(topo.nodes[a].params).ports;
    if (rank > ports) {
      throw ConfigError(topo.file, index_path("$.nodes", a) + ".ports", std::to_string(ports),
                        fmt::format("{} network links are joined to {}: at least that many ports",
                                    rank, topo.nodes[a].id));
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
  const auto nic_of = [&machine, &topo](std::size_t node) {
    return machine.shared_model<nic::RdmaNic>(fmt::format("rdma_port:{}", node), [&topo, node] {
      return new nic::RdmaNic(nic::RdmaNicParams::from(topo.nodes[node].params));
    });
  };
  const auto cable_of_link = [&machine, &topo](std::size_t link) {
    return machine.shared_model<network::NetworkLink>(
        fmt::format("network_link:{}", link), [&topo, link] {
          return new network::NetworkLink(
              network::NetworkLinkParams::from(topo.network_links[link].params));
        });
  };
  initiator_nic_ = nic_of(route_.initiator);
  target_nic_ = nic_of(route_.target_nic);
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
  // The cables: the initiator's, then (through a switch) the target's.
  const network::NetworkLinkParams first =
      network::NetworkLinkParams::from(topo.network_links[route_.initiator_cable].params);
  cables_.push_back(cable_of_link(route_.initiator_cable));
  const int out_of_initiator =
      topo.network_links[route_.initiator_cable].from == initiator.id ? 0 : 1;
  mtu_ = static_cast<std::uint32_t>(first.mtu_bytes);
  if (route_.network_switch == RemoteRoute::npos) {
    to_target_ = {cables_[0].get(), out_of_initiator, 0, 0, 1};
    to_initiator_ = {cables_[0].get(), 1 - out_of_initiator, 0, 0, 0};
  } else {
    const network::NetworkLinkParams second =
        network::NetworkLinkParams::from(topo.network_links[route_.target_cable].params);
    cables_.push_back(cable_of_link(route_.target_cable));
    mtu_ = static_cast<std::uint32_t>(std::min(first.mtu_bytes, second.mtu_bytes));
    const std::size_t switch_node = route_.network_switch;
    switch_ = machine.shared_model<network::NetworkSwitch>(
        fmt::format("network_switch:{}", switch_node), [&topo, switch_node] {
          return new network::NetworkSwitch(
              network::NetworkSwitchParams::from(topo.nodes[switch_node].params));
        });
    const int out_of_target =
        topo.network_links[route_.target_cable].from == topo.nodes[route_.target_nic].id ? 0 : 1;
    to_target_ = {cables_[0].get(), out_of_initiator, route_.target_port, second.latency_ns, 1};
    to_initiator_ = {cables_[1].get(), out_of_target, route_.initiator_port, first.latency_ns, 0};
  }
  const nvmf::NvmfTargetParams target =
      nvmf::NvmfTargetParams::from(topo.nodes[route_.target].params);
  in_capsule_data_bytes_ = static_cast<std::uint64_t>(target.in_capsule_data_bytes);
  site_.placement = route_.placement;
  switch (route_.placement) {
    case nvmf::TargetPlacement::host_cpu:
      site_.servers = target.cores;
      site_.io_time = target.io_ns;
      site_.node = route_.target;
      break;
    case nvmf::TargetPlacement::dpu: {
      // The DPU's Arm cores run the target; its memory holds the SSD queues
      // and buffers, and it rings the SSDs' doorbells.
      const nvmf::DpuParams dpu = nvmf::DpuParams::from(topo.nodes[route_.target_nic].params);
      site_.servers = dpu.arm_cores;
      site_.io_time = dpu.arm_io_ns;
      site_.mmio_node = route_.target_nic;
      site_.memory_node = route_.target_nic;
      site_.node = route_.target_nic;
      target_switch_ = dpu.switch_ns;
      break;
    }
    case nvmf::TargetPlacement::nic_offload:
      // One command context per outstanding command, so the NIC's time per
      // command is latency; the contexts bound how many are held.
      site_.servers = target.offload_max_outstanding;
      site_.io_time = target.offload_command_ns;
      site_.mmio_node = route_.target_nic;
      target_contexts_ = static_cast<std::uint64_t>(target.offload_max_outstanding);
      break;
  }
  target_ = std::make_unique<CpuInitiatedPath>(fmt::format("{}_nvmf_target", basename()).c_str(),
                                               config, machine, CpuInitiatedPath::Mode::Target,
                                               max_io_bytes, &site_);
  gpu_flags_ = gpu_.allocate(std::uint64_t{kFlagWords} * 4, 128);
}

RemoteIoPath::~RemoteIoPath() = default;

void RemoteIoPath::start(std::function<void()> ready) { target_->start(std::move(ready)); }

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

bool RemoteIoPath::data_in_capsule(const BlockIo& io) const {
  return io.write && io_bytes(io) <= in_capsule_data_bytes_;
}

std::uint32_t RemoteIoPath::buffer_key() const {
  return route_.path == nvmf::RemotePath::remote_staged ? kStagingKey : kGpuBufferKey;
}

std::uint64_t RemoteIoPath::initiator_buffer(std::uint32_t r) {
  return route_.path == nvmf::RemotePath::remote_staged ? staging_buffer(r)
                                                        : requests_[r].io.buffer;
}

std::vector<Picoseconds> RemoteIoPath::arrivals(const nic::SentMessage& sent, const Direction& d) {
  std::vector<Picoseconds> out;
  out.reserve(sent.packets.size());
  for (const network::PacketTransit& p : sent.packets) {
    if (!switch_) {
      out.push_back(p.tail_arrival);
      continue;
    }
    const network::PacketTransit f =
        switch_->forward(d.port, p.head_arrival, p.tail_arrival, p.wire_bytes);
    ++port_packets_[d.towards_target];
    port_bytes_[d.towards_target] += p.wire_bytes;
    out.push_back(f.tail_arrival + d.next_cable);
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

nic::SentMessage RemoteIoPath::from_target(Picoseconds at, const nic::RdmaMessage& message) {
  // An offloading NIC starts the target's transfers itself; otherwise the
  // target's core (or Arm core) posts them.
  if (site_.placement == nvmf::TargetPlacement::nic_offload) {
    return target_nic_->originate(at, message, *to_initiator_.cable, to_initiator_.side);
  }
  return target_nic_->transmit(at, message, *to_initiator_.cable, to_initiator_.side);
}

void RemoteIoPath::send_command(std::uint32_t r) {
  Request& req = requests_[r];
  req.times[kSubmitted] = now();
  // The SQE comes from the capsule ring; a write's in-capsule data from the
  // initiator's buffer, which the NIC reads (and translates) with it.
  const std::uint64_t bytes = io_bytes(req.io);
  const bool with_data = data_in_capsule(req.io);
  const std::uint64_t capsule =
      nvmf::command_capsule_bytes(req.io.write, bytes, in_capsule_data_bytes_);
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
  const std::vector<Picoseconds> tails = arrivals(sent, to_target_);
  const nic::DeliveredMessage at_target =
      target_nic_->receive(tails, {network::RdmaOp::send, capsule, kTargetCapsules, 0}, mtu_);
  network_ps_ += tails.back() - sent.packets.front().start;
  const bool reads =
      capsule > static_cast<std::uint64_t>(initiator_nic_->params().max_inline_bytes);
  pcie_ps_ += pcie_legs(*initiator_nic_, sent, reads, *target_nic_);
  packets_ += sent.packets.size();
  wire_bytes_ += sent.wire_bytes;
  schedule_at(at_target.completed, [this, r] { capsule_in(r); });
}

void RemoteIoPath::capsule_in(std::uint32_t r) {
  if (target_contexts_ != 0 && target_held_ >= target_contexts_) {
    ++target_waits_;
    target_waiting_.push_back(r);
    return;
  }
  ++target_held_;
  taken(r);
}

void RemoteIoPath::taken(std::uint32_t r) {
  const BlockIo& io = requests_[r].io;
  if (!io.write || data_in_capsule(io)) {
    to_ssd(r);
    return;
  }
  // The target's NIC RDMA READs the data from the initiator's buffer into a
  // target buffer; the initiator's NIC answers by itself.
  ++writes_rdma_read_;
  const std::uint64_t bytes = io_bytes(io);
  const nic::SentMessage request =
      from_target(now(), {network::RdmaOp::rdma_read_request, bytes, kTargetBuffers, 0});
  const std::vector<Picoseconds> request_tails = arrivals(request, to_initiator_);
  const nic::SentMessage response = initiator_nic_->originate(
      request_tails.back(),
      {network::RdmaOp::rdma_read_response, bytes, buffer_key(), initiator_buffer(r)},
      *to_target_.cable, to_target_.side);
  const std::vector<Picoseconds> response_tails = arrivals(response, to_target_);
  const nic::DeliveredMessage in = target_nic_->receive(
      response_tails, {network::RdmaOp::rdma_read_response, bytes, kTargetBuffers, 0}, mtu_);
  if (route_.path == nvmf::RemotePath::remote_staged) initiator_memory_bytes_ += bytes;
  network_ps_ += (request_tails.back() - request.packets.front().start) +
                 (response_tails.back() - response.packets.front().start);
  // The request's posting (none when the NIC starts it), the initiator
  // NIC's payload read and the data landing in the target's buffer.
  Picoseconds legs = pcie_legs(*initiator_nic_, response, true, *target_nic_, false);
  if (site_.placement != nvmf::TargetPlacement::nic_offload) {
    const nic::RdmaNicParams& t = target_nic_->params();
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
  BlockIo inner = requests_[r].io;
  inner.buffer = 0;  // the target moves the data through its own buffers
  // A target on a DPU: a write's data crosses the DPU's own switch on its
  // way to the SSD.
  auto submit = [this, r, inner] {
    target_->submit(inner, [this, r](std::uint16_t status) { data_back(r, status); });
  };
  if (inner.write && target_switch_ > 0) {
    schedule_in(target_switch_, std::move(submit));
  } else {
    submit();
  }
}

nic::SentMessage RemoteIoPath::post_command(std::uint32_t, const nic::RdmaMessage& capsule) {
  return initiator_nic_->transmit(now(), capsule, *to_target_.cable, to_target_.side);
}

void RemoteIoPath::data_back(std::uint32_t r, std::uint16_t status) {
  Request& req = requests_[r];
  req.times[kTargetDone] = now();
  if (target_contexts_ != 0) {
    // The command's offload context is free: the next waiting one takes it.
    --target_held_;
    if (!target_waiting_.empty()) {
      const std::uint32_t next = target_waiting_.front();
      target_waiting_.pop_front();
      ++target_held_;
      taken(next);
    }
  }
  const std::uint64_t bytes = io_bytes(req.io);
  const bool staged = route_.path == nvmf::RemotePath::remote_staged;
  const bool read_data = status == 0 && !req.io.write;
  const bool posted = site_.placement != nvmf::TargetPlacement::nic_offload;
  // A target on a DPU: a read's data crosses the DPU's own switch from the
  // SSD before its NIC sends it.
  const Picoseconds start = now() + (req.io.write ? 0 : target_switch_);
  Picoseconds data_in = start;
  Picoseconds first_start = std::numeric_limits<Picoseconds>::max();
  Picoseconds last_arrival = start;
  Picoseconds pcie = 0;
  if (read_data) {
    // RDMA WRITE of the data from the target's buffer into the initiator's.
    const nic::SentMessage sent =
        from_target(start, {network::RdmaOp::rdma_write, bytes, kTargetBuffers, 0});
    const std::vector<Picoseconds> tails = arrivals(sent, to_initiator_);
    const nic::DeliveredMessage data = initiator_nic_->receive(
        tails, {network::RdmaOp::rdma_write, bytes, buffer_key(), initiator_buffer(r)}, mtu_);
    data_in = data.data_written;
    first_start = sent.packets.front().start;
    last_arrival = tails.back();
    pcie = pcie_legs(*target_nic_, sent, true, *initiator_nic_, posted);
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
      start, {network::RdmaOp::send, nvmf::kResponseCapsuleBytes, kTargetCapsules, 4096});
  const std::vector<Picoseconds> tails = arrivals(sent, to_initiator_);
  const nic::DeliveredMessage response = initiator_nic_->receive(
      tails, {network::RdmaOp::send, nvmf::kResponseCapsuleBytes, kInitiatorCapsules, 4096}, mtu_);
  packets_ += sent.packets.size();
  wire_bytes_ += sent.wire_bytes;
  first_start = std::min(first_start, sent.packets.front().start);
  last_arrival = std::max(last_arrival, tails.back());
  network_ps_ += last_arrival - first_start;
  if (!read_data) pcie = pcie_legs(*target_nic_, sent, true, *initiator_nic_, posted);
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
  if (status != 0) {
    ++errors_;
  } else {
    bytes_ += io_bytes(req.io);
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
  nlohmann::json target = target_->sections(elapsed).at("cpu");
  const bool on_host = site_.placement == nvmf::TargetPlacement::host_cpu;
  const bool on_dpu = site_.placement == nvmf::TargetPlacement::dpu;
  const bool offloaded = site_.placement == nvmf::TargetPlacement::nic_offload;
  if (!on_host) target["node"] = topo.nodes[route_.target_nic].id;
  const nlohmann::json target_stages = target_->stages();
  auto stage_mean = [](const nlohmann::json& stages, const char* name) {
    return stages.contains(name) ? stages[name].value("mean", 0.0) : 0.0;
  };
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
  for (std::size_t i = 0; i < cables_.size(); ++i) {
    const std::size_t l = i == 0 ? route_.initiator_cable : route_.target_cable;
    const network::NetworkLink& c = *cables_[i];
    const LinkConfig& link = topo.network_links[l];
    for (int d = 0; d < 2; ++d) {
      const std::string from = d == 0 ? link.from : link.to;
      const std::string to = d == 0 ? link.to : link.from;
      const bool switch_port = switch_ && topo.node(from)->kind == "network_switch";
      if (!switch_port) {
        cables.push_back({{"from", from},
                          {"to", to},
                          {"packets", c.packets(d)},
                          {"wire_bytes", c.wire_bytes(d)},
                          {"utilization", utilization(c.busy_ps(d))}});
        continue;
      }
      const std::size_t port = i == 0 ? 0 : 1;
      cables.push_back({{"from", from},
                        {"to", to},
                        {"packets", port_packets_[port]},
                        {"wire_bytes", port_bytes_[port]},
                        {"utilization", utilization(network::serialization_ps(
                                            port_bytes_[port], switch_->params().port_gbps))}});
    }
  }
  auto nic_json = [](const nic::RdmaNic& n, const std::string& id) {
    return nlohmann::json{{"node", id},
                          {"messages", n.messages()},
                          {"translation_lookups", n.translations().lookups()},
                          {"translation_misses", n.translations().misses()}};
  };
  nlohmann::json remote = {
      {"path", enum_name(route_.path)},
      {"initiator", topo.nodes[route_.initiator].id},
      {"target", topo.nodes[route_.target].id},
      {"network_switch",
       route_.network_switch == RemoteRoute::npos ? "" : topo.nodes[route_.network_switch].id},
      // Payload bytes that crossed the GPU host's memory, and host-to-GPU copies.
      {"initiator_host_memory_bytes", initiator_memory_bytes_},
      {"initiator_host_memory_bytes_per_io",
       ios == 0 ? 0.0 : static_cast<double>(initiator_memory_bytes_) / static_cast<double>(ios)},
      {"copies", copies_},
      // The SSD writes the data into the storage host's memory and its NIC
      // reads it (or the NIC writes it and the SSD reads it); a target on a
      // DPU keeps it in the DPU's memory.
      {"target_host_memory_bytes", on_dpu ? 0 : 2 * bytes_},
      {"target_dpu_memory_bytes", on_dpu ? 2 * bytes_ : 0},
      {"target_placement", enum_name(site_.placement)},
      {"writes_in_capsule", writes_in_capsule_},
      {"writes_rdma_read", writes_rdma_read_},
      {"target_offload_waits", target_waits_},
      {"redirected_transfers", redirected_transfers_},
      {"gpu_dma_path",
       {{"kind", route_.gpu_dma_kind},
        {"taken", route_.gpu_dma_taken},
        {"route", route_.gpu_dma_route}}},
      {"registrations",
       {{"initiator_nic", nic_json(*initiator_nic_, topo.nodes[route_.initiator].id)},
        {"target_nic", nic_json(*target_nic_, topo.nodes[route_.target_nic].id)}}},
      // Core time per completed I/O.
      {"host_core_ns_per_io", dpu ? 0.0 : per_io(initiator_busy - memory_core, ios)},
      {"dpu_core_ns_per_io", dpu ? per_io(initiator_busy - memory_core, ios) : 0.0},
      // The target's time per I/O: host cores, the DPU's Arm cores, or the
      // offloading NIC's (no core).
      {"target_core_ns_per_io", on_host ? target.value("core_time_per_io_ns", 0.0) : 0.0},
      {"target_dpu_core_ns_per_io", on_dpu ? target.value("core_time_per_io_ns", 0.0) : 0.0},
      {"target_nic_ns_per_io", offloaded ? target.value("core_time_per_io_ns", 0.0) : 0.0},
      {"target_cores_busy_ns", target.value("busy_ns", 0.0)},
      // One I/O's time by hop (means): the two network exchanges split into
      // the wire (links, switch), the NICs' PCIe crossings and the NICs'
      // own processing; the SSD from the target's doorbell to its completion
      // entry; the target's software; the initiator's host or Arm cores.
      {"per_hop_ns",
       {{"network", network_ns},
        {"nic_pcie", pcie_ns},
        {"nic", std::max(0.0, exchange_ns - network_ns - pcie_ns)},
        {"ssd", stage_mean(target_stages, "completion_wait")},
        {"target_software",
         stage_mean(stages(), "target") - stage_mean(target_stages, "completion_wait")},
        {"initiator",
         stage_mean(stages(), "initiator_submit") + stage_mean(stages(), "initiator_completion")}}},
      {"packets", packets_},
      {"wire_bytes", wire_bytes_},
      {"links", cables},
      {"switch_max_queued_ns",
       switch_ ? static_cast<double>(switch_->max_queued_ps()) / 1000.0 : 0.0},
      {"nvmf_target", target},
      {"nvmf_target_stages", target_stages}};
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
