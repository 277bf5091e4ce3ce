// The host-thread platform: each warp of an algorithm runs on its own OS
// thread, its 32 lanes one after another inside for_lanes/ballot, against a
// flat arena of host memory that stands for GPU memory. Every access to the
// arena is atomic (relaxed word copies for bulk data, acquire loads and
// release stores for 32-bit words, acq_rel read-modify-writes, seq_cst
// fences), so concurrent warps and the software NVMe target
// (sim/core/platform/soft_target.h) really race, as GPU warps and an SSD do, and
// ThreadSanitizer checks the platform and the target themselves.
//
// Relaxed ordering (HostWarpOptions::relaxed): loads, stores and atomics
// are relaxed, and a warp's plain stores sit in a store buffer of its own
// until a GPU- or system-scope fence drains it (in reverse program order:
// stores to different locations not separated by a fence may become visible
// in any order; two stores to one location stay in program order). MMIO
// stores and atomics bypass the buffer, as posted PCIe writes and L2 atomics
// are not ordered behind earlier stores without a fence. So an algorithm
// that, say, rings a doorbell without fencing its SQE first lets the target
// fetch a stale entry, and the tests see it; with acquire/release accesses
// (the default) x86 would hide such a bug. The warp's own loads see its
// buffered stores (per-location coherence), and a warp that has polled in
// vain for a while drains its buffer, as stores become visible eventually on
// hardware. "A while" is bounded in wall time as well as in polls: on a
// loaded machine one yield can cost a whole scheduler slice, and a bound in
// polls alone would hold a fence-less store back for seconds. Loads are not
// reordered: the mode exposes missing store-side fences, not missing acquire
// fences.
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
#include <vector>

#include "sim/core/algo/lanes.h"
#include "sim/core/algo/stages.h"

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
  virtual void stage(std::uint16_t queue, std::uint32_t cid, algo::Stage stage,
                     algo::Timestamp when) = 0;
};

struct HostWarpCounters {
  std::uint64_t atomics = 0;
  std::uint64_t fences = 0;
  std::uint64_t mmio_stores = 0;
  std::uint64_t waits = 0;
};

struct HostWarpOptions {
  bool relaxed = false;  // relaxed accesses and a store buffer drained by fences (above)
  // Failed polls of one wait, or wall time in it, after which a relaxed
  // warp drains its store buffer anyway (eventual visibility; keeps a
  // fence-less release store from blocking other warps forever), and after
  // which a waiter stops yielding and sleeps between polls.
  std::uint32_t drain_after_polls = 64;
  std::chrono::microseconds drain_after{50};
  // Fault injection for the tests that prove relaxed mode exposes a missing
  // fence: GPU and system fences do nothing.
  bool skip_fences = false;
};

class HostWarp {
 public:
  HostWarp(HostArena& arena, MmioTarget& mmio, HostStageSink* sink = nullptr,
           HostWarpOptions options = {})
      : arena_(arena), mmio_(mmio), sink_(sink), options_(options) {}
  ~HostWarp() { drain(); }
  HostWarp(const HostWarp&) = delete;
  HostWarp& operator=(const HostWarp&) = delete;

