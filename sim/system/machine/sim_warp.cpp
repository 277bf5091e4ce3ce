#include "sim/system/machine/sim_warp.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <vector>

#include "sim/kernel/simulation.h"

namespace gpunvme::platform {

// Wait states of every warp, packed: chunks are never freed, released states
// are reused.
class SimWarp::WaitStatePool {
 public:
  WaitState* acquire() {
    if (free_.empty()) {
      chunks_.push_back(std::make_unique<WaitState[]>(kChunk));
      for (std::size_t i = kChunk; i > 0; --i) free_.push_back(&chunks_.back()[i - 1]);
    }
    WaitState* state = free_.back();
    free_.pop_back();
    return state;
  }
  void release(WaitState* state) { free_.push_back(state); }

 private:
  static constexpr std::size_t kChunk = 256;
  std::vector<std::unique_ptr<WaitState[]>> chunks_;
  std::vector<WaitState*> free_;
};

SimWarp::WaitStatePool& SimWarp::wait_state_pool() {
  static WaitStatePool pool;
  return pool;
}

SimWarp::SimWarp(gpu::Gpu& gpu, pcie::Fabric& fabric, MemorySpace& memory, StageSink& sink,
                 WarpCounters& counters, WarpPlacement placement, Picoseconds poll_backoff)
    : gpu_(gpu),
      memory_(memory),
      state_(wait_state_pool().acquire()),
      calendar_(Calendar::current()),
      fast_quantum_(gpu.fast_quantum()),
      poll_period_(std::max<Picoseconds>(1, gpu.costs().load_latency + poll_backoff)),
      poll_backoff_(poll_backoff),
      lane_loop_pass_(gpu.costs().lane_loop_iteration),
      counters_(counters),
      placement_(placement),
      fabric_(fabric),
      sink_(sink),
      gpu_memory_base_(gpu.memory_region().base),
      gpu_memory_size_(gpu.memory_region().size),
      load_latency_(gpu.costs().load_latency) {
  *state_ = WaitState{};
  state_->warp = this;
  state_->memory = &memory_;
}

SimWarp::~SimWarp() noexcept(false) {
  // The warp's last operations end before its thread does (the run's end
  // time counts them), unless the thread is being killed.
  if (std::uncaught_exceptions() == 0) {
    synchronise();
    release_herd_at_wait();
  } else {
    // The run is failing: no warp may defer to this one any more, and the
    // ones that did stay asleep.
    for (std::uint32_t i = 0; i < claimed_count_; ++i) memory_.unclaim(claimed_[i], this);
    herd_followers_.clear();
  }
  for (const WatchedRange& w : watches_) memory_.cancel(w.id);
  wait_state_pool().release(state_);
}

void SimWarp::begin_instruction() {
  if (instruction_depth_ != 0) {
    throw std::logic_error("for_lanes/ballot may not nest: lanes already run in lockstep");
  }
  settle();
  ++instruction_depth_;
  ++counters_.instructions;
  ++issued_;
  instruction_start_ =
      gpu_.book_issue(placement_.sm, placement_.scheduler, std::max(now(), busy_until_), 1);
  // Every lane's path starts at the issue. Lanes outside the instruction's
  // mask are not read before the next instruction sets them again, so all 32
  // are set: no test of the mask per lane.
  for (int lane = 0; lane < algo::kWarpLanes; ++lane) lane_cost_[lane] = {instruction_start_, 0};
  instruction_lines_ = 0;
}

void SimWarp::end_instruction(algo::LaneMask mask) {
  while (reads_in_flight_ != 0) {
    Simulation::count_event(Simulation::EventKind::kWarpReadReturn);
    calendar_.wait(read_returned_);
  }
  // Lanes with the same operation sequence ran as one path; distinct paths
  // ran one after another. Mostly every lane ran the same sequence: one pass
  // finds that and the slowest lane (a lane's cursor never falls below the
  // issue), and only divergent lanes need the paths told apart.
  std::uint32_t paths = 0;
  Picoseconds total = 0;
  if (mask != 0) {
    const std::uint64_t first = lane_cost_[algo::first_lane(mask)].signature;
    // Nonzero once a lane's sequence differs from the first lane's: or-ed
    // without a branch per lane. A full warp (every lane of a CQ drain's
    // ballot) is a fixed loop over the array, without the bit scans.
    std::uint64_t differ = 0;
    Picoseconds slowest = instruction_start_;
    const auto take = [&](const LaneCost& c) {
      differ |= c.signature ^ first;
      slowest = std::max(slowest, c.cursor);
    };
    if (mask == algo::kAllLanes) {
      for (const LaneCost& c : lane_cost_.v) take(c);
    } else {
      algo::visit_lanes(mask, [&](int lane) { take(lane_cost_[lane]); });
    }
    if (differ == 0) {
      paths = 1;
      total = slowest - instruction_start_;
    }
  }
  if (mask != 0 && paths == 0) {
    std::uint64_t signatures[algo::kWarpLanes];
    Picoseconds path_cost[algo::kWarpLanes];
    algo::visit_lanes(mask, [&](int lane) {
      const LaneCost& c = lane_cost_[lane];
      const Picoseconds cost = c.cursor - instruction_start_;
      for (std::uint32_t i = 0; i < paths; ++i) {
        if (signatures[i] == c.signature) {
          path_cost[i] = std::max(path_cost[i], cost);
          return;
        }
      }
      signatures[paths] = c.signature;
      path_cost[paths++] = cost;
    });
    for (std::uint32_t i = 0; i < paths; ++i) total += path_cost[i];
  }
  if (paths > 1) {
    counters_.divergent_paths += paths - 1;
    gpu_.book_issue(placement_.sm, placement_.scheduler, instruction_start_ + gpu_.costs().cycle,
                    paths - 1);
  }
  busy_until_ = std::max(busy_until_, instruction_start_ + std::max(total, gpu_.costs().cycle));
  --instruction_depth_;
}

Picoseconds SimWarp::op_issue_slow() {
  if (instruction_depth_ == 0) {
    ++counters_.instructions;
    ++issued_;
    return gpu_.book_issue(placement_.sm, placement_.scheduler, std::max(now(), busy_until_), 1);
  }
  // A lane's store, atomic, fence or GPU load uses what its PCIe reads
  // returned: it issues once they are back.
  while (lane_reads_in_flight_[current_lane_] != 0) {
    Simulation::count_event(Simulation::EventKind::kWarpReadReturn);
    calendar_.wait(read_returned_);
  }
  return lane_cost_[current_lane_].cursor;
}

void SimWarp::op_done_alone(Picoseconds done) { busy_until_ = std::max(busy_until_, done); }

void SimWarp::resume_at(Picoseconds when) {
  Simulation::count_event(Simulation::EventKind::kWarpStep);
  // Goes on at once when nothing else would run before the step ends.
  calendar_.step_to(when, resume_);
}

std::uint32_t SimWarp::atomic_add_u32(std::uint64_t addr, std::uint32_t value) {
  const ProfileScope scope(*this, ProfiledOp::kAtomic);
  synchronise();  // another warp can observe it (a lock, a ticket): at the warp's time
  const auto old = memory_.load<std::uint32_t>(addr);
  memory_.store<std::uint32_t>(addr, old + value);
  ++counters_.atomics;
  op_done(gpu_.book_atomic(addr, op_issue(), placement_.sm), kAtomic);
  release_herd_after_atomic(addr);
  return old;
}

std::uint32_t SimWarp::atomic_cas_u32(std::uint64_t addr, std::uint32_t expected,
                                      std::uint32_t desired) {
  const ProfileScope scope(*this, ProfiledOp::kAtomic);
  synchronise();  // another warp can observe it (a lock, a ticket): at the warp's time
  const auto old = memory_.load<std::uint32_t>(addr);
  if (old == expected) memory_.store<std::uint32_t>(addr, desired);
  ++counters_.atomics;
  op_done(gpu_.book_atomic(addr, op_issue(), placement_.sm), kAtomic);
  release_herd_after_atomic(addr);
  return old;
}

std::uint32_t SimWarp::atomic_or_u32(std::uint64_t addr, std::uint32_t bits) {
  const ProfileScope scope(*this, ProfiledOp::kAtomic);
  synchronise();  // another warp can observe it (a lock, a ticket): at the warp's time
  const auto old = memory_.load<std::uint32_t>(addr);
  memory_.store<std::uint32_t>(addr, old | bits);
  ++counters_.atomics;
  op_done(gpu_.book_atomic(addr, op_issue(), placement_.sm), kAtomic);
  release_herd_after_atomic(addr);
  return old;
}

std::uint32_t SimWarp::atomic_and_u32(std::uint64_t addr, std::uint32_t bits) {
  const ProfileScope scope(*this, ProfiledOp::kAtomic);
  synchronise();  // another warp can observe it (a lock, a ticket): at the warp's time
  const auto old = memory_.load<std::uint32_t>(addr);
  memory_.store<std::uint32_t>(addr, old & bits);
  ++counters_.atomics;
  op_done(gpu_.book_atomic(addr, op_issue(), placement_.sm), kAtomic);
  release_herd_after_atomic(addr);
  return old;
}

// A load that leaves the GPU is a non-posted PCIe read: the warp waits for
// its completion (inside an instruction, at the end of the instruction).
void SimWarp::pcie_load(std::uint64_t addr, void* data, std::size_t len) {
  ++counters_.pcie_loads;
  if (instruction_depth_ != 0) {
    // The lanes of one instruction issue their reads together: this lane's
    // read goes out now and the next lane's with it, instead of after it
    // returns; a lane's further reads are independent loads too (the words
    // of a multi-word load), so they do not wait for its earlier ones. The
    // value is the memory's at issue (the read reaches the target a few
    // hundred ns later: a write in between shows on the next read, as if it
    // had landed just after this one).
    const Picoseconds issue = lane_cost_[current_lane_].cursor;
    if (issue > now()) resume_at(issue);
    memory_.read(addr, data, len);
    const int lane = current_lane_;
    LaneCost& c = lane_cost_[lane];
    c.signature = mix(c.signature, kPcieLoad);
    ++reads_in_flight_;
    ++lane_reads_in_flight_[lane];
    // Behind the reads the GPU has in flight; lanes reading one line in
    // one instruction share its request.
    const Picoseconds queued = now() + gpu_.host_read_queue_floor();
    const bool new_line = note_instruction_line(addr / gpu::kPcieReadLineBytes);
    if (new_line) gpu_.add_host_read();
    fabric_.read(
        gpu_.node(), addr, static_cast<std::uint32_t>(len),
        [this, lane, queued, new_line](const std::uint8_t*, std::uint32_t) {
          if (new_line) gpu_.remove_host_read();
          LaneCost& done = lane_cost_[lane];
          done.cursor = std::max({done.cursor, now() + gpu_.costs().pcie_load_overhead, queued});
          if (--lane_reads_in_flight_[lane] == 0) {
            done.cursor += lane_after_reads_[lane];
            lane_after_reads_[lane] = 0;
          }
          --reads_in_flight_;
          calendar_.notify_delta(read_returned_);
        });
    return;
  }
  const Picoseconds issue = op_issue();
  if (issue > now()) resume_at(issue);
  const Picoseconds queued = now() + gpu_.host_read_queue_floor();
  bool done = false;
  FiberEvent arrived;
  gpu_.add_host_read();
  fabric_.read(gpu_.node(), addr, static_cast<std::uint32_t>(len),
               [&](const std::uint8_t* bytes, std::uint32_t got) {
                 gpu_.remove_host_read();
                 std::memcpy(data, bytes, std::min<std::size_t>(got, len));
                 done = true;
                 calendar_.notify_delta(arrived);
               });
  while (!done) {
    Simulation::count_event(Simulation::EventKind::kWarpReadReturn);
    calendar_.wait(arrived);
  }
  op_done(std::max(now() + gpu_.costs().pcie_load_overhead, queued), kPcieLoad);
}

void SimWarp::store_bytes(std::uint64_t addr, const void* data, std::size_t len) {
  const ProfileScope scope(*this, ProfiledOp::kStore);
  synchronise();  // another warp or a device can observe it: at the warp's time
  // One store instruction moves up to 16 B per lane. A lane's whole 64 B
  // entries (an SQE, a command capsule, written inside for_lanes) cost at
  // least entry_store each: on the GPU the entry is built in the lane's local
  // memory and copied out a byte at a time before its stores issue,
  // whichever memory they go to. A warp-uniform store of 64 B (a BlueFlame
  // doorbell of a WQE just loaded) does not pay it: measured at 84 ns.
  const auto instructions = static_cast<Picoseconds>((len + 15) / 16);
  const Picoseconds entries =
      instruction_depth_ != 0 ? Picoseconds{len / gpu::kEntryStoreBytes} * gpu_.costs().entry_store
                              : Picoseconds{0};
  const Picoseconds issue = op_issue();
  if (owns_gpu_memory(addr, len)) {
    memory_.write(addr, data, len);
    gpu_store_since_fence_ = true;
    op_done(issue + std::max(instructions * gpu_.costs().store_issue, entries), kStore);
    return;
  }
  ++counters_.pcie_stores;
  pcie_store_since_fence_ = true;
  fabric_.write(gpu_.node(), addr, static_cast<std::uint32_t>(len), data, nullptr);
  op_done(issue + std::max(instructions * gpu_.costs().pcie_store_issue, entries), kPcieStore);
}

void SimWarp::mmio_store_u32(std::uint64_t addr, std::uint32_t value) {
  const ProfileScope scope(*this, ProfiledOp::kMmioStore);
  synchronise();
  ++counters_.mmio_stores;
  pcie_store_since_fence_ = true;
  const Picoseconds issue = op_issue();
  fabric_.write(gpu_.node(), addr, 4, &value, nullptr);
  op_done(issue + gpu_.costs().pcie_store_issue, kPcieStore);
}

void SimWarp::fence_block() {
  const ProfileScope scope(*this, ProfiledOp::kFenceGpu);
  settle();
  ++counters_.fences;
  op_done(op_issue() + gpu_.costs().fence_block, kFence);
}

void SimWarp::fence_gpu() {
  const ProfileScope scope(*this, ProfiledOp::kFenceGpu);
  settle();
  ++counters_.fences;
  // The fence invalidates the SM's L1: what follows reads its descriptors
  // again from L2 (fence_l1_reload). Warps spinning on reads of host memory
  // beyond the first few lengthen it, each by host_poller_fence_gpu_ns (the
  // warp itself polls nothing now).
  const Picoseconds cost =
      (gpu_store_since_fence_ ? gpu_.costs().fence_gpu_after_store : gpu_.costs().fence_gpu) +
      gpu_.costs().fence_l1_reload +
      Picoseconds{gpu_.host_pollers_lengthening_fences()} * gpu_.costs().host_poller_fence_gpu;
  gpu_store_since_fence_ = false;
  op_done(op_issue() + cost, kFence);
}

void SimWarp::fence_system() {
  const ProfileScope scope(*this, ProfiledOp::kFenceSystem);
  settle();
  ++counters_.fences;
  // While other warps spin on reads of host memory the fence waits behind
  // them (host_poll_fence_system_ns, and host_poller_fence_system_ns for
  // each beyond the first few; the warp itself polls nothing now).
  const Picoseconds behind_pollers = gpu_.host_pollers() != 0
                                         ? gpu_.costs().host_poll_fence_system +
                                               Picoseconds{gpu_.host_pollers_lengthening_fences()} *
                                                   gpu_.costs().host_poller_fence_system
                                         : 0;
  const Picoseconds cost = (pcie_store_since_fence_ ? gpu_.costs().fence_system_after_pcie_store
                                                    : gpu_.costs().fence_system) +
                           gpu_.costs().fence_l1_reload + behind_pollers;
  gpu_store_since_fence_ = false;
  pcie_store_since_fence_ = false;
  op_done(op_issue() + cost, kFence);
}

void SimWarp::lane_loop(std::uint32_t iterations) {
  if (predicate_depth_ != 0 || check_depth_ != 0) return;
  const ProfileScope scope(*this, ProfiledOp::kLaneLoop);
  const Picoseconds t = Picoseconds{iterations} * lane_loop_pass_;
  if (instruction_depth_ != 0) {
    // A loop in one lane's code inside for_lanes/ballot: the lanes run
    // theirs side by side, so it lengthens this lane's path only.
    lane_cost_[current_lane_].cursor += t;
    return;
  }
  counters_.lane_loop_iterations += iterations;
  looped_ += iterations;
  if (t == 0) return;
  counters_.lane_loop_ps += t;
  busy_until_ = std::max(now(), busy_until_) + t;
}

void SimWarp::turn_pass() {
  if (predicate_depth_ != 0 || check_depth_ != 0) return;
  const ProfileScope scope(*this, ProfiledOp::kLaneLoop);
  // The loop's own code and its reads of the queue descriptor, which the
  // turn's fence sent back to L2 (turn_descriptor_ns).
  const Picoseconds t = gpu_.costs().turn_pass + gpu_.costs().turn_descriptor;
  if (instruction_depth_ != 0) {
    lane_cost_[current_lane_].cursor += t;
    return;
  }
  if (t == 0) return;
  busy_until_ = std::max(now(), busy_until_) + t;
}

void SimWarp::first_lane_scan(std::uint32_t passes) {
  // A pick of lane 0 passes over nothing: no charge and no profiled call, so
  // the picks of a warp's one-queue requests leave everything as it was.
  if (passes == 0 || predicate_depth_ != 0 || check_depth_ != 0) return;
  const ProfileScope scope(*this, ProfiledOp::kLaneLoop);
  const Picoseconds t = Picoseconds{passes} * gpu_.costs().first_lane_pass;
  if (instruction_depth_ != 0) {
    lane_cost_[current_lane_].cursor += t;
    return;
  }
  if (t == 0) return;
  busy_until_ = std::max(now(), busy_until_) + t;
}

bool SimWarp::turn_run_breaks(std::uint64_t turn_word) {
  const double rate = gpu_.costs().cross_sm_turn_breaks;
  if (rate == 0 || predicate_depth_ != 0 || check_depth_ != 0) return false;
  turn_break_credit_ += rate * gpu_.turn_sharers_elsewhere(turn_word, this, placement_.sm);
  if (turn_break_credit_ < 1.0) return false;
  turn_break_credit_ -= 1.0;
  return true;
}

void SimWarp::nanosleep(std::uint32_t ns) {
  const ProfileScope scope(*this, ProfiledOp::kSleep);
  settle();
  const Picoseconds t = ns_to_ps(ns);
  counters_.sleep_ps += t;
  op_done(op_issue() + t, kSleep);
}

bool SimWarp::block_until(PredicateRef ready, const std::uint64_t* ranges, std::size_t count,
                          Picoseconds deadline) {
  // The predicate is evaluated once here and then only when something it read
  // has been written (reevaluate): the warp's own state does not change while
  // it waits, so an evaluation over unchanged memory repeats the last answer.
  synchronise();
  release_herd_at_wait();
  Waiting waiting(ready);
  waiting.deadline = deadline;
  waiting_ = &waiting;
  if (evaluate()) return true;
  if (instruction_depth_ != 0) throw std::logic_error("wait_until inside for_lanes/ballot");
  WaitState& state = *state_;
  // While its predicate reads host memory the warp is one of the GPU's host
  // pollers, and a poller of each host line the predicate read, until the
  // wait returns.
  struct HostPolling {
    gpu::Gpu& gpu;
    bool counted = false;
    std::uint32_t line_count = 0;
    std::uint64_t lines[WaitState::kMaxLines] = {};
    bool sweeping = false;
    std::uint64_t sweep_key = 0;
    void set(bool polling, const std::uint64_t* read, std::uint32_t read_count) {
      gpu.remove_host_poll_lines(lines, line_count);
      if (sweeping) gpu.remove_host_sweep(sweep_key);
      sweeping = false;
      line_count = 0;
      if (polling) {
        std::copy(read, read + read_count, lines);
        line_count = read_count;
        gpu.add_host_poll_lines(lines, line_count);
        // A predicate over two or more lines may scan a ring (counted only
        // where a software target's copies depend on it).
        if (read_count >= 2 && gpu.tracks_host_sweeps()) {
          sweep_key = gpu.add_host_sweep(lines, line_count);
          sweeping = true;
        }
      }
      if (polling == counted) return;
      counted = polling;
      if (polling) {
        gpu.add_host_poller();
      } else {
        gpu.remove_host_poller();
      }
    }
    ~HostPolling() { set(false, nullptr, 0); }
  } host_polling{gpu_};
  // A CQ-scan waiter for as long as the wait lasts (cq_scan_co_waiter_ns).
  struct CqScanWaiting {
    gpu::Gpu& gpu;
    const std::uint32_t sm;
    const bool counted;
    CqScanWaiting(gpu::Gpu& g, std::uint32_t s, bool on) : gpu(g), sm(s), counted(on) {
      if (counted) gpu.add_cq_scan_waiter(sm);
    }
    ~CqScanWaiting() {
      if (counted) gpu.remove_cq_scan_waiter(sm);
    }
    CqScanWaiting(const CqScanWaiting&) = delete;
    CqScanWaiting& operator=(const CqScanWaiting&) = delete;
  } cq_scan_waiting{gpu_, placement_.sm, cq_scan_waits_ && gpu_.costs().cq_scan_co_waiter != 0};
  for (;;) {
    synchronise();
    release_herd_at_wait();
    const Picoseconds start = now();
    if (reevaluate()) return true;
    if (deadline != 0 && start >= deadline) return false;
    host_polling.set(state.reads_host, state.lines, state.count);
    waiting.start = start;
    waiting.seen = 0;
    state.satisfied = false;
    // One watch per range. A write that does not satisfy the predicate
    // re-arms only the watch it fired (the others still stand); one that
    // does parks them all (recheck), and its wake-up is the last: the loop
    // below waits for it.
    watch_ranges(ranges, count);
    calendar_.cancel(timeout_);
    if (deadline != 0) calendar_.notify_at(timeout_, deadline);
    while (!state.satisfied || now() < waiting.seen) {
      Simulation::count_event(Simulation::EventKind::kWarpWakeup);
      // Without a deadline the timeout is never notified: waiting on the
      // wake event alone spares the kernel building an event list per wait.
      if (deadline == 0) {
        calendar_.wait(wake_);
      } else {
        calendar_.wait(wake_, timeout_);
      }
      if (!state.satisfied && deadline != 0 && now() >= deadline) break;
    }
    calendar_.cancel(timeout_);
    // A satisfied wait's watches were parked by recheck; after a timeout
    // they are still live.
    if (!state.satisfied) {
      for (const WatchedRange& w : watches_) memory_.park(w.id);
    }
    // The other CQ-scan waiters of the SM slow the noticing
    // (cq_scan_co_waiter_ns, measured with no strategy around the wait).
    if (state.satisfied && cq_scan_waiting.counted) {
      const std::uint32_t others = gpu_.cq_scan_waiters(placement_.sm) - 1;
      if (others != 0) resume_at(now() + Picoseconds{others} * gpu_.costs().cq_scan_co_waiter);
    }
    state.satisfied = false;
    // From the wait's start, or from the last poll that found nothing (fast
    // mode's poll_due).
    const Picoseconds waited = now() - waiting.start;
    counters_.wait_ps += waited;
    counters_.polls += waited / current_poll_period() + 1;
    // The predicate was true at the write; re-check after the poll's latency,
    // as the real loop would (another warp may have taken what we waited for).
    if (reevaluate()) return true;
    if (deadline != 0 && now() >= deadline) return false;
  }
}

void SimWarp::watch_ranges(const std::uint64_t* ranges, std::size_t count) {
  // Registered (or resumed) in range order: the firing order is that of
  // fresh registrations either way.
  next_watches_.clear();
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t addr = ranges[2 * i];
    const std::uint64_t len = ranges[2 * i + 1];
    MemorySpace::WatchId id = 0;
    for (WatchedRange& parked : watches_) {
      if (parked.id != 0 && parked.addr == addr && parked.len == len) {
        id = parked.id;
        parked.id = 0;
        memory_.resume(id);
        break;
      }
    }
    if (id == 0) id = memory_.watch(addr, len, &SimWarp::watch_fired, state_);
    next_watches_.push_back(WatchedRange{addr, len, id});
  }
  // Parked watches of ranges this wait does not watch would only lengthen
  // the pages' watch lists.
  for (const WatchedRange& parked : watches_) {
    if (parked.id != 0) memory_.cancel(parked.id);
  }
  watches_.swap(next_watches_);
}

