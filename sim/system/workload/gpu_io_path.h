// The GPU-initiated I/O path, the one driver of every GPU-initiated
// workload: `threads` GPU threads, grouped in warps, run requests through
// the scenario's strategy (sim/core/algo), with the queues in GPU memory as BaM
// places them; I/O-agent and polling warps serve them where the strategy has
// them. Where the requests come from is the path's request source:
//
//  - block I/Os submitted through the IoPath interface (the KV cache, graph
//    and gather workloads, and the microbenchmark's randrw and zipf
//    patterns through FioWorkload): a FIFO the warps take requests from. A
//    warp takes up to 32 x iodepth requests at once (lane = request mod 32,
//    round = request / 32), submits every round, waits for all of them,
//    then calls each request back. An idle warp sleeps on a mailbox word in
//    GPU memory (a watch, not a spin) that submit() writes. The SSD a
//    request names picks the SSD; the strategy's mapping picks the queue on
//    it (as the microbenchmark's ssd_mapping = stripe does);
//  - the microbenchmark's fio loop (microbenchmark.h), which generates each
//    thread's requests on the GPU.
//
// Either way a warp runs batches: the source fills up to iodepth rounds of
// up to 32 requests, the warp submits every round, waits for all of them,
// and hands each status back to the source. A source that asks for fio's
// refills (GpuRequestSource::refill) is run the fio way instead: a round is
// one of the warp's iodepth slots; once every slot is in flight (or the
// source has no more), the warp waits until iodepth_batch_complete_min
// rounds have every lane's command complete, reaps up to
// iodepth_batch_complete_max of them, and refills each freed round with one
// warp-wide submission (a refilled request keeps the freed round's index,
// its pool_index). With io_agents the warp waits for its rounds in the
// order it posted them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/host/gpu_error_host.h"
#include "models/host/nvme_driver.h"
#include "sim/core/algo/error_mailbox.h"
#include "sim/core/algo/io_agents.h"
#include "sim/core/algo/io_common.h"
#include "sim/core/algo/mapping.h"
#include "sim/core/algo/queue_pair.h"
#include "sim/core/algo/strategy_names.h"
#include "sim/kernel/component.h"
#include "sim/system/machine/cq_observer.h"
#include "sim/system/workload/command_watchdog.h"
#include "sim/system/workload/fio_depth.h"
#include "sim/system/workload/io_path.h"
#include "sim/system/workload/service_warps.h"
#include "sim/system/workload/stage_recorder.h"

namespace gpunvme {

struct ScenarioParams;

// The strategy a scenario asks for, with every "strategy" field resolved
// (sim/core/algo/strategy_names.h); ConfigError for a name the tables do not
// know.
struct StrategyPlan {
  std::string name;  // the named strategy's, as the results report it
  algo::NamedStrategy named = algo::NamedStrategy::WarpBatch;
  algo::Strategy strategy;
  algo::SsdMapping ssd_mapping = algo::SsdMapping::Interleave;
  bool agents = false;   // io_agents
  bool pollers = false;  // completion = polling_warps
};
StrategyPlan strategy_plan(const RunConfig& config);
// The scenario's strategy fields as written: views into `scenario`, valid
// while it lives.
algo::StrategyFields strategy_fields(const ScenarioParams& scenario);

// One compute warp of the path.
struct GpuWarp {
  std::uint32_t first_thread;
  std::uint32_t lanes;
  platform::WarpPlacement placement;
  std::uint32_t cid_partition;  // index among the warps sharing its home queue
};

class GpuIoPath;

// Where the warps of a GpuIoPath get their requests. The path calls it from
// its warps (next_batch, fill_round, completed, warp_exits), each with the
// warp's index.
class GpuRequestSource {
 public:
  virtual ~GpuRequestSource() = default;

  // Whether the path creates the I/O queues before the source's and the
  // service warps' GPU memory (lay_out) or after. The order GPU memory is
  // carved in decides which L2 partition each word falls in, and with it
  // the latency of atomics on it; each source keeps the order its results
  // were established with.
  virtual bool queues_first() const = 0;
  // Carves the source's GPU memory once the path has planned its warps
  // (path.warps()) and service warps; the source may keep `path`.
  virtual void lay_out(GpuIoPath& path, gpu::Gpu& gpu) = 0;
  // The GPU word the service warps watch: set once every compute warp has
  // left (warp_exits).
  virtual std::uint64_t shutdown_word() const = 0;