  algo::Timestamp clock() const {
    return static_cast<algo::Timestamp>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                            std::chrono::steady_clock::now().time_since_epoch())
                                            .count()) *
           1000u;
  }
  void stage(std::uint16_t q, std::uint32_t cid, algo::Stage s) {
    if (sink_ != nullptr) sink_->stage(q, cid, s, clock());
  }
  void stage_at(std::uint16_t q, std::uint32_t cid, algo::Stage s, algo::Timestamp when) {
    if (sink_ != nullptr) sink_->stage(q, cid, s, when);
  }

  template <class F>
  void for_lanes(algo::LaneMask mask, F&& body) {
    algo::visit_lanes(mask, body);
  }
  template <class F>
  algo::LaneMask ballot(algo::LaneMask mask, F&& predicate) {
    algo::LaneMask result = 0;
    algo::visit_lanes(mask, [&](int lane) {
      if (predicate(lane)) result |= algo::LaneMask{1} << lane;
    });
    return result;
  }

  std::uint32_t atomic_add_u32(std::uint64_t addr, std::uint32_t value) {
    before_atomic(addr);
    return __atomic_fetch_add(word(addr), value, rmw_order());
  }
  std::uint32_t atomic_cas_u32(std::uint64_t addr, std::uint32_t expected, std::uint32_t desired) {
    before_atomic(addr);
    __atomic_compare_exchange_n(word(addr), &expected, desired, false, rmw_order(), load_order());
    return expected;
  }
  std::uint32_t atomic_or_u32(std::uint64_t addr, std::uint32_t bits) {
    before_atomic(addr);
    return __atomic_fetch_or(word(addr), bits, rmw_order());
  }
  std::uint32_t atomic_and_u32(std::uint64_t addr, std::uint32_t bits) {
    before_atomic(addr);
    return __atomic_fetch_and(word(addr), bits, rmw_order());
  }
  std::uint32_t load_u32(std::uint64_t addr) {
    forward(addr, 4);
    return __atomic_load_n(word(addr), load_order());
  }
  template <class T>
  T load(std::uint64_t addr) {
    static_assert(std::is_trivially_copyable_v<T>, "loads copy plain data");
    forward(addr, sizeof(T));
    T value;
    arena_.read(addr, &value, sizeof(T));
    return value;
  }
  void store_u32(std::uint64_t addr, std::uint32_t value) {
    if (options_.relaxed) {
      buffer(addr, &value, 4);
    } else {
      arena_.store_release(addr, value);
    }
  }
  void store_bytes(std::uint64_t addr, const void* data, std::size_t len) {
    if (options_.relaxed) {
      buffer(addr, data, len);
    } else {
      arena_.write(addr, data, len);
    }
  }
  bool recording() const { return sink_ != nullptr; }
  void lane_loop(std::uint32_t) {}                       // models no time
  void turn_pass() {}                                    // models no time
  void first_lane_scan(std::uint32_t) {}                 // models no time
  bool turn_run_breaks(std::uint64_t) { return false; }  // models no breaks
  std::uint32_t observe_u32(std::uint64_t addr) { return load_u32(addr); }
  // A readiness predicate evaluated once: its loads are plain loads, as in
  // a wait.
  template <class Pred>
  auto check(Pred&& ready) {
    return ready();
  }

  // Each host warp stands for a block of its own: a block-scope fence
  // orders nothing another warp can see.
  void fence_block() {
    ++counters_.fences;
    if (!options_.relaxed) __atomic_thread_fence(__ATOMIC_SEQ_CST);
  }
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
  // Stores still in the relaxed store buffer (0 in the default mode).
  std::size_t buffered_stores() const { return buffer_.size(); }

 private:
  struct BufferedStore {
    std::uint64_t addr;
    std::vector<std::uint8_t> bytes;
  };
  int load_order() const { return options_.relaxed ? __ATOMIC_RELAXED : __ATOMIC_ACQUIRE; }
  int rmw_order() const { return options_.relaxed ? __ATOMIC_RELAXED : __ATOMIC_ACQ_REL; }
  void buffer(std::uint64_t addr, const void* data, std::size_t len) {
    arena_.at(addr, len);  // range check now, as a direct store would
    // Per-location coherence: an older store to the same bytes becomes
    // visible now (early visibility is always allowed), so the buffer never
    // holds two stores to one location and drain() may write in any order
    // without a newer value being overwritten by an older one.
    forward(addr, len);
    const auto* in = static_cast<const std::uint8_t*>(data);
    buffer_.push_back({addr, std::vector<std::uint8_t>(in, in + len)});
  }
  // Makes buffered stores that overlap [addr, addr + len) visible, oldest
  // first, before the warp itself accesses that range.
  void forward(std::uint64_t addr, std::size_t len) {
    if (buffer_.empty()) return;
    std::size_t kept = 0;
    for (std::size_t i = 0; i < buffer_.size(); ++i) {
      BufferedStore& b = buffer_[i];
      if (b.addr < addr + len && addr < b.addr + b.bytes.size()) {
        arena_.write(b.addr, b.bytes.data(), b.bytes.size());
      } else {
        if (kept != i) buffer_[kept] = std::move(b);
        ++kept;
      }
    }
    buffer_.resize(kept);
  }
  void before_atomic(std::uint64_t addr) {
    ++counters_.atomics;
    forward(addr, 4);
  }
  // Newest first: nothing orders stores to different locations between two
  // fences (buffer() keeps at most one store per location).
  void drain() {
    for (auto it = buffer_.rbegin(); it != buffer_.rend(); ++it) {
      arena_.write(it->addr, it->bytes.data(), it->bytes.size());
    }
    buffer_.clear();
  }

  std::uint32_t* word(std::uint64_t addr) {
    if (addr % 4 != 0) throw std::logic_error("unaligned 32-bit atomic");
    return reinterpret_cast<std::uint32_t*>(arena_.at(addr, 4));
  }
  void fence() {
    ++counters_.fences;
    if (options_.skip_fences) return;
    drain();
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
  }
  template <class Pred>
  bool spin(Pred& ready, algo::Timestamp deadline) {
    ++counters_.waits;
    const auto started = std::chrono::steady_clock::now();
    bool long_wait = false;
    for (std::uint32_t polls = 0;; ++polls) {
      if (ready()) return true;
      if (deadline != 0 && clock() >= deadline) return false;
      if (!long_wait) {
        long_wait = polls >= options_.drain_after_polls ||
                    std::chrono::steady_clock::now() - started >= options_.drain_after;
        if (!long_wait) {
          std::this_thread::yield();
          continue;
        }
        drain();
      }
      // A long wait backs off (as __nanosleep does): with 16-32 warp
      // threads on a few cores, yielding alone starves the target's threads
      // that the waiters are waiting for, and a yield against a busy
      // process costs a whole scheduler slice.
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  HostArena& arena_;
  MmioTarget& mmio_;
  HostStageSink* sink_;
  HostWarpOptions options_;
  HostWarpCounters counters_;
  std::vector<BufferedStore> buffer_;
};

}  // namespace gpunvme::platform
