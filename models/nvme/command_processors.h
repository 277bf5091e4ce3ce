// The controller's command processors and the policy that drives them.
//
// ProcessorCores are the controller's cores, each a NextFreeServer running
// at its own speed (processor_time_scale). A ProcessorPolicy decides how
// commands reach them, chosen once at construction:
// - PerCommandProcessing: each fetched I/O command books the core that frees
//   up first, for its own processing time; the fetch engine fetches whenever
//   it has slots.
// - BatchServiceProcessing (batch_service): as a software controller's
//   threads do, core t polls I/O queues t+1, t+1+cores, ...; it fetches one
//   read of entries (a batch) only when free, processes the batch as one
//   job, and takes no other batch until the batch's completions are all
//   posted, then stays busy a gap longer (its pass on to the next queue).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_set>
#include <vector>

#include "sim/core/protocol/nvme_entries.h"
#include "sim/kernel/server.h"
#include "sim/kernel/time.h"

namespace gpunvme::nvme {

// Processor time of one command: a fixed overhead plus a cost per byte of
// the data it moves.
struct CommandCost {
  Picoseconds overhead = 0;
  double ps_per_byte = 0;
  std::uint32_t lba_bytes = 512;

  // The data a read or write moves (commands without data: 0).
  std::uint64_t data_bytes(const SubmissionEntry& sqe) const;
  Picoseconds processing_time(std::uint64_t bytes) const;
};

class ProcessorCores {
 public:
  // `scale`: per core, its time over the nominal (empty: all nominal).
  ProcessorCores(std::size_t cores, std::vector<double> scale);

  std::size_t count() const { return servers_.size(); }
  // A core's time for `work` at nominal speed.
  Picoseconds scaled(Picoseconds work, std::size_t core) const;
  // The core that frees up first (the lowest-numbered of equals) takes
  // `work`, ready at `ready`; returns when it is done.
  Picoseconds book_earliest(Picoseconds ready, Picoseconds work);
  // Core `core` takes `work`, ready at `ready`; returns when it is done.
  Picoseconds book(std::size_t core, Picoseconds ready, Picoseconds work);
  // Core `core` stays idle until `until` at least.
  void hold_until(std::size_t core, Picoseconds until) { servers_[core].hold_until(until); }
  Picoseconds free_at(std::size_t core) const { return servers_[core].free_at(); }

 private:
  std::vector<NextFreeServer> servers_;
  std::vector<double> scale_;
};

// One batch of batch_service: its core stays busy until the last of its
// commands completes.
struct BatchHold {
  std::size_t processor = 0;
  std::uint32_t left = 0;  // commands of the batch not yet completed
  std::uint64_t generation = 0;
  Picoseconds fetch_started = 0;
  std::uint32_t commands = 0;
};

// What a fetch of entries means for the processors: when they are
// processed (for a batch: together), and the batch they belong to.
struct FetchedWork {
  std::optional<Picoseconds> processed;
  std::shared_ptr<BatchHold> batch;
};

// Per core, under batch_service: batches served, their commands, and their
// time from the fetch's start to the last completion posted.
struct CoreStats {
  std::uint64_t batches = 0;
  std::uint64_t commands = 0;
  Picoseconds busy = 0;
};

// What a policy asks of its controller.
struct ProcessorHooks {
  // Runs `callback` at `when` (simulated time).
  std::function<void(Picoseconds when, std::function<void()> callback)> schedule_at;
  // I/O SQ `qid` may be offered to the fetch engine again.
  std::function<void(std::uint16_t qid)> queue_ready;
  // The fetch engine runs its arbitration loop.
  std::function<void()> kick_fetch;
  // The controller's reset count: work from before a reset is dropped.
  std::function<std::uint64_t()> generation;
  // What the GPU owning `addr` adds to one of its copy-engine operations
  // now (polls of host memory it waits behind); null: the controller's own
  // DMA moves the data.
  std::function<Picoseconds(std::uint64_t addr)> copy_op_delay;
  // GPU warps polling lines of the controller's CQs beyond the first warp
  // on each line, now; with copy_op_line_poller, what each of a batch's
  // copy operations costs per such warp (copy_op_line_poller_ns). Null or
  // 0: the copies cost nothing for them.
  std::function<std::uint64_t()> cq_line_extra_pollers;
  Picoseconds copy_op_line_poller = 0;
  // GPU warps sweeping the controller's CQ rings beyond the first warp on
  // each ring, now; with copy_op_ring_sweeper, what each copy operation
  // costs per such warp (copy_op_ring_sweeper_ns). Null or 0: nothing.
  std::function<std::uint64_t()> cq_ring_extra_sweepers;
  Picoseconds copy_op_ring_sweeper = 0;
};

// How a batch's processor time depends on how many processors are busy
// when it starts: points (busy processors, scale), the scale interpolated
// linearly between them and flat beyond the ends. A software target's
// batch costs more while its other serving threads or warps work beside it
// (they share the machine it runs on); a controller calibrated with every
// processor busy charges a batch that starts alone too much. No points: no
// effect.
class BusyScale {
 public:
  BusyScale() = default;
  // `busy` ascending, each >= 1; `scale` as many, each > 0 (the controller
  // checks them against its configuration).
  BusyScale(std::vector<double> busy, std::vector<double> scale);

