// The remote-memory tier of a remote path: KV blocks held in the storage
// host's DRAM, read by one-sided RDMA READs. No NVMe-oF capsule, no target
// core and no SSD: the initiator's core (host core, or the DPU's Arm core)
// posts the READ, the target NIC answers it from its own DMA reads of host
// memory, and the response lands in GPU memory (nvmf_gpudirect, dpu) or in a
// staging buffer of the GPU's host copied on by a copy engine
// (remote_staged). The initiator's core time per post and per completion is
// the path's: the cpu's submit (and request, for GPU requests) and
// complete_poll, copy_launch and copy_sync as on remote_staged, notify on
// nvmf_gpudirect; the DPU's arm_io_ns per read.
//
// One read's timeline (each piece timed by the models remote_io_path.cpp
// uses):
//   request seen (GPU requests: request_wait) -> core posts (its work)
//   -> READ request from the initiator's NIC (doorbell, WQE fetch, rate slot,
//      pipeline; one packet with a RETH) over the cables and switch
//   -> target NIC processes it (pipeline), then responds (rate slot,
//      pipeline, translation, payload DMA reads of host memory, packets)
//   -> initiator NIC writes the payload and the CQE
//   -> completion on the initiator (per path, as for an NVMe-oF read).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "sim/system/workload/remote_io_path.h"

