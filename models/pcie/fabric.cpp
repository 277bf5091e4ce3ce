#include "models/pcie/fabric.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "models/cxl/cxl_memory.h"
#include "models/pcie/pcie_specs.h"

namespace gpunvme::pcie {

namespace {

const char* const kClassNames[3] = {"posted_write", "read_request", "completion"};

Picoseconds bytes_at_rate(std::uint64_t bytes, double bytes_per_ns) {
  return static_cast<Picoseconds>(static_cast<double>(bytes) / bytes_per_ns * 1000.0 + 0.5);
}

// The bytes a write carries or a read returns: up to 32 in place (doorbells,
// completion entries, flags), more on the heap.
class Bytes {
 public:
  explicit Bytes(std::uint32_t size) : size_(size) {
    if (size_ > kInPlace) heap_ = std::make_unique<std::uint8_t[]>(size_);
  }
  std::uint8_t* data() { return size_ > kInPlace ? heap_.get() : in_place_; }
  const std::uint8_t* data() const { return size_ > kInPlace ? heap_.get() : in_place_; }
  std::uint32_t size() const { return size_; }

 private:
  static constexpr std::uint32_t kInPlace = 32;
  std::uint32_t size_;
  std::uint8_t in_place_[kInPlace];
  std::unique_ptr<std::uint8_t[]> heap_;
};

double round_to(double v, double unit) { return std::round(v / unit) * unit; }

double ns(Picoseconds ps) { return round_to(ps_to_ns(ps), 0.001); }

double share(Picoseconds part, Picoseconds whole) {
  return whole == 0 ? 0.0 : round_to(static_cast<double>(part) / static_cast<double>(whole), 1e-6);
}

}  // namespace

Fabric::Fabric(const sc_core::sc_module_name& name, const TopologyConfig& topology,
               const TopologyGraph& graph, MemorySpace& memory)
    : Component(name, topology.params),
      topology_(topology),
      graph_(graph),
      memory_(memory),
      router_(topology, graph) {
  const TopologyParams p = TopologyParams::from(topology.params);
  rules_.mps = static_cast<std::uint32_t>(p.mps);
  rules_.mrrs = static_cast<std::uint32_t>(p.mrrs);
  rules_.rcb = static_cast<std::uint32_t>(p.rcb);
  rules_.addr64 = true;  // every modelled BAR and buffer sits above 4 GB
  rules_.ecrc = p.ecrc;
  rules_.rcb_chunks = p.completion_size == CompletionSize::rcb;
  dllp_intervals_ = p.dllp_intervals;
  read_tags_ = static_cast<std::uint32_t>(p.read_tags);
  route_index_.assign(topology.nodes.size() * topology.nodes.size() * 2, nullptr);
  pair_index_.assign(topology.nodes.size() * topology.nodes.size(), nullptr);

  for (const LinkConfig& link : topology.links) {
    for (int dir = 0; dir < 2; ++dir) {
      Server s;
      s.name = dir == 0 ? link.from + "->" + link.to : link.to + "->" + link.from;
      const LinkParams link_params = LinkParams::from(link.params);
      if (link_params.type == LinkType::pcie) {
        s.kind = ServerKind::PcieLink;
        const NodeConfig& transmitter = *topology.node(dir == 0 ? link.from : link.to);
        const bool from_switch = transmitter.kind == "switch";
        if (from_switch && SwitchParams::from(transmitter.params).port_arbitration ==
                               PortArbitration::round_robin) {
          arbiter_of_[servers_.size()] = arbiters_.size();
          arbiters_.push_back(Arbiter{servers_.size(), {}, kNone, 0, kNever});
        }
        s.gen = gen_from_number(static_cast<int>(link_params.gen));
        s.width = width_from_lanes(static_cast<int>(link_params.width));
        s.tlp_bytes_per_ns = tlp_bytes_per_ns(s.gen, s.width, rules_.mps, dllp_intervals_);
        if (from_switch) s.tlps_per_ns = SwitchParams::from(transmitter.params).tlps_per_ns;
        for (const std::string& end : {link.from, link.to}) {
          const NodeConfig& node = *topology.node(end);
          if (node.kind != "cxl_memory") continue;
          // Flits, not TLPs: the PHY carries whole flits.
          s.cxl_flit_bytes =
              static_cast<std::uint32_t>(cxl::CxlMemoryParams::from(node.params).flit_bytes);
          s.tlp_bytes_per_ns = cxl::phy_bytes_per_ns(s.gen, s.width);
        }
        // The receiver's buffers: a switch port, a root port or an endpoint (GPU, SSD); each
        // kind declares its credits. CPUs and host memory never terminate a PCIe link.
        const NodeConfig& receiver = *topology.node(dir == 0 ? link.to : link.from);
        if (receiver.kind == "switch" || receiver.kind == "root_complex" ||
            receiver.kind == "gpu" || receiver.kind == "nvme_ssd") {
          const std::size_t r = static_cast<std::size_t>(&receiver - topology.nodes.data());
          pools_of_[servers_.size()] = pools_.size();
          for (TlpClass cls :
               {TlpClass::PostedWrite, TlpClass::ReadRequest, TlpClass::Completion}) {
            pools_.push_back(Pool{CreditPool(pool_capacity(r, cls)), {}, false});
          }
        }
      } else {
        s.kind = ServerKind::InterSocket;
        s.bytes_per_ns = link_params.bandwidth_gbps;
      }
      servers_.push_back(std::move(s));
    }
  }
  for (std::size_t i = 0; i < topology.nodes.size(); ++i) {
    const NodeConfig& node = topology.nodes[i];
    if (node.kind == "root_complex") {
      rc_servers_[i] = servers_.size();
      const RootComplexParams rc = RootComplexParams::from(node.params);
      const double fabric = rc.fabric_bandwidth_gbps;
      const double peer = rc.p2p_bandwidth_gbps;
      for (auto [suffix, kind, rate] :
           {std::tuple{".fabric(in)", ServerKind::RootComplexIn, fabric},
            std::tuple{".fabric(out)", ServerKind::RootComplexOut, fabric},
            std::tuple{".fabric(peer)", ServerKind::RootComplexPeer, peer}}) {
        Server s;
        s.name = node.id + suffix;
        s.kind = kind;
        s.bytes_per_ns = rate;
        // Traffic to and from memory becomes cache-line transactions; peer traffic turned
        // between root ports does not touch the memory fabric's line tracking.
        if (kind != ServerKind::RootComplexPeer) {
          s.lines_per_ns = rc.lines_per_ns;
          s.line_bytes = static_cast<std::uint32_t>(rc.line_bytes);
        }
        servers_.push_back(std::move(s));
      }
      if (rc.iommu == IommuMode::translate) {
        iommu_of_[i] = iommus_.size();
        iommus_.push_back(Iommu{i,
                                Iotlb(static_cast<std::uint32_t>(rc.iotlb_entries),
                                      static_cast<std::uint64_t>(rc.iommu_page_bytes)),
                                rc.iotlb_miss_ns,
                                0,
                                {},
                                {}});
      }
    } else if (node.kind == "host_memory") {
      memory_of_[i] = memories_.size();
      const HostMemoryParams memory = HostMemoryParams::from(node.params);
      memories_.push_back(MemoryServer{i, memory.bandwidth_gbps, memory.dma_latency_ns});
    } else if (node.kind == "cxl_memory") {
      memory_of_[i] = memories_.size();
      const cxl::CxlMemoryParams memory = cxl::CxlMemoryParams::from(node.params);
      memories_.push_back(MemoryServer{i, memory.bandwidth_gbps, memory.access_latency_ns});
    }
  }
}

Credits Fabric::pool_capacity(std::size_t receiver, TlpClass cls) const {
  const PortCredits c = PortCredits::from(topology_.nodes[receiver].params);
  const auto [header, data] =
      cls == TlpClass::PostedWrite   ? std::pair{c.posted_header, c.posted_data}
      : cls == TlpClass::ReadRequest ? std::pair{c.non_posted_header, c.non_posted_data}
                                     : std::pair{c.completion_header, c.completion_data};
  return {static_cast<std::uint64_t>(header), static_cast<std::uint64_t>(data)};
}

Picoseconds Fabric::hold_link(std::size_t node, Picoseconds until) {
  const std::string& id = topology_.nodes[node].id;
  for (std::size_t link = 0; link < topology_.links.size(); ++link) {
    const LinkConfig& l = topology_.links[link];
    if (l.from != id && l.to != id) continue;
    for (int dir = 0; dir < 2; ++dir) {
      Server& s = servers_[2 * link + static_cast<std::size_t>(dir)];
      s.down_until = std::max(s.down_until, until);
      s.work.hold_until(until);
      for (Picoseconds& class_busy : s.class_busy_until) class_busy = std::max(class_busy, until);
    }
    return until > now() ? until - now() : 0;
  }
  return 0;
}

std::uint64_t Fabric::retrain_waits(std::size_t node) const {
  const std::string& id = topology_.nodes[node].id;
  std::uint64_t waits = 0;
  for (std::size_t link = 0; link < topology_.links.size(); ++link) {
    const LinkConfig& l = topology_.links[link];
    if (l.from != id && l.to != id) continue;
    waits += servers_[2 * link].retrain_waits + servers_[2 * link + 1].retrain_waits;
  }
  return waits;
}

void Fabric::attach_registers(const Region& region, RegisterTarget* target) {
  register_targets_[region.base] = target;
}

double Fabric::link_tlp_bytes_per_ns(std::size_t link) const {
  const Server& s = servers_.at(2 * link);
  if (s.kind != ServerKind::PcieLink) return s.bytes_per_ns;
  if (s.cxl_flit_bytes != 0) return cxl::data_bytes_per_ns(s.gen, s.width, s.cxl_flit_bytes);
  return tlp_bytes_per_ns(s.gen, s.width, rules_.mps, dllp_intervals_);
}

Picoseconds Fabric::credit_stall_ps(const std::string& direction) const {
  for (const Server& s : servers_) {
    if (s.name == direction)
      return s.credit_stall_ps[0] + s.credit_stall_ps[1] + s.credit_stall_ps[2];
  }
  return 0;
}

Fabric::Route& Fabric::route(std::size_t src, std::size_t dst, Traffic traffic) {
  Route*& indexed =
      route_index_[(src * topology_.nodes.size() + dst) * 2 + static_cast<std::size_t>(traffic)];
  if (indexed != nullptr) return *indexed;
  const auto key = std::make_tuple(src, dst, static_cast<int>(traffic));
  Route r;
  r.path = router_.resolve(src, dst, traffic);
  if (r.path.blocked) {
    throw BlockedTransfer(fmt::format("PCIe {} from {} to {} is blocked: {}",
                                      traffic == Traffic::Request ? "request" : "completion",
                                      topology_.nodes[src].id, topology_.nodes[dst].id,
                                      r.path.why_blocked));
  }
  build_stages(r, traffic);
  for (const Stage& stage : r.stages) {
    if (servers_[stage.server].cxl_flit_bytes != 0) r.memoizable = false;
  }
  if (r.memoizable) r.cost_memos.reserve(kCostMemos);
  indexed = &routes_.emplace(key, std::move(r)).first->second;
  return *indexed;
}

Fabric::PairTraffic& Fabric::pair_traffic(std::size_t src, std::size_t dst) {
  PairTraffic*& indexed = pair_index_[src * topology_.nodes.size() + dst];
  if (indexed == nullptr) indexed = &pairs_[{src, dst}];
  return *indexed;
}

// One stage per link direction crossed and per root complex traversed; switch traversals add
// their latency to the stage before, attachments of root complexes and memory to their socket
// cost nothing of their own.
void Fabric::build_stages(Route& r, Traffic traffic) {
  const std::vector<std::size_t>& nodes = r.path.nodes;
  auto add_latency = [&r](Picoseconds latency) {
    if (r.stages.empty()) {
      r.lead_latency += latency;
    } else {
      r.stages.back().latency_after += latency;
    }
  };
  for (std::size_t i = 1; i < nodes.size(); ++i) {
    const std::size_t prev = nodes[i - 1];
    const std::size_t cur = nodes[i];
    auto [e, found] = boost::edge(prev, cur, graph_.graph());
    if (found && graph_.graph()[e].kind != EdgeKind::Attachment) {
      const std::size_t l = graph_.graph()[e].link_index;
      const LinkConfig& link = topology_.links[l];
      Stage stage;
      stage.server = 2 * l + (topology_.nodes[prev].id == link.from ? 0 : 1);
      stage.latency_after = LinkParams::from(link.params).latency_ns;
      auto pool = pools_of_.find(stage.server);
      if (pool != pools_of_.end()) {
        stage.pool = pool->second;
        stage.credit_return = stage.latency_after;
      }
      auto arbiter = arbiter_of_.find(stage.server);
      if (arbiter != arbiter_of_.end() && i >= 2) {
        stage.arbiter = arbiter->second;
        stage.ingress = nodes[i - 2];
      }
      r.stages.push_back(stage);
    }
    if (i + 1 == nodes.size()) break;
    const NodeConfig& through = topology_.nodes[cur];
    if (through.kind == "switch") {
      add_latency(SwitchParams::from(through.params).latency_ns);
    } else if (through.kind == "root_complex") {
      const bool from_below = graph_.upstream(prev) == cur;
      const bool to_below = graph_.upstream(nodes[i + 1]) == cur;
      // Traffic with CXL memory is memory traffic: a device's request enters the memory fabric
      // (whose home agent sends it down the CXL port) and the expander's data leaves through
      // it, as with host DRAM; peer traffic between device BARs turns between root ports.
      const bool cxl_end = topology_.nodes[nodes.front()].kind == "cxl_memory" ||
                           topology_.nodes[nodes.back()].kind == "cxl_memory";
      const std::size_t rc_server =
          from_below && to_below && cxl_end
              ? (topology_.nodes[nodes.back()].kind == "cxl_memory" ? 0 : 1)
          : from_below && to_below ? 2
          : from_below             ? 0
                                   : 1;
      Stage stage;
      stage.server = rc_servers_.at(cur) + rc_server;
      stage.latency_after = RootComplexParams::from(through.params).latency_ns;
      if (traffic == Traffic::Request && r.path.translated_by == cur &&
          r.path.translate_position == i) {
        stage.iommu = iommu_of_.at(cur);
      }
      r.stages.push_back(stage);
    }
  }
  const std::size_t target = nodes.back();
  const NodeConfig& t = topology_.nodes[target];
  auto memory = memory_of_.find(target);
  if (memory != memory_of_.end()) r.memory = memory->second;
  // A GPU serves requests to its BAR; completions of its own reads land without that step.
  if (t.kind == "gpu" && traffic == Traffic::Request) {
    r.target_latency_ps = BarTargetParams::from(t.params).bar_access_ns;
  }
}

std::size_t Fabric::owner_of(std::uint64_t addr, std::uint32_t len) const {
  const Region* region = memory_.find(addr, len == 0 ? 1 : len);
  if (region == nullptr) {
    throw std::runtime_error(
        fmt::format("PCIe access to unmapped address 0x{:x} (+{} B)", addr, len));
  }
  return region->owner;
}

Picoseconds Fabric::serialization(const Server& server, std::uint64_t wire_bytes,
                                  const WireCost& cost, std::uint64_t& lines,
                                  Picoseconds& transaction_bound) const {
  const Picoseconds byte_time = server.kind == ServerKind::PcieLink
                                    ? serialization_ps_at(server.tlp_bytes_per_ns, wire_bytes)
                                    : bytes_at_rate(wire_bytes, server.bytes_per_ns);
  Picoseconds limit = 0;
  lines = 0;
  if (server.lines_per_ns > 0) {
    // Every TLP is at least one transaction (a read request, a doorbell write), and a TLP with
    // data one per line it carries. From the burst's totals: exact when each TLP carries whole
    // lines or at most one line, as MPS-sized DMA of line-aligned buffers and small register
    // and queue-entry accesses do.
    const std::uint64_t data_lines =
        (cost.payload_bytes + server.line_bytes - 1) / server.line_bytes;
    lines = std::max(cost.tlps, data_lines);
    limit = bytes_at_rate(lines, server.lines_per_ns);
  }
  if (server.tlps_per_ns > 0) limit = std::max(limit, bytes_at_rate(cost.tlps, server.tlps_per_ns));
  transaction_bound = limit > byte_time ? limit - byte_time : 0;
  return std::max(byte_time, limit);
}

std::uint64_t Fabric::wire_bytes(const Server& server, const Transfer& t) const {
  if (server.cxl_flit_bytes != 0) {
    const cxl::CxlMessage message =
        t.cls == TlpClass::ReadRequest ? cxl::CxlMessage::Request : cxl::CxlMessage::DataWithHeader;
    return cxl::cxl_link_wire_bytes(server.cxl_flit_bytes, message,
                                    cxl::lines_touched(t.addr, t.len));
  }
  // A Gen6 link in flit mode carries the TLPs without their per-TLP link bytes.
  return server.kind == ServerKind::PcieLink
             ? link_wire_bytes(server.gen, dllp_intervals_, t.cost, rules_)
             : t.cost.wire_bytes;
}

Fabric::StageCost Fabric::compute_stage_cost(const Server& server, const Transfer& t) const {
  StageCost c;
  c.wire_bytes = wire_bytes(server, t);
  c.burst = serialization(server, c.wire_bytes, t.cost, c.lines, c.transaction_bound);
  return c;
}

// Inlined: a memo hit is one copy, taken two or three times per hop.
[[gnu::always_inline]] inline Fabric::StageCost Fabric::stage_cost(const Transfer& t,
                                                                   std::size_t stage) const {
  if (t.stage_costs != nullptr) return t.stage_costs[stage];
  return compute_stage_cost(servers_[t.route->stages[stage].server], t);
}

const Fabric::StageCost* Fabric::memoized_stage_costs(Route& r, const Transfer& t) {
  if (!stage_cost_memo_ || !r.memoizable) return nullptr;
  for (const CostMemo& m : r.cost_memos) {
    if (m.cost.tlps == t.cost.tlps && m.cost.payload_bytes == t.cost.payload_bytes &&
        m.cost.wire_bytes == t.cost.wire_bytes) {
      return m.stages.data();
    }
  }
  if (r.cost_memos.size() == kCostMemos) return nullptr;
  CostMemo& m = r.cost_memos.emplace_back();
  m.cost = t.cost;
  m.stages.reserve(r.stages.size());
  for (const Stage& stage : r.stages) {
    m.stages.push_back(compute_stage_cost(servers_[stage.server], t));
  }
  return m.stages.data();
}

void Fabric::send(std::size_t src, std::size_t dst, TlpClass cls, const WireCost& cost,
                  const Credits& credits, std::size_t requester, std::uint64_t addr,
                  std::uint64_t len, Picoseconds data_ready, Arrived arrived,
                  std::uint32_t tenant) {
  Transfer* t = new_transfer();
  t->route = &route(src, dst, cls == TlpClass::Completion ? Traffic::Completion : Traffic::Request);
  t->cls = cls;
  t->cost = cost;
  t->stage_costs = memoized_stage_costs(*t->route, *t);
  t->credits = credits;
  t->requester = requester;
  t->addr = addr;
  t->len = len;
  t->tenant = tenant;
  if (tenant != 0) {
    TenantTraffic& traffic = tenant_traffic_[tenant];
    ++traffic.requests;
    traffic.bytes += len;
    if (t->route->path.translated_by != ResolvedPath::npos) traffic.translated_bytes += len;
    if (t->route->path.redirected_by != ResolvedPath::npos) traffic.redirected_bytes += len;
  }
  t->head_ps = now() + t->route->lead_latency;
  t->tail_ps = std::max(now(), data_ready) + t->route->lead_latency;
  t->arrived = std::move(arrived);
  if (t->route->lead_latency == 0) {
    advance(t);
  } else {
    schedule_at(t->head_ps, [this, t] { advance(t); });
  }
}

Fabric::Transfer* Fabric::new_transfer() {
  if (free_transfers_.empty()) {
    transfers_.push_back(std::make_unique<Transfer>());
    return transfers_.back().get();
  }
  Transfer* t = free_transfers_.back();
  free_transfers_.pop_back();
  *t = Transfer{};
  return t;
}

void Fabric::free_transfer(Transfer* t) {
  t->arrived = nullptr;  // drop its captures now, as destroying the record did
  free_transfers_.push_back(t);
}

// The head of the burst is at stage `t->stage` now.
void Fabric::advance(Transfer* t) {
  Route& r = *t->route;
  if (t->stage == r.stages.size()) {
    arrive(t);
    return;
  }
  const Stage& stage = r.stages[t->stage];
  if (stage.iommu != kNone && !t->translated) {
    // The root complex translates the request before forwarding it. The walks of one burst's
    // pages are taken one after another; a requester's later requests may overlap them but
    // never pass them, so its posted writes stay in order.
    t->translated = true;
    Iommu& m = iommus_[stage.iommu];
    const std::uint64_t lookups_before = m.iotlb.lookups();
    const std::uint64_t misses =
        m.iotlb.translate(t->requester, t->addr, t->len, tenant_pasids_ ? t->tenant : 0);
    auto& counts = m.per_pair[{t->requester, r.path.nodes.back()}];
    counts.first += m.iotlb.lookups() - lookups_before;
    counts.second += misses;
    m.walk_ps += misses * m.miss_ps;
    if (t->tenant != 0) {
      TenantTraffic& traffic = tenant_traffic_[t->tenant];
      traffic.iotlb_lookups += m.iotlb.lookups() - lookups_before;
      traffic.iotlb_misses += misses;
      traffic.walk_ps += misses * m.miss_ps;
    }
    Picoseconds& last = m.ready_at[t->requester];
    const Picoseconds ready = std::max(now() + misses * m.miss_ps, last);
    last = ready;
    if (ready > now()) {
      // TLPs that arrive during the walks wait for them, then follow at once.
      t->tail_ps = std::max(t->tail_ps, ready);
      t->head_ps = ready;
      schedule_at(ready, [this, t] { advance(t); });
      return;
    }
  }
  if (stage.arbiter != kNone && t->arbitrated != t->stage) {
    Arbiter& a = arbiters_[stage.arbiter];
    if (a.queued > 0 || servers_[a.server].work.busy_at(now())) {
      a.queues[stage.ingress].push_back(t);
      ++a.queued;
      wake_arbiter(stage.arbiter, std::max(now(), servers_[a.server].work.free_at()));
      return;
    }
    t->arbitrated = t->stage;
    a.last = stage.ingress;
  }
  if (stage.pool == kNone) {
    book(t, 0);
    return;
  }
  if (has_room(t)) {
    book(t, now());
    return;
  }
  const std::size_t index = stage.pool + static_cast<std::size_t>(t->cls);
  pools_[index].waiters.push_back(t);
  admit(index);
}

// The credits a burst holds in the receiver of its current stage, per TLP flow control in
// closed form. Each TLP's room comes back one credit loop after the TLP started: its
// serialization, the flight and traversal into the receiver and the UpdateFC flight back. A
// burst that sends a TLP every `span / tlps` therefore has the TLPs of one loop (and the one
// being sent) outstanding. A receiver that forwards the burst (a switch port, a root port)
// drains it at the next stage's pace; where that is slower than the burst arrives, the backlog
// grows to the share 1 - span / out_span of the burst by its tail. A receiver with less room
// than the window paces the burst: credits / loop, or the next stage's drain plus the buffer.
// The pace is taken when the head reaches the stage, from the servers' bookings then.
void Fabric::window(Transfer* t) {
  if (t->window_stage == t->stage) return;
  t->window_stage = t->stage;
  t->credit_paced_ps = 0;
  const Route& r = *t->route;
  const Stage& stage = r.stages[t->stage];
  const CreditPool& pool = pools_[stage.pool + static_cast<std::size_t>(t->cls)].credits;
  if (pool.infinite()) {
    t->window = {};
    return;
  }
  const std::uint64_t tlps = std::max<std::uint64_t>(1, t->cost.tlps);
  const Server& s = servers_[stage.server];
  const Picoseconds burst = stage_cost(*t, t->stage).burst;
  const Picoseconds start =
      std::max({now(), t->head_ps, s.class_busy_until[static_cast<int>(t->cls)]});
  const Picoseconds span = std::max(burst, t->tail_ps > start ? t->tail_ps - start : 0);
  Picoseconds loop = burst / tlps + stage.latency_after + stage.credit_return;
  // A forwarding receiver drains the burst onto the next stage from `drain_wait` after `start`
  // (that stage's earlier bursts of this class first) for `drain_burst`.
  Picoseconds drain_wait = 0, drain_burst = 0;
  if (t->stage + 1 < r.stages.size()) {
    // It frees a TLP's room once the TLP has left on the next stage.
    const Server& out = servers_[r.stages[t->stage + 1].server];
    drain_burst = stage_cost(*t, t->stage + 1).burst;
    loop += drain_burst / tlps;
    const Picoseconds head_there = start + burst / tlps + stage.latency_after;
    drain_wait = std::max(head_there, out.class_busy_until[static_cast<int>(t->cls)]) - start;
  }
  const std::uint64_t in_loop =
      span == 0 ? tlps : std::min<std::uint64_t>(tlps, loop * tlps / span + 1);
  double share = static_cast<double>(in_loop) / static_cast<double>(tlps);
  if (drain_burst > 0 && drain_wait + drain_burst > span) {
    // The backlog peaks when the tail has arrived: all of the burst less what has drained by
    // then.
    const double drained = span > drain_wait
                               ? std::min(1.0, static_cast<double>(span - drain_wait) /
                                                   static_cast<double>(drain_burst))
                               : 0.0;
    share = std::max(share, 1.0 - drained);
  }
  // At least one full TLP's room (the largest TLP, MPS of data).
  const auto part = [share](std::uint64_t total, std::uint64_t least) {
    const auto of_share =
        static_cast<std::uint64_t>(std::ceil(share * static_cast<double>(total) - 1e-9));
    return std::min(total, std::max(of_share, least));
  };
  const Credits want{part(t->credits.header, 1), part(t->credits.data, rules_.mps / 16)};
  t->window = pool.clamp(want);
  // A window larger than the buffer: its room goes round once per loop, so the burst runs at
  // room / loop. (Where the backlog behind a slow drain is what overflows, the burst then holds
  // the whole buffer until its tail has drained, and the bursts behind it wait for that.)
  const auto paced = [&](std::uint64_t total, std::uint64_t wanted, std::uint64_t room) {
    if (room == 0 || wanted <= room) return Picoseconds{0};
    return static_cast<Picoseconds>(static_cast<double>(loop) * static_cast<double>(total) /
                                    static_cast<double>(room));
  };
  t->credit_paced_ps = std::max(paced(t->credits.header, want.header, t->window.header),
                                paced(t->credits.data, want.data, t->window.data));
}

bool Fabric::has_room(Transfer* t) {
  const Stage& stage = t->route->stages[t->stage];
  if (stage.pool == kNone) return true;
  window(t);
  Pool& pool = pools_[stage.pool + static_cast<std::size_t>(t->cls)];
  return pool.waiters.empty() && pool.credits.earliest(t->window, now()) == now();
}

void Fabric::wake_arbiter(std::size_t index, Picoseconds when) {
  Arbiter& a = arbiters_[index];
  if (when >= a.wake_at) return;
  a.wake_at = when;
  schedule_at(when, [this, index, when] {
    if (arbiters_[index].wake_at == when) arbiters_[index].wake_at = kNever;
    arbitrate(index);
  });
}

// The egress is free: the next ingress port after the one served last that has a burst waiting
// sends its oldest one on. A burst that then waits for credits leaves the egress free, so the
// next port is served at once.
void Fabric::arbitrate(std::size_t index) {
  while (arbiters_[index].queued > 0) {
    Arbiter& a = arbiters_[index];
    const Picoseconds free = servers_[a.server].work.free_at();
    if (free > now()) {
      wake_arbiter(index, free);
      return;
    }
    // Ports in turn after the one served last; the first whose oldest burst has room in the
    // receiver, else the first with a burst at all.
    auto next = a.queues.end();
    auto start = a.queues.upper_bound(a.last);
    for (std::size_t looked = 0; looked < a.queues.size(); ++looked, ++start) {
      if (start == a.queues.end()) start = a.queues.begin();
      if (start->second.empty()) continue;
      if (next == a.queues.end()) next = start;
      if (has_room(start->second.front())) {
        next = start;
        break;
      }
    }
    Transfer* t = next->second.front();
    next->second.pop_front();
    --a.queued;
    a.last = next->first;
    t->arbitrated = t->stage;
    advance(t);
  }
}

// The last receiver's credits come back once the tail has reached the target; returns when
// that is, for a head there at `head`.
[[gnu::always_inline]] inline Picoseconds Fabric::release_at_tail(Transfer* t, Picoseconds head) {
  const Picoseconds tail = std::max(head, t->tail_ps);
  if (t->held_pool != kNone) {
    release(t->held_pool, t->held, tail + t->held_return);
    t->held_pool = kNone;
  }
  return tail;
}

// Inline where arrive() and book() call it: one call per burst less on either path.
[[gnu::always_inline]] inline void Fabric::arrive_at(Transfer* t, Picoseconds head) {
  const Picoseconds done = release_at_tail(t, head) + t->route->target_latency_ps;
  schedule_at(done, [this, t, done] {
    t->arrived(done);
    free_transfer(t);
  });
}

// Out of line, so that book() stays as small as exact mode has it.
[[gnu::noinline]] void Fabric::arrive_ahead(Transfer* t) { arrive_at(t, t->head_ps); }

// Books the burst on its current stage's server, no earlier than its head arrived, the server
// is free and the receiver has room (`credits_free`).
void Fabric::book(Transfer* t, Picoseconds credits_free) {
  Route& r = *t->route;
  const Stage& stage = r.stages[t->stage];
  Server& s = servers_[stage.server];
  const int c = static_cast<int>(t->cls);
  const Picoseconds ready = std::max(t->head_ps, s.class_busy_until[c]);
  const Picoseconds start = std::max(ready, credits_free);
  if (s.down_until > t->head_ps) ++s.retrain_waits;
  if (credits_free > ready) {
    s.credit_stall_ps[c] += credits_free - ready;
    ++s.credit_stalls[c];
  }
  const StageCost cost = stage_cost(*t, t->stage);
  const std::uint64_t wire = cost.wire_bytes;
  const Picoseconds burst = cost.burst;
  s.lines += cost.lines;
  s.transaction_bound_ps += cost.transaction_bound;
  const Picoseconds first_tlp = t->cost.tlps == 0 ? burst : burst / t->cost.tlps;
  // Work of other classes booked beyond `start`: the server alternates their TLPs with this
  // burst's, which then ends later by as much of it as its own length (one of theirs per one of
  // its own); the server's total work is conserved.
  const Picoseconds others_ahead = s.work.busy_at(start) ? s.work.free_at() - start : 0;
  const Picoseconds finish = start + burst + std::min(burst, others_ahead);
  s.work.book(start, burst);
  s.class_busy_until[c] = std::max(finish, start + t->credit_paced_ps);
  s.tlps[c] += t->cost.tlps;
  s.wire_bytes[c] += wire;
  s.payload_bytes[c] += t->cost.payload_bytes;
  Picoseconds tail_out = std::max(finish, t->tail_ps);
  if (start + t->credit_paced_ps > tail_out) {
    // Fewer credits than the window: the receiver's buffer sets the pace (Fabric::window).
    s.credit_paced_ps[c] += start + t->credit_paced_ps - tail_out;
    ++s.credit_paced[c];
    tail_out = start + t->credit_paced_ps;
  }
  const std::size_t held_pool = t->held_pool;
  const Credits held = t->held;
  const Picoseconds held_return = t->held_return;
  t->held_pool = kNone;
  if (stage.pool != kNone) {
    Pool& pool = pools_[stage.pool + static_cast<std::size_t>(c)];
    window(t);
    t->held = t->window;
    pool.credits.take(t->held);
    t->held_pool = stage.pool + static_cast<std::size_t>(c);
    t->held_return = stage.credit_return;
  }
  t->head_ps = start + first_tlp + stage.latency_after;
  t->tail_ps = tail_out + stage.latency_after;
  ++t->stage;
  // Fast delivery (set_fast_delivery): the arrival at the target is known now.
  if (fast_delivery_ && t->stage == r.stages.size() && !memory_serves(*t)) {
    arrive_ahead(t);
  } else {
    schedule_at(t->head_ps, [this, t] { advance(t); });
  }
  // The receiver of the stage just left frees the burst's room once its tail has gone.
  if (held_pool != kNone) release(held_pool, held, tail_out + held_return);
}

void Fabric::release(std::size_t index, const Credits& credits, Picoseconds when) {
  pools_[index].credits.release_at(credits, when);
  admit(index);
}

// Starts the waiting bursts of one pool, in order, whose room is free now. When the first one's
// room is due back later, a wake-up is set for then rather than booking it now: a burst still
// in the receiver may yet announce an earlier release.
void Fabric::admit(std::size_t index) {
  Pool& pool = pools_[index];
  if (pool.admitting) return;
  pool.admitting = true;
  while (!pool.waiters.empty()) {
    const Credits need = pool.waiters.front()->window;
    const std::optional<Picoseconds> free = pool.credits.earliest(need, now());
    if (!free) break;  // waits until a burst in the receiver books its next hop
    if (*free > now()) {
      if (*free < pool.wake_at) {
        pool.wake_at = *free;
        const Picoseconds when = *free;
        schedule_at(when, [this, index, when] {
          if (pools_[index].wake_at == when) pools_[index].wake_at = kNever;
          admit(index);
        });
      }
      break;
    }
    Transfer* t = pool.waiters.front();
    pool.waiters.pop_front();
    book(t, now());
  }
  pool.admitting = false;
}

// The head has reached the target. Host memory absorbs a write, or reads out the data a read
// asks for, at its bandwidth, starting when the head arrives and the memory is free: a write is
// done when both its last byte and the memory are; a read's completions may start once the
// memory has begun and cannot finish before it has read the last byte.
void Fabric::arrive(Transfer* t) {
  if (!memory_serves(*t)) {
    arrive_at(t, now());
    return;
  }
  const Picoseconds tail = release_at_tail(t, now());
  MemoryServer& m = memories_[t->route->memory];
  const Picoseconds busy = bytes_at_rate(t->len, m.bytes_per_ns);
  const Picoseconds start = m.server.book(now(), busy).start;
  m.bytes += t->len;
  Picoseconds done = start + m.latency_ps;
  Picoseconds data_ready = std::max(tail, start + busy) + m.latency_ps;
  if (t->cls == TlpClass::PostedWrite) done = data_ready;
  schedule_at(done, [this, t, data_ready] {
    t->arrived(data_ready);
    free_transfer(t);
  });
}

Picoseconds Fabric::core_access(std::size_t memory, std::uint64_t bytes) {
  auto it = memory_of_.find(memory);
  if (it == memory_of_.end()) {
    throw std::logic_error(
        fmt::format("core_access: {} is not a memory node", topology_.nodes.at(memory).id));
  }
  MemoryServer& m = memories_[it->second];
  m.core_bytes += bytes;
  return m.server.book(now(), bytes_at_rate(bytes, m.bytes_per_ns)).start - now();
}

Fabric::TenantTraffic Fabric::tenant_traffic(std::uint32_t tenant) const {
  auto it = tenant_traffic_.find(tenant);
  return it == tenant_traffic_.end() ? TenantTraffic{} : it->second;
}

void Fabric::write(std::size_t src, std::uint64_t addr, std::uint32_t len, const void* data,
                   Delivered delivered, std::uint32_t tenant) {
  const std::size_t dst = owner_of(addr, len);
  route(src, dst, Traffic::Request);  // refuse a blocked path before anything moves
  Bytes bytes(data != nullptr ? len : 0);
  if (data != nullptr && len != 0) std::memcpy(bytes.data(), data, len);
  PairTraffic& pair = pair_traffic(src, dst);
  ++pair.writes;
  pair.write_bytes += len;
  const WriteAccounting accounting = account_write(rules_, addr, len);
  send(
      src, dst, TlpClass::PostedWrite, accounting.cost, accounting.credits, src, addr, len, 0,
      [this, addr, len, bytes = std::move(bytes),
       delivered = std::move(delivered)](Picoseconds) mutable {
        const Region* region = memory_.find(addr, len == 0 ? 1 : len);
        if (region->kind == RegionKind::Registers) {
          auto target = register_targets_.find(region->base);
          if (target != register_targets_.end()) {
            target->second->on_register_write(addr - region->base, bytes.data(), len);
          }
        } else if (bytes.size() != 0) {
          memory_.write(addr, bytes.data(), bytes.size());
        }
        if (delivered) delivered();
      },
      tenant);
}

void Fabric::read(std::size_t src, std::uint64_t addr, std::uint32_t len, ReadDone done,
                  std::uint32_t tenant) {
  const std::size_t dst = owner_of(addr, len);
  route(src, dst, Traffic::Request);
  route(dst, src, Traffic::Completion);
  PairTraffic& pair = pair_traffic(src, dst);
  ++pair.reads;
  pair.read_bytes += len;
  // Hardware frees a tag as each request's completions arrive; the model frees a read's tags
  // when its last completion arrives. So that a long read does not hold every tag until its
  // end (which would cap a stream of them at one read per round trip plus serialization), a
  // read of more than read_tags / kTagShares requests is issued as reads of at most that many,
  // cut at multiples of that many MRRS blocks. No request crosses an MRRS-aligned address, so
  // the cut adds no TLP and changes no byte on the wire; each part frees its tags as it ends.
  const std::uint64_t part_bytes =
      std::uint64_t{std::max<std::uint32_t>(1, read_tags_ / kTagShares)} * rules_.mrrs;
  const std::uint64_t first_end = (addr / part_bytes + 1) * part_bytes;
  if (len == 0 || addr + len <= first_end) {
    read_part(src, dst, addr, len, std::move(done), tenant);
    return;
  }
  struct Gather {
    std::vector<std::uint8_t> bytes;
    std::uint32_t pending = 0;
    ReadDone done;
  };
  auto gather = std::make_shared<Gather>();
  gather->bytes.resize(len);
  gather->done = std::move(done);
  gather->pending =
      static_cast<std::uint32_t>(1 + (addr + len - first_end + part_bytes - 1) / part_bytes);
  for (std::uint64_t at = addr; at < addr + len;) {
    const std::uint64_t end =
        std::min<std::uint64_t>(addr + len, (at / part_bytes + 1) * part_bytes);
    const std::uint64_t offset = at - addr;
    read_part(
        src, dst, at, static_cast<std::uint32_t>(end - at),
        [gather, offset](const std::uint8_t* data, std::uint32_t n) {
          std::memcpy(gather->bytes.data() + offset, data, n);
          if (--gather->pending == 0) {
            gather->done(gather->bytes.data(), static_cast<std::uint32_t>(gather->bytes.size()));
          }
        },
        tenant);
    at = end;
  }
}

void Fabric::read_part(std::size_t src, std::size_t dst, std::uint64_t addr, std::uint32_t len,
                       ReadDone done, std::uint32_t tenant) {
  const ReadAccounting accounting = account_read(rules_, addr, len);
  const auto need = static_cast<std::uint32_t>(
      std::min<std::uint64_t>(accounting.cost.requests.tlps, read_tags_));
  auto inserted = tags_.try_emplace(src);
  Tags& tags = inserted.first->second;
  if (inserted.second) tags.available = read_tags_;
  if (!tags.waiting.empty() || tags.available < need) {
    ++tags.waits;
    const Picoseconds since = now();
    tags.waiting.emplace_back(
        need, [this, src, dst, addr, len, need, since, accounting, done = std::move(done), tenant] {
          tags_[src].wait_ps += now() - since;
          issue_read(src, dst, addr, len, need, accounting, done, tenant);
        });
    return;
  }
  tags.available -= need;
  issue_read(src, dst, addr, len, need, accounting, std::move(done), tenant);
}

void Fabric::issue_read(std::size_t src, std::size_t dst, std::uint64_t addr, std::uint32_t len,
                        std::uint32_t tags, const ReadAccounting& accounting, ReadDone done,
                        std::uint32_t tenant) {
  send(
      src, dst, TlpClass::ReadRequest, accounting.cost.requests, accounting.credits.non_posted, src,
      addr, len, 0,
      [this, src, dst, addr, len, tags, completions = accounting.cost.completions,
       completion_credits = accounting.credits.completion,
       done = std::move(done)](Picoseconds data_ready) mutable {
        // The target serves the request now: the completions carry these bytes.
        Bytes bytes(len);
        memory_.read(addr, bytes.data(), len);
        send(dst, src, TlpClass::Completion, completions, completion_credits, src, addr, len,
             data_ready,
             [this, src, tags, bytes = std::move(bytes), done = std::move(done)](Picoseconds) {
               return_tags(src, tags);
               done(bytes.data(), bytes.size());
             });
      },
      tenant);
}

void Fabric::return_tags(std::size_t src, std::uint32_t n) {
  Tags& tags = tags_[src];
  tags.available += n;
  while (!tags.waiting.empty() && tags.available >= tags.waiting.front().first) {
    auto [need, issue] = std::move(tags.waiting.front());
    tags.waiting.pop_front();
    tags.available -= need;
    issue();
  }
}

std::uint64_t Fabric::tlps(TlpClass cls) const {
  std::uint64_t total = 0;
  for (const Server& s : servers_) {
    if (s.kind == ServerKind::PcieLink) total += s.tlps[static_cast<int>(cls)];
  }
  return total;
}

nlohmann::json Fabric::statistics(Picoseconds elapsed) const {
  nlohmann::json links = nlohmann::json::array();
  for (const Server& s : servers_) {
    if (s.kind != ServerKind::PcieLink && s.kind != ServerKind::InterSocket) continue;
    std::uint64_t wire = 0, payload = 0, tlp_count = 0;
    Picoseconds stall = 0, paced = 0;
    std::uint64_t stalls = 0, paced_bursts = 0;
    nlohmann::json by_class = nlohmann::json::object();
    for (int c = 0; c < 3; ++c) {
      wire += s.wire_bytes[c];
      payload += s.payload_bytes[c];
      tlp_count += s.tlps[c];
      stall += s.credit_stall_ps[c];
      stalls += s.credit_stalls[c];
      paced += s.credit_paced_ps[c];
      paced_bursts += s.credit_paced[c];
      by_class[kClassNames[c]] = {{"tlps", s.tlps[c]},
                                  {"wire_bytes", s.wire_bytes[c]},
                                  {"payload_bytes", s.payload_bytes[c]},
                                  {"credit_stall_ns", ns(s.credit_stall_ps[c])},
                                  {"credit_stalls", s.credit_stalls[c]},
                                  {"credit_paced_ns", ns(s.credit_paced_ps[c])},
                                  {"credit_paced", s.credit_paced[c]}};
    }
    if (tlp_count == 0) continue;
    // Raw: the signalling rate (GT/s x lanes / 8) of a PCIe link, before line encoding,
    // DLLPs, SKP ordered sets and TLP overheads; an inter-socket link's declared bandwidth.
    const double raw_bytes_per_ns = s.kind == ServerKind::PcieLink
                                        ? lane_gtps(s.gen) * static_cast<int>(s.width) / 8.0
                                        : s.bytes_per_ns;
    const double payload_bytes = static_cast<double>(payload);
    links.push_back(
        {{"direction", s.name},
         {"type", s.cxl_flit_bytes != 0            ? "cxl"
                  : s.kind == ServerKind::PcieLink ? "pcie"
                                                   : "inter_socket"},
         {"utilization", share(s.work.busy_ps(), elapsed)},
         {"raw_gbps", round_to(raw_bytes_per_ns, 1e-6)},
         {"achieved_gbps", elapsed == 0 ? 0.0 : round_to(payload_bytes / ps_to_ns(elapsed), 1e-6)},
         {"achieved_fraction",
          elapsed == 0 ? 0.0
                       : round_to(payload_bytes / ps_to_ns(elapsed) / raw_bytes_per_ns, 1e-6)},
         {"achieved_fraction_busy",
          s.work.busy_ps() == 0
              ? 0.0
              : round_to(payload_bytes / ps_to_ns(s.work.busy_ps()) / raw_bytes_per_ns, 1e-6)},
         {"transaction_bound_ns", ns(s.transaction_bound_ps)},
         {"tlps", tlp_count},
         {"wire_bytes", wire},
         {"payload_bytes", payload},
         {"overhead_bytes", wire - payload},
         {"credit_stall_ns", ns(stall)},
         {"credit_stalls", stalls},
         {"credit_paced_ns", ns(paced)},
         {"credit_paced", paced_bursts},
         {"by_class", std::move(by_class)}});
  }
  return links;
}

nlohmann::json Fabric::report(Picoseconds elapsed) const {
  nlohmann::json links = statistics(elapsed);
  Picoseconds stall = 0;
  for (const Server& s : servers_) {
    for (int c = 0; c < 3; ++c) stall += s.credit_stall_ps[c];
  }
  nlohmann::json root_complexes = nlohmann::json::array();
  for (const auto& [node, first] : rc_servers_) {
    const NodeConfig& rc = topology_.nodes[node];
    nlohmann::json fabric = nlohmann::json::object();
    for (int k = 0; k < 3; ++k) {
      const Server& s = servers_[first + static_cast<std::size_t>(k)];
      std::uint64_t wire = s.wire_bytes[0] + s.wire_bytes[1] + s.wire_bytes[2];
      fabric[k == 0   ? "in"
             : k == 1 ? "out"
                      : "peer"] = {{"utilization", share(s.work.busy_ps(), elapsed)},
                                   {"wire_bytes", wire},
                                   {"lines", s.lines},
                                   {"line_bound_ns", ns(s.transaction_bound_ps)}};
    }
    nlohmann::json entry = {{"id", rc.id},
                            {"iommu", enum_name(RootComplexParams::from(rc.params).iommu)},
                            {"fabric", fabric}};
    auto iommu = iommu_of_.find(node);
    if (iommu != iommu_of_.end()) {
      const Iommu& m = iommus_[iommu->second];
      entry["iotlb"] = {{"lookups", m.iotlb.lookups()},
                        {"hits", m.iotlb.lookups() - m.iotlb.misses()},
                        {"misses", m.iotlb.misses()},
                        {"walk_ns", ns(m.walk_ps)}};
    }
    root_complexes.push_back(std::move(entry));
  }
  nlohmann::json memories = nlohmann::json::array();
  nlohmann::json cxl_memories = nlohmann::json::array();
  for (const MemoryServer& m : memories_) {
    const bool cxl = topology_.nodes[m.node].kind == "cxl_memory";
    nlohmann::json entry = {{"id", topology_.nodes[m.node].id},
                            {"bytes", m.bytes},
                            {"utilization", share(m.server.busy_ps(), elapsed)}};
    if (m.core_bytes != 0) entry["core_bytes"] = m.core_bytes;
    (cxl ? cxl_memories : memories).push_back(std::move(entry));
  }
  nlohmann::json tags = nlohmann::json::array();
  for (const auto& [node, t] : tags_) {
    tags.push_back({{"requester", topology_.nodes[node].id},
                    {"tags", read_tags_},
                    {"waits", t.waits},
                    {"wait_ns", ns(t.wait_ps)}});
  }
  nlohmann::json out = {{"links", std::move(links)},
                        {"posted_write_tlps", tlps(TlpClass::PostedWrite)},
                        {"read_request_tlps", tlps(TlpClass::ReadRequest)},
                        {"completion_tlps", tlps(TlpClass::Completion)},
                        {"credit_stall_ns", ns(stall)},
                        {"dllp_intervals", enum_name(dllp_intervals_)},
                        {"root_complexes", std::move(root_complexes)},
                        {"host_memory", std::move(memories)},
                        {"read_tags", std::move(tags)}};
  if (!cxl_memories.empty()) out["cxl_memory"] = std::move(cxl_memories);
  return out;
}

nlohmann::json Fabric::paths() const {
  auto ids = [this](const std::vector<std::size_t>& nodes) {
    nlohmann::json out = nlohmann::json::array();
    for (std::size_t v : nodes) out.push_back(topology_.nodes[v].id);
    return out;
  };
  // Device pairs first, as nvidia-smi topo -p2p lists them, then traffic with the host.
  std::vector<std::pair<std::size_t, std::size_t>> order;
  for (const bool peer : {true, false}) {
    for (const auto& entry : pairs_) {
      const auto [src, dst] = entry.first;
      if (routes_.at({src, dst, static_cast<int>(Traffic::Request)}).path.peer_to_peer == peer) {
        order.push_back(entry.first);
      }
    }
  }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& key : order) {
    const PairTraffic& traffic = pairs_.at(key);
    const auto [src, dst] = key;
    const ResolvedPath& p = routes_.at({src, dst, static_cast<int>(Traffic::Request)}).path;
    nlohmann::json entry = {{"from", topology_.nodes[src].id},
                            {"to", topology_.nodes[dst].id},
                            {"kind", p.kind},
                            {"path", p.taken},
                            {"route", ids(p.nodes)},
                            {"peer_to_peer", p.peer_to_peer},
                            {"writes", traffic.writes},
                            {"write_bytes", traffic.write_bytes},
                            {"reads", traffic.reads},
                            {"read_bytes", traffic.read_bytes}};
    if (p.redirected_by != ResolvedPath::npos) {
      entry["redirected_by"] = topology_.nodes[p.redirected_by].id;
    }
    if (p.translated_by != ResolvedPath::npos) {
      entry["translated_by"] = topology_.nodes[p.translated_by].id;
      const Iommu& m = iommus_[iommu_of_.at(p.translated_by)];
      auto counts = m.per_pair.find({src, dst});
      const std::uint64_t lookups = counts == m.per_pair.end() ? 0 : counts->second.first;
      const std::uint64_t misses = counts == m.per_pair.end() ? 0 : counts->second.second;
      entry["iotlb"] = {{"lookups", lookups}, {"hits", lookups - misses}, {"misses", misses}};
    }
    if (traffic.reads > 0) {
      const ResolvedPath& back = routes_.at({dst, src, static_cast<int>(Traffic::Completion)}).path;
      std::vector<std::size_t> reversed(back.nodes.rbegin(), back.nodes.rend());
      if (reversed != p.nodes) entry["completion_route"] = ids(back.nodes);
    }
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace gpunvme::pcie
