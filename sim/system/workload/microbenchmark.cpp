#include "sim/system/workload/microbenchmark.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>

#include "models/gpu/gpu.h"
#include "models/nvme/ssd_params.h"
#include "sim/core/algo/mapping.h"
#include "sim/core/algo/queue_state.h"
#include "sim/core/algo/strategy_names.h"
#include "sim/core/protocol/nvme_commands.h"
#include "sim/kernel/params/config_error.h"
#include "sim/kernel/simulation.h"
#include "sim/system/workload/scenario_spec.h"

namespace gpunvme {

namespace {
std::uint64_t round_up(std::uint64_t v, std::uint64_t to) { return (v + to - 1) / to * to; }

std::uint32_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return static_cast<std::uint32_t>((a + b - 1) / b);
}

using algo::local_cid_bits;

// The SM a thread block runs on, by block index (Gpu::block_sm).
using BlockSm = std::function<std::uint32_t(std::uint32_t block)>;

// The queue mapping a plan asks for (sim/core/algo/mapping.h).
algo::QueueMap queue_map_of(const StrategyPlan& plan, std::uint32_t per_ssd, std::uint32_t ssds,
                            std::uint32_t agents) {
  algo::QueueMap m;
  m.mapping = plan.strategy.mapping;
  m.ssd_mapping = plan.ssd_mapping;
  m.exclusive = plan.strategy.submission == algo::Submission::Exclusive;
  m.agents = plan.agents ? agents : 0;
  m.queues_per_ssd = per_ssd;
  m.ssds = ssds;
  return m;
}

// Each warp's index among the warps sharing its home queue, and the most
// warps any queue has.
struct Partitions {
  std::vector<std::uint32_t> index;
  std::uint32_t users = 1;
};
Partitions cid_partitions(const StrategyPlan& plan, std::uint32_t warps,
                          std::uint32_t warps_per_block, const BlockSm& block_sm,
                          std::uint32_t per_ssd, std::uint32_t ssds) {
  Partitions out;
  out.index.resize(warps);
  std::vector<std::uint32_t> seen(std::size_t{per_ssd} * ssds, 0);
  const algo::QueueMap map = queue_map_of(plan, per_ssd, ssds, 0);
  for (std::uint32_t w = 0; w < warps; ++w) {
    const std::uint32_t home = algo::home_queue(map, w, block_sm(w / warps_per_block));
    out.index[w] = home == ~0u ? w : seen[home]++;
    out.users = std::max(out.users, out.index[w] + 1);
  }
  return out;
}

std::uint32_t cid_space_of(const algo::Strategy& st, std::int64_t configured, std::uint32_t entries,
                           std::uint32_t users, std::uint32_t iodepth) {
  return algo::cid_space_for(st.cid, configured, entries, users, iodepth);
}

void check_strategy(const RunConfig& config) {
  // Outlives the strategy fields' views into it.
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  const std::string& file = config.scenario.file;
  const StrategyPlan plan = strategy_plan(config);
  const algo::Strategy& st = plan.strategy;
  const NodeConfig& gpu = *config.topology.node(s.gpu);
  const gpu::GpuParams gpu_params = gpu::GpuParams::from(gpu.params);
  const auto sms = static_cast<std::uint32_t>(gpu_params.sms);
  const auto max_warps_per_sm = static_cast<std::uint32_t>(gpu_params.max_warps_per_sm);
  const auto threads = static_cast<std::uint64_t>(s.threads);
  const std::uint32_t warps = ceil_div(threads, 32);
  const std::uint32_t warps_per_block = ceil_div(s.threads_per_block, 32);
  const auto per_ssd = static_cast<std::uint32_t>(s.queues);
  const auto ssds = static_cast<std::uint32_t>(s.ssds.size());
  const std::uint32_t all_queues = per_ssd * ssds;
  const auto entries = static_cast<std::uint32_t>(s.queue_entries);
  const auto iodepth = static_cast<std::uint32_t>(s.iodepth);
  const bool stripe = plan.ssd_mapping == algo::SsdMapping::Stripe;
  if (all_queues > 65535) {
    throw ConfigError(
        file, "$.queues", std::to_string(per_ssd),
        fmt::format("{} queues over {} SSDs: at most 65,535 in one run", all_queues, ssds));
  }
  if (const std::optional<algo::RefusedOption> refused =
          algo::refused_option(strategy_fields(s), plan.named, st.cid)) {
    throw ConfigError(file, "$." + std::string(refused->field),
                      "\"" + std::string(refused->value) + "\"", std::string(refused->why));
  }
  if (plan.agents) {
    if (s.agent_warps > per_ssd) {
      throw ConfigError(file, "$.agent_warps", std::to_string(s.agent_warps),
                        fmt::format("each agent owns at least one queue per SSD: at most {} "
                                    "(queues)",
                                    per_ssd));
    }
  } else {
    if (st.submission == algo::Submission::AgentBatch ||
        st.mapping == algo::QueueMapping::PerAgent) {
      throw ConfigError(file, "$.strategy", "\"" + plan.name + "\"",
                        "agent submission needs strategy io_agents");
    }
    const bool exclusive = st.submission == algo::Submission::Exclusive;
    if (exclusive != (st.completion == algo::Completion::OwnerDrain)) {
      throw ConfigError(file, "$.completion", "\"" + s.completion + "\"",
                        "exclusive submission and owner_drain completion go together (a warp "
                        "that owns its queue drains it)");
    }
    if (exclusive) {
      if (st.mapping != algo::QueueMapping::PerWarp) {
        throw ConfigError(file, "$.queue_mapping", "\"" + s.queue_mapping + "\"",
                          "a warp that owns its queue needs the per_warp mapping");
      }
      const std::uint32_t available = stripe ? per_ssd : all_queues;
      if (warps > available) {
        throw ConfigError(file, "$.threads", std::to_string(threads),
                          fmt::format("each of the {} warps owns a queue{}, but there are {}",
                                      warps, stripe ? " on every SSD" : "", available));
      }
      if (stripe && ssds > algo::kMaxOwnedQueues) {
        throw ConfigError(
            file, "$.ssds", std::to_string(ssds),
            fmt::format("a warp owns one queue per SSD, at most {}", algo::kMaxOwnedQueues));
      }
    }
    if (st.completion == algo::Completion::PollingWarps &&
        static_cast<std::uint32_t>(s.poller_warps) > all_queues) {
      throw ConfigError(
          file, "$.poller_warps", std::to_string(s.poller_warps),
          fmt::format("each polling warp drains at least one of the {} queues", all_queues));
    }
  }
  const std::uint32_t service = plan.agents    ? static_cast<std::uint32_t>(s.agent_warps)
                                : plan.pollers ? static_cast<std::uint32_t>(s.poller_warps)
                                               : 0;
  const std::uint32_t blocks = ceil_div(std::uint64_t{warps} + service, warps_per_block);
  if (ceil_div(blocks, sms) * warps_per_block > max_warps_per_sm) {
    throw ConfigError(
        file, "$.threads", std::to_string(threads),
        fmt::format("{} warps{} in blocks of {} need {} resident warps on an SM; "
                    "{} holds {} (waves of blocks are not modelled)",
                    warps, service ? fmt::format(" (+{} service warps)", service) : "",
                    warps_per_block, ceil_div(blocks, sms) * warps_per_block, gpu.id,
                    max_warps_per_sm));
  }
  const std::int64_t cid_space = s.cid_space;
  if ((st.cid == algo::CidScheme::Counter || st.cid == algo::CidScheme::CounterLock) &&
      cid_space != 0 && cid_space < entries) {
    throw ConfigError(file, "$.cid_space", std::to_string(cid_space),
                      fmt::format("must be at least queue_entries ({}): every command the queue "
                                  "holds needs its own CID",
                                  entries));
  }
  if (st.cid == algo::CidScheme::WarpPartition || st.cid == algo::CidScheme::ThreadPool ||
      st.cid == algo::CidScheme::ThreadWide) {
    if (st.cid == algo::CidScheme::WarpPartition && local_cid_bits(iodepth) > 10) {
      throw ConfigError(file, "$.iodepth", std::to_string(iodepth),
                        "warp_partition keeps at most 1024 warp-local CIDs (iodepth <= 32)");
    }
    // Where the GPU's blocks go (its block_sm_order, or the placement of a
    // launch of this size; checked when the GPU is built).
    const std::vector<std::int64_t>& order = gpu_params.block_sm_order;
    // The first entry of this launch's own placement, if it has one.
    std::optional<std::size_t> placed;
    std::size_t first = 0;
    for (std::int64_t size : gpu_params.placed_launch_blocks) {
      if (size == blocks) placed = first;
      first += static_cast<std::size_t>(size);
    }
    const BlockSm block_sm = [&, placed](std::uint32_t block) {
      if (placed && block < blocks && *placed + block < gpu_params.placed_launch_sms.size()) {
        return static_cast<std::uint32_t>(gpu_params.placed_launch_sms[*placed + block]);
      }
      return order.size() == sms ? static_cast<std::uint32_t>(order[block % sms]) : block % sms;
    };
    const Partitions parts = cid_partitions(plan, warps, warps_per_block, block_sm, per_ssd, ssds);
    if (st.cid == algo::CidScheme::ThreadWide) {
      // 32-bit CIDs: the space is the warps' ranges, each 32 threads x
      // iodepth rounded up to a power of two.
      const std::uint64_t wide_space = std::uint64_t{parts.users} << local_cid_bits(iodepth);
      if (wide_space > (std::uint64_t{1} << 32)) {
        throw ConfigError(file, "$.cid_scheme", "\"" + s.cid_scheme + "\"",
                          fmt::format("{} warps share a queue and each needs {} CIDs: {} > 2^32",
                                      parts.users, wide_space / parts.users, wide_space));
      }
      return;
    }
    const std::uint64_t space = cid_space_of(st, 0, entries, parts.users, iodepth);
    if (space > 65536) {
      throw ConfigError(file, "$.cid_scheme", "\"" + s.cid_scheme + "\"",
                        fmt::format("{} warps share a queue and each needs {} CIDs: {} > 65,536",
                                    parts.users, space / parts.users, space));
    }
  }
}

}  // namespace

