// What run() drives: one workload per scenario kind and path, behind one
// interface, so that every run produces the same result document.
//
//   kind            path            implementation
//   microbenchmark  gpu_initiated   Microbenchmark (rw without randrw, distribution uniform or
//                                   sequential), else FioWorkload over GpuIoPath
//   microbenchmark  gds, bounce     FioWorkload over CpuInitiatedPath
//   kv_cache        any             KvCacheWorkload (kv_cache.h)
//   graph           any             GraphWorkload (graph_bfs.h)
//   gather          any             GatherWorkload (gather.h)
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/kernel/component.h"
#include "sim/kernel/latency_histogram.h"
#include "sim/system/config/run_config.h"
#include "sim/system/machine/machine.h"
#include "sim/system/machine/sim_warp.h"
#include "sim/system/workload/fio_depth.h"
#include "sim/system/workload/io_path.h"
#include "sim/system/workload/run_length.h"

namespace gpunvme {

class Workload {
 public:
  virtual ~Workload() = default;

  virtual std::string path() const = 0;
  virtual std::string strategy() const = 0;
  virtual std::uint64_t ios() const = 0;        // I/Os issued
  virtual std::uint64_t completed() const = 0;  // I/Os finished, successfully or not
  virtual std::uint64_t errors() const = 0;     // of those, I/Os that failed (status != 0)
  virtual std::uint64_t bytes() const = 0;      // bytes the successful I/Os moved
  // Of the failed I/Os: aborted by the host's timeout, aborted by a reset.
  virtual std::uint64_t timeouts() const = 0;
  virtual std::uint64_t reset_aborted() const = 0;
  virtual const LatencyHistogram& end_to_end() const = 0;
  virtual nlohmann::json stages() const = 0;
  // The stage names of stages(), in the order an I/O passes them.
  virtual std::vector<std::string> stage_order() const = 0;
  // fio's slat, clat and lat, ramp_time_us left out.
  virtual const FioLatency& fio_latency() const = 0;
  virtual const platform::WarpCounters& counters() const = 0;
  // True once the workload has done everything it set out to do.
  virtual bool finished() const = 0;
  // The workload's I/O window: from when its queues were up and it began
  // issuing (controller bring-up lies before) to when its last I/O was done.
  // Throughput figures divide by this window, not by the simulated time, so
  // that the ~70 us of admin commands do not dilute them.
  virtual Picoseconds started_at() const = 0;
  virtual Picoseconds finished_at() const = 0;
  // Keys added to the result's summary, and top-level sections of the
  // result ("cpu", "kv_cache", "graph", "gather").
  virtual nlohmann::json summary(Picoseconds elapsed) const;
  virtual nlohmann::json sections(Picoseconds elapsed) const;
  // On the GPU path with an error policy: GpuIoPath::error_handling();
  // null otherwise.
  virtual nlohmann::json error_handling() const;
  // Fast mode's run-length control where it applies (run_length_refusal),
  // null otherwise; and the I/Os the scenario asked for, of which ios() were
  // issued.
  virtual const RunLengthController* run_length() const { return nullptr; }
  virtual std::uint64_t requested_ios() const { return ios(); }
  // Whether run-length control ended the run at its stop, before the I/Os
  // then in flight (ios() - completed()) completed (README, Fast mode).
  virtual bool stopped_before_drain() const { return false; }
  // The time-average over `io_time` of the I/Os requested and not yet
  // delivered. The integral of that count over time is the sum of every
  // I/O's time in flight (end_to_end), so Little's law holds for it:
  // mean_in_flight = iops x mean end-to-end latency.
  double mean_in_flight(Picoseconds io_time) const;
};

// The workload the scenario asks for, built on `machine` (it starts when the
// simulation runs).
std::unique_ptr<Workload> make_workload(const RunConfig& config, Machine& machine);
// The same, its model named `name` (tenants of one run each have their own).
std::unique_ptr<Workload> make_workload(const RunConfig& config, Machine& machine,
                                        const std::string& name);

// Checks everything about the scenario that needs the devices (queue limits,
// I/O sizes, strategy fields, kind-specific fields); ConfigError otherwise.
void check_workload(const RunConfig& config);

// Per-kind scenario fields: a field of one kind given in a scenario of
// another kind is a ConfigError naming it (`given` is the scenario document
// as written, overrides applied). The resolved scenario then keeps only the
// fields of its own kind.
void apply_scenario_kind(const nlohmann::json& given, RunConfig& config);

// A workload that drives an IoPath: delegates the I/O statistics to it.
class PathWorkload : public Component, public Workload {
 public:
  PathWorkload(const sc_core::sc_module_name& name, const RunConfig& config, Machine& machine,
               std::uint64_t max_io_bytes);

