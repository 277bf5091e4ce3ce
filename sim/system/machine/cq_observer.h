// Records when each completion entry lands in its CQ (the CqePosted stage):
// one watch per queue on the slot the controller writes next, re-armed as
// entries arrive in ring order; on an indexed CQ, whose entries land at
// their commands' SQ slots in any order, one watch per slot, each expecting
// its slot's next lap. Watches are callbacks on the memory write, not kernel
// events.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "sim/core/algo/queue_pair.h"
#include "sim/kernel/memory_space.h"
#include "sim/system/machine/sim_warp.h"

namespace gpunvme::platform {

class CqArrivalObserver {
 public:
  CqArrivalObserver(MemorySpace& memory, StageSink& sink) : memory_(memory), sink_(sink) {}
  ~CqArrivalObserver();
  CqArrivalObserver(const CqArrivalObserver&) = delete;
  CqArrivalObserver& operator=(const CqArrivalObserver&) = delete;

  void observe(const algo::QueuePair& q, bool indexed = false);
  // Batch completion notification: the CqePosted stage of a successful
  // command is when its bit of `q.completion_bitmap` flips (one watch per
  // 32-bit word).
  void observe_bitmap(const algo::QueuePair& q);

 private:
  struct Ring {
    std::uint64_t base;
    std::uint32_t entries;
    std::uint32_t position;  // next CQ position the controller writes
    std::uint16_t trace;
    MemorySpace::WatchId watch;
    bool wide;  // its SQ has wide CIDs: the entry's DW1 names the command
  };
  void arm(std::size_t ring);
  void on_write(std::size_t ring);
  // One slot of an indexed CQ.
  struct Slot {
    CqArrivalObserver* observer;
    std::uint64_t addr;
    std::uint32_t lap;  // the lap whose entry the slot expects next
    std::uint16_t trace;
    MemorySpace::WatchId watch;
    bool wide;
  };
  static void on_slot_write(void* context, MemorySpace::WatchId id);
  std::vector<std::unique_ptr<Slot[]>> slot_rings_;
  std::vector<std::pair<Slot*, std::uint32_t>> slot_ring_sizes_;
  // One word of a completion bitmap, with the value it last held.
  struct BitmapWord {
    CqArrivalObserver* observer;
    std::uint64_t addr;
    std::uint32_t value;
    std::uint32_t first_cid;
    std::uint16_t trace;
    MemorySpace::WatchId watch;
  };
  static void on_bitmap_write(void* context, MemorySpace::WatchId id);
  std::vector<std::vector<BitmapWord>> bitmaps_;

  MemorySpace& memory_;
  StageSink& sink_;
  std::vector<Ring> rings_;
};

}  // namespace gpunvme::platform