  bool empty() const { return busy_.empty(); }
  // The scale at `busy` processors (1 when there are no points).
  double at(double busy) const;

 private:
  std::vector<double> busy_;
  std::vector<double> scale_;
};

// How a batch's processor time depends on the memory footprint of the
// buffers its controller's commands address: each command with data adds
// ns_per_mib(busy) x (F - reference_mib) ns, F the distinct 4 KiB pages the
// commands have addressed so far in the run (in MiB) taken at most
// reference_mib, ns_per_mib interpolated at the busy count as BusyScale.
// A software target's copies write those buffers through a shared cache: its
// batch grows with the buffers written, and more so while other processors
// copy beside it. The reference is the footprint the batch time and the busy
// scale were calibrated at (the largest measured); beyond it nothing is
// measured, so nothing is charged. No points: no effect.
class FootprintTerm {
 public:
  FootprintTerm() = default;
  // `busy` as BusyScale's; `ns_per_mib` as many; `reference_mib` > 0.
  FootprintTerm(std::vector<double> busy, std::vector<double> ns_per_mib, double reference_mib);

  static constexpr std::uint64_t kFootprintPage = 4096;

  bool empty() const { return slope_.empty(); }
  // Records the pages of `bytes` at GPU address `addr`, taken as one
  // contiguous buffer from the command's first data pointer (as the
  // validation runs lay their buffers out, one per thread); a command whose
  // pages a PRP list scatters counts the pages after its first instead.
  void address(std::uint64_t addr, std::uint64_t bytes);
  // The footprint addressed so far, in MiB.
  double mib() const;
  // What one command with data adds at `busy` processors, in ns (0 when
  // there are no points).
  double per_command_ns(double busy) const;

 private:
  BusyScale slope_;
  double reference_mib_ = 0;
  std::unordered_set<std::uint64_t> pages_;
};

// The copy operations a batch's data takes: a command's data continues the
// previous operation when it goes the same way and its GPU buffer starts
// where that one's ended, as the software controller merges them. Returns
// the first GPU address of each operation.
std::vector<std::uint64_t> copy_operations(const std::uint8_t* entries, std::uint32_t count,
                                           const CommandCost& cost);

class ProcessorPolicy {
 public:
  virtual ~ProcessorPolicy() = default;

  // The fetch engine offers I/O SQ `qid` a turn of `turn` (> 0) entries at
  // `now`: returns how many to fetch, 0 if the queue must wait (the policy
  // offers it again through queue_ready).
  virtual std::uint32_t fetch_turn(std::uint16_t qid, std::uint32_t turn, std::uint32_t fetch_burst,
                                   Picoseconds now) = 0;
  // Whether a turn is one read at most (otherwise the turn is split into
  // reads of fetch_burst entries).
  virtual bool one_read_per_turn() const = 0;
  // A read of entries from I/O SQ `qid` arrived (before and after its
  // commands are handed out), in the controller's current generation.
  virtual void read_arrived(std::uint16_t qid) = 0;
  virtual void read_dispatched(std::uint16_t qid, Picoseconds now) = 0;
  // The `count` I/O entries of one read from `qid`, at `now`.
  virtual FetchedWork fetched(std::uint16_t qid, const std::uint8_t* entries, std::uint32_t count,
                              Picoseconds now) = 0;
  // When an I/O command of `bytes` data is processed; `batch_processed` is
  // what fetched() said for its read.
  virtual Picoseconds processed(const std::optional<Picoseconds>& batch_processed,
                                std::uint64_t bytes, Picoseconds now) = 0;
  // An I/O command of `batch` (may be null) completed at `now`.
  virtual void command_done(BatchHold* batch, Picoseconds now) = 0;
  // SQ `qid` was created, deleted or reset: it waits for nothing.
  virtual void forget_queue(std::uint16_t qid) = 0;
  // Controller reset.
  virtual void reset() = 0;
  // Per-core statistics (null where the policy reports none).
  virtual std::optional<std::vector<CoreStats>> per_core() const = 0;
};

class PerCommandProcessing : public ProcessorPolicy {
 public:
  PerCommandProcessing(ProcessorCores& cores, CommandCost cost) : cores_(cores), cost_(cost) {}

