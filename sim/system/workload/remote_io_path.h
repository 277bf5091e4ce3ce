// Remote reads: the SSDs sit in another host of the topology, reached over
// RDMA through an NVMe-oF target, along one of three paths (the `path`
// values remote_staged, nvmf_gpudirect and dpu; models/nvmf/remote_paths.h
// gives one I/O's cost of each at model level):
//
// - remote_staged: a core of the GPU's host submits through the NVMe-oF host
//   driver; the target RDMA WRITEs the data into a pinned host buffer; the
//   core reaps the response, launches a copy engine transfer to the GPU and
//   learns that it finished;
// - nvmf_gpudirect: as remote_staged, but the buffer is GPU memory (GPUDirect
//   RDMA): the NIC writes straight into the GPU, admitted or refused by the
//   PCIe tree's ACS and IOMMU rules as local peer-to-peer traffic is, and
//   the core posts a completion flag to the GPU;
// - dpu: the DPU on the GPU's host is the initiator: an Arm core runs the
//   I/O and the DPU's NIC writes the data into the GPU through its own PCIe
//   switch; no host core.
//
// Every I/O runs through the event simulation: the initiator's NIC, the
// network links and switch (each direction and output port a server shared
// by all I/Os), the target's NIC, the target's cores and the real SSD model
// of the storage host, driven by the NVMe-oF target (a CpuInitiatedPath in
// Target mode whose SSD DMAs into the storage host's memory, or the DPU's
// for a target on a DPU). The NICs' own
// DMA is timed by the rdma_nic model (host_read_ns, host_dma_gbps); the PCIe
// tree is consulted for whether that DMA may reach the GPU, and redirected
// transfers are counted.
//
// A write carries its data in the command capsule up to the target's
// in_capsule_data_bytes (the initiator's NIC reads it from GPU memory, or
// from the staging buffer the copy engine filled first on remote_staged);
// beyond that the target's NIC RDMA READs it from the initiator's buffer
// once the target has taken the command. The target runs where its
// placement says (host cores, the storage host's DPU, or offloaded to its
// NIC, which holds at most offload_max_outstanding commands; more wait).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/host/cpu_cores.h"
#include "models/network/network.h"
#include "models/network/network_routes.h"
#include "models/nic/rdma_nic.h"
#include "models/nvmf/nvmf.h"
#include "models/nvmf/remote_paths.h"
#include "sim/kernel/component.h"
#include "sim/system/workload/cpu_initiated.h"
#include "sim/system/workload/io_path.h"
#include "sim/system/workload/path_stages.h"

namespace gpunvme {

// One storage host a remote path reads from: its target, the RDMA port that
// takes the target's capsules, and the network route to that port.
struct StorageRoute {
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  std::string host;
  std::size_t target = npos;      // nvmf_target of the host
  std::size_t target_nic = npos;  // rdma_nic (or, for a target on a DPU, dpu) of the host
  nvmf::TargetPlacement placement = nvmf::TargetPlacement::host_cpu;  // the target's
  // From the initiator's port to target_nic's: cables and network switches
  // (shortest_network_route); the way back is the same route reversed.
  network::NetworkRoute network;
  std::vector<std::size_t> ssds;  // indices into the scenario's ssds
};

// What a remote path uses in the topology: node indices (npos when absent).
struct RemoteRoute {
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  nvmf::RemotePath path = nvmf::RemotePath::remote_staged;
  std::size_t initiator = npos;  // rdma_nic (remote_staged, nvmf_gpudirect) or dpu
  // The hosts of the scenario's SSDs, in the order $.ssds first names them;
  // each I/O goes to its SSD's host.
  std::vector<StorageRoute> storage;
  std::size_t gpu_cpu = npos;     // the GPU host's cpu (remote_staged, nvmf_gpudirect)
  std::size_t gpu_memory = npos;  // and its host memory
  bool redirected = false;        // the NIC's DMA into the GPU is sent up by ACS
  // That DMA's PCIe route (nvidia-smi topo kind, what it does, the nodes it
  // visits); empty on remote_staged, whose NIC writes host memory.
  std::string gpu_dma_kind;
  std::string gpu_dma_taken;
  std::string gpu_dma_route;
  // gpu_network: GPU warps drive the initiator NIC (path is nvmf_gpudirect's
  // exchange); the route of their stores into its doorbell register.
  bool gpu_initiated = false;
  std::string doorbell_kind;
  std::string doorbell_taken;
  std::string doorbell_route;
};

// Whether the scenario's path is a remote one.
bool is_remote_path(const RunConfig& config);
// The route of a remote path, checked: ConfigError naming the field for a
// kind or pattern the remote paths do not run, a host without the NIC, DPU
// or target the path needs, an SSD whose host's NIC the network does not
// reach from the initiator's, or GPU DMA the PCIe tree refuses.
RemoteRoute resolve_remote_route(const RunConfig& config);

class RemoteIoPath : public Component, public IoPath {
 public:
  RemoteIoPath(const sc_core::sc_module_name& name, const RunConfig& config, Machine& machine,
               std::uint64_t max_io_bytes);
  ~RemoteIoPath() override;