  std::string path() const override { return io_->name(); }
  std::string strategy() const override { return io_->strategy(); }
  std::uint64_t ios() const override { return io_->submitted(); }
  std::uint64_t completed() const override { return io_->completed(); }
  std::uint64_t errors() const override { return io_->errors(); }
  std::uint64_t bytes() const override { return io_->bytes(); }
  std::uint64_t timeouts() const override { return io_->timeouts(); }
  std::uint64_t reset_aborted() const override { return io_->reset_aborted(); }
  const LatencyHistogram& end_to_end() const override { return io_->end_to_end(); }
  nlohmann::json stages() const override { return io_->stages(); }
  std::vector<std::string> stage_order() const override { return io_->stage_order(); }
  const FioLatency& fio_latency() const override { return io_->fio_latency(); }
  const platform::WarpCounters& counters() const override { return io_->counters(); }
  bool finished() const override { return finished_; }
  Picoseconds started_at() const override { return began_at_; }
  Picoseconds finished_at() const override { return done_at_; }
  nlohmann::json sections(Picoseconds elapsed) const override { return io_->sections(elapsed); }
  nlohmann::json error_handling() const override;

 protected:
  // Runs once the path is ready; the workload calls done() at its end.
  virtual void begin() = 0;
  void done();
  IoPath& io() { return *io_; }
  const IoPath& io() const { return *io_; }
  // When begin() ran and when done() did.
  Picoseconds began_at() const { return began_at_; }
  Picoseconds done_at() const { return done_at_; }

  const RunConfig& config_;
  Machine& machine_;
  gpu::Gpu& gpu_;
  std::vector<std::string> ssd_ids_;

 private:
  std::unique_ptr<IoPath> io_;
  bool finished_ = false;
  Picoseconds began_at_ = 0;
  Picoseconds done_at_ = 0;
};

// fio's loop over an IoPath: `threads` threads each keep `iodepth` I/Os in
// flight, reaping and refilling as fio does (fio_depth.h) until `ios` are
// done (or runtime_us has passed; time_based: until it has passed); rw,
// rwmixread, distribution (uniform, sequential, zipf) and span_gib as fio
// has them; block b of the span goes to SSD b mod ssds.
class FioWorkload : public PathWorkload {
 public:
  FioWorkload(const sc_core::sc_module_name& name, const RunConfig& config, Machine& machine);
  nlohmann::json summary(Picoseconds elapsed) const override;

 private:
  struct Thread;
  void begin() override;
  // Runs thread `t`'s loop one step: issues what it refills now.
  void step(std::uint32_t t);

  std::uint64_t total_ios_;
  bool time_based_ = false;
  Picoseconds runtime_ = 0;   // runtime_us (0 = no limit)
  Picoseconds deadline_ = 0;  // when threads stop issuing (set by begin())
  std::uint32_t threads_;
  std::uint32_t iodepth_;
  FioBatching batching_;
  Picoseconds ramp_time_ = 0;
  std::uint64_t bytes_per_io_;
  std::uint64_t buffers_ = 0;
  std::uint64_t buffer_stride_;
  std::vector<std::uint32_t> lbas_per_io_;
  std::uint64_t slots_ = 1;
  std::vector<std::unique_ptr<Thread>> thread_state_;
  std::uint32_t threads_done_ = 0;
  std::uint64_t reads_ = 0;
  std::uint64_t writes_ = 0;
};

}  // namespace gpunvme
