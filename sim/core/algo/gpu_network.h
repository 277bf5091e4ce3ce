// GPU-initiated networking: a warp drives an RDMA NIC's queue pair itself,
// as InfiniBand GPUDirect Async (NVSHMEM's IBGDA transport) does, and reads
// remote NVMe namespaces over NVMe-oF with it. The queue pair's send queue,
// receive queue, completion queue and doorbell records live in GPU memory;
// the NIC's doorbell register (its UAR page) is mapped into the GPU's address
// space. Byte layouts: sim/core/protocol/rdma_entries.h.
//
// One warp owns one queue pair, its counters in the warp's registers
// (NicQueueState), so no atomics are needed. To read, the lanes of a warp
// each write an NVMe-oF command capsule (an NVMe Read whose keyed SGL names
// the lane's GPU buffer) and a SEND WQE pointing at it into consecutive send
// queue slots; a system fence makes them visible to the NIC; the warp
// updates the send doorbell record, fences again and rings the doorbell with
// one posted write: the first 8 bytes of the last WQE's control segment, as
// rdma-core's mlx5 provider writes them (the NIC then fetches the WQEs by
// DMA), or, for a single WQE on a NIC taking BlueFlame writes, the whole
// 64-byte WQE (the fetch is saved). SENDs are unsignaled: the target's
// response to a command proves its SEND done.
//
// The target RDMA WRITEs the data into the GPU buffer and SENDs a response
// capsule (an NVMe CQE) into the next posted receive buffer; the NIC writes
// a CQE into the CQ, its owner bit flipping each lap. The warp polls the CQ
// entry at its consumer index (one 4-byte word holding opcode and owner),
// reads the response from the receive buffer the CQE names, matches its CID
// to a lane, re-posts that receive buffer, and at the end of the batch
// writes the CQ consumer record and the receive doorbell record (a fence
// first, so that the NIC sees the re-posted receive WQEs before the count).
// No MMIO write is needed on the completion side.
#pragma once

#include <cstdint>

#include "sim/core/algo/lanes.h"
#include "sim/core/protocol/rdma_entries.h"

