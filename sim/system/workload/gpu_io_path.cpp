#include "sim/system/workload/gpu_io_path.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <set>
#include <stdexcept>
#include <systemc>

#include "models/host/host_specs.h"
#include "sim/core/algo/completion.h"
#include "sim/core/algo/mapping.h"
#include "sim/core/algo/queue_state.h"
#include "sim/core/algo/strategy.h"
#include "sim/core/algo/strategy_names.h"
#include "sim/core/protocol/nvme_batch_completion.h"
#include "sim/core/protocol/nvme_commands.h"
#include "sim/core/protocol/nvme_entries.h"
#include "sim/kernel/params/config_error.h"
#include "sim/kernel/threads.h"
#include "sim/system/workload/scenario_spec.h"

namespace gpunvme {

namespace {
double round_to(double v, double unit) { return std::round(v / unit) * unit; }

std::uint32_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return static_cast<std::uint32_t>((a + b - 1) / b);
}

using algo::local_cid_bits;
}  // namespace

algo::StrategyFields strategy_fields(const ScenarioParams& scenario) {
  algo::StrategyFields fields;
  fields.strategy = scenario.strategy;
  fields.queue_mapping = scenario.queue_mapping;
  fields.cid_scheme = scenario.cid_scheme;
  fields.submission = scenario.submission;
  fields.completion = scenario.completion;
  fields.ssd_mapping = scenario.ssd_mapping;
  return fields;
}

StrategyPlan strategy_plan(const RunConfig& config) {
  // The fields are views into `scenario`, which outlives them here.
  const ScenarioParams scenario = ScenarioParams::from(config.scenario.params);
  const algo::StrategyFields fields = strategy_fields(scenario);
  algo::ResolvedStrategy resolved;
  if (const std::optional<algo::UnknownName> unknown = algo::resolve_strategy(fields, resolved)) {
    std::string allowed;
    for (const std::string& name : algo::allowed_names(unknown->field)) {
      allowed += (allowed.empty() ? "" : ", ") + name;
    }
    throw ConfigError(config.scenario.file, "$." + std::string(unknown->field),
                      "\"" + std::string(unknown->value) + "\"", "expected one of: " + allowed);
  }
  StrategyPlan plan;
  plan.name = std::string(algo::strategy_entry(resolved.named).name);
  plan.named = resolved.named;
  plan.strategy = resolved.strategy;
  plan.ssd_mapping = resolved.ssd_mapping;
  plan.agents = resolved.agents;
  plan.pollers = resolved.pollers;
  return plan;
}

// ---------------------------------------------------------------------------
// The FIFO source: block I/Os submitted through the IoPath interface
// ---------------------------------------------------------------------------

class GpuIoPath::QueuedRequests : public GpuRequestSource {
 public:
  explicit QueuedRequests(Machine& machine, const std::vector<std::string>& ssd_ids)
      : machine_(machine), ssd_ids_(ssd_ids) {}

  bool queues_first() const override { return false; }

  void lay_out(GpuIoPath& path, gpu::Gpu& gpu) override {
    path_ = &path;
    const auto warps = static_cast<std::uint32_t>(path.warps().size());
    mailboxes_ = gpu.allocate(std::uint64_t{warps} * 128, 128);
    shutdown_word_ = gpu.allocate(128, 128);
    taken_.assign(warps, {});
    seq_.assign(warps, 0);
    live_warps_ = warps;
  }
  std::uint64_t shutdown_word() const override { return shutdown_word_; }

  void push(const BlockIo& io, IoDone done) {
    if (closed_) throw std::logic_error(path_->id() + ": submit after close");
    ++submitted_;
    pending_.push_back({io, std::move(done)});
    wake_one();
  }
  void close() {
    closed_ = true;
    while (!idle_.empty()) wake_one();
  }

  bool next_batch(platform::SimWarp& p, std::uint32_t w) override {
    const std::uint64_t mailbox = mailboxes_ + std::uint64_t{w} * 128;
    for (;;) {
      if (!pending_.empty()) return true;
      if (closed_) return false;
      // Sleep on the mailbox until submit() or close() writes it. Reading
      // the mailbox costs a load, during which a request (or close) may
      // come; the warp is not yet listed as idle, so submit() did not wake
      // it: it must look again before it sleeps, or that request would wait
      // for a wake-up that never comes (with one warp, forever).
      const std::uint32_t seen = p.check([&] { return p.load_u32(mailbox); });
      if (!pending_.empty() || closed_) continue;
      idle_.push_back(w);
      p.wait_until([&] { return p.load_u32(mailbox) != seen; }, mailbox, 4);
    }
  }

  algo::LaneMask fill_round(std::uint32_t w, std::uint32_t round,
                            algo::Lanes<algo::IoRequest>& request) override {
    const GpuWarp& warp = path_->warps()[w];
    std::vector<std::vector<Pending>>& taken = taken_[w];
    if (taken.size() <= round) taken.resize(round + 1);
    taken[round].clear();
    algo::LaneMask mask = 0;
    for (std::uint32_t lane = 0; lane < warp.lanes && !pending_.empty(); ++lane) {
      Pending next = std::move(pending_.front());
      pending_.pop_front();
      const BlockIo& io = next.io;
      const std::uint32_t lba = machine_.ssd(ssd_ids_[io.ssd]).lba_bytes();
      algo::IoRequest& r = request[lane];
      r.queue = path_->map_queue(w, warp.first_thread + lane, seq_[w]++, io.ssd);
      r.opcode = io.write ? nvme::NvmOpcode::Write : nvme::NvmOpcode::Read;
      r.slba = io.slba;
      r.nlb_zero_based = static_cast<std::uint16_t>(io.lbas - 1);
      r.bytes = io.lbas * lba;
      r.pool_index = round;
      r.buffer = io.buffer;
      mask |= algo::LaneMask{1} << lane;
      taken[round].push_back(std::move(next));
    }
    return mask;
  }

