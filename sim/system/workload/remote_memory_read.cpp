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
      remote_address, bytes, dest, 0, issuer % cores_.size(), now(), 0, std::move(done), false, 0});
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

std::uint32_t RemoteIoPath::remote_kv_key() { return kRemoteKvKey; }

std::uint32_t RemoteIoPath::memory_buffer_key() const {
  return route_.path == nvmf::RemotePath::remote_staged ? kMemoryStagingKey : kGpuBufferKey;
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
    send_memory_read(
        read, initiator_nic_->transmit(now(), request, *side.to_target.cable, side.to_target.side));
  });
}

void RemoteIoPath::send_memory_read(std::shared_ptr<MemoryRead> read,
                                    const nic::SentMessage& sent) {
  StorageSide& side = *sides_.front();
  const std::vector<Picoseconds> tails = arrivals(sent, side.to_target);
  memory_.network_ps += tails.back() - sent.packets.front().start;
  // Doorbell write (a warp's was timed by the fabric) and WQE fetch on the
  // initiator's link.
  const nic::RdmaNicParams& p = initiator_nic_->params();
  memory_.pcie_ps += (sent.rung - sent.posted) + (sent.wqe_fetched ? p.host_read_ns : 0);
  memory_.packets += sent.packets.size();
  memory_.wire_bytes += sent.wire_bytes;
  // The target NIC processes the request (pipeline_ns) and answers it; the
  // request carries nothing to write, so its DMA engine is not booked.
  const Picoseconds processed = tails.back() + side.nic->params().pipeline_ns;
  schedule_at(processed, [this, read] { memory_read_in(read); });
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
    memory_read_landed(read);
  });
}