  void start(std::function<void()> ready) override;
  void submit(const BlockIo& io, IoDone done) override;
  void close() override {}

  std::string name() const override { return enum_name(route_.path); }
  std::string strategy() const override { return "host_polling"; }
  std::uint64_t submitted() const override { return submitted_; }
  std::uint64_t completed() const override { return stages_.completed(); }
  std::uint64_t errors() const override { return errors_; }
  std::uint64_t bytes() const override { return bytes_; }
  std::uint64_t timeouts() const override;
  std::uint64_t reset_aborted() const override;
  const LatencyHistogram& end_to_end() const override { return stages_.end_to_end(); }
  nlohmann::json stages() const override { return stages_.stages_json(); }
  std::vector<std::string> stage_order() const override { return stages_.stage_order(); }
  FioLatency& fio_latency() override { return stages_.fio_latency(); }
  const FioLatency& fio_latency() const override { return stages_.fio_latency(); }
  const platform::WarpCounters& counters() const override { return no_warps_; }
  nlohmann::json sections(Picoseconds elapsed) const override;

  const RemoteRoute& route() const { return route_; }

  // The remote-memory tier (remote_memory_read.cpp): one RDMA READ of
  // `bytes` at `remote_address` of the storage host's registered DRAM into
  // `dest` (GPU memory), posted for `issuer` by the initiator's host core or
  // Arm core; no target core and no SSD. `done` runs once the requester
  // knows the data is in GPU memory.
  virtual void read_memory(std::uint64_t remote_address, std::uint64_t bytes, std::uint64_t dest,
                           std::uint32_t issuer, std::function<void()> done);
  // One RDMA WRITE of `bytes` at `src` (GPU memory; on remote_staged copied
  // to a staging buffer of the GPU's host first) to `remote_address` of the
  // storage host's registered DRAM; `done` runs once the requester knows the
  // target NIC acknowledged it.
  virtual void write_memory(std::uint64_t remote_address, std::uint64_t bytes, std::uint64_t src,
                            std::uint32_t issuer, std::function<void()> done);
  std::uint64_t memory_reads() const { return memory_.reads; }
  std::uint64_t memory_writes() const { return memory_.writes; }
  // Mean time of one remote-memory read, from its request to its delivery (ns).
  double memory_read_mean_ns() const;
  // Mean time of one remote-memory write, from its request to its completion (ns).
  double memory_write_mean_ns() const;

 protected:
  // The initiator side a derived path replaces (gpu_network_path.h): how the
  // command capsule's SEND is posted to the initiator's NIC (here: a host
  // core's doorbell), and what happens once data and response are in.
  enum Stage : int {
    kRequested = 0,
    kNoticed,     // the initiator's core has the request
    kSubmitted,   // its command capsule is posted to the NIC
    kAtTarget,    // the target has taken the command, and a write's data is in its memory
    kTargetDone,  // the target has read the SSD and reaped its completion
    kDataIn,      // data and response capsule are in the initiator's memory
    kReaped,      // the initiator has consumed the response
    kCopiedOut,   // remote_staged: the copy into GPU memory is done
    kDelivered,   // the requester knows
    kStageCount
  };
  struct Request {
    BlockIo io;
    IoDone done;
    Picoseconds times[kStageCount];
  };
  // A network switch on a route: the output port a packet leaves by, and
  // the cable after it (its propagation delay; the port is its server).
  struct SwitchHop {
    network::NetworkSwitch* forwarder = nullptr;
    std::size_t node = 0;   // the switch's node index
    std::size_t cable = 0;  // network_links index of the cable after the port
    std::uint32_t port = 0;
    Picoseconds next_cable = 0;
    // The cable into the switch and the port that sends onto it (the one
    // that flow control holds back).
    network::SwitchIngress ingress;
    std::size_t sender = 0;    // node index of the sending port
    std::size_t in_cable = 0;  // network_links index
  };
  // One direction between two RDMA ports: the sender's cable, then the
  // switches in order. Per hop (the sender's cable, then each switch with
  // the cable after it), the time packets' tails spent on it, summed.
  struct Direction {
    network::NetworkLink* cable = nullptr;
    int side = 0;  // the cable's direction leaving the sender
    std::vector<SwitchHop> hops;
    std::vector<std::string> hop_names;  // "from>to", one per cable
    std::vector<Picoseconds> hop_ps;
    std::uint64_t packets = 0;
  };
  // A storage host's side of the path: its NIC, its NVMe-oF target and the
  // two directions between the initiator's port and its NIC's.
  struct StorageSide {
    std::size_t route = 0;  // index into route_.storage
    std::shared_ptr<nic::RdmaNic> nic;
    std::unique_ptr<CpuInitiatedPath> target;
    nvmf::TargetSite site;          // what runs the target and where its buffers are
    Picoseconds target_switch = 0;  // a target on a DPU: one crossing of the DPU's switch
    std::uint64_t in_capsule_data_bytes = 0;
    std::uint64_t contexts = 0;  // nic_offload: commands held at once (0: no limit)
    std::uint64_t held = 0;
    std::deque<std::uint32_t> waiting;
    std::uint64_t waits = 0;  // commands that waited for an offload context
    Direction to_target;
    Direction to_initiator;
    std::uint32_t mtu = 4096;  // the smallest of the route's cables
    std::uint64_t ios = 0;     // completed
    std::uint64_t bytes = 0;   // of completed I/Os
  };

