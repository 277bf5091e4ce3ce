// The scripted platform: warps of an algorithm run one platform operation at
// a time, in an order the test chooses, against flat memory and an NVMe
// target the test drives by hand. No SystemC, no timing: it exists to walk
// the algorithms through chosen interleavings (a lock handed over at the
// wrong moment, a completion posted between two loads) deterministically.
//
// Each warp runs on its own thread, but only the one holding the baton runs:
// a warp stops before each memory operation, fence, sleep or wait (its
// "next" operation, which the test can inspect) and runs on only when the
// test steps it. So the interleaving is exactly the one the test scripts,
// and the same script gives the same run every time. Memory is sequentially
// consistent (one warp runs at a time): missing fences are the host-thread
// platform's business (sim/core/platform/host_threads.h, relaxed mode).
//
// - Inside for_lanes/ballot the lanes run one after another, each memory
//   operation a step of its own (other warps may run between two lanes').
// - A wait is a step: stepping a warp that waits evaluates its predicate
//   once, in one piece (its loads are not steps); the warp is `blocked` while
//   the last evaluation was false. check() evaluates a predicate as the
//   warp's own code: its loads are steps.
// - clock() counts the steps the machine has run; stage records are off.
// - MMIO stores go to ScriptedTarget, which checks the queue rules from the
//   controller's side (doorbells within the ring, no CQ overflow, no CID
//   twice in flight on a queue, every command completed once).
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "sim/core/algo/lanes.h"
#include "sim/core/algo/queue_pair.h"
#include "sim/core/algo/stages.h"
#include "sim/core/protocol/nvme_entries.h"

namespace gpunvme::platform {

// What a parked warp does when it is stepped next.
enum class ScriptedOp : std::uint8_t {
  kStart,  // has not run yet
  kAtomic,
  kLoad,
  kStore,
  kMmio,
  kFence,
  kSleep,
  kWait,  // evaluates its wait predicate
  kDone,  // returned
};

struct ScriptedStep {
  ScriptedOp op = ScriptedOp::kStart;
  std::uint64_t addr = 0;  // the address of a memory operation (0 otherwise)
};

class ScriptedMachine;

// The platform object handed to a warp's code (the interface of
// sim/core/algo/lanes.h).
class ScriptedWarp {
 public:
  ScriptedWarp(ScriptedMachine& machine, int id) : machine_(machine), id_(id) {}
  ScriptedWarp(const ScriptedWarp&) = delete;
  ScriptedWarp& operator=(const ScriptedWarp&) = delete;

  int id() const { return id_; }
  algo::Timestamp clock() const;
  void stage(std::uint16_t, std::uint32_t, algo::Stage) {}
  void stage_at(std::uint16_t, std::uint32_t, algo::Stage, algo::Timestamp) {}
  static constexpr bool recording() { return false; }
  std::uint32_t observe_u32(std::uint64_t addr) { return read<std::uint32_t>(addr); }
  void lane_loop(std::uint32_t) {}
  void turn_pass() {}
  void first_lane_scan(std::uint32_t) {}
  bool turn_run_breaks(std::uint64_t) { return false; }

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
    return rmw(addr, [&](std::uint32_t old) { return old + value; });
  }
  std::uint32_t atomic_cas_u32(std::uint64_t addr, std::uint32_t expected, std::uint32_t desired) {
    return rmw(addr, [&](std::uint32_t old) { return old == expected ? desired : old; });
  }
  std::uint32_t atomic_or_u32(std::uint64_t addr, std::uint32_t bits) {
    return rmw(addr, [&](std::uint32_t old) { return old | bits; });
  }
  std::uint32_t atomic_and_u32(std::uint64_t addr, std::uint32_t bits) {
    return rmw(addr, [&](std::uint32_t old) { return old & bits; });
  }
  std::uint32_t load_u32(std::uint64_t addr) { return load<std::uint32_t>(addr); }
  template <class T>
  T load(std::uint64_t addr) {
    static_assert(std::is_trivially_copyable_v<T>, "loads copy plain data");
    if (!in_wait_) park({ScriptedOp::kLoad, addr});
    return read<T>(addr);
  }
  void store_u32(std::uint64_t addr, std::uint32_t value) { store_bytes(addr, &value, 4); }
  void store_bytes(std::uint64_t addr, const void* data, std::size_t len);
  void mmio_store_u32(std::uint64_t addr, std::uint32_t value);
  void fence_block() { park({ScriptedOp::kFence, 0}); }
  void fence_gpu() { park({ScriptedOp::kFence, 0}); }
  void fence_system() { park({ScriptedOp::kFence, 0}); }
  void nanosleep(std::uint32_t) { park({ScriptedOp::kSleep, 0}); }

