// The simulated platform: one GPU warp running an algorithm as a SystemC
// thread. Every operation has its memory effect on simulated memory at once
// (stores that leave the GPU land when the PCIe fabric delivers them) and
// costs modelled time:
//
// - every warp instruction takes an issue cycle on its SM's warp scheduler
//   (a next-available-time server shared by the warps of that scheduler);
// - inside for_lanes/ballot the lanes execute in lockstep: lanes that run
//   the same sequence of memory operations form one path and cost what their
//   slowest lane costs; lanes whose sequences differ took different branches
//   and their paths run one after another (SIMT divergence). Same-address
//   atomics of several lanes still serialize at their L2 unit;
// - atomics queue at the L2 unit of their address; loads of GPU memory cost
//   an L2 hit; loads elsewhere (pinned host memory, a peer's BAR) are PCIe
//   reads through the fabric; stores elsewhere (host memory, a CMB, a
//   doorbell) are posted PCIe writes. Inside for_lanes/ballot the lanes'
//   PCIe reads are in flight together (the warp waits for the last one at
//   the end of the instruction), a lane's further reads too (the words of a
//   multi-word load); its load of GPU memory completes a load latency after
//   they return without holding the other lanes' reads back (a CQ scan's
//   entries and consumed marks); its store, atomic or fence waits for them;
// - fences cost their measured latencies, more when stores they must order
//   are outstanding, and a system fence more while other warps spin on
//   reads of host memory (host_poll_fence_system_ns); a GPU or system fence
//   also invalidates the SM's L1, and
//   the descriptors the warp's next operations name (a QueuePair's words)
//   are read again from L2 (fence_l1_reload_ns);
// - the warp's own code between memory operations costs time where it loops
//   over lanes (lane_loop: lane_loop_iteration_ns per pass, from the H100's
//   op profiles), and around each lane's PerCommand turn (turn_pass:
//   turn_pass_ns plus turn_descriptor_ns, the reads of the queue descriptor
//   after the turn's fence, from the lane_loops_and_turns microbenchmark);
// - a readiness predicate evaluated by a wait costs nothing (its loads are
//   the wait's polls, below); evaluated through check() its loads cost what
//   loads cost and count to the op profile's "peek"; its loops over lanes
//   cost nothing in either place;
// - waiting is a watch on simulated memory: the warp sleeps until the write
//   it waits for and notices it on its next poll (polls are issued every load
//   latency plus the __nanosleep backoff); the polls are counted, not
//   simulated. A warp whose predicate reads host memory (or anything over
//   PCIe) is one of the GPU's host pollers while it waits: its polls take
//   the GPU's host poll period, which grows with the pollers once they
//   outrun the rate host reads are served at, and with the warps polling
//   the same host line (reads of one line are served one after the other),
//   and every other read over PCIe waits behind one read of each poller
//   (gpu::Gpu::host_poll_period).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <systemc>
#include <type_traits>
#include <vector>

#include "models/gpu/gpu.h"
#include "models/pcie/fabric.h"
#include "sim/core/algo/lanes.h"
#include "sim/core/algo/stages.h"
#include "sim/kernel/calendar.h"
#include "sim/kernel/memory_space.h"