  // Calls back once the whole batch is in: the warp's threads go on
  // together.
  void completed(std::uint32_t w, std::uint32_t round, int lane, std::uint16_t status) override {
    std::vector<Pending>& taken = taken_[w][round];
    IoDone callback = std::move(taken[static_cast<std::size_t>(lane)].done);
    if (callback) callback(status);
  }

  void warp_exits(platform::SimWarp&, std::uint32_t) override {
    if (--live_warps_ == 0 && path_->service_warps() != 0) {
      machine_.memory().store<std::uint32_t>(shutdown_word_, 1u);
    }
  }

  std::uint64_t submitted() const override { return submitted_; }

 private:
  struct Pending {
    BlockIo io;
    IoDone done;
  };

  void wake_one() {
    if (idle_.empty()) return;
    const std::uint32_t w = idle_.back();
    idle_.pop_back();
    MemorySpace& memory = machine_.memory();
    const std::uint64_t mailbox = mailboxes_ + std::uint64_t{w} * 128;
    memory.store<std::uint32_t>(mailbox, memory.load<std::uint32_t>(mailbox) + 1u);
  }

  Machine& machine_;
  const std::vector<std::string>& ssd_ids_;
  GpuIoPath* path_ = nullptr;
  std::uint64_t mailboxes_ = 0;  // a GPU word per warp that submit() writes to wake it
  std::uint64_t shutdown_word_ = 0;
  std::deque<Pending> pending_;
  std::vector<std::uint32_t> idle_;                       // warps asleep on their mailbox
  std::vector<std::vector<std::vector<Pending>>> taken_;  // [warp][round]: requests in flight
  std::vector<std::uint64_t> seq_;                        // per warp: requests it has taken
  std::uint32_t live_warps_ = 0;
  bool closed_ = false;
  std::uint64_t submitted_ = 0;
};

// ---------------------------------------------------------------------------
// GpuIoPath
// ---------------------------------------------------------------------------

GpuIoPath::GpuIoPath(const sc_core::sc_module_name& name, const RunConfig& config, Machine& machine,
                     std::uint64_t max_io_bytes)
    : GpuIoPath(name, config, machine, max_io_bytes, nullptr, GpuQueueOptions{}) {}

GpuIoPath::GpuIoPath(const sc_core::sc_module_name& name, const RunConfig& config, Machine& machine,
                     std::uint64_t max_io_bytes, GpuRequestSource& source, GpuQueueOptions options)
    : GpuIoPath(name, config, machine, max_io_bytes, &source, std::move(options)) {}

GpuIoPath::GpuIoPath(const sc_core::sc_module_name& name, const RunConfig& config, Machine& machine,
                     std::uint64_t max_io_bytes, GpuRequestSource* source, GpuQueueOptions options)
    : Component(name, ParamValues{}),
      config_(config),
      machine_(machine),
      gpu_(machine.gpu(ScenarioParams::from(config.scenario.params).gpu)),
      max_io_bytes_(max_io_bytes),
      options_(std::move(options)),
      source_(source) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  plan_ = strategy_plan(config);
  ssd_ids_ = s.ssds;
  ssd_count_ = static_cast<std::uint32_t>(ssd_ids_.size());
  queues_per_ssd_ = static_cast<std::uint32_t>(s.queues);
  entries_ = static_cast<std::uint32_t>(s.queue_entries);
  threads_ = static_cast<std::uint32_t>(s.threads);
  iodepth_ = static_cast<std::uint32_t>(s.iodepth);
  warps_per_block_ = ceil_div(s.threads_per_block, algo::kWarpLanes);
  cq_doorbell_batch_ = static_cast<std::uint32_t>(s.cq_doorbell_batch);
  batch_size_ = static_cast<std::uint32_t>(s.batch_size);
  batch_timeout_ = s.batch_timeout_ns;
  cid_space_field_ = s.cid_space;
  service_warps_ = plan_.agents    ? static_cast<std::uint32_t>(s.agent_warps)
                   : plan_.pollers ? static_cast<std::uint32_t>(s.poller_warps)
                                   : 0;
  agent_ring_entries_ = static_cast<std::uint32_t>(s.agent_ring_entries);
  poll_backoff_ = s.poll_backoff_ns;
  if (s.error_policy != ErrorPolicy::none) {
    // check_workload refused io_agents (its agents consume the completions).
    const std::string value = "\"" + enum_name(s.error_policy) + "\"";
    const HostSide side = nearest_host_side(machine, machine.node_index(ssd_ids_.front()));
    if (side.cpu == HostSide::npos || side.memory == HostSide::npos) {
      throw ConfigError(config.scenario.file, "$.error_policy", value,
                        fmt::format("no cpu and host_memory node reach {}: the error mailbox "
                                    "needs a host thread and pinned host memory; allowed: none",
                                    ssd_ids_.front()));
    }
    error_path_ = true;
    error_cpu_node_ = side.cpu;
    error_memory_node_ = side.memory;
    error_policy_.retry = s.error_policy == ErrorPolicy::retry;
    error_policy_.max_retries = static_cast<std::uint32_t>(s.error_max_retries);
    error_policy_.backoff = s.error_retry_backoff_us;
    error_policy_.retry_dnr = s.error_retry_dnr;
    error_policy_.reset_after = static_cast<std::uint32_t>(s.error_reset_after);
    error_policy_.reset_on_timeout = s.error_reset_on_timeout;
    error_policy_.poll_period = s.error_poll_period_ns;
    error_policy_.decision =
        host::CpuParams::from(machine.topology().nodes[side.cpu].params).complete_poll_ns;
    error_figures_.resize(ssd_count_);
    queue_stalled_lane_ps_.assign(std::size_t{queues_per_ssd_} * ssd_count_, 0);
  }
  if (source_ == nullptr) {
    queued_ = std::make_unique<QueuedRequests>(machine, ssd_ids_);
    source_ = queued_.get();
  }
  std::vector<nvme::Controller*> ssds;
  for (const std::string& id : ssd_ids_) ssds.push_back(&machine.ssd(id));
  for (std::size_t k = 0; k < ssds.size(); ++k) {
    if (plan_.strategy.cid == algo::CidScheme::ThreadWide && ssds[k]->may_lose_commands()) {
      throw ConfigError(config_.scenario.file, "$.cid_scheme", "\"thread_wide\"",
                        fmt::format("{}'s fault_schedule can lose commands, which the host "
                                    "aborts by CID, and Abort names a 16-bit CID; allowed: a "
                                    "16-bit CID scheme, or no timeout or device faults",
                                    ssd_ids_[k]));
    }
  }
  deadlines_.arm(*this, ssds, [this](std::uint32_t ssd, std::uint16_t qid, std::uint16_t cid) {
    drivers_[ssd]->admin(nvme::make_abort(0, qid, cid), [](const nvme::CompletionEntry&) {});
  });
}

