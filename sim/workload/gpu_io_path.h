// The GPU-initiated path for workloads whose I/O is not a fixed loop (KV
// cache, graph, gather, and the microbenchmark's randrw and zipf patterns):
// `threads` GPU threads, grouped in warps, take block requests from a FIFO
// and run them through the scenario's strategy (sim/algo), with the queues
// in GPU memory as BaM places them.
//
// A warp takes up to 32 x iodepth requests at once (lane = request mod 32,
// round = request / 32), submits every round, waits for all of them, then
// calls each request back. An idle warp sleeps on a mailbox word in GPU
// memory (a watch, not a spin) that submit() writes. The SSD a request names
// picks the SSD; the strategy's mapping picks the queue on it (as the
// microbenchmark's ssd_mapping = stripe does).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "models/host/nvme_driver.h"
#include "sim/algo/io_agents.h"
#include "sim/algo/io_common.h"
#include "sim/algo/mapping.h"
#include "sim/algo/queue_pair.h"
#include "sim/kernel/component.h"
#include "sim/platform/cq_observer.h"
#include "sim/workload/command_watchdog.h"
#include "sim/workload/io_path.h"
#include "sim/workload/microbenchmark.h"
#include "sim/workload/service_warps.h"
#include "sim/workload/stage_recorder.h"

namespace gpunvme {

class GpuIoPath : public Component, public IoPath {
 public:
  GpuIoPath(const sc_core::sc_module_name& name, const RunConfig& config, Machine& machine,
            std::uint64_t max_io_bytes);
  ~GpuIoPath() override;

  void start(std::function<void()> ready) override;
  void submit(const BlockIo& io, IoDone done) override;
  void close() override;

  std::string name() const override { return "gpu_initiated"; }
  std::string strategy() const override { return plan_.name; }
  std::uint64_t submitted() const override { return submitted_; }
  std::uint64_t completed() const override { return recorder_.completed(); }
  std::uint64_t errors() const override { return errors_; }
  std::uint64_t bytes() const override { return bytes_; }
  std::uint64_t timeouts() const override { return timeouts_; }
  std::uint64_t reset_aborted() const override { return reset_aborted_; }
  const LatencyHistogram& end_to_end() const override { return recorder_.end_to_end(); }
  nlohmann::json stages() const override { return recorder_.stages_json(); }
  const platform::WarpCounters& counters() const override { return counters_; }
  nlohmann::json sections(Picoseconds) const override { return nlohmann::json::object(); }

  // Queue trace id -> (SSD id, qid), for traces.
  std::pair<std::string, std::uint32_t> queue_name(std::uint32_t trace_id) const;

 private:
  struct Pending {
    BlockIo io;
    IoDone done;
  };
  struct WarpPlan {
    std::uint32_t first_thread;
    std::uint32_t lanes;
    platform::WarpPlacement placement;
    std::uint32_t cid_partition;
    std::uint64_t mailbox;  // GPU word submit() writes to wake the warp
  };

  void create_queues();
  void plan_warps();
  void prepare_queues();
  void spawn_warps();
  platform::WarpPlacement place(std::uint32_t warp) const;
  std::uint32_t map_queue(std::uint32_t warp, std::uint32_t thread, std::uint64_t seq,
                          std::uint32_t ssd) const;
  void warp_main(std::uint32_t warp);
  void agent_main(std::uint32_t agent);
  void poller_main(std::uint32_t poller);
  void wake_one();

  const RunConfig& config_;
  Machine& machine_;
  gpu::Gpu& gpu_;
  std::uint64_t max_io_bytes_;
  StrategyPlan plan_;
  std::vector<std::string> ssd_ids_;
  std::uint32_t ssd_count_ = 1;
  std::uint32_t queues_per_ssd_ = 1;
  std::uint32_t entries_ = 0;
  std::uint32_t threads_ = 0;
  std::uint32_t iodepth_ = 1;
  std::uint32_t warps_per_block_ = 8;
  std::uint32_t cid_space_ = 0;
  std::uint32_t service_warps_ = 0;
  Picoseconds poll_backoff_ = 0;

  std::vector<algo::QueuePair> queues_;
  std::vector<std::unique_ptr<host::NvmeDriver>> drivers_;
  std::size_t drivers_ready_ = 0;
  std::function<void()> ready_;
  std::vector<WarpPlan> warps_;
  algo::WarpContext base_context_;
  algo::QueueMap queue_map_;
  StageRecorder recorder_;
  platform::WarpCounters counters_;
  std::unique_ptr<platform::CqArrivalObserver> observer_;

  std::deque<Pending> pending_;
  std::vector<std::uint32_t> idle_;  // warps asleep on their mailbox
  std::uint32_t live_warps_ = 0;
  bool closed_ = false;
  std::uint64_t shutdown_word_ = 0;

  // io_agents and polling warps.
  ServiceWarps service_;  // polling warps and I/O agents
  std::uint64_t replies_ = 0;

  std::uint64_t submitted_ = 0;
  std::uint64_t errors_ = 0;
  std::uint64_t timeouts_ = 0;
  std::uint64_t reset_aborted_ = 0;
  std::uint64_t bytes_ = 0;
  // The warps' deadline per command, armed when an SSD's faults can lose
  // one (the warps then record their stages through it).
  GpuDeadlines deadlines_;
};

}  // namespace gpunvme