namespace gpunvme::platform {

// Receives each I/O's stage times (keyed by queue trace id and CID).
class StageSink {
 public:
  virtual ~StageSink() = default;
  virtual void stage(std::uint16_t qid, std::uint32_t cid, algo::Stage stage, Picoseconds when) = 0;
};

// The kinds of call an op profile tells apart: the CUDA platform's
// (sim/core/platform/cuda_warp.cuh, gpunvme-hw --trace 3), whose "other" (the
// warp's own code between calls) is lane_loop here.
enum class ProfiledOp : int {
  kAtomic,
  kLoad,
  kPeek,
  kStore,
  kFenceGpu,
  kFenceSystem,
  kMmioStore,
  kForLanes,
  kBallot,
  kWait,
  kSleep,
  kLaneLoop,
  kCount
};
inline constexpr int kProfiledOps = static_cast<int>(ProfiledOp::kCount);
inline constexpr const char* kProfiledOpNames[kProfiledOps] = {
    "atomic",     "load",      "peek",   "store", "fence_gpu", "fence_system",
    "mmio_store", "for_lanes", "ballot", "wait",  "nanosleep", "lane_loop"};

struct WarpCounters {
  std::uint64_t polls = 0;            // loads a spinning warp would have issued
  Picoseconds wait_ps = 0;            // time spent waiting on memory
  std::uint64_t instructions = 0;     // warp instructions issued
  std::uint64_t divergent_paths = 0;  // extra serialized paths inside for_lanes/ballot
  std::uint64_t atomics = 0;
  std::uint64_t mmio_stores = 0;
  std::uint64_t pcie_stores = 0;  // posted stores to host memory or a CMB
  std::uint64_t pcie_loads = 0;
  std::uint64_t fences = 0;
  Picoseconds sleep_ps = 0;                // __nanosleep time
  std::uint64_t lane_loop_iterations = 0;  // passes of warp-uniform loops over lanes
  Picoseconds lane_loop_ps = 0;            // the time they cost (loops inside lanes: in
                                           // their for_lanes or ballot)
  // Op profile: time and calls per kind of platform call made in
  // warp-uniform code (calls inside a for_lanes, ballot or wait count to it).
  Picoseconds op_ps[kProfiledOps] = {};
  std::uint64_t op_calls[kProfiledOps] = {};
};

// Where a warp runs: its SM and the warp scheduler within it.
struct WarpPlacement {
  std::uint32_t sm = 0;
  std::uint32_t scheduler = 0;
};

// A non-owning reference to a wait predicate. Predicates are lambdas on the
// waiting warp's stack that outlive the wait; wrapping each in a
// std::function would allocate on every wait.
class PredicateRef {
 public:
  // Not for PredicateRef itself: copying one must copy, not wrap it.
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, PredicateRef>>>
  explicit PredicateRef(F& f)
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* o) { return static_cast<bool>((*static_cast<F*>(o))()); }) {}
  bool operator()() const { return call_(object_); }

 private:
  void* object_;
  bool (*call_)(void*);
};

class alignas(64) SimWarp {
 public:
  SimWarp(gpu::Gpu& gpu, pcie::Fabric& fabric, MemorySpace& memory, StageSink& sink,
          WarpCounters& counters, WarpPlacement placement = {}, Picoseconds poll_backoff = 0);
  ~SimWarp() noexcept(false);
  SimWarp(const SimWarp&) = delete;
  SimWarp& operator=(const SimWarp&) = delete;

  // ---- time and stages
  // The warp's time: the kernel's, or later while the operations and loops
  // it has charged have not yet run their course (see settle()).
  Picoseconds clock() const { return std::max(now(), busy_until_); }
  void stage(std::uint16_t qid, std::uint32_t cid, algo::Stage stage) {
    sink_.stage(qid, cid, stage, clock());
  }
  void stage_at(std::uint16_t qid, std::uint32_t cid, algo::Stage stage, Picoseconds when) {
    sink_.stage(qid, cid, stage, when);
  }

  // ---- lanes
  template <class F>
  void for_lanes(algo::LaneMask mask, F&& body) {
    const ProfileScope scope(*this, ProfiledOp::kForLanes);
    begin_instruction();
    algo::visit_lanes(mask, [&](int lane) {
      current_lane_ = lane;
      body(lane);
    });
    end_instruction(mask);
  }
  template <class F>
  algo::LaneMask ballot(algo::LaneMask mask, F&& predicate) {
    const ProfileScope scope(*this, ProfiledOp::kBallot);
    algo::LaneMask result = 0;
    begin_instruction();
    algo::visit_lanes(mask, [&](int lane) {
      current_lane_ = lane;
      if (predicate(lane)) result |= algo::LaneMask{1} << lane;
    });
    end_instruction(mask);
    return result;
  }

