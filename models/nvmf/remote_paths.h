// The three ways a remote read reaches GPU memory, one I/O at a time, with
// every seam it crosses counted:
//
// - remote_staged: a host core submits through the NVMe-oF host driver; the
//   target RDMA WRITEs the data into a host buffer; the core reaps the
//   response, launches a copy to the GPU and learns that it finished. The
//   data crosses host memory twice (the NIC's write, the copy's read).
// - nvmf_gpudirect: as remote_staged, but the initiator's buffer is GPU
//   memory (GPUDirect RDMA): the NIC writes the data straight into the GPU
//   and the core posts a completion flag to it. No data in host memory.
// - dpu: the DPU on the GPU's host is the initiator: one of its Arm cores
//   runs the I/O, its NIC receives the data and its own PCIe switch carries
//   it into the GPU. No host core, no data in host memory.
//
// The host's software stages are the cpu node's (host::CpuIoCosts): the
// block layer and driver's submission, a polled completion, the copy's
// launch and synchronisation, the flag to the GPU. The peer-to-peer route
// from the NIC to the GPU is taken as open: the NIC is not a topology node,
// so the PCIe router's ACS and IOMMU rules are not applied to it.
#pragma once

#include <cstdint>

#include "models/host/cpu_cores.h"
#include "models/nvmf/nvmf.h"
#include "sim/kernel/params/enum_names.h"

namespace gpunvme::nvmf {

GPUNVME_ENUM(RemotePath, remote_staged, nvmf_gpudirect, dpu)

// The pieces one remote read uses, owned by the caller so that reads share
// their queues.
struct RemoteFabric {
  nic::RdmaNic& initiator_nic;  // the host's NIC, or the DPU's on the dpu path
  nic::RdmaNic& target_nic;
  network::NetworkLink& link;
  TargetCores& target_cores;
  TargetCores& initiator_cores;  // host cores, or the DPU's Arm cores on the dpu path
  host::CpuIoCosts host_costs;
  Picoseconds dpu_io = 0;      // Arm core time per I/O (dpu)
  Picoseconds dpu_switch = 0;  // one crossing of the DPU's PCIe switch (dpu)
  double copy_gbps = 0.0;      // host buffer to GPU copy rate (remote_staged)
  SwitchHop* via = nullptr;    // a switch between the NICs, if any
};

struct RemotePathRead {
  RemoteRead exchange;                       // the NVMe-oF exchange on the network
  Picoseconds posted = 0;                    // the request reached the initiator's core
  Picoseconds delivered = 0;                 // the data is in GPU memory and the requester knows
  std::uint64_t host_memory_data_bytes = 0;  // payload bytes written to or read from host DRAM
  std::uint32_t copies = 0;                  // host-to-GPU copies
  Picoseconds host_core_ps = 0;              // initiator host core time of this I/O
  Picoseconds dpu_core_ps = 0;               // DPU Arm core time of this I/O
  Picoseconds target_core_ps = 0;            // target core time of this I/O
};

// One read of `bytes` into the GPU buffer (memory_key, address) along
// `path`; the SSD takes `ssd_time`.
RemotePathRead remote_path_read(RemotePath path, RemoteFabric& fabric, Picoseconds posted,
                                std::uint64_t bytes, std::uint32_t memory_key,
                                std::uint64_t address, Picoseconds ssd_time);

}  // namespace gpunvme::nvmf