void check_microbenchmark(const RunConfig& config) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  const std::string& file = config.scenario.file;
  const std::vector<std::string>& ssds = s.ssds;
  const bool indexed = strategy_plan(config).strategy.completion == algo::Completion::SlotIndexed;
  const bool bitmap = strategy_plan(config).strategy.completion == algo::Completion::CidBitmap;
  const bool warp_doorbells =
      strategy_plan(config).strategy.submission == algo::Submission::WarpDoorbell;
  const bool wide_cids = strategy_plan(config).strategy.cid == algo::CidScheme::ThreadWide;
  // The completion bitmap has one bit per 16-bit CID (the CQE's CID field).
  if (bitmap && wide_cids) {
    throw ConfigError(file, "$.cid_scheme", "\"" + s.cid_scheme + "\"",
                      "completion cid_bitmap indexes its bitmap by 16-bit CIDs; thread_wide's "
                      "32-bit CIDs have no bit in it; allowed: the 16-bit CID schemes");
  }
  if (warp_doorbells && s.shadow_doorbells) {
    throw ConfigError(file, "$.shadow_doorbells", "true",
                      "submission warp_doorbell writes runs to the MMIO doorbell, which a shadow "
                      "doorbell (one tail value) cannot carry; allowed: false");
  }
  for (std::size_t k = 0; k < ssds.size(); ++k) {
    const NodeConfig& ssd = *config.topology.node(ssds[k]);
    const nvme::SsdParams ssd_params = nvme::SsdParams::from(ssd.params);
    const auto queues = s.queues;
    const auto granted = ssd_params.max_io_queues;
    if (queues > granted) {
      throw ConfigError(
          file, "$.queues", std::to_string(queues),
          fmt::format("{} grants at most {} I/O queues (max_io_queues)", ssd.id, granted));
    }
    const auto entries = s.queue_entries;
    const auto mqes = ssd_params.mqes;
    if (entries > mqes) {
      throw ConfigError(
          file, "$.queue_entries", std::to_string(entries),
          fmt::format("{} accepts queues of at most {} entries (mqes)", ssd.id, mqes));
    }
    if (s.sq_placement == SqPlacement::cmb) {
      const auto cmb_mib = ssd_params.cmb_mib;
      if (cmb_mib == 0) {
        throw ConfigError(file, "$.sq_placement", "\"cmb\"",
                          fmt::format("{} (profile {}) has no controller memory buffer "
                                      "(cmb_mib = 0); allowed: gpu, host, or cmb on an SSD "
                                      "with cmb_mib > 0",
                                      ssd.id, ssd.profile.empty() ? "custom" : ssd.profile));
      }
      const std::uint64_t sq_bytes = static_cast<std::uint64_t>(queues) * entries * 64;
      if (sq_bytes > (static_cast<std::uint64_t>(cmb_mib) << 20)) {
        throw ConfigError(file, "$.sq_placement", "\"cmb\"",
                          fmt::format("{} SQs of {} entries need {} B, more than {}'s {} MiB CMB",
                                      queues, entries, sq_bytes, ssd.id, cmb_mib));
      }
    }
    if (s.shadow_doorbells && !ssd_params.shadow_doorbells) {
      throw ConfigError(file, "$.shadow_doorbells", "true",
                        fmt::format("{} (profile {}) does not support Doorbell Buffer Config "
                                    "(its shadow_doorbells is false); allowed: false",
                                    ssd.id, ssd.profile.empty() ? "custom" : ssd.profile));
    }
    if (bitmap && !ssd_params.batch_completion) {
      throw ConfigError(file, "$.completion", "\"" + s.completion + "\"",
                        fmt::format("{} (profile {}) does not offer batch completion notification "
                                    "(its batch_completion is false); allowed: another "
                                    "completion, or SSDs with batch_completion true",
                                    ssd.id, ssd.profile.empty() ? "custom" : ssd.profile));
    }
    if (indexed && !ssd_params.indexed_completion) {
      throw ConfigError(file, "$.completion", "\"" + s.completion + "\"",
                        fmt::format("{} (profile {}) does not offer indexed completion (its "
                                    "indexed_completion is false); allowed: another completion, "
                                    "or SSDs with indexed_completion true",
                                    ssd.id, ssd.profile.empty() ? "custom" : ssd.profile));
    }
    if (wide_cids && !ssd_params.wide_cids) {
      throw ConfigError(file, "$.cid_scheme", "\"" + s.cid_scheme + "\"",
                        fmt::format("{} (profile {}) does not offer wide CIDs (its wide_cids is "
                                    "false); allowed: another CID scheme, or SSDs with wide_cids "
                                    "true",
                                    ssd.id, ssd.profile.empty() ? "custom" : ssd.profile));
    }
    if (warp_doorbells && !ssd_params.warp_doorbells) {
      throw ConfigError(file, "$.submission", "\"" + s.submission + "\"",
                        fmt::format("{} (profile {}) does not offer warp doorbells (its "
                                    "warp_doorbells is false); allowed: another submission, "
                                    "or SSDs with warp_doorbells true",
                                    ssd.id, ssd.profile.empty() ? "custom" : ssd.profile));
    }
    const auto bs = s.bs;
    const auto lba = ssd_params.lba_bytes;
    if (bs % lba != 0) {
      throw ConfigError(file, "$.bs", std::to_string(bs),
                        fmt::format("must be a multiple of {}'s {} B LBAs", ssd.id, lba));
    }
    const auto mdts = ssd_params.mdts;
    if (mdts != 0 && bs > (4096ll << mdts)) {
      throw ConfigError(file, "$.bs", std::to_string(bs),
                        fmt::format("exceeds {}'s maximum transfer of {} B (mdts {})", ssd.id,
                                    4096ll << mdts, mdts));
    }
    if (bs > 4096ll * 513) {
      throw ConfigError(file, "$.bs", std::to_string(bs),
                        "exceeds what one PRP list page describes (513 pages of 4 KiB)");
    }
    if (bs / lba > 65536) {
      throw ConfigError(file, "$.bs", std::to_string(bs),
                        "more than 65,536 LBAs in one command (NLB is 16 bits)");
    }
  }
  check_strategy(config);
}