  // ---- GPU memory
  std::uint32_t atomic_add_u32(std::uint64_t addr, std::uint32_t value);
  std::uint32_t atomic_cas_u32(std::uint64_t addr, std::uint32_t expected, std::uint32_t desired);
  std::uint32_t atomic_or_u32(std::uint64_t addr, std::uint32_t bits);
  std::uint32_t atomic_and_u32(std::uint64_t addr, std::uint32_t bits);
  std::uint32_t load_u32(std::uint64_t addr) { return load<std::uint32_t>(addr); }
  // Inside a wait predicate a load is a poll: free (the polls themselves
  // are accounted by wait_until), and noted so that the wait re-evaluates
  // the predicate only once something it read is written. Inside check() it
  // costs a load and counts to the op profile's "peek".
  //
  // The two uncharged or cheap cases are inline and small, so that a
  // predicate's or a ballot's loop over lanes does not pay a call with a
  // large frame per load: a poll, and a lane's load of GPU memory inside
  // for_lanes/ballot (lane_load). Every other load takes charged_load.
  template <class T>
  [[gnu::always_inline]] T load(std::uint64_t addr) {
    static_assert(std::is_trivially_copyable_v<T>, "loads copy plain data");
    if (predicate_depth_ != 0) return poll<T>(addr);
    if (instruction_depth_ != 0 && owns_gpu_memory(addr, sizeof(T))) {
      return lane_reads_in_flight_[current_lane_] == 0 ? lane_load<T>(addr)
                                                       : lane_load_after_reads<T>(addr);
    }
    return charged_load<T>(addr);
  }
  void store_u32(std::uint64_t addr, std::uint32_t value) { store_bytes(addr, &value, 4); }
  void store_bytes(std::uint64_t addr, const void* data, std::size_t len);
  // Evaluates a readiness predicate once, outside a wait, as the warp's own
  // code deciding whether to act: its loads are charged (and profiled as
  // "peek"), its loops over lanes are not.
  template <class Pred>
  auto check(Pred&& ready) {
    const DepthScope scope(check_depth_);
    return ready();
  }
  // Stage records are always kept here, and reads made only for them
  // (observe_u32) cost nothing: they observe the run, as a trace does.
  static constexpr bool recording() { return true; }
  // It reads memory as it is at the warp's time.
  std::uint32_t observe_u32(std::uint64_t addr) {
    settle();
    return memory_.load<std::uint32_t>(addr);
  }

  // A loop of `iterations` passes over lanes (lanes.h): the warp's own code,
  // charged as latency; it takes no memory operation. Inside for_lanes or a
  // ballot it is one lane's loop and lengthens that lane's path. Inside a
  // readiness predicate (a wait's or check()'s) it costs nothing.
  void lane_loop(std::uint32_t iterations);
  // The warp runs io_agents' agent loop: its loops over lanes cost
  // agent_lane_loop_iteration_ns a pass instead of lane_loop_iteration_ns
  // (the agent kernel's code generation; gpu_params.def).
  void run_agent_code() { lane_loop_pass_ = gpu_.costs().agent_lane_loop_iteration; }
  // The warp's own code around one lane's turn in a PerCommand submission
  // (submission.h): turn_pass_ns + turn_descriptor_ns, charged and profiled
  // as lane_loop is.
  void turn_pass();
  // first_lane's loop over `passes` lanes below the lane it found
  // (first_lane_pass_ns each), charged and profiled as lane_loop is.
  void first_lane_scan(std::uint32_t passes);
  // After a lane's PerCommand turn on the queue whose turn word is
  // `turn_word`, with turns of its own still to take: whether the warp's run
  // of turns breaks here, so it reaps and waits before its next turn
  // (cross_sm_turn_breaks, scaled by the share of the queue's other warps on
  // other SMs; a per-warp credit, so the breaks come at a steady rate).
  bool turn_run_breaks(std::uint64_t turn_word);

  // ---- ordering, devices, backoff
  void fence_block();
  void fence_gpu();
  void fence_system();
  void mmio_store_u32(std::uint64_t addr, std::uint32_t value);
  void nanosleep(std::uint32_t ns);