GpuIoPath::~GpuIoPath() = default;

std::pair<std::string, std::uint32_t> GpuIoPath::queue_name(std::uint32_t trace_id) const {
  const std::string& ssd = ssd_ids_[trace_id % ssd_count_];
  return {ssd, trace_id / ssd_count_ + config_.qos.qid_base(ssd)};
}

void GpuIoPath::start(std::function<void()> ready) {
  ready_ = std::move(ready);
  plan_warps();
  if (source_->queues_first()) create_queues();
  source_->lay_out(*this, gpu_);
  lay_out_service_warps();
  if (!source_->queues_first()) create_queues();
  prepare_queues();
}

void GpuIoPath::create_queues() {
  // Queues in GPU memory, as BaM places them (rings_in_host moves both rings
  // to pinned host memory behind the SSD's socket, as the hardware backend's
  // software controller keeps them; sq_placement may move the SQs alone to
  // host memory or the SSD's CMB); queue i of SSD k is at position
  // i * ssds + k so that consecutive warps alternate SSDs.
  const bool rings_in_host = options_.rings_in_host;
  const std::string sq_placement =
      options_.sq_placement != "gpu" ? options_.sq_placement : (rings_in_host ? "host" : "gpu");
  const bool shadow = options_.shadow_doorbells;
  queues_.resize(std::size_t{queues_per_ssd_} * ssd_count_);
  for (std::uint32_t k = 0; k < ssd_count_; ++k) {
    nvme::Controller& ssd = machine_.ssd(ssd_ids_[k]);
    // The host driver brings the SSD up and creates the queues through its
    // admin queue; the warps start once every SSD's queues exist. Without
    // host memory the driver keeps its admin queues in GPU memory and its
    // MMIO comes from the GPU.
    const HostSide side = nearest_host_side(machine_, machine_.node_index(ssd_ids_[k]));
    const std::size_t cpu = side.cpu == HostSide::npos ? gpu_.node() : side.cpu;
    const std::size_t memory =
        side.memory == HostSide::npos ? host::NvmeDriver::kNoHostMemory : side.memory;
    if ((sq_placement == "host" || rings_in_host) && memory == host::NvmeDriver::kNoHostMemory) {
      throw ConfigError(config_.scenario.file, rings_in_host ? "$.queue_memory" : "$.sq_placement",
                        "\"host\"",
                        fmt::format("no host_memory node of the topology reaches {}; allowed: "
                                    "gpu, host (with host memory), cmb (with a CMB)",
                                    ssd_ids_[k]));
    }
    host::NvmeDriver* shared = machine_.shared_driver(ssd_ids_[k]);
    if (shared == nullptr) {
      own_drivers_.push_back(std::make_unique<host::NvmeDriver>(
          fmt::format("{}_driver", ssd_ids_[k]).c_str(), ssd, machine_.fabric(), machine_.memory(),
          cpu, memory, &gpu_));
    }
    drivers_.push_back(shared != nullptr ? shared : own_drivers_.back().get());
    host::NvmeDriver& driver = *drivers_.back();
    const std::uint16_t first_qid = config_.qos.qid_base(ssd_ids_[k]);
    std::vector<host::IoQueueSpec> specs;
    for (std::uint32_t i = 0; i < queues_per_ssd_; ++i) {
      algo::QueuePair q;
      q.trace_id = i * ssd_count_ + k;
      q.qid = static_cast<std::uint16_t>(first_qid + i);
      q.entries = entries_;
      const std::uint64_t sq_bytes = std::uint64_t{entries_} * nvme::kSqEntrySize;
      const std::uint64_t cq_bytes = std::uint64_t{entries_} * nvme::kCqEntrySize;
      q.sq_base = sq_placement == "gpu"
                      ? gpu_.allocate(sq_bytes, 4096)
                      : driver.allocate(host::queue_placement_from_string(sq_placement), sq_bytes);
      q.cq_base = rings_in_host ? driver.allocate(host::QueuePlacement::host, cq_bytes)
                                : gpu_.allocate(cq_bytes, 4096);
      // Counters, gates, flags and CID state: prepare_queues, once the CID
      // space is known.
      if (max_io_bytes_ > 2 * 4096) {
        q.prp_lists = gpu_.allocate(std::uint64_t{entries_} * 4096, 4096);
      }
      q.sq_doorbell = ssd.doorbell_address(true, q.qid);
      q.cq_doorbell = ssd.doorbell_address(false, q.qid);
      host::IoQueueSpec spec;
      spec.qid = q.qid;
      spec.entries = entries_;
      spec.placement = rings_in_host ? host::QueuePlacement::host : host::QueuePlacement::gpu;
      spec.sq_base = q.sq_base;
      spec.cq_base = q.cq_base;
      spec.indexed_completion = plan_.strategy.completion == algo::Completion::SlotIndexed;
      spec.warp_doorbells = plan_.strategy.submission == algo::Submission::WarpDoorbell;
      if (plan_.strategy.completion == algo::Completion::CidBitmap) {
        // The completion bitmap lives beside the CQ ring, zeroed as fresh
        // memory is.
        const std::uint64_t bitmap_bytes =
            std::uint64_t{nvme::batch_bitmap_words(cid_space_)} * nvme::kBatchBitmapWordBytes;
        q.completion_bitmap = rings_in_host
                                  ? driver.allocate(host::QueuePlacement::host, bitmap_bytes)
                                  : gpu_.allocate(bitmap_bytes, 128);
        spec.completion_bitmap = q.completion_bitmap;
        spec.bitmap_cids = cid_space_;
      }
      spec.wide_cids = plan_.strategy.cid == algo::CidScheme::ThreadWide;
      q.wide_cids = spec.wide_cids ? 1u : 0u;
      spec.priority = static_cast<nvme::QueuePriority>(config_.qos.priority);
      specs.push_back(spec);
      queues_[q.trace_id] = q;
    }
    host::BringUpOptions bring_up;
    bring_up.io_queues = static_cast<std::uint16_t>(queues_per_ssd_);
    // Shadow doorbells and EventIdx in GPU memory: the GPU threads write and
    // read them at GPU-memory cost, the controller polls them over PCIe.
    bring_up.shadow_doorbells = shadow;
    bring_up.shadow_placement = host::QueuePlacement::gpu;
    if (shared == nullptr) driver.bring_up(bring_up, nullptr);
    driver.create_io_queues(std::move(specs), [this, controller = &ssd, &driver, k, shadow,
                                               first_qid](std::vector<host::IoQueue> created) {
      for (const host::IoQueue& q : created) {
        if (q.status != nvme::Status::Success) {
          throw std::runtime_error(fmt::format("{}: Create I/O queue {} failed: {}",
                                               controller->id(), q.qid,
                                               nvme::status_name(q.status)));
        }
        if (shadow) {
          // Known once Doorbell Buffer Config has run (bring-up).
          algo::QueuePair& pair = queues_[(q.qid - first_qid) * ssd_count_ + k];
          pair.sq_shadow = driver.shadow_doorbell(nvme::DoorbellKind::SqTail, q.qid);
          pair.cq_shadow = driver.shadow_doorbell(nvme::DoorbellKind::CqHead, q.qid);
          pair.sq_event_idx = driver.event_idx(nvme::DoorbellKind::SqTail, q.qid);
          pair.cq_event_idx = driver.event_idx(nvme::DoorbellKind::CqHead, q.qid);
          pair.shadow_polled = controller->shadow_polled() ? 1u : 0u;
        }
      }
      if (++drivers_ready_ == drivers_.size()) {
        spawn_warps();
        if (ready_) ready_();
      }
    });
  }
}