  std::uint32_t fetch_turn(std::uint16_t, std::uint32_t turn, std::uint32_t, Picoseconds) override {
    return turn;
  }
  bool one_read_per_turn() const override { return false; }
  void read_arrived(std::uint16_t) override {}
  void read_dispatched(std::uint16_t, Picoseconds) override {}
  FetchedWork fetched(std::uint16_t, const std::uint8_t*, std::uint32_t, Picoseconds) override {
    return {};
  }
  Picoseconds processed(const std::optional<Picoseconds>&, std::uint64_t bytes,
                        Picoseconds now) override {
    return cores_.book_earliest(now, cost_.processing_time(bytes));
  }
  void command_done(BatchHold*, Picoseconds) override {}
  void forget_queue(std::uint16_t) override {}
  void reset() override {}
  std::optional<std::vector<CoreStats>> per_core() const override { return std::nullopt; }

 private:
  ProcessorCores& cores_;
  CommandCost cost_;
};

class BatchServiceProcessing : public ProcessorPolicy {
 public:
  // `batch_overhead`: processor time per batch on top of its commands';
  // `batch_gap`: idle time of a core between two batches; `busy_scale`: a
  // batch's processor time by the processors busy when it starts;
  // `footprint`: what its commands add by the buffers addressed.
  BatchServiceProcessing(ProcessorCores& cores, CommandCost cost, Picoseconds batch_overhead,
                         Picoseconds batch_gap, std::size_t max_qid, ProcessorHooks hooks,
                         BusyScale busy_scale = {}, FootprintTerm footprint = {});

  // The core that polls I/O queue `qid`.
  std::size_t processor_of(std::uint16_t qid) const { return (qid - 1u) % cores_.count(); }

  std::uint32_t fetch_turn(std::uint16_t qid, std::uint32_t turn, std::uint32_t fetch_burst,
                           Picoseconds now) override;
  bool one_read_per_turn() const override { return true; }
  void read_arrived(std::uint16_t qid) override;
  void read_dispatched(std::uint16_t qid, Picoseconds now) override;
  FetchedWork fetched(std::uint16_t qid, const std::uint8_t* entries, std::uint32_t count,
                      Picoseconds now) override;
  Picoseconds processed(const std::optional<Picoseconds>& batch_processed, std::uint64_t bytes,
                        Picoseconds now) override;
  void command_done(BatchHold* batch, Picoseconds now) override;
  void forget_queue(std::uint16_t qid) override { waiting_[qid] = false; }
  void reset() override;
  std::optional<std::vector<CoreStats>> per_core() const override;

 private:
  struct Poller {
    bool fetching = false;
    std::uint32_t batches_held = 0;  // batches whose completions are not all posted
    std::vector<std::uint16_t> waiting;
    static constexpr Picoseconds kNoWake = ~Picoseconds{0};
    Picoseconds wake_at = kNoWake;  // when a scheduled wake-up fires
    Picoseconds fetch_started = 0;  // of the batch being fetched
    CoreStats stats;
  };
  void wait_for_processor(std::size_t processor, std::uint16_t qid, Picoseconds now);
  void wake_when_free(std::size_t processor, Picoseconds now);
  void release(const BatchHold& batch, Picoseconds now);
  // Processors fetching or holding a batch, `processor` counted as busy.
  std::size_t busy_with(std::size_t processor) const;

  ProcessorCores& cores_;
  CommandCost cost_;
  Picoseconds batch_overhead_;
  Picoseconds batch_gap_;
  ProcessorHooks hooks_;
  BusyScale busy_scale_;
  FootprintTerm footprint_;
  NextFreeServer copy_engine_;  // the GPU's copy operations, one after another
  std::vector<Poller> pollers_;
  std::vector<bool> waiting_;  // per SQ: listed in its poller's waiting
};

}  // namespace gpunvme::nvme
