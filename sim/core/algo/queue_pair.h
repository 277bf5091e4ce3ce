// What a GPU thread needs to know about one NVMe queue pair: where the rings
// and doorbells are, and where the queue's shared state lives in GPU memory.
// Plain data, the same on every platform.
//
// Counters are 32-bit and monotonic: a ticket t names SQ slot t % entries in
// lap t / entries (likewise CQ positions). They wrap after 2^32 commands on
// one queue; runs stay far below that.
#pragma once

#include <cstdint>

namespace gpunvme::algo {

struct QueuePair {
  std::uint32_t trace_id = 0;  // unique across SSDs: names the queue in stage records
  std::uint16_t qid = 1;
  std::uint32_t nsid = 1;
  std::uint64_t sq_base = 0;      // SQ ring: entries x 64 B (GPU memory or the SSD's CMB)
  std::uint64_t cq_base = 0;      // CQ ring: entries x 16 B
  std::uint32_t entries = 0;      // SQ and CQ have the same number of entries
  std::uint64_t sq_doorbell = 0;  // MMIO address of the SQ tail doorbell
  std::uint64_t cq_doorbell = 0;  // MMIO address of the CQ head doorbell
  // Shadow doorbells (Doorbell Buffer Config): 0 when the controller does not
  // offer them. A new value goes to the shadow word; the MMIO doorbell is
  // rung only when the controller's EventIdx asks for it.
  std::uint64_t sq_shadow = 0;
  std::uint64_t cq_shadow = 0;
  std::uint64_t sq_event_idx = 0;
  std::uint64_t cq_event_idx = 0;
  // The controller polls the shadow doorbells whatever EventIdx says
  // (controller-polled shadow doorbells, a proposed extension): a new value
  // goes to the shadow word alone.
  std::uint32_t shadow_polled = 0;
  // The SQ was created with wide CIDs (a proposed extension,
  // sim/core/protocol/nvme_wide_cid.h): its commands carry 32-bit CIDs in
  // SQE CDW2, echoed in CQE DW1.
  std::uint32_t wide_cids = 0;

  // 32-bit words in GPU memory, shared by every thread using this queue.
  std::uint64_t ticket = 0;       // next SQ ticket to hand out
  std::uint64_t turn = 0;         // SQ tail already published to the doorbell
  std::uint64_t tail_lock = 0;    // 0 free, 1 held by the warp publishing ready entries
  std::uint64_t credits = 0;      // spare word (kept for layouts that count commands)
  std::uint64_t cq_head = 0;      // CQ entries consumed (the head the GPU knows)
  std::uint64_t cq_lock = 0;      // 0 free, 1 held by the warp draining or advancing the CQ
  std::uint64_t cq_rung = 0;      // CQ head last written to the CQ head doorbell
  std::uint64_t cid_counter = 0;  // next CID candidate (counter schemes)
  // Arrays in GPU memory.
  std::uint64_t slot_gate = 0;  // per SQ slot: laps released (entries words)
  std::uint64_t ready = 0;      // per SQ slot: lap + 1 once its entry is filled (entries words)
  std::uint64_t cq_marks = 0;   // per CQ slot: lap + 1 once its entry is consumed (entries words)
  std::uint64_t done = 0;       // per CID: completion status + 1, 0 = pending (cid_space words)
  std::uint64_t cid_bits = 0;   // per CID: 1 while allocated (cid_space bits)
  std::uint32_t cid_space = 0;  // CIDs the queue's scheme hands out
  std::uint64_t agent_table =
      0;  // per SQ slot: the reply word of its request (io_agents; 8 B each)
  // One PRP list page per SQ slot, for transfers longer than two memory
  // pages; 0 when the queue's commands never need one.
  std::uint64_t prp_lists = 0;
  // Batch completion notification (a proposed NVMe extension,
  // sim/core/protocol/nvme_batch_completion.h): the bitmap the controller
  // flips one bit of per successful command (cid_space bits; 0 when the CQ
  // is an ordinary one), and the queue's own copy of the bits its
  // requesters have consumed (cid_space bits, GPU memory).
  std::uint64_t completion_bitmap = 0;
  std::uint64_t bitmap_seen = 0;

  // Bytes of GPU memory the counter words occupy (one 128 B line each, so
  // that counters do not share an L2 line).
  static constexpr std::uint64_t counter_bytes() { return 8 * 128; }
};

}  // namespace gpunvme::algo