platform::WarpPlacement GpuIoPath::place(std::uint32_t w) const {
  // Blocks go to SMs in the block scheduler's order (Gpu::block_sm); within
  // an SM, warps spread over the warp schedulers in order (blocks that share
  // an SM continue the numbering).
  // The launch holds the compute warps and the service warps after them.
  const std::uint32_t sms = gpu_.sms();
  const std::uint32_t block = w / warps_per_block_;
  const std::uint32_t in_sm = (block / sms) * warps_per_block_ + w % warps_per_block_;
  const std::uint32_t service = plan_.agents || plan_.pollers ? service_warps_ : 0;
  const std::uint32_t launch_blocks =
      ceil_div(ceil_div(threads_, algo::kWarpLanes) + service, warps_per_block_);
  return {gpu_.block_sm(block, launch_blocks), in_sm % gpu_.schedulers_per_sm()};
}

void GpuIoPath::plan_warps() {
  const std::uint32_t warps = ceil_div(threads_, algo::kWarpLanes);
  queue_map_.mapping = plan_.strategy.mapping;
  queue_map_.ssd_mapping = options_.ssd_mapping;
  queue_map_.exclusive = plan_.strategy.submission == algo::Submission::Exclusive;
  queue_map_.agents = plan_.agents ? service_warps_ : 0;
  queue_map_.queues_per_ssd = queues_per_ssd_;
  queue_map_.ssds = ssd_count_;
  // CID partitions: each warp's index among the warps sharing its home
  // queue, its SM as the block scheduler places it.
  std::vector<std::uint32_t> seen(std::size_t{queues_per_ssd_} * ssd_count_, 0);
  std::uint32_t users = 1;
  for (std::uint32_t w = 0; w < warps; ++w) {
    const platform::WarpPlacement placement = place(w);
    const std::uint32_t home = algo::home_queue(queue_map_, w, placement.sm);
    const std::uint32_t partition = home == ~0u ? w : seen[home]++;
    users = std::max(users, partition + 1);
    const std::uint32_t first = w * algo::kWarpLanes;
    warps_.push_back(
        {first, std::min<std::uint32_t>(algo::kWarpLanes, threads_ - first), placement, partition});
  }
  algo::WarpContext& c = base_context_;
  c.strategy = plan_.strategy;
  c.cq_doorbell_batch = cq_doorbell_batch_;
  c.max_batch = std::min<std::uint32_t>(32, batch_size_);
  c.cid_local_bits = local_cid_bits(iodepth_);
  c.iodepth = iodepth_;
  cid_space_ = algo::cid_space_for(plan_.strategy.cid, cid_space_field_, entries_, users, iodepth_);
}

