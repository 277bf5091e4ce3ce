#include "sim/system/workload/gpu_network_path.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "sim/kernel/threads.h"
#include "sim/system/workload/scenario_spec.h"

namespace gpunvme {

namespace {

// Entries of each queue pair's rings: a warp has at most 32 commands in
// flight, and the rings are powers of two.
constexpr std::uint32_t kSendEntries = 64;
constexpr std::uint32_t kReceiveEntries = 64;
constexpr std::uint32_t kCompletionEntries = 64;
// The initiator's memory keys, as remote_io_path.cpp registers them: the
// GPU buffers the target writes (rkey) and the capsule rings (lkey).
constexpr std::uint32_t kGpuBufferKey = 1;
constexpr std::uint32_t kCapsuleKey = nvmf::kReservedMemoryKeys;
// Queue pair numbers as the NIC hands them out, from this one on.
constexpr std::uint32_t kFirstQpn = 0x100;

std::uint32_t ceil_div(std::uint32_t a, std::uint32_t b) { return (a + b - 1) / b; }

}  // namespace

GpuNetworkPath::GpuNetworkPath(const sc_core::sc_module_name& name, const RunConfig& config,
                               Machine& machine, std::uint64_t max_io_bytes)
    : RemoteIoPath(name, config, machine, max_io_bytes) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  const auto warps =
      std::max<std::uint32_t>(1, ceil_div(static_cast<std::uint32_t>(s.threads), algo::kWarpLanes));
  MemorySpace& memory = machine.memory();
  // One UAR page per queue pair in the NIC's BAR, so that no two warps
  // write the same BlueFlame register.
  const Region& uar =
      memory.allocate(std::uint64_t{warps} * rdma::kUarPageBytes, route_.initiator,
                      RegionKind::Registers, fmt::format("{}.uar", id()), rdma::kUarPageBytes);
  doorbell_base_ = uar.base;
  machine.fabric().attach_registers(uar, this);
  mailboxes_ = gpu_.allocate(std::uint64_t{warps} * 128, 128);
  mailbox_seq_.assign(warps, 0);
  nic_side_.assign(warps, NicSide{});
  for (std::uint32_t w = 0; w < warps; ++w) {
    algo::NicQueuePair q;
    q.send_entries = kSendEntries;
    q.send_queue = gpu_.allocate(std::uint64_t{kSendEntries} * rdma::kWqeBasicBlock, 4096);
    q.capsules = gpu_.allocate(std::uint64_t{kSendEntries} * rdma::kCommandCapsuleBytes, 4096);
    q.receive_entries = kReceiveEntries;
    q.receive_queue = gpu_.allocate(std::uint64_t{kReceiveEntries} * rdma::kSegmentBytes, 4096);
    q.receive_buffers =
        gpu_.allocate(std::uint64_t{kReceiveEntries} * rdma::kResponseCapsuleBytes, 4096);
    q.completion_entries = kCompletionEntries;
    q.completion_queue = gpu_.allocate(std::uint64_t{kCompletionEntries} * 64, 4096);
    q.doorbell_record = gpu_.allocate(64, 64);
    q.cq_consumer_record = gpu_.allocate(64, 64);
    q.doorbell = doorbell_base_ + std::uint64_t{w} * rdma::kUarPageBytes + rdma::kUarDoorbellOffset;
    q.qpn = kFirstQpn + w;
    q.lkey = kCapsuleKey;
    q.rkey = kGpuBufferKey;
    q.nsid_base = 1;
    q.blueflame = initiator_nic_->params().wqe_posting == nic::WqePosting::blueflame;
    // The driver creating the queue pair: every CQE invalid, every receive
    // WQE posted.
    rdma::Cqe64 invalid{};
    invalid.op_own = static_cast<std::uint8_t>(rdma::kCqeInvalid << 4);
    for (std::uint32_t i = 0; i < kCompletionEntries; ++i) {
      memory.write(q.completion_queue + std::uint64_t{i} * 64, &invalid, sizeof(invalid));
    }
    for (std::uint32_t i = 0; i < kReceiveEntries; ++i) {
      const rdma::DataSegment wqe = algo::receive_wqe(q, i);
      memory.write(q.receive_queue + std::uint64_t{i} * rdma::kSegmentBytes, &wqe, sizeof(wqe));
    }
    memory.store<std::uint32_t>(q.doorbell_record + rdma::kReceiveDoorbellRecord,
                                rdma::doorbell_record(algo::fresh_state(q).receive_produced));
    queues_.push_back(q);
  }
  slot_memory_op_.assign(warps, std::vector<std::uint32_t>(kSendEntries, 0));
}