namespace gpunvme {

namespace {

// Memory keys below nvmf::kReservedMemoryKeys: the storage host's KV region
// (registered with the target's NIC) and the initiator's staging buffers of
// remote-memory reads.
constexpr std::uint32_t kRemoteKvKey = 3;
constexpr std::uint32_t kMemoryStagingKey = 4;
constexpr std::uint32_t kGpuBufferKey = 1;  // as remote_io_path.cpp names GPU memory
constexpr std::uint32_t kStagingBuffers = 64;
constexpr std::uint64_t kPage = 4096;
constexpr std::uint32_t kFlagWords = 4096;

double mean_ns(Picoseconds total, std::uint64_t count) {
  if (count == 0) return 0.0;
  return std::round(static_cast<double>(total) / static_cast<double>(count)) / 1000.0;
}

}  // namespace

void RemoteIoPath::read_memory(std::uint64_t remote_address, std::uint64_t bytes,
                               std::uint64_t dest, std::uint32_t issuer,
                               std::function<void()> done) {
  auto read = std::make_shared<MemoryRead>(MemoryRead{
      remote_address, bytes, dest, 0, issuer % cores_.size(), now(), 0, std::move(done)});
  if (!from_gpu_) {
    post_memory_read(read);
    return;
  }
  schedule_in(costs_.request_wait(), [this, read] { post_memory_read(read); });
}

std::uint64_t RemoteIoPath::memory_staging(std::uint64_t bytes) {
  const std::uint64_t stride = (bytes + kPage - 1) / kPage * kPage;
  std::vector<std::uint64_t>& free = memory_staging_free_[stride];
  if (free.empty()) {
    const std::uint64_t base =
        machine_.memory()
            .allocate(kStagingBuffers * stride, route_.gpu_memory, RegionKind::HostMemory,
                      fmt::format("{}.memory_staging", id()), kPage)
            .base;
    for (std::uint32_t i = kStagingBuffers; i-- > 0;) free.push_back(base + i * stride);
  }
  const std::uint64_t buffer = free.back();
  free.pop_back();
  return buffer;
}

void RemoteIoPath::post_memory_read(std::shared_ptr<MemoryRead> read) {
  Picoseconds work = 0;
  if (route_.path == nvmf::RemotePath::dpu) {
    work = dpu_.arm_io_ns;
  } else {
    work = costs_.submit + (from_gpu_ ? costs_.request : 0);
  }
  memory_.core_ps += work;
  schedule_at(cores_.book(read->core, now(), work), [this, read] {
    read->posted = now();
    const bool staged = route_.path == nvmf::RemotePath::remote_staged;
    if (staged) read->staging = memory_staging(read->bytes);
    // The READ request: one packet, no payload.
    const nic::RdmaMessage request{network::RdmaOp::rdma_read_request, 0, kRemoteKvKey,
                                   read->remote_address};
    // The tier is the first storage host's DRAM.
    StorageSide& side = *sides_.front();
    const nic::SentMessage sent =
        initiator_nic_->transmit(now(), request, *side.to_target.cable, side.to_target.side);
    const std::vector<Picoseconds> tails = arrivals(sent, side.to_target);
    memory_.network_ps += tails.back() - sent.packets.front().start;
    // Doorbell write and WQE fetch (doorbell posting) on the initiator's link.
    const nic::RdmaNicParams& p = initiator_nic_->params();
    memory_.pcie_ps +=
        p.host_read_ns / 2 + (p.wqe_posting == nic::WqePosting::doorbell ? p.host_read_ns : 0);
    memory_.packets += sent.packets.size();
    memory_.wire_bytes += sent.wire_bytes;
    // The target NIC processes the request (pipeline_ns) and answers it; the
    // request carries nothing to write, so its DMA engine is not booked.
    const Picoseconds processed = tails.back() + side.nic->params().pipeline_ns;
    schedule_at(processed, [this, read] { memory_read_in(read); });
  });
}

void RemoteIoPath::memory_read_in(std::shared_ptr<MemoryRead> read) {
  const bool staged = route_.path == nvmf::RemotePath::remote_staged;
  const nic::RdmaMessage response{network::RdmaOp::rdma_read_response, read->bytes, kRemoteKvKey,
                                  read->remote_address};
  StorageSide& side = *sides_.front();
  const nic::SentMessage sent =
      side.nic->originate(now(), response, *side.to_initiator.cable, side.to_initiator.side);
  const std::vector<Picoseconds> tails = arrivals(sent, side.to_initiator);
  const nic::DeliveredMessage in = initiator_nic_->receive(
      tails,
      {network::RdmaOp::rdma_read_response, read->bytes, staged ? kMemoryStagingKey : kGpuBufferKey,
       staged ? read->staging : read->dest},
      side.mtu);
  memory_.network_ps += tails.back() - sent.packets.front().start;
  // The target's first payload read (and its translation miss), the CQE
  // landing on the initiator's side.
  const nic::RdmaNicParams& t = side.nic->params();
  memory_.pcie_ps += t.host_read_ns + (sent.translation_misses > 0 ? t.host_read_ns : 0) +
                     initiator_nic_->params().host_read_ns / 2;
  memory_.packets += sent.packets.size();
  memory_.wire_bytes += sent.wire_bytes;
  if (staged) {
    memory_.initiator_memory_bytes += read->bytes;
  } else if (route_.redirected) {
    ++memory_.redirected;
  }
  schedule_at(in.completed, [this, read] {
    memory_.exchange_ps += now() - read->posted;
    switch (route_.path) {
      case nvmf::RemotePath::remote_staged: {
        const Picoseconds work = costs_.complete_poll + costs_.copy_launch;
        memory_.core_ps += work;
        schedule_at(cores_.book(read->core, now(), work), [this, read] {
          ++memory_.copies;
          memory_.initiator_memory_bytes += read->bytes;  // the copy engine reads the buffer
          machine_.copy_engine(gpu_.id()).read(read->staging, read->bytes, [this, read] {
            memory_staging_free_[(read->bytes + kPage - 1) / kPage * kPage].push_back(
                read->staging);
            memory_.core_ps += costs_.copy_sync;
            schedule_at(cores_.book(read->core, now(), costs_.copy_sync),
                        [this, read] { memory_read_delivered(read); });
          });
        });
        return;
      }
      case nvmf::RemotePath::nvmf_gpudirect: {
        const Picoseconds work = costs_.complete_poll + (from_gpu_ ? costs_.notify : 0);
        memory_.core_ps += work;
        schedule_at(cores_.book(read->core, now(), work),
                    [this, read] { memory_read_delivered(read); });
        return;
      }
      case nvmf::RemotePath::dpu:
        // The DPU's NIC wrote the data through the DPU's own PCIe switch.
        schedule_in(dpu_.switch_ns, [this, read] { memory_read_delivered(read); });
        return;
    }
  });
}

void RemoteIoPath::memory_read_delivered(std::shared_ptr<MemoryRead> read) {
  auto finish = [this, read] {
    ++memory_.reads;
    memory_.bytes += read->bytes;
    memory_.latency_ps += now() - read->requested;
    std::function<void()> done = std::move(read->done);
    if (done) done();
  };
  if (!from_gpu_) {
    finish();
    return;
  }
  if (route_.path == nvmf::RemotePath::nvmf_gpudirect) {
    // The core posts the completion flag to GPU memory; the waiting thread
    // sees it one load after it lands.
    const std::uint64_t flag = gpu_flags_ + (memory_.reads % kFlagWords) * 4;
    machine_.fabric().write(route_.gpu_cpu, flag, 4, nullptr,
                            [this, finish] { schedule_in(gpu_.costs().load_latency, finish); });
    return;
  }
  // A stream-ordered flag behind the copy (remote_staged), or the DPU's
  // flag behind the data: seen one GPU load later.
  schedule_in(gpu_.costs().load_latency, finish);
}

double RemoteIoPath::memory_read_mean_ns() const {
  return mean_ns(memory_.latency_ps, memory_.reads);
}

nlohmann::json RemoteIoPath::memory_tier_json() const {
  const std::uint64_t reads = memory_.reads;
  const bool dpu = route_.path == nvmf::RemotePath::dpu;
  const double exchange = mean_ns(memory_.exchange_ps, reads);
  const double network = mean_ns(memory_.network_ps, reads);
  const double pcie = mean_ns(memory_.pcie_ps, reads);
  const double core = mean_ns(memory_.core_ps, reads);
  return {{"reads", reads},
          {"bytes", memory_.bytes},
          {"mean_read_ns", memory_read_mean_ns()},
          // Payload bytes through the GPU host's DRAM (the NIC's write and the
          // copy's read, remote_staged) and host-to-GPU copies.
          {"initiator_host_memory_bytes", memory_.initiator_memory_bytes},
          {"copies", memory_.copies},
          // The target NIC reads each block once from the storage host's DRAM;
          // no target core runs.
          {"target_host_memory_bytes", memory_.bytes},
          {"target_core_ns_per_read", 0.0},
          {"redirected_transfers", memory_.redirected},
          {"host_core_ns_per_read", dpu ? 0.0 : core},
          {"dpu_core_ns_per_read", dpu ? core : 0.0},
          // One read's exchange (posted to CQE) split into the wire, the NICs'
          // PCIe crossings and the NICs' own processing; the initiator's core.
          {"per_hop_ns",
           {{"network", network},
            {"nic_pcie", pcie},
            {"nic", std::max(0.0, exchange - network - pcie)},
            {"initiator", core}}},
          {"packets", memory_.packets},
          {"wire_bytes", memory_.wire_bytes}};
}

}  // namespace gpunvme
