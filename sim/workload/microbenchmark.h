// The fio-style microbenchmark: GPU threads, grouped into warps, each run a
// loop of reads or writes through the scenario's strategy until the run's I/O
// count is spent.
#pragma once

#include <memory>
#include <vector>

#include "sim/algo/queue_pair.h"
#include "sim/config/run_config.h"
#include "sim/kernel/component.h"
#include "sim/platform/sim_warp.h"
#include "sim/run/machine.h"
#include "sim/workload/stage_recorder.h"

namespace gpunvme {

// Checks the scenario against the devices it names (queue counts and sizes
// the SSDs grant, block size against LBA size and MDTS); ConfigError if not.
void check_microbenchmark(const RunConfig& config);

class Microbenchmark : public Component {
 public:
  Microbenchmark(const sc_core::sc_module_name& name, const RunConfig& config, Machine& machine);

  const StageRecorder& stages() const { return recorder_; }
  const platform::WarpCounters& counters() const { return counters_; }
  std::uint64_t errors() const { return errors_; }
  std::uint64_t ios() const { return total_ios_; }
  std::uint64_t bytes_per_io() const { return bytes_per_io_; }

 private:
  struct WarpPlan {
    std::size_t queue;  // index into queues_
    std::uint32_t first_thread;
    std::uint32_t lanes;
  };
  void warp_main(std::size_t warp);

  const RunConfig& config_;
  Machine& machine_;
  gpu::Gpu& gpu_;
  std::vector<algo::QueuePair> queues_;
  std::vector<std::uint64_t> queue_span_lbas_;
  std::vector<WarpPlan> warps_;
  StageRecorder recorder_;
  platform::WarpCounters counters_;
  std::uint64_t total_ios_;
  std::uint64_t bytes_per_io_;
  std::uint32_t iodepth_;
  std::uint32_t threads_;
  std::uint64_t buffer_stride_;
  std::uint64_t buffers_;
  std::uint64_t errors_ = 0;
};

}  // namespace gpunvme