  // ---- waiting: returns once `ready()` holds, re-checking it whenever a
  // write touches one of the (address, length) ranges.
  // (block_until checks `ready()` first and returns at once when it holds.)
  template <class Pred, class... Ranges>
  void wait_until(Pred&& ready, Ranges... ranges) {
    static_assert(sizeof...(Ranges) % 2 == 0, "ranges come as address, length pairs");
    const ProfileScope scope(*this, ProfiledOp::kWait);
    const std::uint64_t flat[] = {static_cast<std::uint64_t>(ranges)..., 0};
    block_until(PredicateRef(ready), flat, sizeof...(Ranges) / 2, 0);
  }
  // As wait_until, with the ranges in an array of `count` (address, length)
  // pairs.
  template <class Pred>
  void wait_until_any(Pred&& ready, const std::uint64_t* ranges, std::size_t count) {
    const ProfileScope scope(*this, ProfiledOp::kWait);
    block_until(PredicateRef(ready), ranges, count, 0);
  }
  // As wait_until_any, but gives up at `deadline` (absolute, picoseconds);
  // returns whether `ready()` holds.
  template <class Pred>
  bool wait_until_deadline(Pred&& ready, Picoseconds deadline, const std::uint64_t* ranges,
                           std::size_t count) {
    const ProfileScope scope(*this, ProfiledOp::kWait);
    return block_until(PredicateRef(ready), ranges, count, deadline == 0 ? 1 : deadline);
  }

  const WarpPlacement& placement() const { return placement_; }
  // The warp waits for its completions and its completion policy scans the
  // CQ (CqScan; set by the workload around that wait alone): while it waits
  // it is one of its SM's CQ-scan waiters, and each other one waiting when
  // its predicate holds adds cq_scan_co_waiter_ns to its wait.
  void set_cq_scan_waits(bool on) { cq_scan_waits_ = on; }

 private:
  // Times one platform call made in warp-uniform code into its kind's
  // bucket of the op profile; calls nested in it count to it.
  class ProfileScope {
   public:
    ProfileScope(SimWarp& warp, ProfiledOp kind)
        : warp_(warp), kind_(static_cast<int>(kind)), on_(warp.profile_depth_ == 0) {
      if (!on_) return;
      ++warp_.profile_depth_;
      start_ = warp_.clock();
    }
    ~ProfileScope() {
      if (!on_) return;
      warp_.counters_.op_ps[kind_] += warp_.clock() - start_;
      ++warp_.counters_.op_calls[kind_];
      --warp_.profile_depth_;
    }
    ProfileScope(const ProfileScope&) = delete;
    ProfileScope& operator=(const ProfileScope&) = delete;

   private:
    SimWarp& warp_;
    int kind_;
    bool on_;
    Picoseconds start_ = 0;
  };

  // Counts nesting of a predicate evaluation for as long as it lasts.
  class DepthScope {
   public:
    explicit DepthScope(int& depth) : depth_(depth) { ++depth_; }
    ~DepthScope() { --depth_; }
    DepthScope(const DepthScope&) = delete;
    DepthScope& operator=(const DepthScope&) = delete;

   private:
    int& depth_;
  };