  // Before each batch of warp `w`: false when the warp has nothing more to
  // do (it then leaves); may wait, on the GPU, for work.
  virtual bool next_batch(platform::SimWarp& p, std::uint32_t w) = 0;
  // The requests of round `round` of the batch (queue, command, buffer);
  // returns the lanes that have one, 0 when the batch has no more rounds.
  virtual algo::LaneMask fill_round(std::uint32_t w, std::uint32_t round,
                                    algo::Lanes<algo::IoRequest>& request) = 0;
  // Once every round of the batch has completed: the request of `lane` in
  // `round` ended with `status` (rounds and lanes in order).
  virtual void completed(std::uint32_t w, std::uint32_t round, int lane, std::uint16_t status) = 0;
  // Warp `w` leaves (next_batch said so, or a batch had no rounds).
  virtual void warp_exits(platform::SimWarp& p, std::uint32_t w) = 0;
  // Requests the source has taken in (submit()) or generated (the fio loop).
  virtual std::uint64_t submitted() const = 0;
  // fio's refill rule for the warps (see above), or nullptr for batches.
  // With refills, next_batch runs before each refill and fill_round is asked
  // for single free rounds in any order.
  virtual const FioBatching* refill() const { return nullptr; }
};

// Where the queues go, beyond BaM's all-GPU placement (the microbenchmark's
// queue_memory, sq_placement and shadow_doorbells), and how several SSDs'
// queues are chosen.
struct GpuQueueOptions {
  bool rings_in_host = false;        // both rings in host memory behind the SSD's socket
  std::string sq_placement = "gpu";  // gpu, host or cmb
  bool shadow_doorbells = false;     // Doorbell Buffer Config, shadow words in GPU memory
  // Stripe: every request names its SSD; Interleave: the mapping may pick
  // any SSD's queue.
  algo::SsdMapping ssd_mapping = algo::SsdMapping::Stripe;
};

class GpuIoPath : public Component, public IoPath {
 public:
  // Requests come from submit() (the FIFO source), for I/Os of at most
  // `max_io_bytes`.
  GpuIoPath(const sc_core::sc_module_name& name, const RunConfig& config, Machine& machine,
            std::uint64_t max_io_bytes);
  // Requests come from `source` (kept, not owned); the queues are placed as
  // `options` say.
  GpuIoPath(const sc_core::sc_module_name& name, const RunConfig& config, Machine& machine,
            std::uint64_t max_io_bytes, GpuRequestSource& source, GpuQueueOptions options);
  ~GpuIoPath() override;

  void start(std::function<void()> ready) override;
  void submit(const BlockIo& io, IoDone done) override;
  void close() override;

  std::string name() const override { return "gpu_initiated"; }
  std::string strategy() const override { return plan_.name; }
  std::uint64_t submitted() const override { return source_->submitted(); }
  std::uint64_t completed() const override { return recorder_.completed(); }
  std::uint64_t errors() const override { return errors_; }
  std::uint64_t bytes() const override { return bytes_; }
  std::uint64_t timeouts() const override { return timeouts_; }
  std::uint64_t reset_aborted() const override { return reset_aborted_; }
  const LatencyHistogram& end_to_end() const override { return recorder_.end_to_end(); }
  nlohmann::json stages() const override { return recorder_.stages_json(); }
  std::vector<std::string> stage_order() const override { return StageRecorder::stage_order(); }
  FioLatency& fio_latency() override { return recorder_.fio_latency(); }
  const FioLatency& fio_latency() const override { return recorder_.fio_latency(); }
  const platform::WarpCounters& counters() const override { return counters_; }
  nlohmann::json sections(Picoseconds) const override { return nlohmann::json::object(); }
  const StageRecorder& recorder() const { return recorder_; }
  StageRecorder& recorder() { return recorder_; }
  // With error_policy fail or retry: what the error path did, as the result
  // reports it ({"summary": ..., "ssds": {id: ...}}); null otherwise.
  nlohmann::json error_handling() const;

  // Queue trace id -> (SSD id, qid), for traces.
  std::pair<std::string, std::uint32_t> queue_name(std::uint32_t trace_id) const;

  // For request sources: the plan, the compute warps, the service warps and
  // the queue table index of one request.
  const StrategyPlan& plan() const { return plan_; }
  const std::vector<GpuWarp>& warps() const { return warps_; }
  std::uint32_t service_warps() const { return service_warps_; }
  std::uint32_t ssd_count() const { return ssd_count_; }
  // `ssd`: the SSD the request must go to, or algo::kAnySsd.
  std::uint32_t map_queue(std::uint32_t warp, std::uint32_t thread, std::uint64_t seq,
                          std::uint32_t ssd) const;

 private:
  class QueuedRequests;

  GpuIoPath(const sc_core::sc_module_name& name, const RunConfig& config, Machine& machine,
            std::uint64_t max_io_bytes, GpuRequestSource* source, GpuQueueOptions options);