GpuNetworkPath::~GpuNetworkPath() = default;

void GpuNetworkPath::start(std::function<void()> ready) {
  RemoteIoPath::start([this, ready = std::move(ready)] {
    spawn_threads(queues_.size(),
                  [this](std::size_t w) { warp_main(static_cast<std::uint32_t>(w)); });
    if (ready) ready();
  });
}

void GpuNetworkPath::submit(const BlockIo& io, IoDone done) {
  if (closed_) throw std::logic_error(id() + ": submit after close");
  std::uint32_t r = 0;
  if (!free_requests_.empty()) {
    r = free_requests_.back();
    free_requests_.pop_back();
  } else {
    requests_.emplace_back();
    r = static_cast<std::uint32_t>(requests_.size() - 1);
    // The request index is the command's CID.
    if (r > 0xFFFFu) throw std::logic_error(id() + ": more than 65,536 commands in flight");
    request_warp_.push_back(0);
  }
  Request& req = requests_[r];
  req.io = io;
  req.done = std::move(done);
  std::fill(std::begin(req.times), std::end(req.times), PathStages::kNotReached);
  req.times[kRequested] = now();
  ++submitted_;
  pending_.push_back(Pending{false, r});
  wake_one();
}

void GpuNetworkPath::read_memory(std::uint64_t remote_address, std::uint64_t bytes,
                                 std::uint64_t dest, std::uint32_t, std::function<void()> done) {
  queue_memory_op(std::make_shared<MemoryRead>(
      MemoryRead{remote_address, bytes, dest, 0, 0, now(), 0, std::move(done), false, 0}));
}

void GpuNetworkPath::write_memory(std::uint64_t remote_address, std::uint64_t bytes,
                                  std::uint64_t src, std::uint32_t, std::function<void()> done) {
  queue_memory_op(std::make_shared<MemoryRead>(
      MemoryRead{remote_address, bytes, src, 0, 0, now(), 0, std::move(done), true, 0}));
}

void GpuNetworkPath::queue_memory_op(std::shared_ptr<MemoryRead> access) {
  if (closed_) throw std::logic_error(id() + ": remote-memory access after close");
  std::uint32_t m = 0;
  if (!free_memory_ops_.empty()) {
    m = free_memory_ops_.back();
    free_memory_ops_.pop_back();
  } else {
    memory_ops_.emplace_back();
    m = static_cast<std::uint32_t>(memory_ops_.size() - 1);
  }
  access->tag = m;
  memory_ops_[m].access = std::move(access);
  pending_.push_back(Pending{true, m});
  wake_one();
}

void GpuNetworkPath::close() {
  closed_ = true;
  while (!idle_.empty()) wake_one();
}

void GpuNetworkPath::wake_one() {
  if (idle_.empty()) return;
  const std::uint32_t w = idle_.back();
  idle_.pop_back();
  machine_.memory().store<std::uint32_t>(mailboxes_ + std::uint64_t{w} * 128, ++mailbox_seq_[w]);
}

bool GpuNetworkPath::next_batch(platform::SimWarp& p, std::uint32_t w) {
  const std::uint64_t mailbox = mailboxes_ + std::uint64_t{w} * 128;
  for (;;) {
    if (!pending_.empty()) return true;
    if (closed_) return false;
    // As the GPU I/O path's idle warps: look at the mailbox, then look for
    // work once more before sleeping (a request may have come meanwhile).
    const std::uint32_t seen = p.check([&] { return p.load_u32(mailbox); });
    if (!pending_.empty() || closed_) continue;
    idle_.push_back(w);
    p.wait_until([&] { return p.load_u32(mailbox) != seen; }, mailbox, 4);
  }
}

