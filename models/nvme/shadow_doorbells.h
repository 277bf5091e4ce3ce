// The controller's shadow doorbells and EventIdx (Doorbell Buffer Config,
// NVMe base spec 1.4 section 5.7): once the host has given the two buffers,
// the controller watches each I/O queue's shadow doorbell, reads an update
// (one memory read) at the next tick of its poll loop and applies it as a
// doorbell; it writes EventIdx to tell the host when an MMIO doorbell is
// needed as well.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "models/nvme/queue_set.h"
#include "sim/core/protocol/nvme_registers.h"
#include "sim/kernel/calendar.h"
#include "sim/kernel/memory_space.h"
#include "sim/kernel/time.h"

namespace gpunvme::nvme {

// What the shadow doorbells need from the controller.
struct ShadowHooks {
  std::function<Picoseconds()> now;
  std::function<void(Picoseconds when, Calendar::Callback callback)> schedule_at;
  // A read of `len` bytes at `addr`; `done` gets the bytes when they arrive.
  std::function<void(std::uint64_t addr, std::uint32_t len,
                     std::function<void(const std::uint8_t* data, std::uint32_t len)> done)>
      read;
  // A posted write of `len` bytes from `data` to `addr`.
  std::function<void(std::uint64_t addr, std::uint32_t len, const void* data)> write;
  // The controller's reset count: a poll from before a reset is dropped.
  std::function<std::uint64_t()> generation;
  // A doorbell value read from a shadow doorbell, for a queue that exists.
  std::function<void(DoorbellKind kind, std::uint16_t qid, std::uint32_t value)> apply;
};

class ShadowDoorbells {
 public:
  // For the queues of `queues` (doorbell stride `dstrd`), watching the
  // shadow buffer in `memory` and polling every `poll_period` (> 0).
  ShadowDoorbells(QueueSet& queues, MemorySpace& memory, std::uint8_t dstrd,
                  Picoseconds poll_period, ShadowHooks hooks);

  // Whether the host has configured the buffers.
  bool configured() const { return shadow_base_ != 0; }
  // Controller-polled shadow doorbells (a proposed extension): every SQ is
  // watched as if busy, EventIdx one behind its tail, so that the host
  // never needs an MMIO doorbell. Set before configure().
  void set_always_polled(bool always) { always_polled_ = always; }
  bool always_polled() const { return always_polled_; }
  // Doorbell Buffer Config with checked buffers: the shadow doorbells at
  // `shadow_base`, EventIdx at `event_idx_base`; every existing I/O queue is
  // watched there (and no longer at the buffers configured before).
  void configure(std::uint64_t shadow_base, std::uint64_t event_idx_base);
  // Watches queue `qid`'s shadow doorbell (configured() only). EventIdx
  // starts as "ring the MMIO doorbell on the next update" for SQs, whose idle
  // poller sleeps, and as "no MMIO needed" for CQ heads, which the poller
  // reads as they come.
  void start(DoorbellKind kind, std::uint16_t qid);
  void stop(DoorbellKind kind, std::uint16_t qid);
  // An I/O SQ's work changed (doorbell, fetch, completion): an SQ with work
  // is polled, EventIdx just behind the tail, so the host's updates need no
  // MMIO doorbell; an idle SQ's poller sleeps, EventIdx at the tail asking
  // for the MMIO doorbell on the next update (the watch still catches an
  // update that raced with the change). Nothing while not configured.
  void update_sq_event_idx(std::uint16_t qid);
  // Controller reset: every watch ends, the buffers are forgotten.
  void reset();

  std::uint64_t reads() const { return reads_; }
  std::uint64_t event_idx_writes() const { return event_idx_writes_; }

 private:
  struct Poll {
    MemorySpace::WatchId watch = 0;
    bool read_pending = false;
    bool dirty = false;  // written again while a read was pending
  };
  Poll& poll_of(DoorbellKind kind, std::uint16_t qid) {
    return polls_[2u * qid + (kind == DoorbellKind::CqHead ? 1 : 0)];
  }
  std::uint64_t shadow_address(DoorbellKind kind, std::uint16_t qid) const {
    return shadow_base_ + shadow_doorbell_offset(kind, qid, dstrd_);
  }
  void on_write(DoorbellKind kind, std::uint16_t qid);
  void poll(DoorbellKind kind, std::uint16_t qid);
  void write_event_idx(DoorbellKind kind, std::uint16_t qid, std::uint32_t value);

  QueueSet& queues_;
  MemorySpace& memory_;
  std::uint8_t dstrd_;
  Picoseconds poll_period_;
  ShadowHooks hooks_;
  bool always_polled_ = false;
  std::uint64_t shadow_base_ = 0;  // 0 = not configured
  std::uint64_t event_idx_base_ = 0;
  std::vector<Poll> polls_;  // [2 * qid + (CQ ? 1 : 0)]
  std::uint64_t reads_ = 0;
  std::uint64_t event_idx_writes_ = 0;
};

}  // namespace gpunvme::nvme