  // Evaluates a wait predicate: its loads are polls, not charged reads.
  template <class Pred>
  bool holds(Pred& ready) {
    const DepthScope scope(predicate_depth_);
    return ready();
  }
  // Whether [addr, addr+len) lies in the GPU's memory (gpu::Gpu::owns),
  // from the warp's own copy of the region's bounds: a load tests it once
  // per lane, and the copy spares the two pointers to the region.
  bool owns_gpu_memory(std::uint64_t addr, std::uint64_t len) const {
    return addr >= gpu_memory_base_ && len <= gpu_memory_size_ &&
           addr - gpu_memory_base_ <= gpu_memory_size_ - len;
  }
  // A lane's load of GPU memory inside for_lanes/ballot whose lane has no
  // PCIe read in flight: what charged_load does there, without what cannot
  // apply inside an instruction. begin_instruction settled the warp and
  // nothing moves busy_until_ before end_instruction, so settle() would do
  // nothing; the instruction's own ProfileScope holds the op profile, so a
  // nested one would count nothing; op_issue() is the lane's cursor.
  template <class T>
  [[gnu::always_inline]] T lane_load(std::uint64_t addr) {
    LaneCost& c = lane_cost_[current_lane_];
    const T value = memory_.load<T>(addr);
    c.cursor = std::max(c.cursor, c.cursor + load_latency_);
    c.signature = mix(c.signature, kLoad);
    return value;
  }
  // Every other load outside a wait predicate: a warp-uniform one, a peek
  // (check()), a read over PCIe.
  template <class T>
  [[gnu::noinline]] T charged_load(std::uint64_t addr) {
    const ProfileScope scope(*this, check_depth_ != 0 ? ProfiledOp::kPeek : ProfiledOp::kLoad);
    T value;
    settle();
    if (!owns_gpu_memory(addr, sizeof(T))) {
      pcie_load(addr, &value, sizeof(T));
      return value;
    }
    // GPU memory: a load of a known size copies without a call.
    const Picoseconds issue = op_issue();
    value = memory_.load<T>(addr);
    op_done(issue + load_latency_, kLoad);
    return value;
  }
  // A lane's load of GPU memory inside for_lanes/ballot while the lane's
  // PCIe reads are in flight: it completes a load latency after they
  // return (lane_after_reads_, added to the lane's cursor as its last read
  // comes back), and the next lanes go on issuing meanwhile. The lanes of
  // one instruction issue together: waiting here for this lane's reads
  // would hold the next lanes' reads back one round trip each (a cq_scan
  // window, 32 CQEs of host memory and 32 consumed marks, took 32 round
  // trips: 18.8 us against the H100's 1.5 us for 32 lanes' 16 B reads,
  // configs/measurements/warp-host-access-h100-2026-11-24.json). The value
  // is the memory's at issue, as a lane's PCIe read's is.
  template <class T>
  T lane_load_after_reads(std::uint64_t addr) {
    const T value = memory_.load<T>(addr);
    lane_after_reads_[current_lane_] += load_latency_;
    LaneCost& c = lane_cost_[current_lane_];
    c.signature = mix(c.signature, kLoad);
    return value;
  }
  // A load inside a wait predicate.
  template <class T>
  [[gnu::always_inline]] T poll(std::uint64_t addr) {
    // Consecutive polls mostly read the line the last one did: nothing to note.
    if (reads_ != nullptr) {
      if (!reads_->last_line_holds(addr, sizeof(T))) {
        note_read(addr, sizeof(T));
      } else if (reads_->last_line_host) {
        ++reads_->host_reads;
      }
    }
    return memory_.load<T>(addr);
  }

  enum OpKind : std::uint32_t {
    kAtomic = 1,
    kLoad,
    kStore,
    kPcieLoad,
    kPcieStore,
    kFence,
    kSleep,
  };
  struct LaneCost {
    Picoseconds cursor = 0;       // when this lane's last operation completes
    std::uint64_t signature = 0;  // the sequence of operations it ran
  };