void GpuNetworkPath::warp_main(std::uint32_t w) {
  const platform::WarpPlacement placement{w % gpu_.sms(),
                                          (w / gpu_.sms()) % gpu_.schedulers_per_sm()};
  platform::SimWarp p(gpu_, machine_.fabric(), machine_.memory(), no_stages_, counters_, placement);
  const algo::NicQueuePair& q = queues_[w];
  algo::NicQueueState state = algo::fresh_state(q);
  while (next_batch(p, w)) {
    algo::Lanes<algo::NetOp> ops{};
    Pending lane_work[algo::kWarpLanes] = {};
    std::uint32_t lane_wqe[algo::kWarpLanes] = {};
    algo::LaneMask mask = 0;
    for (int lane = 0; lane < algo::kWarpLanes && !pending_.empty(); ++lane) {
      const Pending work = pending_.front();
      pending_.pop_front();
      lane_work[lane] = work;
      lane_wqe[lane] = state.send_produced + static_cast<std::uint32_t>(lane);
      algo::NetOp& op = ops[lane];
      mask |= algo::LaneMask{1} << lane;
      if (work.memory) {
        MemoryOp& m = memory_ops_[work.index];
        const MemoryRead& a = *m.access;
        m.warp = w;
        m.wqe_index = lane_wqe[lane];
        slot_memory_op_[w][lane_wqe[lane] & (q.send_entries - 1)] = work.index;
        op.kind = a.write ? algo::NetOpKind::memory_write : algo::NetOpKind::memory_read;
        op.buffer = a.dest;
        op.bytes = static_cast<std::uint32_t>(a.bytes);
        op.remote_address = a.remote_address;
        op.remote_key = remote_kv_key();
        if (a.write) {
          ++rdma_write_wqes_;
        } else {
          ++rdma_read_wqes_;
        }
        continue;
      }
      const std::uint32_t r = work.index;
      Request& req = requests_[r];
      req.times[kNoticed] = p.clock();
      request_warp_[r] = w;
      op.kind = req.io.write ? algo::NetOpKind::nvmf_write : algo::NetOpKind::nvmf_read;
      op.slba = req.io.slba;
      op.nlb_zero_based = static_cast<std::uint16_t>(req.io.lbas - 1);
      op.ssd = req.io.ssd;
      op.buffer = req.io.buffer;
      op.bytes = static_cast<std::uint32_t>(io_bytes(req.io));
      op.cid = static_cast<std::uint16_t>(r);
      // The data a write capsule may carry: its storage host target's limit.
      op.in_capsule_bytes = static_cast<std::uint32_t>(
          std::min<std::uint64_t>(side_of(r).in_capsule_data_bytes, 0xFFFFFFFFu));
      if (req.io.write) ++write_capsules_;
    }
    const std::uint32_t n = algo::lane_count(mask);
    algo::post_ops(p, q, state, mask, ops);
    std::uint16_t status[algo::kWarpLanes] = {};
    algo::LaneMask answered = 0;
    std::uint16_t transport_error = 0;
    // The lane whose work matches, among those not answered yet.
    auto answer = [&](auto&& matches, std::uint16_t st) {
      bool matched = false;
      algo::visit_lanes(mask & ~answered, [&](int lane) {
        if (matched || !matches(lane)) return;
        status[lane] = st;
        answered |= algo::LaneMask{1} << lane;
        matched = true;
      });
      return matched;
    };
    algo::reap_completions(
        p, q, state, n,
        [&](std::uint16_t cid, std::uint16_t st) {
          const bool matched = answer(
              [&](int lane) { return !lane_work[lane].memory && lane_work[lane].index == cid; },
              st);
          if (!matched) transport_error = st;  // an error CQE: the lanes left fail
        },
        [&](std::uint16_t wqe_index) {
          const bool matched = answer(
              [&](int lane) {
                return lane_work[lane].memory && (lane_wqe[lane] & 0xFFFFu) == wqe_index;
              },
              0);
          if (!matched) {
            throw std::logic_error(
                fmt::format("{}: warp {} reaped a requester CQE of WQE {} it did not post", id(), w,
                            wqe_index));
          }
        });
    // The warp's threads go on together once the batch is in.
    const Picoseconds delivered = p.clock();
    algo::visit_lanes(mask, [&](int lane) {
      const Pending work = lane_work[lane];
      const bool ok = ((answered >> lane) & 1u) != 0;
      if (!ok && transport_error == 0) {
        throw std::logic_error(
            fmt::format("{}: warp {} lost the completion of its lane {}", id(), w, lane));
      }
      if (work.memory) {
        // A remote-memory access the transport failed has no NVMe status to
        // report: the KV tier's reads and writes do not fail.
        if (!ok) {
          throw std::logic_error(
              fmt::format("{}: warp {} lost a remote-memory access to a transport error", id(), w));
        }
        std::shared_ptr<MemoryRead> access = std::move(memory_ops_[work.index].access);
        free_memory_ops_.push_back(work.index);
        if (access->write) {
          memory_write_finished(std::move(access), delivered);
        } else {
          memory_read_finished(std::move(access), delivered);
        }
        return;
      }
      const std::uint32_t r = work.index;
      requests_[r].times[kReaped] = delivered;
      complete(r, ok ? status[lane] : transport_error, delivered);
    });
  }
}