// ---------------------------------------------------------------------------
// FioWarpLoop
// ---------------------------------------------------------------------------

FioWarpLoop::FioWarpLoop(const RunConfig& config, Machine& machine) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  seed_ = config.seed;
  total_ios_ = static_cast<std::uint64_t>(s.ios);
  time_based_ = s.time_based;
  runtime_ = s.runtime_us;
  bytes_per_io_ = static_cast<std::uint64_t>(s.bs);
  iodepth_ = static_cast<std::uint32_t>(s.iodepth);
  batching_ = FioBatching::resolve(s.iodepth, s.iodepth_batch_submit, s.iodepth_batch_complete_min,
                                   s.iodepth_batch_complete_max);
  ramp_time_ = s.ramp_time_us;
  threads_ = static_cast<std::uint32_t>(s.threads);
  random_ = s.rw == Pattern::RandRead || s.rw == Pattern::RandWrite;
  write_ = s.rw == Pattern::RandWrite || s.rw == Pattern::Write;
  sequential_streams_ = s.distribution == Distribution::Sequential || !random_;
  queue_options_.rings_in_host = s.queue_memory == QueueMemory::host;
  queue_options_.sq_placement = enum_name(s.sq_placement);
  queue_options_.shadow_doorbells = s.shadow_doorbells;
  queue_options_.ssd_mapping = strategy_plan(config).ssd_mapping;
  const double span_gib = s.span_gib;
  for (const std::string& id : s.ssds) {
    const nvme::Controller& ssd = machine.ssd(id);
    span_lbas_.push_back(span_gib > 0
                             ? static_cast<std::uint64_t>(span_gib * (1ull << 30)) / ssd.lba_bytes()
                             : ssd.capacity_lbas());  // validation keeps span_gib within every SSD
    lbas_per_io_.push_back(bytes_per_io_ / ssd.lba_bytes());
  }
  ssd_count_ = static_cast<std::uint32_t>(span_lbas_.size());
  stripe_ = queue_options_.ssd_mapping == algo::SsdMapping::Stripe;
  striped_slots_ = ~std::uint64_t{0};
  for (std::uint32_t k = 0; k < ssd_count_; ++k) {
    striped_slots_ =
        std::min(striped_slots_, std::max<std::uint64_t>(1, span_lbas_[k] / lbas_per_io_[k]));
  }
  striped_slots_ *= ssd_count_;
}

