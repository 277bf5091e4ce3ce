// GPU-initiated networking (the `path` value gpu_network): GPU warps drive
// the GPU host's RDMA NIC themselves, as InfiniBand GPUDirect Async
// (NVSHMEM's IBGDA transport) does, and read the SSDs of another host through
// its NVMe-oF target. No CPU of the GPU's host takes part.
//
// The warps run sim/core/algo/gpu_network.h on the simulated warp platform:
// one queue pair per warp, its send, receive and completion queues and its
// doorbell records in GPU memory, the NIC's doorbell register (a 4 KiB UAR
// page per queue pair) in the NIC's BAR. A warp takes up to 32 requests,
// writes their command capsules and SEND WQEs, fences, writes the doorbell
// record and rings the doorbell with a posted write through the PCIe fabric
// (8 bytes of the last WQE's control segment, or the whole WQE as a
// BlueFlame write when the NIC's wqe_posting is blueflame and the warp posts
// one). Every GPU-side cost is the warp platform's (stores, fences, the
// doorbell's PCIe write, the polls).
//
// The NIC side answers the doorbell where the fabric delivers it: it decodes
// the WQEs and capsules from GPU memory (fetched by DMA, timed by the
// rdma_nic model unless the BlueFlame write carried the WQE), and the
// exchange runs as on nvmf_gpudirect (remote_io_path.h): network, target NIC,
// target cores, SSD, the target's RDMA WRITE straight into GPU memory and
// its response capsule. The initiator NIC then writes the response into the
// next posted receive buffer and a CQE into the queue pair's CQ in GPU memory
// (times from the rdma_nic model); the warp polling that CQ wakes on it.
// The NIC's peer DMA into GPU memory and the GPU's stores into the NIC's BAR
// are both judged by the PCIe tree's ACS and IOMMU rules
// (resolve_remote_route).
//
// Writes go the same way: a write capsule whose data rides in it (a SEND
// gathering capsule and GPU buffer, up to the target's in-capsule limit) or
// that names the GPU buffer for the target to RDMA READ. The KV cache's
// remote-memory tier is reached without a capsule: a warp posts a signaled
// RDMA READ (or WRITE) WQE naming the storage host's registered KV region,
// the target NIC alone answers (remote_memory_read.cpp), and the initiator
// NIC writes a requester CQE into the queue pair's CQ.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "models/pcie/fabric.h"
#include "sim/core/algo/gpu_network.h"
#include "sim/system/machine/sim_warp.h"
#include "sim/system/workload/remote_io_path.h"

namespace gpunvme {

class GpuNetworkPath : public RemoteIoPath, public pcie::RegisterTarget {
 public:
  GpuNetworkPath(const sc_core::sc_module_name& name, const RunConfig& config, Machine& machine,
                 std::uint64_t max_io_bytes);
  ~GpuNetworkPath() override;

  void start(std::function<void()> ready) override;
  void submit(const BlockIo& io, IoDone done) override;
  void close() override;
  // The remote-memory tier: posted by a warp as an RDMA READ or WRITE WQE.
  void read_memory(std::uint64_t remote_address, std::uint64_t bytes, std::uint64_t dest,
                   std::uint32_t issuer, std::function<void()> done) override;
  void write_memory(std::uint64_t remote_address, std::uint64_t bytes, std::uint64_t src,
                    std::uint32_t issuer, std::function<void()> done) override;

  std::string name() const override { return "gpu_network"; }
  std::string strategy() const override { return "gpudirect_async"; }
  const platform::WarpCounters& counters() const override { return counters_; }
  nlohmann::json sections(Picoseconds elapsed) const override;

  // The NIC's doorbell register: a write landed.
  void on_register_write(std::uint64_t offset, const std::uint8_t* data,
                         std::uint32_t len) override;

  std::uint32_t queue_pairs() const { return static_cast<std::uint32_t>(queues_.size()); }
  const algo::NicQueuePair& queue_pair(std::uint32_t w) const { return queues_[w]; }

 protected:
  nic::SentMessage post_command(std::uint32_t r, const nic::RdmaMessage& capsule) override;
  void at_initiator(std::uint32_t r, std::uint16_t status) override;
  void memory_read_landed(std::shared_ptr<MemoryRead> read) override;
  void memory_write_landed(std::shared_ptr<MemoryRead> write) override;