void GpuNetworkPath::on_register_write(std::uint64_t offset, const std::uint8_t* data,
                                       std::uint32_t len) {
  const auto w = static_cast<std::uint32_t>(offset / rdma::kUarPageBytes);
  if (w >= queues_.size() || offset % rdma::kUarPageBytes != rdma::kUarDoorbellOffset ||
      (len != 8 && len != sizeof(rdma::SendWqe))) {
    throw std::logic_error(
        fmt::format("{}: a {} B write at offset {:#x} of the NIC's UAR pages is no doorbell", id(),
                    len, offset));
  }
  doorbell_bytes_ += len;
  rdma::CtrlSegment ctrl{};
  std::memcpy(&ctrl, data, 8);
  if (ctrl.qpn() != queues_[w].qpn) {
    throw std::logic_error(fmt::format("{}: doorbell of QP {:#x} rung in QP {:#x}'s UAR page", id(),
                                       ctrl.qpn(), queues_[w].qpn));
  }
  NicSide& nic = nic_side_[w];
  // The WQEs from the NIC's consumer counter up to the one named (16 bits).
  const std::uint32_t count = ((ctrl.wqe_index() - nic.send_consumed) & 0xFFFFu) + 1;
  if (len == sizeof(rdma::SendWqe)) {
    if (count != 1) {
      throw std::logic_error(id() + ": a BlueFlame write names WQEs beyond the one it carries");
    }
    ++blueflame_writes_;
    take_wqe(w, nic.send_consumed, data);
    return;
  }
  ++doorbells_;
  for (std::uint32_t k = 0; k < count; ++k) take_wqe(w, nic.send_consumed, nullptr);
}

