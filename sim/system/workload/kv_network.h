// The KV cache's network tiers (kv_cache.h): on a remote path
// (remote_staged, nvmf_gpudirect, dpu, gpu_network; remote_io_path.h) the
// NVMe tier's blocks live on the storage host's SSDs, read and written
// through NVMe-oF, and a remote-memory tier (remote_kv_gib) holds blocks in
// the storage host's DRAM, read by one RDMA READ and written by one RDMA
// WRITE per block (remote_memory_read.cpp). On gpu_network the GPU's warps
// post all of them (gpu_network_path.h).
#pragma once

#include <cstdint>

#include "sim/system/workload/kv_cache.h"

namespace gpunvme {

// Blocks that fill during decoding (over all layers and sequences), and the
// full blocks the prompts' contexts hold before it.
std::uint64_t kv_blocks_filled_in_decode(const KvShape& k);
std::uint64_t kv_blocks_before_decode(const KvShape& k);

// ConfigError (with the field's JSON path) for a network tier the run cannot
// serve: a remote-memory tier without a remote path, smaller than one block
// or larger than the storage host's memory; on a remote path, the
// in_storage policy or key requests.
void check_kv_network(const RunConfig& config, const KvShape& k);

}  // namespace gpunvme