  // The storage side that serves request r's SSD.
  StorageSide& side_of(std::uint32_t r) { return *sides_[side_of_ssd_[requests_[r].io.ssd]]; }
  std::vector<Picoseconds> arrivals(const nic::SentMessage& sent, Direction& d);
  Direction direction(const network::NetworkRoute& route, bool forward);
  void noticed(std::uint32_t r);
  void send_command(std::uint32_t r);
  // The command capsule is in the target's memory: it waits for one of the
  // offload's command contexts (nic_offload), then the target fetches a
  // write's data that did not fit the capsule, then runs the SSD command.
  void capsule_in(std::uint32_t r);
  void taken(std::uint32_t r);
  void to_ssd(std::uint32_t r);
  bool data_in_capsule(const StorageSide& side, const BlockIo& io) const;
  // The initiator's buffer of a request: its staging buffer or GPU memory.
  std::uint32_t buffer_key() const;
  std::uint64_t initiator_buffer(std::uint32_t r);
  virtual nic::SentMessage post_command(std::uint32_t r, const nic::RdmaMessage& capsule);
  void data_back(std::uint32_t r, std::uint16_t status);
  virtual void at_initiator(std::uint32_t r, std::uint16_t status);
  void deliver(std::uint32_t r, std::uint16_t status);
  // Retires request r: its stages (delivered at `when`, recorded for
  // `queue` and `cid`), bytes or error, and its caller's callback.
  void finish(std::uint32_t r, std::uint16_t status);
  void finish(std::uint32_t r, std::uint16_t status, Picoseconds when, std::uint32_t queue,
              std::uint16_t cid);
  std::uint64_t staging_buffer(std::uint32_t r);
  std::uint64_t io_bytes(const BlockIo& io) const;
  // PCIe time one message spends crossing the sending and receiving NICs'
  // links (doorbell or BlueFlame write, WQE fetch, translation and payload
  // reads, the last write landing).
  // `posted`: the sender's host (or Arm) core posted it; an offloading NIC
  // starts its own messages.
  Picoseconds pcie_legs(const nic::RdmaNic& sender, const nic::SentMessage& sent,
                        bool reads_payload, const nic::RdmaNic& receiver, bool posted = true) const;
  // Starts a message of `side`'s target towards the initiator at `at`.
  nic::SentMessage from_target(StorageSide& side, Picoseconds at, const nic::RdmaMessage& message);