void GpuIoPath::lay_out_service_warps() {
  service_.lay_out(plan_.pollers, plan_.agents, service_warps_, queues_per_ssd_ * ssd_count_,
                   queue_map_, agent_ring_entries_, gpu_);
  if (plan_.agents) replies_ = gpu_.allocate(std::uint64_t{threads_} * iodepth_ * 8, 128);
}

void GpuIoPath::prepare_queues() {
  observer_ =
      std::make_unique<platform::CqArrivalObserver>(machine_.memory(), deadlines_.sink(recorder_));
  for (algo::QueuePair& q : queues_) {
    algo::place_queue_state(
        q, cid_space_, plan_.agents,
        [&](std::uint64_t bytes, std::uint64_t align) { return gpu_.allocate(bytes, align); });
    observer_->observe(q, plan_.strategy.completion == algo::Completion::SlotIndexed);
    if (plan_.strategy.completion == algo::Completion::CidBitmap) {
      q.bitmap_seen = gpu_.allocate(
          std::uint64_t{nvme::batch_bitmap_words(cid_space_)} * nvme::kBatchBitmapWordBytes, 128);
      observer_->observe_bitmap(q);
    }
  }
  base_context_.queues = queues_.data();
  base_context_.queue_count = static_cast<std::uint32_t>(queues_.size());
  if (error_path_) lay_out_error_mailbox();
}

void GpuIoPath::lay_out_error_mailbox() {
  // Carved after everything else, so that runs without an error policy
  // keep their memory layout. One ring entry and one verdict word per I/O
  // the GPU keeps in flight (gpu_error_mailbox.h).
  const std::uint32_t slots = threads_ * iodepth_;
  mailbox_.entries = slots;
  mailbox_.ring =
      machine_.memory()
          .allocate(std::uint64_t{slots} * nvme::kGpuErrorRecordSize, error_memory_node_,
                    RegionKind::HostMemory, fmt::format("{}.error_ring", id()), 4096)
          .base;
  mailbox_.tail = gpu_.allocate(128, 128);
  mailbox_.verdicts = gpu_.allocate(std::uint64_t{slots} * nvme::kGpuErrorVerdictSize, 128);
  std::vector<nvme::Controller*> ssds;
  for (const std::string& ssd : ssd_ids_) ssds.push_back(&machine_.ssd(ssd));
  const std::uint32_t ssd_count = ssd_count_;
  error_host_ = std::make_unique<host::GpuErrorHost>(
      fmt::format("{}_error_host", id()).c_str(), machine_.memory(), machine_.fabric(),
      error_cpu_node_, mailbox_, error_policy_, std::move(ssds),
      [ssd_count](std::uint32_t queue) { return std::size_t{queue % ssd_count}; });
}

void GpuIoPath::spawn_warps() {
  spawn_threads(warps_.size(), [this](std::size_t w) { warp_main(static_cast<std::uint32_t>(w)); });
  spawn_threads(plan_.agents ? service_warps_ : 0,
                [this](std::size_t a) { agent_main(static_cast<std::uint32_t>(a)); });
  spawn_threads(plan_.pollers ? service_warps_ : 0,
                [this](std::size_t i) { poller_main(static_cast<std::uint32_t>(i)); });
}

std::uint32_t GpuIoPath::map_queue(std::uint32_t w, std::uint32_t thread, std::uint64_t seq,
                                   std::uint32_t ssd) const {
  return algo::map_queue(queue_map_, {w, warps_[w].placement.sm, thread, seq}, ssd);
}

void GpuIoPath::submit(const BlockIo& io, IoDone done) {
  if (!queued_) throw std::logic_error(id() + ": requests come from its source, not submit()");
  queued_->push(io, std::move(done));
}

void GpuIoPath::close() {
  if (queued_) queued_->close();
}

