#include "sim/system/run/tenant_isolation.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace gpunvme {

TenantIsolation::TenantIsolation(std::size_t tenants, bool per_tenant_domains,
                                 const MemorySpace& memory, const pcie::Router& router)
    : per_tenant_(per_tenant_domains),
      memory_(memory),
      router_(router),
      counters_(tenants),
      strays_(tenants),
      last_segment_(tenants, {0, 0}),
      mapped_bytes_(tenants, 0) {}

void TenantIsolation::map(std::size_t tenant, std::uint64_t base, std::uint64_t len) {
  if (len == 0) return;
  auto at = std::upper_bound(ranges_.begin(), ranges_.end(), base,
                             [](std::uint64_t b, const Range& r) { return b < r.base; });
  ranges_.insert(at, Range{base, len, tenant});
  mapped_bytes_[tenant] += len;
}

void TenantIsolation::stray(std::size_t tenant, std::uint64_t every, std::size_t victim) {
  strays_[tenant].every = every;
  strays_[tenant].victim = victim;
}

std::size_t TenantIsolation::owner(std::uint64_t addr, std::uint64_t len) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), addr,
                             [](std::uint64_t a, const Range& r) { return a < r.base; });
  if (it == ranges_.begin()) return npos;
  --it;
  const bool inside = addr - it->base < it->len && len <= it->len - (addr - it->base);
  return inside ? it->tenant : npos;
}

nvme::Controller::DataGate TenantIsolation::gate(
    std::size_t ssd, std::map<std::uint16_t, std::size_t> queue_tenant) {
  return [this, ssd, queues = std::move(queue_tenant)](
             std::uint16_t qid, std::vector<nvme::Segment>& segments, bool to_host) {
    auto it = queues.find(qid);
    if (it == queues.end()) return nvme::DataAdmission{};
    return admit(ssd, it->second, segments, to_host);
  };
}

nvme::DataAdmission TenantIsolation::admit(std::size_t ssd, std::size_t tenant,
                                           std::vector<nvme::Segment>& segments, bool to_host) {
  Counters& mine = counters_[tenant];
  ++mine.data_commands;
  // A stray command: its first data segment carries the victim's address (the victim's most
  // recent buffer, so a real data buffer of the victim's, never its rings).
  Stray& stray = strays_[tenant];
  if (stray.every != 0 && ++stray.seen % stray.every == 0) {
    const auto [victim_addr, victim_len] = last_segment_[stray.victim];
    for (nvme::Segment& s : segments) {
      if (s.bit_bucket) continue;
      if (victim_len != 0 && owner(victim_addr, s.len) == stray.victim) {
        s.addr = victim_addr;
        ++mine.stray_dmas;
      }
      break;
    }
  }
  std::uint64_t bytes = 0;
  for (const nvme::Segment& s : segments) {
    if (!s.bit_bucket) bytes += s.len;
  }
  for (const nvme::Segment& s : segments) {
    if (s.bit_bucket) continue;
    const std::size_t holder = owner(s.addr, s.len);
    if (holder == tenant) continue;
    const Region* region = memory_.find(s.addr, std::max<std::uint64_t>(s.len, 1));
    const pcie::ResolvedPath path =
        region == nullptr ? pcie::ResolvedPath{}
                          : router_.resolve(ssd, region->owner, pcie::Traffic::Request);
    const bool mapped = !per_tenant_;  // a shared context maps every tenant's memory
    if (!pcie::domain_outcome(path, mapped).performed && region != nullptr) {
      ++mine.refused_dmas;
      mine.refused_bytes += bytes;
      return nvme::DataAdmission{true, static_cast<std::uint32_t>(tenant + 1)};
    }
  }
  // Performed: what lands in (or is read from) another tenant's memory is counted on both sides.
  for (const nvme::Segment& s : segments) {
    if (s.bit_bucket) continue;
    const std::size_t holder = owner(s.addr, s.len);
    if (holder == tenant) {
      last_segment_[tenant] = {s.addr, s.len};
    } else if (holder != npos) {
      if (to_host) {
        mine.foreign_bytes_written += s.len;
        counters_[holder].bytes_landed_by_others += s.len;
      } else {
        mine.foreign_bytes_read += s.len;
        counters_[holder].bytes_read_by_others += s.len;
      }
    }
  }
  return nvme::DataAdmission{false, static_cast<std::uint32_t>(tenant + 1)};
}

nlohmann::json TenantIsolation::report(std::size_t tenant, const pcie::Fabric& fabric) const {
  const Counters& c = counters_[tenant];
  const auto tag = static_cast<std::uint32_t>(tenant + 1);
  const pcie::Fabric::TenantTraffic t = fabric.tenant_traffic(tag);
  nlohmann::json out = {
      {"iommu_domains", per_tenant_ ? "per_tenant" : "shared"},
      {"pasid", per_tenant_ ? nlohmann::json(tag) : nlohmann::json(nullptr)},
      {"mapped_bytes", mapped_bytes_[tenant]},
      {"data_commands", c.data_commands},
      {"stray_dmas", c.stray_dmas},
      {"refused_dmas", c.refused_dmas},
      {"refused_bytes", c.refused_bytes},
      {"foreign_bytes_written", c.foreign_bytes_written},
      {"foreign_bytes_read", c.foreign_bytes_read},
      {"bytes_landed_by_others", c.bytes_landed_by_others},
      {"bytes_read_by_others", c.bytes_read_by_others},
      {"dma_requests", t.requests},
      {"dma_bytes", t.bytes},
      {"translated_bytes", t.translated_bytes},
      {"redirected_bytes", t.redirected_bytes},
      {"iotlb_lookups", t.iotlb_lookups},
      {"iotlb_misses", t.iotlb_misses},
      {"iotlb_walk_ns", std::round(ps_to_ns(t.walk_ps) * 1000.0) / 1000.0},
  };
  return out;
}

}  // namespace gpunvme
