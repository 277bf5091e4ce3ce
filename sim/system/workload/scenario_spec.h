// Declared fields of a scenario file: the workload, in fio's vocabulary where
// it fits, and the GPU-side strategy that issues it. (rw and distribution are
// the Pattern and Distribution of sim/system/workload/address_stream.h.) The table is
// scenario_params.def; a field's kinds there are the only list of which kind
// uses it (the resolver's check, `describe` and the resolved scenario).
#pragma once

#include "sim/core/algo/strategy_names.h"
#include "sim/kernel/params/param_table.h"
#include "sim/system/workload/address_stream.h"

namespace gpunvme {

GPUNVME_ENUM(ScenarioKind, microbenchmark, kv_cache, graph, gather)
// Who drives the I/O.
GPUNVME_ENUM(IoPathKind, gpu_initiated, gds, bounce, remote_staged, nvmf_gpudirect, dpu,
             gpu_network)
// Where requests of the CPU paths start.
GPUNVME_ENUM(RequestOrigin, gpu, cpu)
// Which KV blocks go to the faster tiers.
GPUNVME_ENUM(KvPlacement, layer_order, interleave)
GPUNVME_ENUM(KvEviction, pin, lru)
// How a layer's decode compute is timed, and which KV offload policy runs.
GPUNVME_ENUM(KvCompute, fixed, roofline)
GPUNVME_ENUM(KvPolicy, tiered, sparse, in_storage, reuse)
// How a KV block on NVMe is named: by logical block address or by key.
GPUNVME_ENUM(KvRequest, lba, key)
// Where each sequence's context length comes from, and how prompts are prefilled.
GPUNVME_ENUM(KvContextDistribution, fixed, uniform, lognormal, histogram)
GPUNVME_ENUM(KvPrefill, batched, sequential)
// Where the gpu_initiated microbenchmark's rings live.
GPUNVME_ENUM(QueueMemory, gpu, host)
GPUNVME_ENUM(SqPlacement, gpu, host, cmb)
// How closely GPU warps are timed: exact (every operation at its time) or
// fast (temporal decoupling within a quantum; README, "Fast mode").
GPUNVME_ENUM(Fidelity, exact, fast)
// What the GPU path does with a command that completes with an error.
GPUNVME_ENUM(ErrorPolicy, none, fail, retry)

// A scenario's fields, typed; times in picoseconds. A field of another kind
// than the scenario's holds its declared default.
struct ScenarioParams {
#define GPUNVME_PARAM GPUNVME_PARAM_MEMBER
#include "sim/system/workload/scenario_params.def"
#undef GPUNVME_PARAM
  static ScenarioParams from(const ParamValues& values);
};

const ComponentSpec& scenario_spec();

// The kinds that use scenario field `field`; empty when every kind does (or
// the field is not declared).
const std::vector<std::string>& field_kinds(const std::string& field);

}  // namespace gpunvme