  void create_queues();
  void plan_warps();
  void lay_out_service_warps();
  void prepare_queues();
  void spawn_warps();
  platform::WarpPlacement place(std::uint32_t warp) const;
  void warp_main(std::uint32_t warp);
  // warp_main under fio's refill rule.
  void refill_loop(std::uint32_t warp, platform::SimWarp& p, algo::WarpContext& context,
                   const FioBatching& batching);
  // A warp's iodepth rounds (one command per lane each) and what it keeps of
  // each until its statuses go back.
  struct WarpRounds {
    std::vector<algo::Lanes<algo::Pending>> rounds;
    std::vector<algo::LaneMask> masks;
    std::vector<algo::Lanes<std::uint16_t>> status;
    std::vector<algo::Lanes<std::uint32_t>> bytes;
    std::vector<algo::Lanes<std::uint64_t>> replies;  // io_agents: each lane's reply word
    // With an error policy: each lane's request and when it was first
    // submitted, for retries.
    std::vector<algo::Lanes<algo::IoRequest>> requests;
    std::vector<algo::Lanes<Picoseconds>> requested;
  };
  WarpRounds warp_rounds(const GpuWarp& warp) const;
  // Posts round d of `request` (lanes in `mask`): to the agents or as one
  // warp-wide submission.
  void post_round(platform::SimWarp& p, algo::WarpContext& context, WarpRounds& r, std::uint32_t d,
                  algo::LaneMask mask, const algo::Lanes<algo::IoRequest>& request);
  // With error_policy fail or retry: takes round d's failed commands (every
  // lane of it complete, statuses in r.status) through the host's verdicts
  // and their retries until each has succeeded or failed for good.
  // `waiting_lanes`: the warp's other requests held back while it waits.
  void resolve_errors(platform::SimWarp& p, algo::WarpContext& context, std::uint32_t warp,
                      WarpRounds& r, std::uint32_t d, std::uint32_t waiting_lanes);
  void lay_out_error_mailbox();
  // Gives round d's statuses back to the request source, counting errors and
  // the bytes of the reads that succeeded.
  void settle_round(std::uint32_t warp, const WarpRounds& r, std::uint32_t d);
  void agent_main(std::uint32_t agent);
  void poller_main(std::uint32_t poller);

  const RunConfig& config_;
  Machine& machine_;
  gpu::Gpu& gpu_;
  std::uint64_t max_io_bytes_;
  GpuQueueOptions options_;
  std::unique_ptr<QueuedRequests> queued_;  // the FIFO source, when no other was given
  GpuRequestSource* source_;

  // The scenario's fields the path reads (all read in the constructor).
  StrategyPlan plan_;
  std::vector<std::string> ssd_ids_;
  std::uint32_t ssd_count_ = 1;
  std::uint32_t queues_per_ssd_ = 1;
  std::uint32_t entries_ = 0;
  std::uint32_t threads_ = 0;
  std::uint32_t iodepth_ = 1;
  std::uint32_t warps_per_block_ = 8;
  std::uint32_t cq_doorbell_batch_ = 1;
  std::uint32_t batch_size_ = 1;
  Picoseconds batch_timeout_ = 0;
  std::int64_t cid_space_field_ = 0;
  std::uint32_t service_warps_ = 0;  // agent_warps or poller_warps, as the strategy has them
  std::uint32_t agent_ring_entries_ = 0;
  Picoseconds poll_backoff_ = 0;

  std::uint32_t cid_space_ = 0;
  std::vector<algo::QueuePair> queues_;
  // Per SSD: the driver that created its queues, this path's own or one that
  // tenants share (Machine::shared_driver).
  std::vector<host::NvmeDriver*> drivers_;
  std::vector<std::unique_ptr<host::NvmeDriver>> own_drivers_;
  std::size_t drivers_ready_ = 0;
  std::function<void()> ready_;
  std::vector<GpuWarp> warps_;
  algo::WarpContext base_context_;
  algo::QueueMap queue_map_;
  StageRecorder recorder_;
  platform::WarpCounters counters_;
  std::unique_ptr<platform::CqArrivalObserver> observer_;

  // io_agents and polling warps.
  ServiceWarps service_;
  std::uint64_t replies_ = 0;  // io_agents: one 8 B reply word per thread and round

  std::uint64_t errors_ = 0;
  std::uint64_t timeouts_ = 0;
  std::uint64_t reset_aborted_ = 0;
  std::uint64_t bytes_ = 0;
  // The warps' deadline per command, armed when an SSD's faults can lose
  // one (the warps then record their stages through it).
  GpuDeadlines deadlines_;

  // Error handling through the host (error_policy fail or retry).
  struct ErrorFigures {
    std::uint64_t signalled = 0;      // error records the warps wrote
    std::uint64_t retried_ok = 0;     // I/Os that succeeded on a retry
    std::uint64_t failed = 0;         // I/Os whose error went back after a verdict
    Picoseconds gpu_wait_ps = 0;      // signal to verdict, summed over records
    Picoseconds stalled_lane_ps = 0;  // other requests of the warp held back, x time
  };
  bool error_path_ = false;
  host::GpuErrorPolicy error_policy_;
  std::size_t error_cpu_node_ = 0;
  std::size_t error_memory_node_ = 0;
  algo::ErrorMailbox mailbox_;
  std::unique_ptr<host::GpuErrorHost> error_host_;
  std::vector<ErrorFigures> error_figures_;         // per SSD
  std::vector<Picoseconds> queue_stalled_lane_ps_;  // per queue (trace id)
};

}  // namespace gpunvme