void GpuNetworkPath::take_wqe(std::uint32_t w, std::uint32_t index, const std::uint8_t* carried) {
  const algo::NicQueuePair& q = queues_[w];
  std::uint8_t bytes[rdma::kWqeBasicBlock] = {};
  if (carried != nullptr) {
    std::memcpy(bytes, carried, sizeof(bytes));
  } else {
    // Fetched by DMA: the rdma_nic model times the fetch (post_command).
    machine_.memory().read(
        q.send_queue + std::uint64_t{index & (q.send_entries - 1)} * rdma::kWqeBasicBlock, bytes,
        sizeof(bytes));
    ++wqe_fetches_;
  }
  ++nic_side_[w].send_consumed;
  rdma::CtrlSegment ctrl{};
  std::memcpy(&ctrl, bytes, sizeof(ctrl));
  if (ctrl.wqe_index() != (index & 0xFFFFu)) {
    throw std::logic_error(fmt::format("{}: WQE {} of QP {:#x} carries index {}", id(), index,
                                       q.qpn, ctrl.wqe_index()));
  }
  if (ctrl.opcode() == rdma::kOpcodeRdmaRead || ctrl.opcode() == rdma::kOpcodeRdmaWrite) {
    rdma::RdmaWqe wqe{};
    std::memcpy(&wqe, bytes, sizeof(wqe));
    take_memory_wqe(w, index, wqe, carried != nullptr);
    return;
  }
  wqe_in_hand_ = carried != nullptr;
  take_capsule(w, index, bytes);
}

void GpuNetworkPath::take_capsule(std::uint32_t w, std::uint32_t index,
                                  const std::uint8_t* wqe_bytes) {
  const algo::NicQueuePair& q = queues_[w];
  MemorySpace& memory = machine_.memory();
  rdma::SendGatherWqe wqe{};  // a plain SEND fills its first two segments
  std::memcpy(&wqe, wqe_bytes, sizeof(wqe));
  const bool gathers = wqe.ctrl.ds() == 3;
  if (wqe.ctrl.opcode() != rdma::kOpcodeSend || (wqe.ctrl.ds() != 2 && !gathers) ||
      wqe.capsule.bytes() != rdma::kCommandCapsuleBytes || wqe.capsule.key() != q.lkey) {
    throw std::logic_error(
        fmt::format("{}: WQE {} of QP {:#x} is no capsule SEND", id(), index, q.qpn));
  }
  nvme::SubmissionEntry capsule{};
  memory.read(wqe.capsule.address(), &capsule, sizeof(capsule));
  const std::uint32_t r = capsule.cid();
  const rdma::KeyedDataBlock sgl = rdma::keyed_data_block(capsule);
  const nvme::ReadWriteFields rw = nvme::decode_read_write(capsule);
  const bool write_command = capsule.opcode() == static_cast<std::uint8_t>(nvme::NvmOpcode::Write);
  bool names_it = r < requests_.size();
  if (names_it) {
    const BlockIo& io = requests_[r].io;
    const std::uint64_t bytes = io_bytes(io);
    names_it = write_command == io.write && capsule.nsid == q.nsid_base + io.ssd &&
               rw.slba == io.slba && rw.block_count == io.lbas;
    if (data_in_capsule(side_of(r), io)) {
      // The data follows the capsule in the SEND, from the GPU buffer.
      names_it = names_it && gathers && sgl.identifier == rdma::kDataBlockOffset &&
                 sgl.length == bytes && wqe.data.address() == io.buffer &&
                 wqe.data.bytes() == bytes && wqe.data.key() == q.rkey;
    } else {
      names_it = names_it && !gathers && sgl.identifier == rdma::kKeyedDataBlock &&
                 sgl.key == q.rkey && sgl.address == io.buffer;
    }
  }
  if (!names_it) {
    throw std::logic_error(
        fmt::format("{}: capsule of WQE {} (CID {}) does not name the command "
                    "its warp took",
                    id(), index, r));
  }
  send_command(r);
}