 private:
  class IgnoredStages : public platform::StageSink {
   public:
    void stage(std::uint16_t, std::uint32_t, algo::Stage, Picoseconds) override {}
  };
  // The NIC's view of one queue pair.
  struct NicSide {
    std::uint32_t send_consumed = 0;     // WQEs taken
    std::uint32_t receive_consumed = 0;  // receive WQEs used
    std::uint32_t cq_produced = 0;       // CQEs written
  };
  // Work waiting for a warp: an NVMe-oF command (request index) or a
  // remote-memory access (index into memory_ops_).
  struct Pending {
    bool memory = false;
    std::uint32_t index = 0;
  };
  // A remote-memory access in flight: the queue pair and send WQE that
  // carry it.
  struct MemoryOp {
    std::shared_ptr<MemoryRead> access;
    std::uint32_t warp = 0;
    std::uint32_t wqe_index = 0;
  };

  void warp_main(std::uint32_t w);
  // Sleeps warp `w` until a request is pending or the path closes; false
  // when it closed with nothing left.
  bool next_batch(platform::SimWarp& p, std::uint32_t w);
  void wake_one();
  // Takes WQE `index` of queue pair `w` (the 64 B the BlueFlame write
  // carried, or fetched from GPU memory) and starts what it asks: a capsule
  // SEND, or an RDMA READ or WRITE of the remote-memory tier.
  void take_wqe(std::uint32_t w, std::uint32_t index, const std::uint8_t* carried);
  void take_capsule(std::uint32_t w, std::uint32_t index, const std::uint8_t* wqe_bytes);
  void take_memory_wqe(std::uint32_t w, std::uint32_t index, const rdma::RdmaWqe& wqe,
                       bool carried);
  void complete(std::uint32_t r, std::uint16_t status, Picoseconds when);
  void queue_memory_op(std::shared_ptr<MemoryRead> access);
  // The NIC writes a requester CQE (an RDMA READ or WRITE done) into the
  // queue pair's CQ.
  void write_requester_cqe(std::uint32_t m);
  // The CQE of `opcode` for WQE (or receive) `counter` into queue pair w's CQ.
  void write_cqe(std::uint32_t w, std::uint8_t opcode, std::uint32_t counter, std::uint32_t bytes);

  std::vector<algo::NicQueuePair> queues_;
  std::vector<NicSide> nic_side_;
  std::uint64_t doorbell_base_ = 0;  // the NIC's UAR pages
  std::uint64_t mailboxes_ = 0;      // one GPU word per warp: submit() wakes it
  std::deque<Pending> pending_;
  std::vector<MemoryOp> memory_ops_;
  std::vector<std::uint32_t> free_memory_ops_;
  // Per queue pair and send queue slot: the remote-memory access its WQE
  // carries (the initiator's bookkeeping of its work request IDs).
  std::vector<std::vector<std::uint32_t>> slot_memory_op_;
  std::vector<std::uint32_t> idle_;
  std::vector<std::uint32_t> mailbox_seq_;
  bool closed_ = false;
  std::vector<std::uint32_t> request_warp_;  // by request index
  bool wqe_in_hand_ = false;                 // the capsule being posted came by BlueFlame
  IgnoredStages no_stages_;
  platform::WarpCounters counters_;
  // Seams.
  std::uint64_t doorbells_ = 0;          // doorbell writes that named WQEs (8 B)
  std::uint64_t blueflame_writes_ = 0;   // whole WQEs written to the register (64 B)
  std::uint64_t doorbell_bytes_ = 0;     // bytes the GPU wrote into the NIC's BAR
  std::uint64_t wqe_fetches_ = 0;        // WQEs the NIC read from GPU memory by DMA
  std::uint64_t cqes_written_ = 0;       // CQEs the NIC wrote into GPU memory
  std::uint64_t responses_written_ = 0;  // response capsules it wrote into receive buffers
  std::uint64_t write_capsules_ = 0;     // NVMe-oF write capsules posted
  std::uint64_t rdma_read_wqes_ = 0;     // RDMA READ WQEs of the remote-memory tier
  std::uint64_t rdma_write_wqes_ = 0;    // RDMA WRITE WQEs of the remote-memory tier
  std::uint64_t requester_cqes_ = 0;     // CQEs of those READs and WRITEs
};

}  // namespace gpunvme