  void begin_instruction();
  void end_instruction(algo::LaneMask mask);
  // When the next operation issues, and recording its completion.
  // Inline for a lane's operation inside for_lanes/ballot, the common case;
  // an operation that is an instruction of its own, or waits for its lane's
  // PCIe reads, takes the out-of-line paths.
  Picoseconds op_issue() {
    if (instruction_depth_ == 0 || lane_reads_in_flight_[current_lane_] != 0) {
      return op_issue_slow();
    }
    return lane_cost_[current_lane_].cursor;
  }
  void op_done(Picoseconds done, OpKind kind) {
    if (instruction_depth_ == 0) {
      op_done_alone(done);
      return;
    }
    LaneCost& c = lane_cost_[current_lane_];
    c.cursor = std::max(c.cursor, done);
    c.signature = mix(c.signature, kind);
  }
  static std::uint64_t mix(std::uint64_t signature, std::uint32_t kind) {
    return (signature ^ kind) * 0x100000001B3ull + 0x9E3779B97F4A7C15ull;
  }
  Picoseconds op_issue_slow();
  void op_done_alone(Picoseconds done);
  // Waits until every charged operation has completed. An operation, an
  // instruction or a warp-uniform loop over lanes charges its time to
  // busy_until_ and returns; the next operation settles before it touches
  // memory, books a resource or reads memory for a record, so its effects
  // land when the warp reaches it. What runs in between is the warp's own
  // code, which nobody else sees: loops that follow an operation take no
  // wait of their own (the operation and its loops end in one), and stage
  // records read the warp's time, clock(). Every modelled time is what it
  // would be with a wait per operation and per loop; only the kernel's
  // order among warps that wake at the same picosecond can differ.
  //
  // In fast mode (Gpu::fast_mode) the warp waits only once its time has run
  // more than the quantum ahead of the kernel's (temporal decoupling, as
  // TLM-2.0's quantum keeper): its operations take effect on memory up to a
  // quantum early, and are booked and timed at the warp's own time.
  void settle() {
    if (busy_until_ > now() && (fast_quantum_ == 0 || busy_until_ - now() > fast_quantum_)) {
      resume_at(busy_until_);
    }
  }
  // Waits until every charged operation has completed, in either mode: before
  // what the rest of the machine sees at the kernel's time (a wait's watches,
  // a PCIe transfer, the warp's end).
  void synchronise() {
    if (busy_until_ > now()) resume_at(busy_until_);
  }
  // A warp step: the thread sleeps until `when`, woken by the calendar.
  void resume_at(Picoseconds when);
  static Picoseconds now() { return Calendar::now(); }
  void pcie_load(std::uint64_t addr, void* data, std::size_t len);
  // A wait's state as its watch callbacks see it: the predicate's last
  // answer, and the memory lines that evaluation read (polls) with the write
  // count it ran at; until one of them is written again, evaluating it again
  // gives the same answer. Each warp's lives in a dense pool rather than on
  // its own stack: most callbacks only find that nothing the predicate read
  // has changed, and that check then touches one or two cache lines (and no
  // page of a cold warp stack).
  struct alignas(64) WaitState {
    static constexpr std::uint32_t kMaxLines = 32;
    SimWarp* warp = nullptr;
    MemorySpace* memory = nullptr;
    std::uint64_t evaluated_at = 0;
    std::uint32_t count = 0;
    bool overflow = false;    // read more lines than it keeps: always re-evaluate
    bool satisfied = false;   // the wait in progress has seen its write
    bool answer = false;      // the predicate's last answer
    bool reads_host = false;  // the last evaluation read memory outside the GPU
    // The last evaluation's reads of memory outside the GPU, each load
    // counted (a poll makes them one after another: a scan's next load
    // follows the phase check of the last).
    std::uint32_t host_reads = 0;
    bool last_line_host = false;  // the last line noted is outside the GPU
    std::uint64_t lines[kMaxLines];
    // Whether [addr, addr+len) lies in the last line noted.
    bool last_line_holds(std::uint64_t addr, std::size_t len) const {
      const std::uint64_t line = addr / MemorySpace::kLineBytes;
      return count != 0 && lines[count - 1] == line &&
             (addr + len - 1) / MemorySpace::kLineBytes == line;
    }
    // Whether nothing the last evaluation read has been written since.
    // Predicates are functions of simulated memory (polls) and of the
    // waiting warp's own state, which does not change while it waits.
    bool unchanged() const;
  };
  class WaitStatePool;
  static WaitStatePool& wait_state_pool();
  // The rest of a wait in progress, on the waiting warp's stack.
  struct Waiting {
    PredicateRef ready;
    Picoseconds start = 0;
    Picoseconds seen = 0;      // when the satisfied warp notices the write
    Picoseconds deadline = 0;  // when it gives up (0: never)
    explicit Waiting(const PredicateRef& predicate) : ready(predicate) {}
  };
  // A watch of the wait in progress, or parked since the last wait ended:
  // a warp mostly waits on the same ranges wait after wait, and resuming a
  // parked watch costs less than a new one.
  struct WatchedRange {
    std::uint64_t addr;
    std::uint64_t len;
    MemorySpace::WatchId id;
  };
  bool block_until(PredicateRef ready, const std::uint64_t* ranges, std::size_t count,
                   Picoseconds deadline);
  // The period of the waiting warp's polls, and the latency of the poll that
  // sees the write: host polls when its predicate read host memory.
  Picoseconds current_poll_period() const {
    return state_->reads_host ? host_poll_scan() + poll_backoff_ : poll_period_;
  }
  Picoseconds current_poll_latency() const {
    return state_->reads_host ? host_poll_scan() : gpu_.costs().load_latency;
  }
  // One poll of host memory: a predicate that reads one host word polls it
  // once a host poll period; one that reads more (a CQ scan, entry after
  // entry from the head until an entry not yet posted) makes its reads one
  // after another, each as long as a poll of a line no other warp polls
  // (the rings' lines serialise less under scans than under pollers of one
  // entry: configs/measurements/host-polls-under-copies-h100-2026-11-26.json).
  Picoseconds host_poll_scan() const {
    if (state_->host_reads <= 1) return host_poll_period();
    return Picoseconds{state_->host_reads} * gpu_.host_poll_period(1);
  }
  // A host poll's period, given the other warps polling the lines it reads.
  Picoseconds host_poll_period() const {
    return gpu_.host_poll_period(gpu_.busiest_host_line(state_->lines, state_->count));
  }
  // Makes the watches of ranges[0 .. count) live, resuming parked ones.
  void watch_ranges(const std::uint64_t* ranges, std::size_t count);
  // A watched write: context is the warp's WaitState.
  static void watch_fired(void* context, MemorySpace::WatchId id);
  // A watched write that may have made the predicate true.
  void recheck(MemorySpace::WatchId id);
  // Fast mode: the poll that would see the write, due at `seen`, runs as a
  // calendar callback; the thread wakes only if the predicate still holds.
  void poll_at(Picoseconds seen);
  void poll_due();
  // Fast mode's herd resolution. A poll that finds the predicate true wakes
  // the warp, which then claims the lines that evaluation read (MemorySpace
  // claims) until it next acts: its next atomic, its next wait or its end.
  // A later poll that finds its predicate true only through writes to lines
  // one such claimant holds (the CQ entry, head and lock every waiter on a
  // queue reads) would race that claimant for the same work: it defers to
  // it instead of waking, and is polled again once the claimant has acted.
  // Found false then, it was a loser: it is charged what waking would have
  // cost it, the claimant's instructions from its wake-up to its act on its
  // own SM's issue slots and, where the act was an atomic, one atomic on
  // that address at the L2, and goes back to waiting without a wake-up. Its
  // counters take what a woken loser's would: those instructions and that
  // atomic, the claimant's loops over lanes, its wait ending at its poll
  // and beginning again at the claimant's act.
  struct HerdAct {
    std::uint64_t instructions = 0;          // the claimant's, from its wake-up to its act
    std::uint64_t lane_loop_iterations = 0;  // ... and its warp-uniform loops over lanes
    bool atomic = false;                     // the act was an atomic on atomic_addr
    std::uint64_t atomic_addr = 0;
  };
  // Notes the lines read and written since the predicate last looked (in
  // fast mode, before it looks again).
  void note_herd_trigger();
  // The claimant every noted line belongs to, if one warp holds them all.
  SimWarp* herd_claimant() const;
  // Resolves a poll due now; `loser_charge` is the act the warp was deferred
  // to (nullptr for a poll of its own).
  void resolve_poll(const HerdAct* loser_charge);
  void claim_herd();
  // Gives up the claims and polls the deferred warps again.
  void release_herd(const HerdAct& act);
  void release_herd_after_atomic(std::uint64_t addr) {
    if (claiming_) {
      release_herd(HerdAct{issued_ - issued_at_claim_, looped_ - looped_at_claim_, true, addr});
    }
  }
  void release_herd_at_wait() {
    if (claiming_) {
      release_herd(HerdAct{issued_ - issued_at_claim_, looped_ - looped_at_claim_, false, 0});
    }
  }
  // Evaluates the predicate, noting what it reads and its answer.
  bool evaluate();
  // The predicate's answer: the last one while nothing it read has been
  // written since, else a fresh evaluation.
  bool reevaluate() { return state_->unchanged() ? state_->answer : evaluate(); }
  void note_read(std::uint64_t addr, std::size_t len) const;