void GpuNetworkPath::take_memory_wqe(std::uint32_t w, std::uint32_t index, const rdma::RdmaWqe& wqe,
                                     bool carried) {
  const algo::NicQueuePair& q = queues_[w];
  const std::uint32_t m = slot_memory_op_[w][index & (q.send_entries - 1)];
  const bool write = wqe.ctrl.opcode() == rdma::kOpcodeRdmaWrite;
  if (m >= memory_ops_.size() || !memory_ops_[m].access || memory_ops_[m].warp != w ||
      memory_ops_[m].wqe_index != index) {
    throw std::logic_error(fmt::format("{}: RDMA WQE {} of QP {:#x} names no remote-memory access",
                                       id(), index, q.qpn));
  }
  std::shared_ptr<MemoryRead> access = memory_ops_[m].access;
  if (wqe.ctrl.ds() != 3 || write != access->write ||
      wqe.remote_address() != access->remote_address || wqe.remote_key() != remote_kv_key() ||
      wqe.data.address() != access->dest || wqe.data.bytes() != access->bytes ||
      wqe.data.key() != q.rkey) {
    throw std::logic_error(fmt::format(
        "{}: RDMA WQE {} of QP {:#x} does not name the access its warp took", id(), index, q.qpn));
  }
  access->posted = now();
  // The doorbell (or the BlueFlame WQE) landed now, through the PCIe fabric.
  const nic::RdmaMessage message =
      write ? nic::RdmaMessage{network::RdmaOp::rdma_write, access->bytes, memory_buffer_key(),
                               access->dest}
            : nic::RdmaMessage{network::RdmaOp::rdma_read_request, 0, remote_kv_key(),
                               access->remote_address};
  // The remote-memory tier is the first storage host's DRAM.
  const Direction& to_target = sides_.front()->to_target;
  const nic::SentMessage sent = initiator_nic_->transmit_rung(now(), now(), carried, message,
                                                              *to_target.cable, to_target.side);
  if (write) {
    send_memory_write(std::move(access), sent);
  } else {
    send_memory_read(std::move(access), sent);
  }
}

nic::SentMessage GpuNetworkPath::post_command(std::uint32_t r, const nic::RdmaMessage& capsule) {
  // The doorbell (or the BlueFlame WQE) landed now, through the PCIe fabric.
  const Direction& to_target = side_of(r).to_target;
  return initiator_nic_->transmit_rung(now(), now(), wqe_in_hand_, capsule, *to_target.cable,
                                       to_target.side);
}

void GpuNetworkPath::at_initiator(std::uint32_t r, std::uint16_t status) {
  Request& req = requests_[r];
  req.times[kDataIn] = now();
  exchange_ps_ += (req.times[kAtTarget] - req.times[kSubmitted]) +
                  (req.times[kDataIn] - req.times[kTargetDone]);
  ++exchanges_;
  // The NIC has written the response capsule into the next posted receive
  // buffer and the CQE behind it (the rdma_nic model timed both writes).
  const std::uint32_t w = request_warp_[r];
  const algo::NicQueuePair& q = queues_[w];
  NicSide& nic = nic_side_[w];
  MemorySpace& memory = machine_.memory();
  const std::uint32_t posted = rdma::record_value(
      memory.load<std::uint32_t>(q.doorbell_record + rdma::kReceiveDoorbellRecord));
  if (((posted - nic.receive_consumed) & 0xFFFFu) == 0) {
    throw std::logic_error(fmt::format("{}: QP {:#x} has no receive posted", id(), q.qpn));
  }
  const std::uint32_t consumed_cqes =
      rdma::record_value(memory.load<std::uint32_t>(q.cq_consumer_record));
  if (((nic.cq_produced - consumed_cqes) & 0xFFFFFFu) >= q.completion_entries) {
    throw std::logic_error(fmt::format("{}: CQ of QP {:#x} overflows", id(), q.qpn));
  }
  const std::uint32_t slot = nic.receive_consumed & (q.receive_entries - 1);
  rdma::DataSegment receive{};
  memory.read(q.receive_queue + std::uint64_t{slot} * rdma::kSegmentBytes, &receive,
              sizeof(receive));
  nvme::CompletionEntry response{};
  response.cid = static_cast<std::uint16_t>(r);
  response.status_field = static_cast<std::uint16_t>(status << 1);
  memory.write(receive.address(), &response, sizeof(response));
  ++responses_written_;
  write_cqe(w, rdma::kCqeResponderSend, nic.receive_consumed, rdma::kResponseCapsuleBytes);
  ++nic.receive_consumed;
}