void FioWarpLoop::lay_out(GpuIoPath& path, gpu::Gpu& gpu) {
  path_ = &path;
  buffer_stride_ = round_up(bytes_per_io_, 4096);
  buffers_ = gpu.allocate(std::uint64_t{threads_} * iodepth_ * buffer_stride_, 4096);
  // The words that tell the service warps the compute warps are done.
  const std::uint64_t words = gpu.allocate(256, 128);
  finished_word_ = words;
  shutdown_word_ = words + 128;
  const std::vector<GpuWarp>& warps = path.warps();
  warps_.clear();
  warps_.reserve(warps.size());
  for (std::uint32_t w = 0; w < warps.size(); ++w) {
    // Made in place: the engine's state is 2.5 KB, not worth a copy.
    WarpState& state = warps_.emplace_back(seed_ * 0x9E3779B97F4A7C15ull + w);
    for (std::uint32_t lane = 0; lane < warps[w].lanes; ++lane) {
      const std::uint64_t thread = warps[w].first_thread + lane;
      state.remaining[lane] =
          time_based_ ? ~std::uint64_t{0}
                      : total_ios_ / threads_ + (thread < total_ios_ % threads_ ? 1 : 0);
      state.next_block[lane] = thread;  // spaced out as the span is known (fill_round)
    }
  }
}

