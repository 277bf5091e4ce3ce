// Isolation between the tenants of a run: each tenant's IOMMU domain is the
// memory its workload allocated (rings, data buffers, PRP lists), and an SSD's
// data DMAs for a queue are checked against the domain of the queue's tenant
// before any byte moves (Controller::gate_data).
//
//  * shared domains: an SSD has one IOMMU context, its requester ID, holding
//    every tenant's memory: a data pointer into another tenant's buffer is
//    performed and its bytes land there (counted on both sides);
//  * per-tenant domains: the SSD tags each tenant's DMAs with its PASID; a
//    segment outside the tenant's domain, on a path the IOMMU translates, is
//    refused: nothing moves and the command completes with Data Transfer
//    Error (DataAdmission). A path no IOMMU translates is never checked
//    (pcie::domain_verdict), which is why per-tenant domains need
//    iommu = translate above the SSDs.
//
// Every tenant's data DMAs carry its tag (tenant i: i + 1) into the fabric,
// which counts their translations, IOTLB misses and redirections
// (Fabric::tenant_traffic); with per-tenant domains the tag is the PASID.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "models/nvme/controller.h"
#include "models/pcie/fabric.h"
#include "sim/kernel/memory_space.h"

namespace gpunvme {

class TenantIsolation {
 public:
  TenantIsolation(std::size_t tenants, bool per_tenant_domains, const MemorySpace& memory,
                  const pcie::Router& router);

  // Maps [base, base + len) into `tenant`'s domain (nothing for len 0).
  void map(std::size_t tenant, std::uint64_t base, std::uint64_t len);
  // Every `every`th data command of `tenant` points at `victim`'s most
  // recent data buffer (0: never).
  void stray(std::size_t tenant, std::uint64_t every, std::size_t victim);
  // The gate of the SSD at node `ssd`, whose I/O queues belong to tenants
  // as `queue_tenant` says (queue id -> tenant; other queues pass untagged).
  nvme::Controller::DataGate gate(std::size_t ssd,
                                  std::map<std::uint16_t, std::size_t> queue_tenant);

  // The tenant whose domain holds all of [addr, addr + len); npos: none.
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  std::size_t owner(std::uint64_t addr, std::uint64_t len) const;

  struct Counters {
    std::uint64_t data_commands = 0;  // its commands that had data to move
    std::uint64_t stray_dmas = 0;     // of those, pointed at another tenant's buffer
    std::uint64_t refused_dmas = 0;   // commands the IOMMU refused (no byte moved)
    std::uint64_t refused_bytes = 0;
    std::uint64_t foreign_bytes_written = 0;   // its DMAs that landed in another tenant's memory
    std::uint64_t foreign_bytes_read = 0;      // its DMAs that read another tenant's memory
    std::uint64_t bytes_landed_by_others = 0;  // other tenants' DMAs into its memory
    std::uint64_t bytes_read_by_others = 0;    // other tenants' DMAs out of its memory
  };
  const Counters& counters(std::size_t tenant) const { return counters_[tenant]; }
  // The result's per-tenant "isolation" section: the counters above, the
  // tenant's domain (pasid, mapped bytes) and what its tagged requests cost
  // in the fabric (translations, IOTLB misses and walk time, redirections).
  nlohmann::json report(std::size_t tenant, const pcie::Fabric& fabric) const;

 private:
  struct Range {
    std::uint64_t base;
    std::uint64_t len;
    std::size_t tenant;
  };
  struct Stray {
    std::uint64_t every = 0;
    std::size_t victim = 0;
    std::uint64_t seen = 0;
  };
  nvme::DataAdmission admit(std::size_t ssd, std::size_t tenant,
                            std::vector<nvme::Segment>& segments, bool to_host);

  bool per_tenant_;
  const MemorySpace& memory_;
  const pcie::Router& router_;
  std::vector<Range> ranges_;  // sorted by base, never overlapping
  std::vector<Counters> counters_;
  std::vector<Stray> strays_;
  // Per tenant: its most recent data segment in its own domain (a stray's target).
  std::vector<std::pair<std::uint64_t, std::uint64_t>> last_segment_;
  std::vector<std::uint64_t> mapped_bytes_;
};

}  // namespace gpunvme
