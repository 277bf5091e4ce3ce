// What a GPU thread needs to know about one NVMe queue pair: where the rings
// and doorbells are, and where the queue's shared counters live in GPU memory.
// Plain data, the same on every platform.
#pragma once

#include <cstdint>

namespace gpunvme::algo {

struct QueuePair {
  std::uint32_t trace_id = 0;  // unique across SSDs: names the queue in stage records
  std::uint16_t qid = 1;
  std::uint32_t nsid = 1;
  std::uint64_t sq_base = 0;  // SQ ring: entries x 64 B
  std::uint64_t cq_base = 0;  // CQ ring: entries x 16 B
  std::uint32_t entries = 0;  // SQ and CQ have the same number of entries
  std::uint64_t sq_doorbell = 0;  // MMIO address of the SQ tail doorbell
  std::uint64_t cq_doorbell = 0;  // MMIO address of the CQ head doorbell
  // 32-bit counters in GPU memory, shared by every thread using this queue.
  std::uint64_t ticket = 0;   // next SQ slot to hand out (monotonic)
  std::uint64_t turn = 0;     // SQ tail already published to the doorbell (monotonic)
  std::uint64_t credits = 0;  // commands outstanding on this queue
  std::uint64_t cq_head = 0;  // CQ entries consumed (monotonic)
  std::uint64_t cq_lock = 0;  // 0 free, 1 held by the warp draining the CQ
  std::uint64_t done = 0;     // one 32-bit flag per slot: completion status + 1, 0 = pending
  // One PRP list page per SQ slot, for transfers longer than two memory
  // pages; 0 when the queue's commands never need one.
  std::uint64_t prp_lists = 0;

  // Bytes of GPU memory the counters above occupy.
  static constexpr std::uint64_t counter_bytes() { return 6 * 4; }
};

}  // namespace gpunvme::algo