  template <class Pred>
  auto check(Pred&& ready) {
    return ready();
  }
  template <class Pred, class... Ranges>
  void wait_until(Pred&& ready, Ranges...) {
    wait(ready, 0);
  }
  template <class Pred>
  void wait_until_any(Pred&& ready, const std::uint64_t*, std::size_t) {
    wait(ready, 0);
  }
  template <class Pred>
  bool wait_until_deadline(Pred&& ready, algo::Timestamp deadline, const std::uint64_t*,
                           std::size_t) {
    return wait(ready, deadline == 0 ? 1 : deadline);
  }

 private:
  friend class ScriptedMachine;
  template <class T>
  T read(std::uint64_t addr);
  template <class F>
  std::uint32_t rmw(std::uint64_t addr, F&& update) {
    park({ScriptedOp::kAtomic, addr});
    const auto old = read<std::uint32_t>(addr);
    const std::uint32_t value = update(old);
    write(addr, &value, 4);
    return old;
  }
  void write(std::uint64_t addr, const void* data, std::size_t len);
  // Evaluates `ready` once per step until it holds (or the clock reaches
  // `deadline`, when non-zero).
  template <class Pred>
  bool wait(Pred& ready, algo::Timestamp deadline);
  // Hands the baton back and waits for the next step.
  void park(ScriptedStep next);

  ScriptedMachine& machine_;
  int id_;
  bool in_wait_ = false;
};

// Flat memory, the warps and the baton.
class ScriptedMachine {
 public:
  ScriptedMachine(std::uint64_t base, std::size_t bytes)
      : base_(base), memory_(bytes), next_(base) {}
  ~ScriptedMachine() { abandon(); }
  ScriptedMachine(const ScriptedMachine&) = delete;
  ScriptedMachine& operator=(const ScriptedMachine&) = delete;

  // ---- memory (set-up and inspection by the test, between steps)
  std::uint64_t allocate(std::uint64_t bytes, std::uint64_t alignment = 128) {
    const std::uint64_t start = (next_ + alignment - 1) / alignment * alignment;
    if (start + bytes > base_ + memory_.size()) throw std::length_error("scripted memory full");
    next_ = start + bytes;
    return start;
  }
  std::uint8_t* at(std::uint64_t addr, std::uint64_t len) {
    if (addr < base_ || len > memory_.size() || addr - base_ > memory_.size() - len) {
      return nullptr;
    }
    return memory_.data() + (addr - base_);
  }
  template <class T>
  T get(std::uint64_t addr) {
    T value{};
    if (std::uint8_t* p = at(addr, sizeof(T))) std::memcpy(&value, p, sizeof(T));
    return value;
  }
  template <class T>
  void put(std::uint64_t addr, const T& value) {
    if (std::uint8_t* p = at(addr, sizeof(T))) std::memcpy(p, &value, sizeof(T));
  }
  // Where MMIO stores go.
  void on_mmio(std::function<void(std::uint64_t, std::uint32_t)> handler) {
    mmio_ = std::move(handler);
  }