void GpuNetworkPath::write_cqe(std::uint32_t w, std::uint8_t opcode, std::uint32_t counter,
                               std::uint32_t bytes) {
  const algo::NicQueuePair& q = queues_[w];
  NicSide& nic = nic_side_[w];
  rdma::Cqe64 cqe{};
  cqe.byte_cnt = rdma::byte_swap32(bytes);
  cqe.sop_drop_qpn = rdma::byte_swap32(q.qpn);
  cqe.wqe_counter = rdma::byte_swap16(static_cast<std::uint16_t>(counter));
  cqe.op_own = static_cast<std::uint8_t>((opcode << 4) |
                                         rdma::cqe_owner(nic.cq_produced, q.completion_entries));
  machine_.memory().write(
      q.completion_queue +
          std::uint64_t{nic.cq_produced & (q.completion_entries - 1)} * sizeof(cqe),
      &cqe, sizeof(cqe));
  ++cqes_written_;
  ++nic.cq_produced;
}

void GpuNetworkPath::write_requester_cqe(std::uint32_t m) {
  const MemoryOp& op = memory_ops_[m];
  const algo::NicQueuePair& q = queues_[op.warp];
  const std::uint32_t consumed_cqes =
      rdma::record_value(machine_.memory().load<std::uint32_t>(q.cq_consumer_record));
  if (((nic_side_[op.warp].cq_produced - consumed_cqes) & 0xFFFFFFu) >= q.completion_entries) {
    throw std::logic_error(fmt::format("{}: CQ of QP {:#x} overflows", id(), q.qpn));
  }
  ++requester_cqes_;
  write_cqe(op.warp, rdma::kCqeRequester, op.wqe_index,
            op.access->write ? 0 : static_cast<std::uint32_t>(op.access->bytes));
}

// The READ's response and CQE, or the WRITE's ACK and CQE, are in: the
// warp polling the CQ sees them.
void GpuNetworkPath::memory_read_landed(std::shared_ptr<MemoryRead> read) {
  write_requester_cqe(read->tag);
}

void GpuNetworkPath::memory_write_landed(std::shared_ptr<MemoryRead> write) {
  write_requester_cqe(write->tag);
}

void GpuNetworkPath::complete(std::uint32_t r, std::uint16_t status, Picoseconds when) {
  finish(r, status, when, request_warp_[r], static_cast<std::uint16_t>(r));
}

nlohmann::json GpuNetworkPath::sections(Picoseconds elapsed) const {
  nlohmann::json out = RemoteIoPath::sections(elapsed);
  nlohmann::json& remote = out["remote"];
  const std::uint64_t ios = completed();
  remote["path"] = "gpu_network";
  remote["initiator_core_ns_per_io"] = 0.0;
  remote["gpu_network"] = {
      {"queue_pairs", queues_.size()},
      // Doorbell writes that named WQEs for the NIC to fetch, and WQEs
      // written whole into its BlueFlame register.
      {"doorbells", doorbells_},
      {"blueflame_writes", blueflame_writes_},
      {"doorbell_bytes", doorbell_bytes_},
      {"doorbells_per_io",
       ios == 0 ? 0.0
                : static_cast<double>(doorbells_ + blueflame_writes_) / static_cast<double>(ios)},
      {"wqe_fetches", wqe_fetches_},
      {"wqe_fetch_bytes",
       wqe_fetches_ * static_cast<std::uint64_t>(initiator_nic_->params().wqe_bytes)},
      {"cqes_written", cqes_written_},
      {"responses_written", responses_written_},
      // Write capsules, and the remote-memory tier's RDMA READ and WRITE WQEs
      // with their requester CQEs.
      {"write_capsules", write_capsules_},
      {"rdma_read_wqes", rdma_read_wqes_},
      {"rdma_write_wqes", rdma_write_wqes_},
      {"requester_cqes", requester_cqes_},
      {"doorbell_path",
       {{"kind", route_.doorbell_kind},
        {"taken", route_.doorbell_taken},
        {"route", route_.doorbell_route}}}};
  return out;
}

}  // namespace gpunvme