void GpuIoPath::warp_main(std::uint32_t w) {
  const GpuWarp& warp = warps_[w];
  GpuRequestSource& source = *source_;
  platform::SimWarp p(gpu_, machine_.fabric(), machine_.memory(), deadlines_.sink(recorder_),
                      counters_, warp.placement, poll_backoff_);
  algo::WarpContext context = base_context_;
  context.cid_partition = warp.cid_partition;
  context.hold_failed = error_path_;
  if (const FioBatching* batching = source.refill()) {
    refill_loop(w, p, context, *batching);
    source.warp_exits(p, w);
    return;
  }
  WarpRounds r = warp_rounds(warp);
  context.rounds = r.rounds.data();
  context.round_count = iodepth_;
  while (source.next_batch(p, w)) {
    std::uint32_t used = 0;
    for (std::uint32_t d = 0; d < iodepth_; ++d) {
      algo::Lanes<algo::IoRequest> request{};
      const algo::LaneMask mask = source.fill_round(w, d, request);
      if (mask == 0) break;
      ++used;
      post_round(p, context, r, d, mask, request);
    }
    if (used == 0) break;
    for (std::uint32_t d = 0; d < used; ++d) {
      if (plan_.agents) {
        algo::agent_wait(p, r.masks[d], r.replies[d], r.status[d]);
      } else {
        // Only the completion wait is a CQ-scan waiter's: cq_scan_co_waiter_ns
        // was measured on that wait alone (no submission around it).
        p.set_cq_scan_waits(context.strategy.completion == algo::Completion::CqScan);
        algo::wait(p, context, r.rounds[d], r.masks[d]);
        p.set_cq_scan_waits(false);
        algo::visit_lanes(r.masks[d],
                          [&](int lane) { r.status[d][lane] = r.rounds[d][lane].status; });
      }
    }
    if (error_path_) {
      std::uint32_t batch_lanes = 0;
      for (std::uint32_t d = 0; d < used; ++d) batch_lanes += algo::lane_count(r.masks[d]);
      for (std::uint32_t d = 0; d < used; ++d) resolve_errors(p, context, w, r, d, batch_lanes);
    }
    // Statuses go back once the whole batch is in: the warp's threads go on
    // together.
    for (std::uint32_t d = 0; d < used; ++d) settle_round(w, r, d);
    for (std::uint32_t d = 0; d < used; ++d) r.rounds[d].fill(algo::Pending{});
  }
  source.warp_exits(p, w);
}

void GpuIoPath::refill_loop(std::uint32_t w, platform::SimWarp& p, algo::WarpContext& context,
                            const FioBatching& batching) {
  const GpuWarp& warp = warps_[w];
  GpuRequestSource& source = *source_;
  WarpRounds r = warp_rounds(warp);
  context.rounds = r.rounds.data();
  context.round_count = iodepth_;
  std::set<std::uint32_t> free_rounds;
  for (std::uint32_t d = 0; d < iodepth_; ++d) free_rounds.insert(d);
  std::deque<std::uint32_t> in_flight;  // in the order they were posted
  std::deque<std::uint32_t> done;       // every lane complete, not yet reaped
  bool exhausted = false;
  for (;;) {
    // Refill the free rounds, lowest first, each with one warp-wide
    // submission.
    if (!exhausted && !free_rounds.empty() && !source.next_batch(p, w)) exhausted = true;
    while (!exhausted && !free_rounds.empty()) {
      const std::uint32_t d = *free_rounds.begin();
      algo::Lanes<algo::IoRequest> request{};
      const algo::LaneMask mask = source.fill_round(w, d, request);
      if (mask == 0) {
        exhausted = true;
        break;
      }
      free_rounds.erase(free_rounds.begin());
      post_round(p, context, r, d, mask, request);
      in_flight.push_back(d);
    }
    const auto held = static_cast<std::uint32_t>(in_flight.size() + done.size());
    if (held == 0) return;
    // Wait for complete_min rounds (at most those held, at least one).
    const std::uint32_t need = std::max<std::uint32_t>(1, std::min(batching.complete_min, held));
    while (done.size() < need) {
      if (plan_.agents) {
        const std::uint32_t d = in_flight.front();
        in_flight.pop_front();
        algo::agent_wait(p, r.masks[d], r.replies[d], r.status[d]);
        done.push_back(d);
        continue;
      }
      for (auto it = in_flight.begin(); it != in_flight.end();) {
        const std::uint32_t d = *it;
        bool all = true;
        algo::for_each_lane(p, r.masks[d], [&](int lane) {
          all = all && r.rounds[d][lane].state == algo::kCompleted;
        });
        if (!all) {
          ++it;
          continue;
        }
        algo::visit_lanes(r.masks[d],
                          [&](int lane) { r.status[d][lane] = r.rounds[d][lane].status; });
        done.push_back(d);
        it = in_flight.erase(it);
      }
      if (done.size() >= need) break;
      if (algo::detail::reap(p, context)) continue;
      algo::WaitSet set;
      algo::detail::add_reap_ranges(set, context);
      p.set_cq_scan_waits(context.strategy.completion == algo::Completion::CqScan);
      algo::detail::wait_on(p, set, [&] { return algo::detail::reap_possible(p, context); });
      p.set_cq_scan_waits(false);
    }
    // Reap up to complete_max rounds: their statuses go back, their rounds
    // are free again.
    for (std::uint32_t reaped = 0; reaped < batching.complete_max && !done.empty(); ++reaped) {
      const std::uint32_t d = done.front();
      if (error_path_) {
        std::uint32_t held_lanes = 0;
        for (const std::uint32_t h : done) held_lanes += algo::lane_count(r.masks[h]);
        resolve_errors(p, context, w, r, d, held_lanes);
      }
      done.pop_front();
      settle_round(w, r, d);
      r.rounds[d].fill(algo::Pending{});
      free_rounds.insert(d);
    }
  }
}