  // ---- warps
  // Starts a warp running `body`, parked before its first operation.
  int spawn(std::function<void(ScriptedWarp&)> body) {
    const int id = static_cast<int>(warps_.size());
    warps_.push_back(std::make_unique<Slot>(*this, id));
    Slot& slot = *warps_.back();
    slot.body = std::move(body);
    slot.thread = std::thread([this, &slot] { main(slot); });
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return !slot.running; });
    return id;
  }
  int warps() const { return static_cast<int>(warps_.size()); }
  // What the warp does when stepped next.
  ScriptedStep next(int warp) const { return warps_.at(warp)->next; }
  bool done(int warp) const { return warps_.at(warp)->next.op == ScriptedOp::kDone; }
  // Parked at a wait whose predicate was false when last evaluated.
  bool blocked(int warp) const { return warps_.at(warp)->blocked; }
  bool all_done() const {
    for (int w = 0; w < warps(); ++w) {
      if (!done(w)) return false;
    }
    return true;
  }
  std::uint64_t steps() const { return steps_; }

  // Runs the warp's next operation and on to the operation after it.
  // Returns false when the warp had already returned.
  bool step(int warp) {
    Slot& slot = *warps_.at(warp);
    if (slot.next.op == ScriptedOp::kDone) return false;
    std::unique_lock<std::mutex> lock(mutex_);
    ++steps_;
    slot.running = true;
    changed_.notify_all();
    changed_.wait(lock, [&] { return !slot.running; });
    return true;
  }
  // Steps the warp until `stop(next step)` holds before a step, the warp
  // returns, it re-evaluated its wait and still waits, or `limit` steps ran.
  // Returns whether `stop` held.
  template <class Stop>
  bool run_until(int warp, Stop&& stop, std::uint64_t limit = 50000) {
    for (std::uint64_t i = 0; i < limit; ++i) {
      if (stop(next(warp))) return true;
      if (done(warp)) return false;
      const bool was_blocked = blocked(warp);
      step(warp);
      if (was_blocked && blocked(warp)) return false;
    }
    return false;
  }
  // Steps the warp until it waits in vain (re-evaluated, still false) or
  // returns.
  void run(int warp, std::uint64_t limit = 50000) {
    run_until(
        warp, [](const ScriptedStep&) { return false; }, limit);
  }
  // Steps every warp in turn, `quantum` steps each, round after round,
  // until every warp has returned or blocked with nothing changing (each
  // blocked warp re-evaluated its wait once without waking). `order` gives
  // the warps' order in a round. Returns whether every warp returned.
  bool run_all(const std::vector<int>& order, std::uint64_t quantum = 1,
               std::uint64_t limit = 200000) {
    for (std::uint64_t spent = 0; spent < limit;) {
      if (all_done()) return true;
      bool moved = false;
      for (int w : order) {
        for (std::uint64_t i = 0; i < quantum && !done(w); ++i, ++spent) {
          const bool was_blocked = blocked(w);
          step(w);
          if (!(was_blocked && blocked(w))) moved = true;
          if (blocked(w)) break;
        }
      }
      if (!moved && !idle_hook_()) return all_done();
    }
    return all_done();
  }
  // Called by run_all when every live warp is blocked: may make progress
  // for them (a target posting completions); returns whether it did.
  void on_idle(std::function<bool()> hook) { idle_hook_ = std::move(hook); }

  // Errors found by the platform (a bad address) and the warps (a wait
  // abandoned at tear-down).
  const std::vector<std::string>& errors() const { return errors_; }
  void error(std::string message) { errors_.push_back(std::move(message)); }

 private:
  friend class ScriptedWarp;
  // Thrown into a parked warp at tear-down to unwind its stack (only a
  // script that leaves warps waiting, which a test reports as a failure).
  struct Abandoned {};
  struct Slot {
    Slot(ScriptedMachine& machine, int id) : platform(machine, id) {}
    ScriptedWarp platform;
    std::function<void(ScriptedWarp&)> body;
    std::thread thread;
    ScriptedStep next;
    bool running = true;  // holds the baton
    bool blocked = false;
  };

  void main(Slot& slot) {
    try {
      slot.platform.park({ScriptedOp::kStart, 0});
      slot.body(slot.platform);
    } catch (const Abandoned&) {
    } catch (const std::exception& e) {
      error(std::string("warp ") + std::to_string(slot.platform.id()) + ": " + e.what());
    }
    std::lock_guard<std::mutex> lock(mutex_);
    slot.next = {ScriptedOp::kDone, 0};
    slot.blocked = false;
    slot.running = false;
    changed_.notify_all();
  }
  // On the warp's thread.
  void park(int id, ScriptedStep next) {
    Slot& slot = *warps_[id];
    std::unique_lock<std::mutex> lock(mutex_);
    slot.next = next;
    slot.running = false;
    changed_.notify_all();
    changed_.wait(lock, [&] { return slot.running || abandoning_; });
    if (abandoning_) throw Abandoned{};
  }
  void abandon() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      abandoning_ = true;
      changed_.notify_all();
    }
    for (auto& slot : warps_) {
      if (slot->thread.joinable()) slot->thread.join();
    }
  }

  std::uint64_t base_;
  std::vector<std::uint8_t> memory_;
  std::uint64_t next_;
  std::function<void(std::uint64_t, std::uint32_t)> mmio_;
  std::function<bool()> idle_hook_ = [] { return false; };
  std::vector<std::unique_ptr<Slot>> warps_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool abandoning_ = false;
  std::uint64_t steps_ = 0;
  std::vector<std::string> errors_;
};

