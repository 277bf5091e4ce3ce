// The simulated platform: one GPU warp running an algorithm as a SystemC
// thread. Every operation has its memory effect on simulated memory at once
// and costs modelled time: atomics queue at the L2 unit of their address,
// MMIO stores become posted PCIe writes, fences and loads cost their measured
// latencies, and waiting is a watch on simulated memory (the warp sleeps
// until the write it waits for; the polls it would have issued meanwhile are
// counted, not simulated).
//
// Inside for_lanes/ballot the lanes issue together as one warp instruction:
// the warp pays for the slowest lane, while same-address atomics of several
// lanes still serialize at their L2 unit.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>

#include <systemc>

#include "models/gpu/gpu.h"
#include "models/pcie/fabric.h"
#include "sim/algo/lanes.h"
#include "sim/algo/stages.h"
#include "sim/kernel/memory_space.h"

namespace gpunvme::platform {

// Receives each I/O's stage times (keyed by queue id and CID).
class StageSink {
 public:
  virtual ~StageSink() = default;
  virtual void stage(std::uint16_t qid, std::uint16_t cid, algo::Stage stage,
                     Picoseconds when) = 0;
};

struct WarpCounters {
  std::uint64_t polls = 0;            // loads a spinning warp would have issued
  Picoseconds wait_ps = 0;            // time spent waiting on memory
  std::uint64_t mmio_stores = 0;
  std::uint64_t fences = 0;
};

class SimWarp {
 public:
  SimWarp(gpu::Gpu& gpu, pcie::Fabric& fabric, MemorySpace& memory, StageSink& sink,
          WarpCounters& counters);

  // ---- time and stages
  Picoseconds clock() const;
  void stage(std::uint16_t qid, std::uint16_t cid, algo::Stage stage) {
    sink_.stage(qid, cid, stage, clock());
  }
  void stage_at(std::uint16_t qid, std::uint16_t cid, algo::Stage stage, Picoseconds when) {
    sink_.stage(qid, cid, stage, when);
  }

  // ---- lanes
  template <class F>
  void for_lanes(algo::LaneMask mask, F&& body) {
    begin_instruction();
    algo::for_each_lane(mask, body);
    end_instruction();
  }
  template <class F>
  algo::LaneMask ballot(algo::LaneMask mask, F&& predicate) {
    algo::LaneMask result = 0;
    begin_instruction();
    algo::for_each_lane(mask, [&](int lane) {
      if (predicate(lane)) result |= algo::LaneMask{1} << lane;
    });
    end_instruction();
    return result;
  }

  // ---- GPU memory
  std::uint32_t atomic_add_u32(std::uint64_t addr, std::uint32_t value);
  std::uint32_t atomic_cas_u32(std::uint64_t addr, std::uint32_t expected, std::uint32_t desired);
  std::uint32_t load_u32(std::uint64_t addr) { return load<std::uint32_t>(addr); }
  template <class T>
  T load(std::uint64_t addr) {
    charge(clock() + gpu_.costs().load_latency);
    return memory_.load<T>(addr);
  }
  void store_u32(std::uint64_t addr, std::uint32_t value) { store_bytes(addr, &value, 4); }
  void store_bytes(std::uint64_t addr, const void* data, std::size_t len);
  // Free reads for wait predicates: the polls themselves are accounted by
  // wait_until.
  std::uint32_t peek_u32(std::uint64_t addr) const { return memory_.load<std::uint32_t>(addr); }
  template <class T>
  T peek(std::uint64_t addr) const {
    return memory_.load<T>(addr);
  }

  // ---- ordering and devices
  void fence_gpu();
  void fence_system();
  void mmio_store_u32(std::uint64_t addr, std::uint32_t value);

  // ---- waiting: returns once `ready()` holds, re-checking it whenever a
  // write touches one of the (address, length) ranges.
  template <class Pred, class... Ranges>
  void wait_until(Pred&& ready, Ranges... ranges) {
    static_assert(sizeof...(Ranges) % 2 == 0, "ranges come as address, length pairs");
    if (ready()) return;
    const std::uint64_t flat[] = {static_cast<std::uint64_t>(ranges)...};
    block_until(std::function<bool()>(ready), flat, sizeof...(Ranges) / 2);
  }

 private:
  void begin_instruction();
  void end_instruction();
  void charge(Picoseconds done);
  void settle();  // waits until every charged operation has completed
  void block_until(std::function<bool()> ready, const std::uint64_t* ranges, std::size_t count);

  gpu::Gpu& gpu_;
  pcie::Fabric& fabric_;
  MemorySpace& memory_;
  StageSink& sink_;
  WarpCounters& counters_;
  int instruction_depth_ = 0;
  Picoseconds busy_until_ = 0;  // completion of the operations charged so far
  sc_core::sc_event wake_;
};

}  // namespace gpunvme::platform