void SimWarp::watch_fired(void* context, MemorySpace::WatchId id) {
  WaitState& state = *static_cast<WaitState*>(context);
  if (state.satisfied) {
    state.memory->park(id);
    return;
  }
  // Most writes a waiter watches are other warps' business (their flags,
  // other CQ entries): when nothing the predicate read has changed, its
  // answer (false, or the wait would be satisfied) has not either.
  if (state.unchanged()) {
    // Keeps the watch, with the firing order a fresh registration would get.
    state.memory->rearm(id);
    return;
  }
  state.warp->recheck(id);
}

void SimWarp::recheck(MemorySpace::WatchId id) {
  // Fast mode: which of the lines the last evaluation read have been written
  // since (note_herd_trigger) matters only when this one is true, and
  // evaluating writes no line: keep the lines now, look at their stamps after.
  std::uint64_t last_evaluated_at = 0;
  if (fast_quantum_ != 0) {
    const WaitState& state = *state_;
    herd_trigger_count_ = state.overflow ? kNoTrigger : state.count;
    if (!state.overflow) std::copy(state.lines, state.lines + state.count, herd_trigger_);
    last_evaluated_at = state.evaluated_at;
  }
  if (!evaluate()) {
    memory_.rearm(id);
    return;
  }
  if (fast_quantum_ != 0 && herd_trigger_count_ != kNoTrigger) {
    std::uint32_t written = 0;
    for (std::uint32_t i = 0; i < herd_trigger_count_; ++i) {
      if (memory_.line_stamp(herd_trigger_[i]) > last_evaluated_at) {
        herd_trigger_[written++] = herd_trigger_[i];
      }
    }
    herd_trigger_count_ = written;
  }
  state_->satisfied = true;
  for (const WatchedRange& w : watches_) memory_.park(w.id);  // this one included
  // The spinning warp issues a poll every poll period; the first one issued
  // at or after the write sees it, one poll's latency later (a load of GPU
  // memory, or a read of host memory behind the reads in flight).
  Waiting& waiting = *waiting_;
  const Picoseconds t = now();
  const Picoseconds period = current_poll_period();
  const Picoseconds polls = (t - waiting.start + period - 1) / period;
  const Picoseconds seen = waiting.start + polls * period + current_poll_latency();
  if (fast_quantum_ != 0) {
    poll_at(seen);
    return;
  }
  waiting.seen = seen;
  calendar_.wake_at(waiting.seen, wake_);
}

