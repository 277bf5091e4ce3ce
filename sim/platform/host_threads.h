// The host-thread platform: each warp of an algorithm runs on its own OS
// thread, its 32 lanes one after another inside for_lanes/ballot, against a
// flat arena of host memory that stands for GPU memory. Every access to the
// arena is atomic (relaxed word copies for bulk data, acquire loads and
// release stores for 32-bit words, acq_rel read-modify-writes, seq_cst
// fences), so concurrent warps and the software NVMe target
// (sim/platform/soft_target.h) really race, as GPU warps and an SSD do, and
// ThreadSanitizer checks the platform and the target themselves.
//
// Used by the real-concurrency tests (tests/platform/); costs nothing and
// models no time. clock() reads steady_clock in picoseconds.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <thread>
#include <type_traits>

#include "sim/algo/lanes.h"
#include "sim/algo/stages.h"

namespace gpunvme::platform {

// Zeroed host memory addressed like device memory: [base, base + bytes).
class HostArena {
 public:
  HostArena(std::uint64_t base, std::size_t bytes);
  HostArena(const HostArena&) = delete;
  HostArena& operator=(const HostArena&) = delete;

  std::uint64_t base() const { return base_; }
  std::size_t size() const { return bytes_; }
  bool contains(std::uint64_t addr, std::uint64_t len) const {
    return addr >= base_ && len <= bytes_ && addr - base_ <= bytes_ - len;
  }
  // Carves an aligned, zeroed range (not thread-safe: set-up only).
  std::uint64_t allocate(std::uint64_t bytes, std::uint64_t alignment = 128);
  std::uint8_t* at(std::uint64_t addr, std::uint64_t len);

  // Atomic accessors, usable from any thread.
  void read(std::uint64_t addr, void* data, std::size_t len);
  void write(std::uint64_t addr, const void* data, std::size_t len);
  std::uint32_t load_acquire(std::uint64_t addr);
  void store_release(std::uint64_t addr, std::uint32_t value);

 private:
  std::uint64_t base_;
  std::size_t bytes_;
  std::unique_ptr<std::uint64_t[]> words_;  // 8-byte aligned storage
  std::uint64_t next_;
};

// Where MMIO stores go (the software target's doorbell registers).
class MmioTarget {
 public:
  virtual ~MmioTarget() = default;
  virtual void mmio_write(std::uint64_t addr, std::uint32_t value) = 0;
};

// Stage records of the host platform (optional; thread-safe when set).
class HostStageSink {
 public:
  virtual ~HostStageSink() = default;
  virtual void stage(std::uint16_t queue, std::uint16_t cid, algo::Stage stage,
                     algo::Timestamp when) = 0;
};

struct HostWarpCounters {
  std::uint64_t atomics = 0;
  std::uint64_t fences = 0;
  std::uint64_t mmio_stores = 0;
  std::uint64_t waits = 0;
};

class HostWarp {
 public:
  HostWarp(HostArena& arena, MmioTarget& mmio, HostStageSink* sink = nullptr)
      : arena_(arena), mmio_(mmio), sink_(sink) {}

  algo::Timestamp clock() const {
    return static_cast<algo::Timestamp>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                            std::chrono::steady_clock::now().time_since_epoch())
                                            .count()) *
           1000u;
  }
  void stage(std::uint16_t q, std::uint16_t cid, algo::Stage s) {
    if (sink_ != nullptr) sink_->stage(q, cid, s, clock());
  }
  void stage_at(std::uint16_t q, std::uint16_t cid, algo::Stage s, algo::Timestamp when) {
    if (sink_ != nullptr) sink_->stage(q, cid, s, when);
  }

  template <class F>
  void for_lanes(algo::LaneMask mask, F&& body) {
    algo::for_each_lane(mask, body);
  }
  template <class F>
  algo::LaneMask ballot(algo::LaneMask mask, F&& predicate) {
    algo::LaneMask result = 0;
    algo::for_each_lane(mask, [&](int lane) {
      if (predicate(lane)) result |= algo::LaneMask{1} << lane;
    });
    return result;
  }

  std::uint32_t atomic_add_u32(std::uint64_t addr, std::uint32_t value) {
    ++counters_.atomics;
    return __atomic_fetch_add(word(addr), value, __ATOMIC_ACQ_REL);
  }
  std::uint32_t atomic_cas_u32(std::uint64_t addr, std::uint32_t expected, std::uint32_t desired) {
    ++counters_.atomics;
    __atomic_compare_exchange_n(word(addr), &expected, desired, false, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
    return expected;
  }
  std::uint32_t atomic_or_u32(std::uint64_t addr, std::uint32_t bits) {
    ++counters_.atomics;
    return __atomic_fetch_or(word(addr), bits, __ATOMIC_ACQ_REL);
  }
  std::uint32_t atomic_and_u32(std::uint64_t addr, std::uint32_t bits) {
    ++counters_.atomics;
    return __atomic_fetch_and(word(addr), bits, __ATOMIC_ACQ_REL);
  }
  std::uint32_t load_u32(std::uint64_t addr) { return arena_.load_acquire(addr); }
  template <class T>
  T load(std::uint64_t addr) {
    static_assert(std::is_trivially_copyable_v<T>, "loads copy plain data");
    T value;
    arena_.read(addr, &value, sizeof(T));
    return value;
  }
  void store_u32(std::uint64_t addr, std::uint32_t value) { arena_.store_release(addr, value); }
  void store_bytes(std::uint64_t addr, const void* data, std::size_t len) {
    arena_.write(addr, data, len);
  }
  std::uint32_t peek_u32(std::uint64_t addr) { return arena_.load_acquire(addr); }
  template <class T>
  T peek(std::uint64_t addr) {
    return load<T>(addr);
  }

  void fence_block() { fence(); }
  void fence_gpu() { fence(); }
  void fence_system() { fence(); }
  void mmio_store_u32(std::uint64_t addr, std::uint32_t value) {
    ++counters_.mmio_stores;
    mmio_.mmio_write(addr, value);
  }
  void nanosleep(std::uint32_t) { std::this_thread::yield(); }

  template <class Pred, class... Ranges>
  void wait_until(Pred&& ready, Ranges...) {
    spin(ready, 0);
  }
  template <class Pred>
  void wait_until_any(Pred&& ready, const std::uint64_t*, std::size_t) {
    spin(ready, 0);
  }
  template <class Pred>
  bool wait_until_deadline(Pred&& ready, algo::Timestamp deadline, const std::uint64_t*,
                           std::size_t) {
    return spin(ready, deadline == 0 ? 1 : deadline);
  }

  const HostWarpCounters& counters() const { return counters_; }

 private:
  std::uint32_t* word(std::uint64_t addr) {
    if (addr % 4 != 0) throw std::logic_error("unaligned 32-bit atomic");
    return reinterpret_cast<std::uint32_t*>(arena_.at(addr, 4));
  }
  void fence() {
    ++counters_.fences;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
  }
  template <class Pred>
  bool spin(Pred& ready, algo::Timestamp deadline) {
    ++counters_.waits;
    for (;;) {
      if (ready()) return true;
      if (deadline != 0 && clock() >= deadline) return false;
      std::this_thread::yield();
    }
  }

  HostArena& arena_;
  MmioTarget& mmio_;
  HostStageSink* sink_;
  HostWarpCounters counters_;
};

}  // namespace gpunvme::platform