namespace gpunvme::algo {

// A queue pair as the warp sees it: GPU addresses of its rings (power-of-two
// entries) and records, the NIC's doorbell register, and its keys.
struct NicQueuePair {
  std::uint64_t send_queue = 0;  // send_entries x 64 B WQEs
  std::uint32_t send_entries = 0;
  std::uint64_t capsules = 0;       // send_entries x 64 B command capsules, one per slot
  std::uint64_t receive_queue = 0;  // receive_entries x 16 B receive WQEs (one data segment)
  std::uint32_t receive_entries = 0;
  std::uint64_t receive_buffers = 0;   // receive_entries x 16 B response capsules
  std::uint64_t completion_queue = 0;  // completion_entries x 64 B CQEs
  std::uint32_t completion_entries = 0;
  std::uint64_t doorbell_record = 0;     // 8 B: receive counter, send counter
  std::uint64_t cq_consumer_record = 0;  // 4 B
  std::uint64_t doorbell = 0;            // the NIC's doorbell register (MMIO)
  std::uint32_t qpn = 0;
  std::uint32_t lkey = 0;       // key of the queue pair's own buffers (capsules, receives)
  std::uint32_t rkey = 0;       // key the target writes the data buffers with
  std::uint32_t nsid_base = 1;  // the namespace of SSD i is nsid_base + i
  bool blueflame = false;       // the NIC takes whole WQEs written to its register
};

// The warp's counters of its queue pair.
struct NicQueueState {
  std::uint32_t send_produced = 0;     // WQEs posted
  std::uint32_t sends_answered = 0;    // commands whose response came back
  std::uint32_t receive_produced = 0;  // receive WQEs posted
  std::uint32_t cq_consumed = 0;       // CQEs consumed
};

// One lane's read.
struct NetRead {
  std::uint64_t slba = 0;
  std::uint16_t nlb_zero_based = 0;
  std::uint32_t ssd = 0;
  std::uint64_t buffer = 0;  // GPU buffer of `bytes`, registered under the rkey
  std::uint32_t bytes = 0;
  std::uint16_t cid = 0;  // unique among the queue pair's commands in flight
};

// Host-side set-up of a queue pair's receive queue, as the driver creating
// it does: every receive WQE points at its response buffer. The caller
// writes `receive_entries` WQEs and sets the receive counter to that many.
GPUNVME_HD constexpr rdma::DataSegment receive_wqe(const NicQueuePair& q, std::uint32_t slot) {
  return rdma::make_data(q.receive_buffers + std::uint64_t{slot} * rdma::kResponseCapsuleBytes,
                         rdma::kResponseCapsuleBytes, q.lkey);
}

// The counters of a queue pair as the driver hands it over: every receive
// WQE posted (receive_wqe), nothing else yet.
GPUNVME_HD constexpr NicQueueState fresh_state(const NicQueuePair& q) {
  return NicQueueState{0, 0, q.receive_entries, 0};
}

// What one lane posts: an NVMe-oF Read or Write of a remote namespace (a
// command capsule sent to the target), or a one-sided RDMA READ or WRITE of
// the remote host's registered memory (no capsule, no target software).
enum class NetOpKind : std::uint8_t { nvmf_read, nvmf_write, memory_read, memory_write };

struct NetOp {
  NetOpKind kind = NetOpKind::nvmf_read;
  std::uint64_t slba = 0;  // nvmf: the command's blocks
  std::uint16_t nlb_zero_based = 0;
  std::uint32_t ssd = 0;
  std::uint64_t buffer = 0;  // GPU buffer of `bytes`, registered under the rkey
  std::uint32_t bytes = 0;
  std::uint16_t cid = 0;  // nvmf: unique among the queue pair's commands in flight
  // nvmf_write: the target's in-capsule data limit; a write of at most this
  // many bytes carries them in its capsule, a longer one is RDMA READ by the
  // target from `buffer`.
  std::uint32_t in_capsule_bytes = 0;
  std::uint64_t remote_address = 0;  // memory ops: the remote buffer and its key
  std::uint32_t remote_key = 0;
};

// A lane's operation as a NetOp: itself, or a read.
GPUNVME_HD constexpr NetOp as_op(const NetOp& op) { return op; }
GPUNVME_HD constexpr NetOp as_op(const NetRead& r) {
  NetOp op{};
  op.kind = NetOpKind::nvmf_read;
  op.slba = r.slba;
  op.nlb_zero_based = r.nlb_zero_based;
  op.ssd = r.ssd;
  op.buffer = r.buffer;
  op.bytes = r.bytes;
  op.cid = r.cid;
  return op;
}

// Whether an NVMe-oF write carries its data in the capsule.
GPUNVME_HD constexpr bool in_capsule(const NetOp& op) {
  return op.kind == NetOpKind::nvmf_write && op.bytes <= op.in_capsule_bytes;
}

// The control segment of the WQE a lane posts for `op` as WQE `index`:
// capsule SENDs are unsignaled (the target's response proves them done), a
// SEND with in-capsule data gathers two segments, RDMA READs and WRITEs are
// signaled (their completion is the requester CQE).
GPUNVME_HD constexpr rdma::CtrlSegment op_ctrl(const NicQueuePair& q, const NetOp& op,
                                               std::uint32_t index) {
  const auto i = static_cast<std::uint16_t>(index);
  switch (op.kind) {
    case NetOpKind::memory_read: return rdma::make_ctrl(rdma::kOpcodeRdmaRead, i, q.qpn, 3, true);
    case NetOpKind::memory_write: return rdma::make_ctrl(rdma::kOpcodeRdmaWrite, i, q.qpn, 3, true);
    case NetOpKind::nvmf_write:
      if (in_capsule(op)) return rdma::make_ctrl(rdma::kOpcodeSend, i, q.qpn, 3, false);
      return rdma::make_ctrl(rdma::kOpcodeSend, i, q.qpn, 2, false);
    case NetOpKind::nvmf_read: break;
  }
  return rdma::make_ctrl(rdma::kOpcodeSend, i, q.qpn, 2, false);
}

// Posts the operations of the lanes in `mask` (at most send_entries minus
// the WQEs in flight) and rings the NIC's doorbell once. NVMe-oF lanes write
// a command capsule and a SEND WQE pointing at it; memory lanes an RDMA READ
// or WRITE WQE naming their GPU buffer (the GPU buffers' memory region: one
// key as lkey and rkey) and the remote buffer. `ops` holds NetOps or NetReads.
template <class P, class Op>
GPUNVME_HD void post_ops(P& p, const NicQueuePair& q, NicQueueState& s, LaneMask mask,
                         const Lanes<Op>& ops) {
  const std::uint32_t n = lane_count(mask);
  if (n == 0) return;
  const std::uint32_t first = s.send_produced;
  const std::uint32_t last = first + n - 1;
  // The lane of the last WQE: the highest in the mask.
  int last_lane = kWarpLanes - 1;
  while (((mask >> last_lane) & 1u) == 0) --last_lane;
  p.for_lanes(mask, [&](int lane) {
    const NetOp op = as_op(ops[lane]);
    const std::uint32_t index = first + lane_rank(mask, lane);
    const std::uint32_t slot = index & (q.send_entries - 1u);
    const std::uint64_t wqe_at = q.send_queue + std::uint64_t{slot} * rdma::kWqeBasicBlock;
    const auto i = static_cast<std::uint16_t>(index);
    if (op.kind == NetOpKind::memory_read || op.kind == NetOpKind::memory_write) {
      const rdma::RdmaWqe wqe = rdma::make_rdma(
          op.kind == NetOpKind::memory_read ? rdma::kOpcodeRdmaRead : rdma::kOpcodeRdmaWrite, i,
          q.qpn, op.remote_address, op.remote_key, op.buffer, op.bytes, q.rkey);
      // Control, remote address and data segments.
      p.store_bytes(wqe_at, &wqe, 3 * rdma::kSegmentBytes);
      return;
    }
    const std::uint64_t capsule = q.capsules + std::uint64_t{slot} * rdma::kCommandCapsuleBytes;
    const std::uint32_t nsid = q.nsid_base + op.ssd;
    if (op.kind == NetOpKind::nvmf_read) {
      const nvme::SubmissionEntry command = rdma::make_keyed_read(
          op.cid, nsid, op.slba, op.nlb_zero_based, op.buffer, op.bytes, q.rkey);
      p.store_bytes(capsule, &command, sizeof(command));
    } else if (in_capsule(op)) {
      const nvme::SubmissionEntry command =
          rdma::make_in_capsule_write(op.cid, nsid, op.slba, op.nlb_zero_based, op.bytes);
      p.store_bytes(capsule, &command, sizeof(command));
      // The SEND gathers the capsule and the data from the GPU buffer.
      const rdma::SendGatherWqe wqe = rdma::make_send_gather(
          i, q.qpn, capsule, rdma::kCommandCapsuleBytes, q.lkey, op.buffer, op.bytes, q.rkey);
      p.store_bytes(wqe_at, &wqe, 3 * rdma::kSegmentBytes);
      return;
    } else {
      const nvme::SubmissionEntry command = rdma::make_keyed_write(
          op.cid, nsid, op.slba, op.nlb_zero_based, op.buffer, op.bytes, q.rkey);
      p.store_bytes(capsule, &command, sizeof(command));
    }
    const rdma::SendWqe wqe =
        rdma::make_send(i, q.qpn, capsule, rdma::kCommandCapsuleBytes, q.lkey, false);
    // The control and data segments; the rest of the basic block is unused.
    p.store_bytes(wqe_at, &wqe, 2 * rdma::kSegmentBytes);
  });
  s.send_produced += n;
  // The WQEs and capsules before the record, the record before the doorbell
  // (the NIC may read either as soon as the doorbell lands).
  p.fence_system();
  p.store_u32(q.doorbell_record + rdma::kSendDoorbellRecord,
              rdma::doorbell_record(s.send_produced));
  p.fence_system();
  const std::uint32_t slot = last & (q.send_entries - 1u);
  if (q.blueflame && n == 1) {
    const rdma::SendWqe wqe =
        p.template load<rdma::SendWqe>(q.send_queue + std::uint64_t{slot} * rdma::kWqeBasicBlock);
    p.store_bytes(q.doorbell, &wqe, sizeof(wqe));
    return;
  }
  const rdma::CtrlSegment ctrl = op_ctrl(q, as_op(ops[last_lane]), last);
  p.store_bytes(q.doorbell, &ctrl, 8);
}

// Posts the reads of the lanes in `mask` (post_ops with NVMe-oF reads only).
template <class P>
GPUNVME_HD void post_reads(P& p, const NicQueuePair& q, NicQueueState& s, LaneMask mask,
                           const Lanes<NetRead>& read) {
  post_ops(p, q, s, mask, read);
}

// Waits for the completions of `n` posted operations, in the order the NIC
// completed them. A response capsule (responder CQE of a SEND) goes to
// `on_response(cid, status)` (NVMe status field without the phase bit) and
// its receive buffer is posted again; a requester CQE (an RDMA READ or
// WRITE done) goes to `on_requester(wqe_index)`; a CQE in error to
// `on_response` with CID FFFFh and an NVMe transport error status.
template <class P, class F, class G>
GPUNVME_HD void reap_completions(P& p, const NicQueuePair& q, NicQueueState& s, std::uint32_t n,
                                 F&& on_response, G&& on_requester) {
  for (std::uint32_t k = 0; k < n; ++k) {
    const std::uint32_t ci = s.cq_consumed;
    const std::uint64_t cqe =
        q.completion_queue + std::uint64_t{ci & (q.completion_entries - 1u)} * 64u;
    const std::uint64_t last_word = cqe + 60;
    p.wait_until([&] { return rdma::cqe_ready(p.load_u32(last_word), ci, q.completion_entries); },
                 last_word, 4);
    const std::uint32_t word = p.load_u32(last_word);
    const auto opcode = static_cast<std::uint8_t>(word >> 28);
    const auto counter =
        static_cast<std::uint16_t>(rdma::byte_swap16(static_cast<std::uint16_t>(word & 0xFFFFu)));
    ++s.cq_consumed;
    ++s.sends_answered;
    if (opcode == rdma::kCqeRequester) {
      // wqe_counter names the send queue's WQE; no receive was used.
      on_requester(counter);
      continue;
    }
    const std::uint32_t slot = counter & (q.receive_entries - 1u);
    const std::uint64_t buffer =
        q.receive_buffers + std::uint64_t{slot} * rdma::kResponseCapsuleBytes;
    if (opcode == rdma::kCqeResponderSend) {
      const nvme::CompletionEntry response = p.template load<nvme::CompletionEntry>(buffer);
      on_response(response.cid, static_cast<std::uint16_t>(response.status_field >> 1));
    } else {
      // An error CQE names no command; the caller fails what is left.
      on_response(static_cast<std::uint16_t>(0xFFFFu),
                  static_cast<std::uint16_t>(
                      nvme::make_status_field(nvme::Status::TransientTransportError, false) >> 1));
    }
    const rdma::DataSegment again = receive_wqe(q, slot);
    p.store_bytes(q.receive_queue + std::uint64_t{slot} * rdma::kSegmentBytes, &again,
                  sizeof(again));
    ++s.receive_produced;
  }
  p.fence_system();
  p.store_u32(q.cq_consumer_record, rdma::cq_consumer_record(s.cq_consumed));
  p.store_u32(q.doorbell_record + rdma::kReceiveDoorbellRecord,
              rdma::doorbell_record(s.receive_produced));
}

// Waits for the responses of `n` NVMe-oF commands and hands each to
// `on_response(cid, status)` (reap_completions; a requester CQE, which no
// read posts, counts as an error).
template <class P, class F>
GPUNVME_HD void reap_responses(P& p, const NicQueuePair& q, NicQueueState& s, std::uint32_t n,
                               F&& on_response) {
  reap_completions(p, q, s, n, on_response, [&](std::uint16_t) {
    on_response(static_cast<std::uint16_t>(0xFFFFu),
                static_cast<std::uint16_t>(
                    nvme::make_status_field(nvme::Status::TransientTransportError, false) >> 1));
  });
}

}  // namespace gpunvme::algo