void SimWarp::poll_at(Picoseconds seen) {
  // The thread sleeps on until the poll has looked (poll_due sets the time).
  waiting_->seen = std::numeric_limits<Picoseconds>::max();
  calendar_.schedule_at(seen, [this] { poll_due(); });
}

// A herd of waiters on one CQ: each write a CQE makes satisfies all of them,
// and the first to poll takes the entries (or the CQ lock); the others' polls
// then find nothing. In exact mode each of those wakes its thread to find
// that out; here the poll is evaluated without waking it, and the loser goes
// back to waiting, its polls counted as a woken loser's would be. A poll
// that still finds its predicate true while the first waiter has not yet
// acted defers to it (resolve_poll).
void SimWarp::poll_due() {
  note_herd_trigger();
  resolve_poll(nullptr);
}

void SimWarp::note_herd_trigger() {
  const WaitState& state = *state_;
  if (herd_trigger_count_ == kNoTrigger) return;
  if (state.overflow) {
    herd_trigger_count_ = kNoTrigger;
    return;
  }
  for (std::uint32_t i = 0; i < state.count; ++i) {
    const std::uint64_t line = state.lines[i];
    if (memory_.line_stamp(line) <= state.evaluated_at) continue;
    if (std::find(herd_trigger_, herd_trigger_ + herd_trigger_count_, line) !=
        herd_trigger_ + herd_trigger_count_) {
      continue;
    }
    if (herd_trigger_count_ == WaitState::kMaxLines) {
      herd_trigger_count_ = kNoTrigger;
      return;
    }
    herd_trigger_[herd_trigger_count_++] = line;
  }
}

