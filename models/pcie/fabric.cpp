#include "models/pcie/fabric.h"

#include <fmt/format.h>

#include <stdexcept>

namespace gpunvme::pcie {

namespace {
constexpr std::size_t kNoServer = static_cast<std::size_t>(-1);

// Time a node adds when a transfer passes through it (not when it ends there).
Picoseconds traversal_ps(const NodeConfig& node) {
  if (node.kind == "switch" || node.kind == "root_complex") {
    return ns_to_ps(node.params.real("latency_ns"));
  }
  return 0;
}

// Time a target takes to serve a read or absorb a write.
Picoseconds access_ps(const NodeConfig& node) {
  if (node.kind == "host_memory") return ns_to_ps(node.params.real("dma_latency_ns"));
  if (node.kind == "gpu") return ns_to_ps(node.params.real("bar_access_ns"));
  return 0;
}
}  // namespace

Fabric::Fabric(const sc_core::sc_module_name& name, const TopologyConfig& topology,
               const TopologyGraph& graph, MemorySpace& memory)
    : Component(name, topology.params), topology_(topology), graph_(graph), memory_(memory) {
  rules_.mps = static_cast<std::uint32_t>(topology.params.integer("mps"));
  rules_.mrrs = static_cast<std::uint32_t>(topology.params.integer("mrrs"));
  rules_.rcb = static_cast<std::uint32_t>(topology.params.integer("rcb"));
  rules_.addr64 = true;  // every modelled BAR and buffer sits above 4 GB
  for (const LinkConfig& link : topology.links) {
    for (int dir = 0; dir < 2; ++dir) {
      Server s;
      s.name = dir == 0 ? link.from + "->" + link.to : link.to + "->" + link.from;
      s.is_pcie = link.params.string("type") == "pcie";
      if (s.is_pcie) {
        s.gen = gen_from_number(static_cast<int>(link.params.integer("gen")));
        s.width = width_from_lanes(static_cast<int>(link.params.integer("width")));
      } else {
        s.bytes_per_ns = link.params.real("bandwidth_gbps");
      }
      servers_.push_back(std::move(s));
    }
  }
}

void Fabric::attach_registers(const Region& region, RegisterTarget* target) {
  register_targets_[region.base] = target;
}

const Fabric::Route& Fabric::route(std::size_t src, std::size_t dst) {
  auto key = std::make_pair(src, dst);
  auto it = routes_.find(key);
  if (it != routes_.end()) return it->second;
  std::vector<std::size_t> nodes = graph_.route(src, dst);
  if (nodes.empty()) {
    throw std::runtime_error(
        fmt::format("no route from {} to {}", topology_.nodes[src].id, topology_.nodes[dst].id));
  }
  Route r;
  for (std::size_t i = 1; i < nodes.size(); ++i) {
    auto [e, found] = boost::edge(nodes[i - 1], nodes[i], graph_.graph());
    Hop hop{kNoServer, 0};
    const TopologyEdge& edge = graph_.graph()[e];
    if (found && edge.kind != EdgeKind::Attachment) {
      const LinkConfig& link = topology_.links[edge.link_index];
      bool forward = topology_.nodes[nodes[i - 1]].id == link.from;
      hop.server = 2 * edge.link_index + (forward ? 0 : 1);
      hop.latency_ps = ns_to_ps(link.params.real("latency_ns"));
    }
    if (i + 1 < nodes.size()) hop.latency_ps += traversal_ps(topology_.nodes[nodes[i]]);
    r.hops.push_back(hop);
  }
  r.target_latency_ps = access_ps(topology_.nodes[dst]);
  return routes_.emplace(key, std::move(r)).first->second;
}

std::size_t Fabric::owner_of(std::uint64_t addr, std::uint32_t len) const {
  const Region* region = memory_.find(addr, len == 0 ? 1 : len);
  if (region == nullptr) {
    throw std::runtime_error(
        fmt::format("PCIe access to unmapped address 0x{:x} (+{} B)", addr, len));
  }
  return region->owner;
}

Picoseconds Fabric::serialization(const Server& server, std::uint64_t wire_bytes) const {
  if (server.is_pcie) return serialization_ps(server.gen, server.width, wire_bytes, rules_.mps);
  return static_cast<Picoseconds>(static_cast<double>(wire_bytes) / server.bytes_per_ns * 1000.0 +
                                  0.5);
}

void Fabric::send(std::size_t src, std::size_t dst, TlpClass cls, const WireCost& cost,
                  std::function<void()> arrived) {
  auto transfer = std::make_unique<Transfer>();
  transfer->route = &route(src, dst);
  transfer->cls = cls;
  transfer->cost = cost;
  transfer->tail_ps = now();
  transfer->arrived = std::move(arrived);
  advance(std::move(transfer));
}

// One hop of cut-through forwarding: the transfer's first TLP waits for the
// link direction, the whole burst occupies it for its serialization time, and
// the head moves on after the first TLP while the tail follows.
void Fabric::advance(std::unique_ptr<Transfer> transfer) {
  const Route& r = *transfer->route;
  if (transfer->hop == r.hops.size()) {
    Picoseconds done = std::max(now(), transfer->tail_ps) + r.target_latency_ps;
    auto arrived = std::move(transfer->arrived);
    schedule_at(done, std::move(arrived));
    return;
  }
  const Hop& hop = r.hops[transfer->hop];
  Picoseconds head = now();
  Picoseconds tail = transfer->tail_ps;
  if (hop.server != kNoServer) {
    Server& s = servers_[hop.server];
    const int c = static_cast<int>(transfer->cls);
    Picoseconds burst = serialization(s, transfer->cost.wire_bytes);
    Picoseconds first_tlp = transfer->cost.tlps == 0 ? burst : burst / transfer->cost.tlps;
    Picoseconds start = std::max(head, s.busy_until);
    s.busy_until = start + burst;
    s.busy_ps += burst;
    s.tlps[c] += transfer->cost.tlps;
    s.wire_bytes[c] += transfer->cost.wire_bytes;
    s.payload_bytes[c] += transfer->cost.payload_bytes;
    head = start + first_tlp;
    tail = std::max(start + burst, tail);
  }
  head += hop.latency_ps;
  transfer->tail_ps = tail + hop.latency_ps;
  ++transfer->hop;
  // The callback owns the transfer while it waits for its next hop.
  Transfer* raw = transfer.release();
  schedule_at(head, [this, raw] { advance(std::unique_ptr<Transfer>(raw)); });
}

void Fabric::write(std::size_t src, std::uint64_t addr, std::uint32_t len, const void* data,
                   Delivered delivered) {
  const std::size_t dst = owner_of(addr, len);
  std::vector<std::uint8_t> bytes;
  if (data != nullptr) {
    const auto* p = static_cast<const std::uint8_t*>(data);
    bytes.assign(p, p + len);
  }
  WireCost cost = memory_write(rules_, addr, len);
  send(src, dst, TlpClass::PostedWrite, cost,
       [this, addr, len, bytes = std::move(bytes), delivered = std::move(delivered)] {
         const Region* region = memory_.find(addr, len);
         if (region->kind == RegionKind::Registers) {
           auto target = register_targets_.find(region->base);
           if (target != register_targets_.end()) {
             target->second->on_register_write(addr - region->base, bytes.data(), len);
           }
         } else if (!bytes.empty()) {
           memory_.write(addr, bytes.data(), bytes.size());
         }
         if (delivered) delivered();
       });
}

void Fabric::read(std::size_t src, std::uint64_t addr, std::uint32_t len, ReadDone done) {
  const std::size_t dst = owner_of(addr, len);
  ReadCost cost = memory_read(rules_, addr, len);
  send(src, dst, TlpClass::ReadRequest, cost.requests,
       [this, src, dst, addr, len, completions = cost.completions, done = std::move(done)] {
         // The target serves the request now: the completion carries these bytes.
         auto bytes = std::make_shared<std::vector<std::uint8_t>>(len);
         memory_.read(addr, bytes->data(), len);
         send(dst, src, TlpClass::Completion, completions,
              [bytes, done] { done(bytes->data(), static_cast<std::uint32_t>(bytes->size())); });
       });
}

std::uint64_t Fabric::tlps(TlpClass cls) const {
  std::uint64_t total = 0;
  for (const Server& s : servers_) total += s.tlps[static_cast<int>(cls)];
  return total;
}

nlohmann::json Fabric::statistics(Picoseconds elapsed) const {
  nlohmann::json links = nlohmann::json::array();
  static const char* kClassNames[3] = {"posted_write", "read_request", "completion"};
  for (const Server& s : servers_) {
    std::uint64_t wire = 0, payload = 0, tlp_count = 0;
    nlohmann::json by_class = nlohmann::json::object();
    for (int c = 0; c < 3; ++c) {
      wire += s.wire_bytes[c];
      payload += s.payload_bytes[c];
      tlp_count += s.tlps[c];
      by_class[kClassNames[c]] = {{"tlps", s.tlps[c]},
                                  {"wire_bytes", s.wire_bytes[c]},
                                  {"payload_bytes", s.payload_bytes[c]}};
    }
    if (tlp_count == 0) continue;
    links.push_back(
        {{"direction", s.name},
         {"utilization",
          elapsed == 0 ? 0.0 : static_cast<double>(s.busy_ps) / static_cast<double>(elapsed)},
         {"tlps", tlp_count},
         {"wire_bytes", wire},
         {"payload_bytes", payload},
         {"overhead_bytes", wire - payload},
         {"by_class", std::move(by_class)}});
  }
  return links;
}

}  // namespace gpunvme::pcie