GpuIoPath::WarpRounds GpuIoPath::warp_rounds(const GpuWarp& warp) const {
  WarpRounds r;
  r.rounds.assign(iodepth_, algo::Lanes<algo::Pending>{});
  r.masks.assign(iodepth_, 0);
  r.status.assign(iodepth_, algo::Lanes<std::uint16_t>{});
  r.bytes.assign(iodepth_, algo::Lanes<std::uint32_t>{});
  r.replies.resize(plan_.agents ? iodepth_ : 0);
  r.requests.resize(error_path_ ? iodepth_ : 0);
  r.requested.resize(error_path_ ? iodepth_ : 0);
  for (std::uint32_t d = 0; d < r.replies.size(); ++d) {
    for (int lane = 0; lane < algo::kWarpLanes; ++lane) {
      r.replies[d][lane] =
          replies_ + ((std::uint64_t{warp.first_thread} + lane) * iodepth_ + d) * 8;
    }
  }
  return r;
}

void GpuIoPath::post_round(platform::SimWarp& p, algo::WarpContext& context, WarpRounds& r,
                           std::uint32_t d, algo::LaneMask mask,
                           const algo::Lanes<algo::IoRequest>& request) {
  r.masks[d] = mask;
  algo::visit_lanes(mask, [&](int lane) { r.bytes[d][lane] = request[lane].bytes; });
  if (error_path_) {
    // submit() stamps the request with the warp's clock as it starts.
    r.requests[d] = request;
    r.requested[d].fill(p.clock());
  }
  if (plan_.agents) {
    algo::agent_post(p, service_.rings(), service_.agent_of_queue(), mask, request, r.replies[d]);
  } else {
    r.rounds[d].fill(algo::Pending{});
    algo::submit(p, context, mask, request, r.rounds[d]);
  }
}

void GpuIoPath::resolve_errors(platform::SimWarp& p, algo::WarpContext& context, std::uint32_t w,
                               WarpRounds& r, std::uint32_t d, std::uint32_t waiting_lanes) {
  const GpuWarp& warp = warps_[w];
  algo::LaneMask failing = 0;
  algo::visit_lanes(r.masks[d], [&](int lane) {
    if (r.status[d][lane] != 0) failing |= algo::LaneMask{1} << lane;
  });
  algo::Lanes<std::uint16_t> attempt{};
  algo::Lanes<std::uint32_t> verdict_index{};
  algo::visit_lanes(r.masks[d], [&](int lane) {
    verdict_index[lane] = (warp.first_thread + static_cast<std::uint32_t>(lane)) * iodepth_ + d;
  });
  algo::Lanes<algo::Pending>& io = r.rounds[d];
  while (failing != 0) {
    algo::Lanes<nvme::GpuErrorRecord> record{};
    algo::visit_lanes(failing, [&](int lane) {
      const algo::Pending& cmd = io[lane];
      nvme::GpuErrorRecord& rec = record[lane];
      rec.sqid = queues_[cmd.queue].qid;
      // 16 bits: a wide CID's low half (the host knows the I/O by verdict_index).
      rec.cid = static_cast<std::uint16_t>(cmd.cid);
      rec.status = r.status[d][lane];
      rec.attempt = attempt[lane];
      rec.thread = warp.first_thread + static_cast<std::uint32_t>(lane);
      rec.slba = r.requests[d][lane].slba;
      rec.verdict_index = verdict_index[lane];
      rec.queue = cmd.queue;
    });
    const Picoseconds began = p.clock();
    algo::Lanes<std::uint32_t> sequence{};
    algo::Lanes<std::uint16_t> action{};
    algo::signal_errors(p, mailbox_, failing, record, sequence);
    algo::await_verdicts(p, mailbox_, failing, verdict_index, sequence, action);
    const Picoseconds waited = p.clock() - began;
    // The other requests the warp holds back wait as long (a warp goes on
    // as a whole).
    const std::uint32_t others = waiting_lanes - algo::lane_count(failing);
    algo::LaneMask retry = 0;
    algo::visit_lanes(failing, [&](int lane) {
      const std::uint32_t queue = io[lane].queue;
      ErrorFigures& figures = error_figures_[queue % ssd_count_];
      ++figures.signalled;
      figures.gpu_wait_ps += waited;
      if (action[lane] == static_cast<std::uint16_t>(nvme::GpuErrorAction::Retry)) {
        retry |= algo::LaneMask{1} << lane;
      } else {
        ++figures.failed;
      }
    });
    // The warp's stall is charged once per wait, to the queue of its first
    // failed lane.
    const std::uint32_t first_queue = io[algo::first_lane(failing)].queue;
    error_figures_[first_queue % ssd_count_].stalled_lane_ps += waited * others;
    queue_stalled_lane_ps_[first_queue] += waited * others;
    algo::release_held(p, context, io, failing & ~retry, true);
    algo::release_held(p, context, io, retry, false);
    if (retry == 0) break;
    // The retry is a new command on the same queue; its record starts at
    // the I/O's first submission, so the I/O's latency covers every attempt.
    algo::visit_lanes(retry, [&](int lane) {
      io[lane] = algo::Pending{};
      ++attempt[lane];
    });
    algo::submit(p, context, retry, r.requests[d], io);
    algo::visit_lanes(retry, [&](int lane) {
      p.stage_at(static_cast<std::uint16_t>(io[lane].queue), io[lane].cid, algo::Stage::Request,
                 r.requested[d][lane]);
    });
    algo::wait(p, context, io, retry);
    failing = 0;
    algo::visit_lanes(retry, [&](int lane) {
      r.status[d][lane] = io[lane].status;
      if (io[lane].status != 0) {
        failing |= algo::LaneMask{1} << lane;
      } else {
        ++error_figures_[io[lane].queue % ssd_count_].retried_ok;
      }
    });
  }
}