inline algo::Timestamp ScriptedWarp::clock() const { return machine_.steps(); }

template <class T>
T ScriptedWarp::read(std::uint64_t addr) {
  const std::uint8_t* p = machine_.at(addr, sizeof(T));
  if (p == nullptr) throw std::out_of_range("load outside scripted memory");
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

inline void ScriptedWarp::write(std::uint64_t addr, const void* data, std::size_t len) {
  std::uint8_t* p = machine_.at(addr, len);
  if (p == nullptr) throw std::out_of_range("store outside scripted memory");
  std::memcpy(p, data, len);
}

inline void ScriptedWarp::store_bytes(std::uint64_t addr, const void* data, std::size_t len) {
  park({ScriptedOp::kStore, addr});
  write(addr, data, len);
}

inline void ScriptedWarp::mmio_store_u32(std::uint64_t addr, std::uint32_t value) {
  park({ScriptedOp::kMmio, addr});
  if (machine_.mmio_) machine_.mmio_(addr, value);
}

template <class Pred>
bool ScriptedWarp::wait(Pred& ready, algo::Timestamp deadline) {
  auto& slot = *machine_.warps_[id_];
  for (;;) {
    park({ScriptedOp::kWait, 0});
    in_wait_ = true;
    const bool holds = ready();
    in_wait_ = false;
    {
      std::lock_guard<std::mutex> lock(machine_.mutex_);
      slot.blocked = !holds;
    }
    if (holds) return true;
    if (deadline != 0 && clock() >= deadline) {
      std::lock_guard<std::mutex> lock(machine_.mutex_);
      slot.blocked = false;
      return false;
    }
  }
}

inline void ScriptedWarp::park(ScriptedStep next) { machine_.park(id_, next); }

// The controller side of NVMe queue pairs in scripted memory, driven by the
// test: it takes doorbell writes, fetches what the SQ tail doorbell covers
// when told, and posts completions when told. It records every rule a
// command or doorbell breaks in errors().
class ScriptedTarget {
 public:
  struct Command {
    std::uint16_t cid = 0;
    std::uint8_t opcode = 0;
    std::uint64_t slba = 0;
    std::uint64_t prp1 = 0;
  };
  struct Queue {
    algo::QueuePair pair;
    std::uint32_t sq_tail = 0;      // last SQ tail doorbell (ring index)
    std::uint64_t sq_fetched = 0;   // entries fetched (monotonic)
    std::uint64_t sq_rung = 0;      // entries the SQ tail doorbell covers (monotonic)
    std::uint64_t cq_posted = 0;    // completions posted (monotonic)
    std::uint64_t cq_released = 0;  // CQ entries the head doorbell gave back (monotonic)
    std::uint64_t doorbells = 0;    // SQ tail doorbell writes
    std::deque<Command> fetched;    // fetched, not completed, in fetch order
  };

  explicit ScriptedTarget(ScriptedMachine& machine) : machine_(machine) {
    machine_.on_mmio([this](std::uint64_t addr, std::uint32_t value) { doorbell(addr, value); });
  }

  std::size_t add_queue(const algo::QueuePair& pair) {
    Queue q;
    q.pair = pair;
    queues_.push_back(q);
    return queues_.size() - 1;
  }
  Queue& queue(std::size_t index) { return queues_.at(index); }
  std::size_t queue_count() const { return queues_.size(); }

  // Fetches every entry the SQ tail doorbell covers and not yet fetched.
  std::vector<Command> fetch(std::size_t index) {
    Queue& q = queues_.at(index);
    std::vector<Command> got;
    for (; q.sq_fetched < q.sq_rung; ++q.sq_fetched) {
      const auto slot = static_cast<std::uint32_t>(q.sq_fetched % q.pair.entries);
      const auto sqe = machine_.get<nvme::SubmissionEntry>(q.pair.sq_base + std::uint64_t{slot} *
                                                                                nvme::kSqEntrySize);
      Command c;
      c.cid = sqe.cid();
      c.opcode = sqe.opcode();
      c.slba = std::uint64_t{sqe.cdw10} | (std::uint64_t{sqe.cdw11} << 32);
      c.prp1 = sqe.prp1;
      for (const Command& other : q.fetched) {
        if (other.cid == c.cid) {
          error(index, "CID " + std::to_string(c.cid) + " fetched while still in flight");
        }
      }
      q.fetched.push_back(c);
      got.push_back(c);
    }
    return got;
  }
  // Whether the CQ has room for one more entry (at most entries - 1 between
  // the released head and the tail).
  bool cq_has_room(std::size_t index) const {
    const Queue& q = queues_.at(index);
    return q.cq_posted - q.cq_released < q.pair.entries - 1u;
  }
  // Posts the completion of fetched command `cid` with `status` (the NVMe
  // status field without the phase bit). Returns false, posting nothing,
  // when the CQ is full or no such command is in flight.
  bool complete(std::size_t index, std::uint16_t cid, std::uint16_t status) {
    Queue& q = queues_.at(index);
    auto it = std::find_if(q.fetched.begin(), q.fetched.end(),
                           [&](const Command& c) { return c.cid == cid; });
    if (it == q.fetched.end() || !cq_has_room(index)) return false;
    q.fetched.erase(it);
    nvme::CompletionEntry e{};
    e.sqhd = static_cast<std::uint16_t>(q.sq_fetched % q.pair.entries);
    e.sqid = q.pair.qid;
    e.cid = cid;
    const std::uint16_t phase = ((q.cq_posted / q.pair.entries) & 1u) == 0 ? 1u : 0u;
    e.status_field = static_cast<std::uint16_t>((status << 1) | phase);
    machine_.put(q.pair.cq_base + (q.cq_posted % q.pair.entries) * nvme::kCqEntrySize, e);
    ++q.cq_posted;
    return true;
  }
  std::vector<std::string> errors() const { return errors_; }

 private:
  void error(std::size_t index, const std::string& what) {
    errors_.push_back("queue " + std::to_string(index) + ": " + what);
  }
  void doorbell(std::uint64_t addr, std::uint32_t value) {
    for (std::size_t i = 0; i < queues_.size(); ++i) {
      Queue& q = queues_[i];
      const std::uint32_t n = q.pair.entries;
      if (addr == q.pair.sq_doorbell) {
        if (value >= n) error(i, "SQ tail doorbell " + std::to_string(value) + " beyond the ring");
        const std::uint32_t added = (value + n - q.sq_tail) % n;
        q.sq_tail = value;
        q.sq_rung += added;
        ++q.doorbells;
        // At most entries - 1 entries between the fetched head and the tail.
        if (q.sq_rung - q.sq_fetched > n - 1u) error(i, "SQ tail doorbell overruns the head");
        return;
      }
      if (addr == q.pair.cq_doorbell) {
        if (value >= n) error(i, "CQ head doorbell " + std::to_string(value) + " beyond the ring");
        const std::uint32_t released = (value + n - q.cq_released % n) % n;
        if (q.cq_released + released > q.cq_posted) {
          error(i, "CQ head doorbell " + std::to_string(value) + " passes the tail");
        }
        q.cq_released = std::min(q.cq_released + released, q.cq_posted);
        return;
      }
    }
    errors_.push_back("MMIO store to an unknown address");
  }

  ScriptedMachine& machine_;
  std::vector<Queue> queues_;
  std::vector<std::string> errors_;
};

}  // namespace gpunvme::platform
