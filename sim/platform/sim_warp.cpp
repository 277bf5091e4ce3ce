#include "sim/platform/sim_warp.h"

#include <vector>

#include "sim/kernel/simulation.h"

namespace gpunvme::platform {

SimWarp::SimWarp(gpu::Gpu& gpu, pcie::Fabric& fabric, MemorySpace& memory, StageSink& sink,
                 WarpCounters& counters)
    : gpu_(gpu), fabric_(fabric), memory_(memory), sink_(sink), counters_(counters) {}

Picoseconds SimWarp::clock() const { return Simulation::now(); }

void SimWarp::begin_instruction() {
  if (instruction_depth_++ == 0) busy_until_ = std::max(busy_until_, clock());
}

void SimWarp::end_instruction() {
  if (--instruction_depth_ == 0) settle();
}

void SimWarp::charge(Picoseconds done) {
  busy_until_ = std::max(busy_until_, done);
  if (instruction_depth_ == 0) settle();
}

void SimWarp::settle() {
  const Picoseconds t = clock();
  if (busy_until_ > t) {
    Simulation::count_event();
    sc_core::wait(sc_core::sc_time(static_cast<double>(busy_until_ - t), sc_core::SC_PS));
  }
}

std::uint32_t SimWarp::atomic_add_u32(std::uint64_t addr, std::uint32_t value) {
  const auto old = memory_.load<std::uint32_t>(addr);
  memory_.store<std::uint32_t>(addr, old + value);
  charge(gpu_.book_atomic(addr, clock()));
  return old;
}

std::uint32_t SimWarp::atomic_cas_u32(std::uint64_t addr, std::uint32_t expected,
                                      std::uint32_t desired) {
  const auto old = memory_.load<std::uint32_t>(addr);
  if (old == expected) memory_.store<std::uint32_t>(addr, desired);
  charge(gpu_.book_atomic(addr, clock()));
  return old;
}

void SimWarp::store_bytes(std::uint64_t addr, const void* data, std::size_t len) {
  memory_.write(addr, data, len);
  // One store instruction moves up to 16 B per lane.
  const auto instructions = static_cast<Picoseconds>((len + 15) / 16);
  charge(clock() + instructions * gpu_.costs().store_issue);
}

void SimWarp::fence_gpu() {
  ++counters_.fences;
  charge(clock() + gpu_.costs().fence_gpu);
}

void SimWarp::fence_system() {
  ++counters_.fences;
  charge(clock() + gpu_.costs().fence_system);
}

void SimWarp::mmio_store_u32(std::uint64_t addr, std::uint32_t value) {
  ++counters_.mmio_stores;
  fabric_.write(gpu_.node(), addr, 4, &value, nullptr);
  charge(clock() + gpu_.costs().mmio_store_issue);
}

void SimWarp::block_until(std::function<bool()> ready, const std::uint64_t* ranges,
                          std::size_t count) {
  settle();
  const Picoseconds start = clock();
  std::vector<MemorySpace::WatchId> ids;
  bool satisfied = false;
  std::function<void()> arm;
  // Each watch fires once; a write that does not satisfy the predicate
  // re-arms all of them.
  arm = [&] {
    for (std::size_t i = 0; i < count; ++i) {
      ids.push_back(memory_.watch(ranges[2 * i], ranges[2 * i + 1], [&] {
        for (auto id : ids) memory_.cancel(id);
        ids.clear();
        if (ready()) {
          satisfied = true;
          // The spinning warp notices on its next poll: one load later.
          wake_.notify(sc_core::sc_time(static_cast<double>(gpu_.costs().load_latency),
                                        sc_core::SC_PS));
        } else {
          arm();
        }
      }));
    }
  };
  arm();
  while (!satisfied) {
    Simulation::count_event();
    sc_core::wait(wake_);
  }
  const Picoseconds waited = clock() - start;
  counters_.wait_ps += waited;
  counters_.polls += waited / std::max<Picoseconds>(1, gpu_.costs().load_latency) + 1;
  // The predicate was true at the write; re-check after the poll's latency,
  // as the real loop would (another warp may have taken what we waited for).
  if (!ready()) block_until(std::move(ready), ranges, count);
}

}  // namespace gpunvme::platform