  // The fields are laid out by use. A waiting warp's watch callbacks and
  // polls (watch_fired, recheck, evaluate, poll_due, resolve_poll) run
  // between the turns of thousands of other warps and find this object out
  // of the caches: what they touch comes first, in a few consecutive cache
  // lines (the class is cache-line aligned), and the per-lane arrays that
  // only the warp's own instructions use come last.
  gpu::Gpu& gpu_;
  MemorySpace& memory_;
  WaitState* state_;            // from wait_state_pool()
  Waiting* waiting_ = nullptr;  // the wait in progress, for the watch callbacks
  WaitState* reads_ = nullptr;  // where polls are noted, while evaluating
  Calendar& calendar_;          // where the warp's timed wake-ups wait (resume_, wake_)
  Picoseconds fast_quantum_;    // fast mode's quantum; 0 in exact mode
  Picoseconds poll_period_;     // polls of GPU memory: a load latency plus the backoff
  Picoseconds poll_backoff_;    // __nanosleep between polls
  int predicate_depth_ = 0;     // > 0 while a wait predicate is evaluated
  int check_depth_ = 0;         // > 0 while check() evaluates a predicate
  int instruction_depth_ = 0;
  int current_lane_ = 0;
  int profile_depth_ = 0;  // > 0 inside a profiled call
  // Fast mode's herd resolution (resolve_poll).
  std::uint32_t herd_trigger_count_ = 0;  // kNoTrigger: unknown (too many lines)
  static constexpr std::uint32_t kNoTrigger = ~0u;
  Picoseconds deferred_at_ = 0;  // when its poll deferred to a claimant (0: it did not)
  bool claiming_ = false;
  bool cq_scan_waits_ = false;    // see set_cq_scan_waits
  double turn_break_credit_ = 0;  // see turn_run_breaks
  Picoseconds lane_loop_pass_;    // a pass of the warp's own loops over lanes (run_agent_code)
  bool gpu_store_since_fence_ = false;
  bool pcie_store_since_fence_ = false;
  WarpCounters& counters_;
  WarpPlacement placement_;
  Picoseconds busy_until_ = 0;         // completion of the operations charged so far
  std::uint64_t issued_ = 0;           // instructions this warp has issued
  std::uint64_t issued_at_claim_ = 0;  // ... when it claimed its lines
  std::uint64_t looped_ = 0;           // passes of its warp-uniform loops over lanes
  std::uint64_t looped_at_claim_ = 0;
  std::vector<WatchedRange> watches_;  // one per range of the wait in progress, or parked
  // What the warp's fibre waits on (sim/kernel/calendar.h).
  FiberEvent wake_;    // a poll has seen the write the wait needed
  FiberEvent resume_;  // a step is due (resume_at)
  FiberEvent read_returned_;
  FiberEvent timeout_;
  std::uint64_t herd_trigger_[WaitState::kMaxLines];  // lines written since the last look
  std::vector<SimWarp*> herd_followers_;              // deferred to this warp, in order
  std::uint32_t claimed_count_ = 0;
  std::uint64_t claimed_[WaitState::kMaxLines];
  std::vector<WatchedRange> next_watches_;  // scratch for watch_ranges
  pcie::Fabric& fabric_;
  StageSink& sink_;
  Picoseconds instruction_start_ = 0;
  // PCIe reads the lanes of the current instruction have in flight: the
  // lanes issue theirs together and the instruction ends when all are back.
  std::uint32_t reads_in_flight_ = 0;
  std::uint32_t instruction_lines_ = 0;
  // The GPU's memory region and load latency, fixed once the GPU is made:
  // copied here for the loads and stores (owns_gpu_memory, lane_load).
  std::uint64_t gpu_memory_base_;
  std::uint64_t gpu_memory_size_;
  Picoseconds load_latency_;
  algo::Lanes<LaneCost> lane_cost_{};
  algo::Lanes<std::uint32_t> lane_reads_in_flight_{};
  // Per lane: the latency of its GPU loads made while its PCIe reads were in
  // flight, added to its cursor as the last of them returns.
  algo::Lanes<Picoseconds> lane_after_reads_{};
  // The lines the instruction in progress has read over PCIe.
  std::uint64_t instruction_line_list_[algo::kWarpLanes * 4];
  // Whether `line` is the instruction's first read of it (noted if so).
  bool note_instruction_line(std::uint64_t line) {
    for (std::uint32_t i = instruction_lines_; i > 0; --i) {
      if (instruction_line_list_[i - 1] == line) return false;
    }
    if (instruction_lines_ < algo::kWarpLanes * 4)
      instruction_line_list_[instruction_lines_++] = line;
    return true;
  }
};

}  // namespace gpunvme::platform
