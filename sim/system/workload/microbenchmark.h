// The fio-style microbenchmark on the GPU-initiated path: GPU threads,
// grouped into warps, each run a loop of reads or writes through the
// scenario's strategy until the run's I/O count is spent. The loop is a
// request source of the GPU I/O path (gpu_io_path.h), which runs the warps.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/algo/io_common.h"
#include "sim/kernel/random.h"
#include "sim/system/config/run_config.h"
#include "sim/system/machine/machine.h"
#include "sim/system/machine/sim_warp.h"
#include "sim/system/workload/gpu_io_path.h"
#include "sim/system/workload/run_length.h"
#include "sim/system/workload/stage_recorder.h"

namespace gpunvme {

// Checks the scenario against the devices it names (queue counts and sizes
// the SSDs grant, block size against LBA size and MDTS) and its strategy
// fields against each other and the GPU; ConfigError if not.
void check_microbenchmark(const RunConfig& config);

// fio's loop, run by the GPU threads themselves: a request source of the
// GPU I/O path. Each thread keeps `iodepth` I/Os in flight, refilled by warp
// as fio's iodepth_batch fields say (gpu_io_path.h; submit iodepth and wait
// for all of them when iodepth_batch_complete_min = iodepth) until its share
// of `ios` is done or `runtime_us` of
// simulated time has passed (time_based: for the whole runtime); rw (read,
// write, randread, randwrite) and distribution (uniform, sequential) as fio
// has them, over `span_gib` of each SSD. Each warp draws its addresses from
// its own generator, so results do not depend on the order warps run in.
class FioWarpLoop : public GpuRequestSource {
 public:
  FioWarpLoop(const RunConfig& config, Machine& machine);

  // The fields of the scenario that place the queues (queue_memory,
  // sq_placement, shadow_doorbells, ssd_mapping).
  GpuQueueOptions queue_options() const { return queue_options_; }
  std::uint64_t bytes_per_io() const { return bytes_per_io_; }
  // When the warps started (every SSD's queues up): the runtime counts from
  // here.
  void started(Picoseconds now);
  Picoseconds started_at() const { return started_at_; }

  bool queues_first() const override { return true; }
  void lay_out(GpuIoPath& path, gpu::Gpu& gpu) override;
  std::uint64_t shutdown_word() const override { return shutdown_word_; }
  bool next_batch(platform::SimWarp& p, std::uint32_t w) override;
  algo::LaneMask fill_round(std::uint32_t w, std::uint32_t round,
                            algo::Lanes<algo::IoRequest>& request) override;
  void completed(std::uint32_t, std::uint32_t, int, std::uint16_t) override {}
  void warp_exits(platform::SimWarp& p, std::uint32_t w) override;
  // Fast mode's run-length control: once `controller` has converged, a
  // thread issues nothing more and what it has in flight completes (as at
  // the runtime deadline).
  void stop_when_converged(const RunLengthController* controller) { run_length_ = controller; }
  // The I/Os the scenario asked for (ios, unless time_based).
  std::uint64_t requested() const { return total_ios_; }
  // I/Os issued: `ios` unless runtime_us cut the run short (or, time_based,
  // as many as the runtime allowed).
  std::uint64_t submitted() const override { return issued_; }
  // fio's refills, unless the scenario waits for every round (the batch loop
  // does that).
  const FioBatching* refill() const override {
    return batching_.waits_for_all() ? nullptr : &batching_;
  }

 private:
  struct WarpState {
    // Seeded where it is made: a default-constructed engine would be seeded
    // twice (its default seed, then this one), each a pass over its 312
    // words of state, for each of up to thousands of warps.
    explicit WarpState(std::uint64_t seed) : rng(seed) {}
    RandomEngine rng;
    algo::Lanes<std::uint64_t> remaining{};
    algo::Lanes<std::uint64_t> issued{};
    algo::Lanes<std::uint64_t> next_block{};  // where a sequential stream starts
  };

  // The scenario's fields the loop reads (all read in the constructor).
  std::uint64_t seed_;
  std::uint64_t total_ios_;
  bool time_based_ = false;
  Picoseconds runtime_ = 0;  // runtime_us (0 = no limit)
  std::uint64_t bytes_per_io_;
  std::uint32_t iodepth_;
  FioBatching batching_;
  Picoseconds ramp_time_ = 0;
  std::uint32_t threads_;
  bool random_ = true;
  bool write_ = false;
  bool sequential_streams_ = false;
  GpuQueueOptions queue_options_;

  GpuIoPath* path_ = nullptr;
  std::uint32_t ssd_count_ = 1;
  bool stripe_ = false;
  // Blocks of bs bytes each SSD offers over the span; with striping, block
  // b of the striped space is block b / ssds of SSD b % ssds.
  std::vector<std::uint64_t> lbas_per_io_;  // per SSD
  std::vector<std::uint64_t> span_lbas_;    // per SSD
  std::uint64_t striped_slots_ = 0;
  std::uint64_t buffer_stride_ = 0;
  std::uint64_t buffers_ = 0;
  std::uint64_t finished_word_ = 0;  // compute warps done (GPU memory)
  std::uint64_t shutdown_word_ = 0;  // set by the last compute warp
  std::vector<WarpState> warps_;
  Picoseconds started_at_ = 0;
  Picoseconds deadline_ = 0;  // when warps stop issuing (set as they start)
  std::uint64_t issued_ = 0;
  const RunLengthController* run_length_ = nullptr;
};

// The microbenchmark on the GPU-initiated path: the GPU I/O path driven by
// the fio loop.
class Microbenchmark {
 public:
  Microbenchmark(const sc_core::sc_module_name& name, const RunConfig& config, Machine& machine);

  const StageRecorder& stages() const { return path_.recorder(); }
  const platform::WarpCounters& counters() const { return path_.counters(); }
  const StrategyPlan& plan() const { return path_.plan(); }
  std::uint64_t errors() const { return path_.errors(); }
  // Of those, aborted by the deadline (timeout) and by a controller reset.
  std::uint64_t timeouts() const { return path_.timeouts(); }
  std::uint64_t reset_aborted() const { return path_.reset_aborted(); }
  nlohmann::json error_handling() const { return path_.error_handling(); }
  std::uint64_t ios() const { return loop_.submitted(); }
  std::uint64_t bytes_per_io() const { return loop_.bytes_per_io(); }
  // When every SSD's queues were up and the warps started.
  Picoseconds started_at() const { return loop_.started_at(); }
  std::pair<std::string, std::uint32_t> queue_name(std::uint32_t trace_id) const {
    return path_.queue_name(trace_id);
  }
  std::uint64_t requested() const { return loop_.requested(); }
  // Fast mode's run-length control (null where it does not apply).
  const RunLengthController* run_length() const { return run_length_.get(); }
  // Whether run-length control ended the run where it converged, with fewer
  // I/Os issued than requested: the I/Os then in flight were not simulated
  // to completion (ios() - completed of them).
  bool stopped_before_drain() const { return stopped_before_drain_; }

 private:
  FioWarpLoop loop_;
  GpuIoPath path_;
  std::optional<RunLengthRule> rule_;  // set where run-length control applies
  std::unique_ptr<RunLengthController> run_length_;
  bool stopped_before_drain_ = false;
};

}  // namespace gpunvme