void FioWarpLoop::started(Picoseconds now) {
  started_at_ = now;
  // fio counts runtime from when the job starts issuing, after setup: here
  // once every SSD's queues exist.
  if (runtime_ > 0) deadline_ = now + runtime_;
  // fio's ramp_time counts from the same start.
  if (ramp_time_ > 0) path_->fio_latency().set_ramp_end(now + ramp_time_);
}

bool FioWarpLoop::next_batch(platform::SimWarp& p, std::uint32_t w) {
  // fio's runtime: past the deadline a thread issues nothing more; what it
  // has in flight completes.
  if (deadline_ != 0 && p.clock() >= deadline_) warps_[w].remaining.fill(0);
  // Run-length control: the steady state has converged; the rest of the
  // requested I/Os are answered from it (README, Fast mode).
  if (run_length_ != nullptr && run_length_->converged()) warps_[w].remaining.fill(0);
  return true;
}

algo::LaneMask FioWarpLoop::fill_round(std::uint32_t w, std::uint32_t round,
                                       algo::Lanes<algo::IoRequest>& request) {
  WarpState& state = warps_[w];
  const GpuWarp& warp = path_->warps()[w];
  algo::LaneMask mask = 0;
  for (std::uint32_t lane = 0; lane < warp.lanes; ++lane) {
    if (state.remaining[lane] == 0) continue;
    --state.remaining[lane];
    ++issued_;
    mask |= algo::LaneMask{1} << lane;
    const std::uint32_t thread = warp.first_thread + lane;
    algo::IoRequest& r = request[lane];
    auto choose = [&](std::uint64_t slots) {
      if (!sequential_streams_) {
        return random_below(state.rng, slots);
      }
      // Sequential streams start evenly spaced over the span.
      return (state.next_block[lane] * std::max<std::uint64_t>(1, slots / threads_) +
              state.issued[lane]) %
             slots;
    };
    std::uint32_t ssd = 0;
    if (stripe_) {
      const std::uint64_t block = choose(striped_slots_);
      ssd = static_cast<std::uint32_t>(block % ssd_count_);
      r.queue = path_->map_queue(w, thread, state.issued[lane], ssd);
      r.slba = block / ssd_count_ * lbas_per_io_[ssd];
    } else {
      r.queue = path_->map_queue(w, thread, state.issued[lane], algo::kAnySsd);
      ssd = r.queue % ssd_count_;
      const std::uint64_t block =
          choose(std::max<std::uint64_t>(1, span_lbas_[ssd] / lbas_per_io_[ssd]));
      r.slba = block * lbas_per_io_[ssd];
    }
    ++state.issued[lane];
    r.opcode = write_ ? nvme::NvmOpcode::Write : nvme::NvmOpcode::Read;
    r.nlb_zero_based = static_cast<std::uint16_t>(lbas_per_io_[ssd] - 1);
    r.bytes = static_cast<std::uint32_t>(bytes_per_io_);
    r.pool_index = round;
    r.buffer = buffers_ + (std::uint64_t{thread} * iodepth_ + round) * buffer_stride_;
  }
  return mask;
}

