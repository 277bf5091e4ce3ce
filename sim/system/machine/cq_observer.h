// Records when each completion entry lands in its CQ (the CqePosted stage):
// one watch per queue on the slot the controller writes next, re-armed as
// entries arrive in ring order. Watches are callbacks on the memory write,
// not kernel events.
#pragma once

#include <cstdint>
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

  void observe(const algo::QueuePair& q);

 private:
  struct Ring {
    std::uint64_t base;
    std::uint32_t entries;
    std::uint32_t position;  // next CQ position the controller writes
    std::uint16_t trace;
    MemorySpace::WatchId watch;
  };
  void arm(std::size_t ring);
  void on_write(std::size_t ring);

  MemorySpace& memory_;
  StageSink& sink_;
  std::vector<Ring> rings_;
};

}  // namespace gpunvme::platform
