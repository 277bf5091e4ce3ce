// The fio-style microbenchmark: GPU threads, grouped into warps, each run a
// loop of reads or writes through the scenario's strategy until the run's I/O
// count is spent.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/host/nvme_driver.h"
#include "sim/algo/io_agents.h"
#include "sim/algo/io_common.h"
#include "sim/algo/mapping.h"
#include "sim/algo/queue_pair.h"
#include "sim/config/run_config.h"
#include "sim/kernel/component.h"
#include "sim/platform/cq_observer.h"
#include "sim/platform/sim_warp.h"
#include "sim/run/machine.h"
#include "sim/workload/command_watchdog.h"
#include "sim/workload/service_warps.h"
#include "sim/workload/stage_recorder.h"

namespace gpunvme {

// Checks the scenario against the devices it names (queue counts and sizes
// the SSDs grant, block size against LBA size and MDTS) and its strategy
// fields against each other and the GPU; ConfigError if not.
void check_microbenchmark(const RunConfig& config);

// The strategy a scenario asks for, with every "strategy" field resolved.
struct StrategyPlan {
  std::string name;
  algo::Strategy strategy;
  algo::SsdMapping ssd_mapping = algo::SsdMapping::Interleave;
  bool agents = false;   // io_agents
  bool pollers = false;  // completion = polling_warps
};
StrategyPlan strategy_plan(const RunConfig& config);

class Microbenchmark : public Component {
 public:
  Microbenchmark(const sc_core::sc_module_name& name, const RunConfig& config, Machine& machine);

  const StageRecorder& stages() const { return recorder_; }
  const platform::WarpCounters& counters() const { return counters_; }
  const StrategyPlan& plan() const { return plan_; }
  std::uint32_t compute_warps() const { return static_cast<std::uint32_t>(warps_.size()); }
  std::uint32_t service_warps() const { return service_warps_; }
  std::uint64_t errors() const { return errors_; }
  // Of those, aborted by the deadline (timeout) and by a controller reset.
  std::uint64_t timeouts() const { return timeouts_; }
  std::uint64_t reset_aborted() const { return reset_aborted_; }
  // I/Os issued: `ios` unless runtime_us cut the run short (or, time_based,
  // as many as the runtime allowed).
  std::uint64_t ios() const { return issued_; }
  std::uint64_t bytes_per_io() const { return bytes_per_io_; }
  // When every SSD's queues were up and the warps started.
  Picoseconds started_at() const { return started_at_; }

 private:
  struct WarpPlan {
    std::uint32_t first_thread;
    std::uint32_t lanes;
    platform::WarpPlacement placement;
    std::uint32_t cid_partition;  // index among the users of its queues
  };
  void warp_main(std::size_t warp);
  void start_warps();
  // Strategy set-up (after the queues exist in GPU memory).
  void prepare_queues();
  void plan_warps();
  platform::WarpPlacement place(std::uint32_t warp) const;
  std::uint32_t map_queue(std::uint32_t warp, std::uint32_t thread, std::uint64_t io_seq,
                          std::uint64_t block) const;
  void agent_main(std::uint32_t agent);
  void poller_main(std::uint32_t poller);
  void warp_finished(platform::SimWarp& p);

  const RunConfig& config_;
  Machine& machine_;
  gpu::Gpu& gpu_;
  std::vector<algo::QueuePair> queues_;
  std::vector<std::uint64_t> queue_span_lbas_;
  std::vector<WarpPlan> warps_;
  std::vector<std::unique_ptr<host::NvmeDriver>> drivers_;
  std::size_t drivers_ready_ = 0;
  Picoseconds started_at_ = 0;
  StageRecorder recorder_;
  platform::WarpCounters counters_;
  std::uint64_t total_ios_;
  std::uint64_t issued_ = 0;
  bool time_based_ = false;
  Picoseconds runtime_ = 0;   // runtime_us (0 = no limit)
  Picoseconds deadline_ = 0;  // when warps stop issuing (set as they start)
  std::uint64_t bytes_per_io_;
  std::uint32_t iodepth_;
  std::uint32_t threads_;
  std::uint64_t buffer_stride_;
  std::uint64_t buffers_;
  std::uint64_t errors_ = 0;
  std::uint64_t timeouts_ = 0;
  std::uint64_t reset_aborted_ = 0;
  // The warps' deadline per command, armed when an SSD's faults can lose
  // one (the warps then record their stages through it).
  GpuDeadlines deadlines_;

  StrategyPlan plan_;
  algo::WarpContext base_context_;
  algo::QueueMap queue_map_;
  std::uint32_t ssd_count_ = 1;
  std::uint32_t queues_per_ssd_ = 1;
  std::uint32_t warps_per_block_ = 8;
  Picoseconds poll_backoff_ = 0;
  std::uint32_t service_warps_ = 0;
  std::uint32_t cid_space_ = 0;
  std::uint64_t finished_word_ = 0;  // compute warps done (GPU memory)
  std::uint64_t shutdown_word_ = 0;  // set by the last compute warp
  std::uint64_t replies_ = 0;        // io_agents: one 8 B reply word per thread and round
  ServiceWarps service_;  // polling warps and I/O agents
  std::unique_ptr<platform::CqArrivalObserver> observer_;
};

}  // namespace gpunvme
