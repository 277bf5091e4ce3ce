// Several tenants in one run: a scenario file whose "tenants" list holds
// workloads, each an ordinary scenario (under "scenario") with its own GPU or
// host, sharing the topology's SSDs, links and switches. Each tenant creates
// its own I/O queues (no queue is shared); an SSD that several tenants use is
// brought up once by one host driver for all of their queues, tenant by
// tenant in file order (queue ids 1.. for the first, then the next). The
// QoS levers are the controller's arbitration (weighted round robin with
// the tenants' priority classes) and per-tenant token-bucket rate limits
// (TenantQos). Tenant i runs with the run's seed + i.
//
// The result keeps the machine-wide sections of a single run (ssds, pcie,
// paths, gpus) and adds "tenants" (each tenant's summary, stages and fio
// figures, as a single run reports them) and "fairness": Jain's index over
// per-tenant throughput / weight, the largest and smallest p99 latency and
// their ratio, and with compare_alone each tenant's slowdown against a run
// of it alone.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/kernel/params/param_table.h"
#include "sim/system/config/run_config.h"
#include "sim/system/run/run.h"

namespace gpunvme {

GPUNVME_ENUM(TenantArbitration, round_robin, weighted_round_robin)
GPUNVME_ENUM(TenantPriority, urgent, high, medium, low)
GPUNVME_ENUM(TenantIommuDomains, shared, per_tenant)

struct TenantsParams {
#define GPUNVME_TENANTS_TABLE
#define GPUNVME_PARAM GPUNVME_PARAM_MEMBER
#include "sim/system/run/tenants_params.def"
#undef GPUNVME_PARAM
#undef GPUNVME_TENANTS_TABLE
  static TenantsParams from(const ParamValues& values);
};

struct TenantParams {
#define GPUNVME_TENANT_TABLE
#define GPUNVME_PARAM GPUNVME_PARAM_MEMBER
#include "sim/system/run/tenants_params.def"
#undef GPUNVME_PARAM
#undef GPUNVME_TENANT_TABLE
  static TenantParams from(const ParamValues& values);
};

// The fields of a multi-tenant scenario file ("tenants") and of one tenant
// ("tenant"), for the resolver and `gpunvme describe`.
const ComponentSpec& tenants_spec();
const ComponentSpec& tenant_spec();

struct Tenant {
  std::string name;
  double weight = 1.0;
  RunConfig config;                   // its scenario on the shared topology, with its TenantQos
  std::uint64_t stray_dma_every = 0;  // stray_dma_every (0: none)
  std::size_t stray_dma_target = 0;   // index of stray_dma_target
};

struct TenantSet {
  ParamValues params;  // TenantsParams
  std::string file;
  std::vector<Tenant> tenants;
  // SSDs that more than one tenant uses, with the I/O queues all of them ask.
  std::map<std::string, std::uint32_t> shared_queues;
};

// Whether a scenario document is a multi-tenant one (has "tenants").
bool is_tenants_document(const nlohmann::json& scenario);
// Resolves and checks every tenant (ConfigError naming $.tenants[i]... on bad
// input) and what they share.
RunConfig resolve_tenants(const RawConfig& raw);
nlohmann::json run_tenants(const RunConfig& config, const RunOptions& options);

// Jain's fairness index of `x`: (sum x)^2 / (n sum x^2), 1 when all are
// equal, 1/n when one takes everything; 1 for no or all-zero values.
double jain_index(const std::vector<double>& x);

}  // namespace gpunvme