nlohmann::json GpuIoPath::error_handling() const {
  if (!error_path_) return nullptr;
  const auto per_record = [](Picoseconds ps, std::uint64_t n) {
    return n == 0 ? 0.0 : round_to(ps_to_ns(ps) / static_cast<double>(n), 0.001);
  };
  ErrorFigures all;
  host::GpuErrorCounts host_all = error_host_->total();
  nlohmann::json ssds = nlohmann::json::object();
  for (std::uint32_t k = 0; k < ssd_count_; ++k) {
    const ErrorFigures& f = error_figures_[k];
    const host::GpuErrorCounts& h = error_host_->counts(k);
    all.signalled += f.signalled;
    all.retried_ok += f.retried_ok;
    all.failed += f.failed;
    all.gpu_wait_ps += f.gpu_wait_ps;
    all.stalled_lane_ps += f.stalled_lane_ps;
    nlohmann::json queues = nlohmann::json::object();
    for (std::uint32_t i = 0; i < queues_per_ssd_; ++i) {
      const Picoseconds stalled = queue_stalled_lane_ps_[std::size_t{i} * ssd_count_ + k];
      if (stalled != 0) {
        queues[std::to_string(queues_[std::size_t{i} * ssd_count_ + k].qid)] =
            round_to(ps_to_ns(stalled), 0.001);
      }
    }
    ssds[ssd_ids_[k]] = {
        {"signalled", f.signalled},
        {"retries", h.retries},
        {"retried_ok", f.retried_ok},
        {"failed", f.failed},
        {"resets", h.resets},
        {"reset_retries", h.reset_retries},
        {"reset_recovery_ns", round_to(ps_to_ns(h.reset_recovery_ps), 0.001)},
        {"host_ns_per_error", per_record(h.host_ps, h.records)},
        {"gpu_wait_ns_per_error", per_record(f.gpu_wait_ps, f.signalled)},
        {"stalled_lane_ns", round_to(ps_to_ns(f.stalled_lane_ps), 0.001)},
        {"queue_stalled_lane_ns", queues},
    };
  }
  nlohmann::json summary = {
      {"policy", error_policy_.retry ? "retry" : "fail"},
      {"signalled", all.signalled},
      {"retries", host_all.retries},
      {"retried_ok", all.retried_ok},
      {"failed", all.failed},
      {"resets", host_all.resets},
      {"reset_retries", host_all.reset_retries},
      {"host_ns_per_error", per_record(host_all.host_ps, host_all.records)},
      {"gpu_wait_ns_per_error", per_record(all.gpu_wait_ps, all.signalled)},
      {"stalled_lane_ns", round_to(ps_to_ns(all.stalled_lane_ps), 0.001)},
  };
  return {{"summary", summary}, {"ssds", ssds}};
}

void GpuIoPath::settle_round(std::uint32_t w, const WarpRounds& r, std::uint32_t d) {
  algo::visit_lanes(r.masks[d], [&](int lane) {
    const std::uint16_t st = r.status[d][lane];
    // A failed I/O moved no data the requester can use.
    if (st != 0) {
      ++errors_;
      if (aborted_by_timeout(st)) ++timeouts_;
      if (aborted_by_reset(st)) ++reset_aborted_;
    } else {
      bytes_ += r.bytes[d][lane];
    }
    source_->completed(w, d, lane, st);
  });
}

void GpuIoPath::agent_main(std::uint32_t a) {
  platform::SimWarp p(gpu_, machine_.fabric(), machine_.memory(), deadlines_.sink(recorder_),
                      counters_, place(static_cast<std::uint32_t>(warps_.size()) + a),
                      poll_backoff_);
  p.run_agent_code();
  algo::AgentContext context = service_.agent_context(a, base_context_, batch_size_, batch_timeout_,
                                                      source_->shutdown_word());
  algo::agent_loop(p, context);
}

void GpuIoPath::poller_main(std::uint32_t i) {
  platform::SimWarp p(gpu_, machine_.fabric(), machine_.memory(), deadlines_.sink(recorder_),
                      counters_, place(static_cast<std::uint32_t>(warps_.size()) + i),
                      poll_backoff_);
  const std::vector<std::uint32_t>& watched = service_.poller_queues(i);
  algo::polling_warp(p, base_context_, watched.data(), static_cast<std::uint32_t>(watched.size()),
                     source_->shutdown_word());
}

}  // namespace gpunvme