  // remote-memory tier: the READ's exchange once posted, its completion on
  // the initiator, its delivery to the requester; the seams of all reads.
  // One access of the remote-memory tier: a READ into `dest`, or (write) a
  // WRITE from `dest`.
  struct MemoryRead {
    std::uint64_t remote_address, bytes, dest, staging;
    std::uint32_t core;
    Picoseconds requested, posted;
    std::function<void()> done;
    bool write = false;
    std::uint32_t tag = 0;  // the derived path's handle of the access
  };
  struct MemoryTierSeams {
    std::uint64_t reads = 0, bytes = 0, initiator_memory_bytes = 0, copies = 0;
    std::uint64_t redirected = 0, packets = 0, wire_bytes = 0;
    Picoseconds core_ps = 0, network_ps = 0, pcie_ps = 0, exchange_ps = 0, latency_ps = 0;
    // RDMA WRITEs, summed apart from the reads.
    std::uint64_t writes = 0, write_bytes = 0, write_packets = 0, write_wire_bytes = 0;
    Picoseconds write_core_ps = 0, write_exchange_ps = 0, write_latency_ps = 0;
    Picoseconds write_network_ps = 0, write_pcie_ps = 0;
  };
  void post_memory_read(std::shared_ptr<MemoryRead> read);
  // The READ request leaves the initiator's NIC as `sent` (posted by a core
  // or, gpu_network, by a warp): network, target NIC, response.
  void send_memory_read(std::shared_ptr<MemoryRead> read, const nic::SentMessage& sent);
  void memory_read_in(std::shared_ptr<MemoryRead> read);
  // The response and CQE are in the initiator's memory: the requester learns
  // of it (per path: a core reaps and copies or notifies; a warp polls).
  virtual void memory_read_landed(std::shared_ptr<MemoryRead> read);
  void memory_read_delivered(std::shared_ptr<MemoryRead> read);
  // Counts the read, delivered at `when`, and runs its caller's callback.
  void memory_read_finished(std::shared_ptr<MemoryRead> read, Picoseconds when);
  void post_memory_write(std::shared_ptr<MemoryRead> write);
  // The WRITE leaves the initiator's NIC as `sent`: its packets, the target
  // NIC's DMA into its host memory, its ACK back and the requester CQE.
  void send_memory_write(std::shared_ptr<MemoryRead> write, const nic::SentMessage& sent);
  virtual void memory_write_landed(std::shared_ptr<MemoryRead> write);
  void memory_write_finished(std::shared_ptr<MemoryRead> write, Picoseconds when);
  // Memory keys of the remote-memory tier (the storage host's KV region) and
  // of the initiator's buffer of an access (GPU memory, or its staging buffer).
  static std::uint32_t remote_kv_key();
  std::uint32_t memory_buffer_key() const;
  std::uint64_t memory_staging(std::uint64_t bytes);
  nlohmann::json memory_tier_json() const;

  const RunConfig& config_;
  Machine& machine_;
  RemoteRoute route_;
  gpu::Gpu& gpu_;
  std::uint64_t buffer_stride_;
  bool from_gpu_;
  host::CpuIoCosts costs_;  // the GPU host's cpu (notice, submit, completion, copies)
  nvmf::DpuParams dpu_{};   // dpu path
  host::CpuCores cores_;    // initiator cores: host cores, or the DPU's Arm cores
  // The network hardware, one model per topology node or link that every
  // path of the run reaching it shares (Machine::shared_model): tenants
  // reading one storage host queue at its NIC or DPU port, cables and
  // switch ports. The storage sides' NICs are shared the same way.
  std::shared_ptr<nic::RdmaNic> initiator_nic_;
  // The cables and network switches of this path's routes (by network_links
  // index and by node index); a cable's first use lists it in the results.
  std::map<std::size_t, std::shared_ptr<network::NetworkLink>> cables_;
  std::vector<std::size_t> cable_order_;
  std::map<std::size_t, std::shared_ptr<network::NetworkSwitch>> switches_;
  // One per storage host, in route_.storage's order; the first one also
  // holds the remote-memory tier.
  std::vector<std::unique_ptr<StorageSide>> sides_;
  std::vector<std::size_t> side_of_ssd_;  // by scenario SSD index
  std::vector<std::uint32_t> local_ssd_;  // its index among its target's SSDs
  std::uint64_t writes_in_capsule_ = 0;
  std::uint64_t writes_rdma_read_ = 0;
  std::vector<Request> requests_;
  std::vector<std::uint32_t> free_requests_;
  std::vector<std::uint64_t> staging_chunks_;
  std::uint64_t gpu_flags_ = 0;
  PathStages stages_;
  platform::WarpCounters no_warps_;
  host::HostCostLedger ledger_;
  std::uint64_t submitted_ = 0;
  std::uint64_t errors_ = 0;
  std::uint64_t bytes_ = 0;
  // Seams, summed over I/Os.
  std::uint64_t initiator_memory_bytes_ = 0;  // payload bytes through the GPU host's DRAM
  std::uint64_t copies_ = 0;
  std::uint64_t redirected_transfers_ = 0;
  Picoseconds network_ps_ = 0;
  Picoseconds pcie_ps_ = 0;
  Picoseconds exchange_ps_ = 0;  // command_to_target + data_to_initiator
  std::uint64_t exchanges_ = 0;
  std::uint64_t packets_ = 0;
  std::uint64_t wire_bytes_ = 0;
  // Per switch output port, by (switch node, cable after it).
  struct PortCounters {
    std::uint64_t packets = 0;
    std::uint64_t bytes = 0;
  };
  std::map<std::pair<std::size_t, std::size_t>, PortCounters> port_counters_;
  // Per sending port held back by flow control, by (sending node, cable):
  // an RDMA port or a switch output port.
  struct SenderStalls {
    Picoseconds stall_ps = 0;
    std::uint64_t stalls = 0;
  };
  std::map<std::pair<std::size_t, std::size_t>, SenderStalls> sender_stalls_;
  MemoryTierSeams memory_;
  // Staging buffers of remote-memory reads (remote_staged), free by size.
  std::map<std::uint64_t, std::vector<std::uint64_t>> memory_staging_free_;
};

}  // namespace gpunvme
