// NVMe over Fabrics on RDMA: capsules, the target, and one I/O's timeline.
//
// A read: the initiator SENDs a 64 B command capsule (the SQE with a keyed
// SGL naming its buffer); the target's core takes it, runs the NVMe command on
// its local SSD, RDMA WRITEs the data straight into the initiator's buffer and
// SENDs a 16 B response capsule (the CQE). A write carries its data in the
// command capsule up to in_capsule_data_bytes; beyond that the target RDMA
// READs it from the initiator's buffer (NVMe-oF 1.1, RDMA transport binding).
//
// The target runs on host cores, on a DPU's Arm cores or in the RDMA NIC
// (nvmf_target placement); each is a set of next-available-time servers
// that each I/O books once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "models/network/network.h"
#include "models/nic/rdma_nic.h"
#include "sim/kernel/params/param_table.h"
#include "sim/kernel/server.h"
#include "sim/kernel/time.h"

namespace gpunvme::nvmf {

inline constexpr std::uint64_t kCommandCapsuleBytes = 64;   // the SQE
inline constexpr std::uint64_t kResponseCapsuleBytes = 16;  // the CQE
// Memory keys from this one up name the capsule rings and the target's
// buffers in remote_read; callers' buffers use keys below it.
inline constexpr std::uint32_t kReservedMemoryKeys = 0xFFFFFF00u;

// Where an NVMe-oF target runs (nvmf_target placement).
GPUNVME_ENUM(TargetPlacement, host_cpu, dpu, nic_offload)

struct NvmfTargetParams {
#define GPUNVME_PARAM GPUNVME_PARAM_MEMBER
#include "models/nvmf/nvmf_target_params.def"
#undef GPUNVME_PARAM
  static NvmfTargetParams from(const ParamValues& values);
};

struct DpuParams {
#define GPUNVME_PARAM GPUNVME_PARAM_MEMBER
#include "models/nvmf/dpu_params.def"
#undef GPUNVME_PARAM
  static DpuParams from(const ParamValues& values);
};

const ComponentSpec& nvmf_target_spec();
const ComponentSpec& dpu_spec();
// A dpu node of a topology: the DPU's own parameters and those of its NIC
// (the rdma_nic kind's).
const ComponentSpec& dpu_node_spec();
// Every kind of the network and remote-storage models (network links and
// switches, the RDMA NIC, the NVMe-oF target, the DPU), for `describe`.
std::vector<ComponentSpec> remote_storage_specs();

// What runs a target's side of each I/O and where its SSD queues and data
// buffers live: host cores and host memory, a DPU's Arm cores and memory, or
// an offloading NIC (its command contexts) with host memory.
struct TargetSite {
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  TargetPlacement placement = TargetPlacement::host_cpu;
  std::int64_t servers = 1;        // cores, Arm cores or the offload's command contexts
  Picoseconds io_time = 0;         // one I/O's time on one of them
  std::size_t mmio_node = npos;    // writes SSD doorbells (npos: the storage host's cpu)
  std::size_t memory_node = npos;  // holds SSD queues and data buffers (npos: host memory)
  // The node whose servers run it (the DPU, or the nvmf_target node); paths
  // naming the same node share those servers (npos: a path's own).
  std::size_t node = npos;
  // The SSDs it serves, by id (empty: the scenario's); a storage host's
  // target serves that host's.
  std::vector<std::string> ssds;
};

// Bytes of a command capsule: the SQE, plus the data of a write that fits in it.
std::uint64_t command_capsule_bytes(bool write, std::uint64_t bytes,
                                    std::uint64_t in_capsule_data_bytes);

// Cores that each serve one I/O at a time; an I/O takes the core free first.
class TargetCores {
 public:
  TargetCores(std::int64_t cores, Picoseconds io_time);
  // Books one I/O ready at `ready`; returns when its core is done with it.
  NextFreeServer::Booking serve(Picoseconds ready) {
    ++ios_;
    return run(ready, io_time_);
  }
  // Books `work` of any length on the core free first.
  NextFreeServer::Booking run(Picoseconds ready, Picoseconds work);
  Picoseconds busy_ps() const;
  std::uint64_t ios() const { return ios_; }
  // I/Os per second the cores sustain when each is busy all the time.
  double max_iops() const;

 private:
  std::vector<NextFreeServer> cores_;
  Picoseconds io_time_;
  std::uint64_t ios_ = 0;
};

// Where the time of one remote read went, from the initiator's post to the
// response capsule's CQE in the initiator's memory.
struct RemoteRead {
  Picoseconds posted = 0;
  Picoseconds command_at_target = 0;  // the command capsule's CQE is in target memory
  Picoseconds target_core_done = 0;   // the target's core has run the I/O's software
  Picoseconds ssd_done = 0;           // the SSD's data is in the target's buffer
  Picoseconds data_written = 0;       // the data is in the initiator's buffer
  Picoseconds completed = 0;          // the response capsule's CQE is in the initiator's memory
  std::uint64_t wire_bytes_to_target = 0;
  std::uint64_t wire_bytes_to_initiator = 0;
  std::uint64_t packets = 0;
  std::uint64_t translation_misses = 0;
};

// A switch between the two NICs: `link` joins each NIC to it (both cables
// alike), and the switch's output port serialises each packet onto the
// cable that leads on, which adds its propagation delay.
struct SwitchHop {
  network::NetworkSwitch& network_switch;
  std::uint32_t port_to_target = 0;
  std::uint32_t port_to_initiator = 1;
};

// One read of `bytes` over the RDMA link between `initiator` (direction 0
// sends to the target) and `target_nic`, or through `via` when given, into
// the initiator buffer (memory_key below kReservedMemoryKeys, address); the
// SSD takes `ssd_time` once the target's core has submitted it (its
// software cost is counted once, in io_ns).
RemoteRead remote_read(Picoseconds posted, std::uint64_t bytes, std::uint32_t memory_key,
                       std::uint64_t address, nic::RdmaNic& initiator, nic::RdmaNic& target_nic,
                       network::NetworkLink& link, TargetCores& target, Picoseconds ssd_time,
                       SwitchHop* via = nullptr);

}  // namespace gpunvme::nvmf