SimWarp* SimWarp::herd_claimant() const {
  if (herd_trigger_count_ == 0 || herd_trigger_count_ == kNoTrigger) return nullptr;
  const void* owner = nullptr;
  for (std::uint32_t i = 0; i < herd_trigger_count_; ++i) {
    const void* claimant = memory_.claimant(herd_trigger_[i]);
    // A line nobody holds (a word of the warp's own, a flag another warp set
    // for it) is news for this warp alone: it wakes.
    if (claimant == nullptr || claimant == this) return nullptr;
    if (owner != nullptr && claimant != owner) return nullptr;
    owner = claimant;
  }
  return static_cast<SimWarp*>(const_cast<void*>(owner));
}

void SimWarp::resolve_poll(const HerdAct* loser_charge) {
  Waiting& waiting = *waiting_;
  WaitState& state = *state_;
  if (reevaluate()) {
    if (SimWarp* claimant = herd_claimant()) {
      // The thread sleeps on (its watches parked, its wake-up not due) until
      // the claimant has acted.
      claimant->herd_followers_.push_back(this);
      if (deferred_at_ == 0) deferred_at_ = now();
      return;
    }
    herd_trigger_count_ = 0;
    deferred_at_ = 0;
    claim_herd();
    waiting.seen = now();
    calendar_.wake_at(now(), wake_);
    return;
  }
  herd_trigger_count_ = 0;
  // A loser's wait ended at its poll (where it deferred) and begins again now.
  const Picoseconds waited = (deferred_at_ != 0 ? deferred_at_ : now()) - waiting.start;
  deferred_at_ = 0;
  if (loser_charge != nullptr) {
    // What waking to lose would have cost the shared resources: the
    // claimant's path up to its act on this warp's issue slots, and its
    // atomic (the loser's failed one) at the L2.
    counters_.instructions += loser_charge->instructions;
    if (loser_charge->instructions != 0) {
      gpu_.book_issue(placement_.sm, placement_.scheduler, now(),
                      static_cast<std::uint32_t>(loser_charge->instructions));
    }
    if (loser_charge->atomic) {
      ++counters_.atomics;
      gpu_.book_atomic(loser_charge->atomic_addr, now(), placement_.sm);
    }
    counters_.lane_loop_iterations += loser_charge->lane_loop_iterations;
    counters_.lane_loop_ps += Picoseconds{loser_charge->lane_loop_iterations} * lane_loop_pass_;
  }
  counters_.wait_ps += waited;
  counters_.polls += waited / current_poll_period() + 1;
  waiting.start = now();
  waiting.seen = 0;
  state.satisfied = false;
  for (const WatchedRange& w : watches_) memory_.resume(w.id);
  // A wait with a deadline that has passed returns now, as the woken loser's
  // would.
  if (waiting.deadline != 0 && now() >= waiting.deadline) calendar_.wake_at(now(), wake_);
}