void FioWarpLoop::warp_exits(platform::SimWarp& p, std::uint32_t) {
  // The last compute warp to leave tells the service warps, through GPU
  // memory.
  if (path_->service_warps() == 0) return;
  if (p.atomic_add_u32(finished_word_, 1u) + 1u == path_->warps().size()) {
    p.store_u32(shutdown_word_, 1u);
  }
}

// ---------------------------------------------------------------------------
// Microbenchmark
// ---------------------------------------------------------------------------

Microbenchmark::Microbenchmark(const sc_core::sc_module_name& name, const RunConfig& config,
                               Machine& machine)
    : loop_(config, machine),
      path_(name, config, machine, loop_.bytes_per_io(), loop_, loop_.queue_options()) {
  if (run_length_refusal(config).empty()) {
    const ScenarioParams s = ScenarioParams::from(config.scenario.params);
    RunLengthRule rule;
    rule.precision = s.fast_precision;
    rule.min_batches = static_cast<std::uint64_t>(s.fast_min_batches);
    rule.min_ios = static_cast<std::uint64_t>(s.fast_min_ios);
    rule.min_ios_per_thread = static_cast<std::uint64_t>(s.fast_min_ios_per_thread);
    rule.threads = static_cast<std::uint64_t>(s.threads);
    rule.trend_tolerance = s.fast_trend_tolerance;
    rule.max_lag1 = s.fast_max_lag1;
    rule_ = rule;
  }
  path_.start([this] {
    loop_.started(Component::now());
    if (rule_) {
      // Observations count from when the warps start, as the run's
      // throughput does.
      run_length_ = std::make_unique<RunLengthController>(*rule_, Component::now());
      path_.recorder().observe_completions(run_length_.get());
      loop_.stop_when_converged(run_length_.get());
      // The steady state answers for the rest: the run ends here, and what
      // is in flight is not simulated to completion (its completions would
      // come after the stop and feed no figure the result reports from the
      // steady state). A run that issued every requested I/O before it
      // converged drains as in exact mode.
      run_length_->on_converged([this] {
        if (loop_.submitted() >= loop_.requested()) return;
        stopped_before_drain_ = true;
        Simulation::stop();
      });
    }
  });
}

}  // namespace gpunvme