void RemoteIoPath::memory_read_landed(std::shared_ptr<MemoryRead> read) {
  switch (route_.path) {
    case nvmf::RemotePath::remote_staged: {
      const Picoseconds work = costs_.complete_poll + costs_.copy_launch;
      memory_.core_ps += work;
      schedule_at(cores_.book(read->core, now(), work), [this, read] {
        ++memory_.copies;
        memory_.initiator_memory_bytes += read->bytes;  // the copy engine reads the buffer
        machine_.copy_engine(gpu_.id()).read(read->staging, read->bytes, [this, read] {
          memory_staging_free_[(read->bytes + kPage - 1) / kPage * kPage].push_back(read->staging);
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
}

void RemoteIoPath::memory_read_delivered(std::shared_ptr<MemoryRead> read) {
  if (!from_gpu_) {
    memory_read_finished(read, now());
    return;
  }
  if (route_.path == nvmf::RemotePath::nvmf_gpudirect) {
    // The core posts the completion flag to GPU memory; the waiting thread
    // sees it one load after it lands.
    const std::uint64_t flag = gpu_flags_ + (memory_.reads % kFlagWords) * 4;
    machine_.fabric().write(route_.gpu_cpu, flag, 4, nullptr, [this, read] {
      schedule_in(gpu_.costs().load_latency, [this, read] { memory_read_finished(read, now()); });
    });
    return;
  }
  // A stream-ordered flag behind the copy (remote_staged), or the DPU's
  // flag behind the data: seen one GPU load later.
  schedule_in(gpu_.costs().load_latency, [this, read] { memory_read_finished(read, now()); });
}

void RemoteIoPath::memory_read_finished(std::shared_ptr<MemoryRead> read, Picoseconds when) {
  ++memory_.reads;
  memory_.bytes += read->bytes;
  memory_.latency_ps += when - read->requested;
  std::function<void()> done = std::move(read->done);
  if (done) done();
}

void RemoteIoPath::write_memory(std::uint64_t remote_address, std::uint64_t bytes,
                                std::uint64_t src, std::uint32_t issuer,
                                std::function<void()> done) {
  auto write = std::make_shared<MemoryRead>(MemoryRead{
      remote_address, bytes, src, 0, issuer % cores_.size(), now(), 0, std::move(done), true, 0});
  if (!from_gpu_) {
    post_memory_write(write);
    return;
  }
  schedule_in(costs_.request_wait(), [this, write] { post_memory_write(write); });
}

// As an NVMe-oF write's post (remote_io_path.cpp): remote_staged first copies
// the block into a staging buffer of the GPU's host (launch and
// synchronisation on the core), then the core posts the WRITE.
void RemoteIoPath::post_memory_write(std::shared_ptr<MemoryRead> write) {
  const bool staged = route_.path == nvmf::RemotePath::remote_staged;
  Picoseconds work = 0;
  if (route_.path == nvmf::RemotePath::dpu) {
    work = dpu_.arm_io_ns;
  } else {
    work = costs_.submit + (from_gpu_ ? costs_.request : 0) + (staged ? costs_.copy_launch : 0);
  }
  memory_.write_core_ps += work;
  auto post = [this, write] {
    write->posted = now();
    const bool from_staging = route_.path == nvmf::RemotePath::remote_staged;
    const nic::RdmaMessage message{network::RdmaOp::rdma_write, write->bytes, memory_buffer_key(),
                                   from_staging ? write->staging : write->dest};
    StorageSide& side = *sides_.front();
    send_memory_write(write, initiator_nic_->transmit(now(), message, *side.to_target.cable,
                                                      side.to_target.side));
  };
  const Picoseconds end = cores_.book(write->core, now(), work);
  if (!staged) {
    schedule_at(end, post);
    return;
  }
  schedule_at(end, [this, write, post] {
    write->staging = memory_staging(write->bytes);
    ++memory_.copies;
    memory_.initiator_memory_bytes += write->bytes;  // the copy engine writes the buffer
    machine_.copy_engine(gpu_.id()).write(write->staging, write->bytes, [this, write, post] {
      memory_.write_core_ps += costs_.copy_sync;
      schedule_at(cores_.book(write->core, now(), costs_.copy_sync), post);
    });
  });
}

void RemoteIoPath::send_memory_write(std::shared_ptr<MemoryRead> write,
                                     const nic::SentMessage& sent) {
  const bool staged = route_.path == nvmf::RemotePath::remote_staged;
  // The tier is the first storage host's DRAM.
  StorageSide& side = *sides_.front();
  const std::vector<Picoseconds> tails = arrivals(sent, side.to_target);
  // The target NIC writes the payload into the registered KV region, then
  // acknowledges the message: a conservative choice, as an RC responder may
  // acknowledge once the packets are accepted; the ACK is one packet.
  const nic::DeliveredMessage in = side.nic->receive(
      tails, {network::RdmaOp::rdma_write, write->bytes, kRemoteKvKey, write->remote_address},
      side.mtu);
  const nic::SentMessage ack =
      side.nic->originate(in.data_written, {network::RdmaOp::ack, 0, kRemoteKvKey, 0},
                          *side.to_initiator.cable, side.to_initiator.side);
  const std::vector<Picoseconds> ack_tails = arrivals(ack, side.to_initiator);
  const nic::DeliveredMessage acked = initiator_nic_->receive(
      ack_tails, {network::RdmaOp::ack, 0, memory_buffer_key(), 0}, side.mtu);
  memory_.write_network_ps +=
      (tails.back() - sent.packets.front().start) + (ack_tails.back() - ack.packets.front().start);
  // Doorbell and WQE fetch, the payload's first read (and its translation
  // miss) from the initiator's buffer, the payload landing in the target's
  // memory and the CQE landing on the initiator's side.
  const nic::RdmaNicParams& p = initiator_nic_->params();
  memory_.write_pcie_ps += (sent.rung - sent.posted) + (sent.wqe_fetched ? p.host_read_ns : 0) +
                           p.host_read_ns + (sent.translation_misses > 0 ? p.host_read_ns : 0) +
                           side.nic->params().host_read_ns / 2 + p.host_read_ns / 2;
  memory_.write_packets += sent.packets.size() + ack.packets.size();
  memory_.write_wire_bytes += sent.wire_bytes + ack.wire_bytes;
  if (staged) {
    memory_.initiator_memory_bytes += write->bytes;  // the NIC reads the staging buffer
  } else if (route_.redirected) {
    ++memory_.redirected;
  }
  schedule_at(acked.completed, [this, write] {
    memory_.write_exchange_ps += now() - write->posted;
    memory_write_landed(write);
  });
}

void RemoteIoPath::memory_write_landed(std::shared_ptr<MemoryRead> write) {
  auto finished = [this, write] {
    if (route_.path == nvmf::RemotePath::remote_staged) {
      memory_staging_free_[(write->bytes + kPage - 1) / kPage * kPage].push_back(write->staging);
    }
    if (!from_gpu_) {
      memory_write_finished(write, now());
      return;
    }
    // The requesting GPU thread learns of it from a flag, seen one load after
    // it lands (nvmf_gpudirect: the core's write; the DPU's, or the stream's).
    schedule_in(gpu_.costs().load_latency, [this, write] { memory_write_finished(write, now()); });
  };
  if (route_.path == nvmf::RemotePath::dpu) {
    finished();
    return;
  }
  // A host core reaps the CQE (and, nvmf_gpudirect, posts the flag).
  const Picoseconds work =
      costs_.complete_poll +
      (from_gpu_ && route_.path == nvmf::RemotePath::nvmf_gpudirect ? costs_.notify : 0);
  memory_.write_core_ps += work;
  schedule_at(cores_.book(write->core, now(), work), finished);
}

void RemoteIoPath::memory_write_finished(std::shared_ptr<MemoryRead> write, Picoseconds when) {
  ++memory_.writes;
  memory_.write_bytes += write->bytes;
  memory_.write_latency_ps += when - write->requested;
  std::function<void()> done = std::move(write->done);
  if (done) done();
}

double RemoteIoPath::memory_read_mean_ns() const {
  return mean_ns(memory_.latency_ps, memory_.reads);
}

double RemoteIoPath::memory_write_mean_ns() const {
  return mean_ns(memory_.write_latency_ps, memory_.writes);
}

nlohmann::json RemoteIoPath::memory_tier_json() const {
  const std::uint64_t reads = memory_.reads;
  const bool dpu = route_.path == nvmf::RemotePath::dpu;
  const double exchange = mean_ns(memory_.exchange_ps, reads);
  const double network = mean_ns(memory_.network_ps, reads);
  const double pcie = mean_ns(memory_.pcie_ps, reads);
  const double core = mean_ns(memory_.core_ps, reads);
  const double write_exchange = mean_ns(memory_.write_exchange_ps, memory_.writes);
  const double write_network = mean_ns(memory_.write_network_ps, memory_.writes);
  const double write_pcie = mean_ns(memory_.write_pcie_ps, memory_.writes);
  return {{"reads", reads},
          {"bytes", memory_.bytes},
          {"mean_read_ns", memory_read_mean_ns()},
          // Payload bytes through the GPU host's DRAM (the NIC's write and the
          // copy's read, remote_staged) and host-to-GPU copies.
          {"initiator_host_memory_bytes", memory_.initiator_memory_bytes},
          {"copies", memory_.copies},
          // The target NIC reads each block once from the storage host's DRAM;
          // no target core runs.
          {"target_host_memory_bytes", memory_.bytes + memory_.write_bytes},
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
          {"wire_bytes", memory_.wire_bytes},
          // RDMA WRITEs into the tier (KV blocks that filled during
          // decoding): their initiator core time, their exchange (posted to
          // the requester CQE of the target's ACK) and packets both ways.
          {"writes", memory_.writes},
          {"write_bytes", memory_.write_bytes},
          {"mean_write_ns", memory_write_mean_ns()},
          {"write_per_hop_ns",
           {{"network", write_network},
            {"nic_pcie", write_pcie},
            {"nic", std::max(0.0, write_exchange - write_network - write_pcie)}}},
          {"host_core_ns_per_write", dpu ? 0.0 : mean_ns(memory_.write_core_ps, memory_.writes)},
          {"dpu_core_ns_per_write", dpu ? mean_ns(memory_.write_core_ps, memory_.writes) : 0.0},
          {"write_packets", memory_.write_packets},
          {"write_wire_bytes", memory_.write_wire_bytes}};
}

}  // namespace gpunvme