void SimWarp::claim_herd() {
  const WaitState& state = *state_;
  claiming_ = true;
  issued_at_claim_ = issued_;
  looped_at_claim_ = looped_;
  claimed_count_ = 0;
  for (std::uint32_t i = 0; i < state.count; ++i) {
    if (memory_.claim(state.lines[i], this)) claimed_[claimed_count_++] = state.lines[i];
  }
}

void SimWarp::release_herd(const HerdAct& act) {
  claiming_ = false;
  for (std::uint32_t i = 0; i < claimed_count_; ++i) memory_.unclaim(claimed_[i], this);
  claimed_count_ = 0;
  if (herd_followers_.empty()) return;
  // Polled again in the order they deferred; one may claim and the rest
  // defer to it.
  std::vector<SimWarp*> followers;
  followers.swap(herd_followers_);
  for (SimWarp* follower : followers) {
    follower->note_herd_trigger();
    follower->resolve_poll(&act);
  }
  if (herd_followers_.empty()) {
    followers.clear();
    herd_followers_.swap(followers);  // keeps the capacity
  }
}

bool SimWarp::evaluate() {
  WaitState& state = *state_;
  state.count = 0;
  state.overflow = false;
  state.reads_host = false;
  state.host_reads = 0;
  state.last_line_host = false;
  state.evaluated_at = memory_.write_count();
  reads_ = &state;
  state.answer = holds(waiting_->ready);
  reads_ = nullptr;
  return state.answer;
}

bool SimWarp::WaitState::unchanged() const {
  if (overflow) return false;
  for (std::uint32_t i = 0; i < count; ++i) {
    if (memory->line_stamp(lines[i]) > evaluated_at) return false;
  }
  return true;
}

void SimWarp::note_read(std::uint64_t addr, std::size_t len) const {
  WaitState& reads = *reads_;
  if (len == 0) return;
  reads.last_line_host = !owns_gpu_memory(addr, len);
  if (reads.last_line_host) {
    reads.reads_host = true;
    ++reads.host_reads;
  }
  if (reads.overflow) return;
  const std::uint64_t last = (addr + len - 1) / MemorySpace::kLineBytes;
  for (std::uint64_t line = addr / MemorySpace::kLineBytes; line <= last; ++line) {
    // Consecutive peeks mostly share a line: look back before adding.
    bool known = false;
    for (std::uint32_t i = reads.count; i > 0 && !known; --i) known = reads.lines[i - 1] == line;
    if (known) continue;
    if (reads.count == WaitState::kMaxLines) {
      reads.overflow = true;
      return;
    }
    reads.lines[reads.count++] = line;
  }
}

}  // namespace gpunvme::platform
