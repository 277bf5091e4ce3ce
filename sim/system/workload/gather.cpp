#include "sim/system/workload/gather.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "models/gpu/gpu.h"
#include "models/nvme/ssd_params.h"
#include "sim/kernel/params/config_error.h"
#include "sim/system/workload/scenario_spec.h"

namespace gpunvme {

namespace {
std::uint64_t round_up(std::uint64_t v, std::uint64_t to) { return (v + to - 1) / to * to; }
double round_to(double v, double unit) { return std::round(v / unit) * unit; }
}  // namespace

GatherLayout gather_layout(std::uint64_t rows, std::uint64_t row_bytes, std::uint64_t bs) {
  GatherLayout l{};
  if (row_bytes <= bs) {
    l.rows_per_extent = bs / row_bytes;
    l.extent_bytes = bs;
  } else {
    l.rows_per_extent = 1;
    l.extent_bytes = (row_bytes + bs - 1) / bs * bs;
  }
  l.extents = (rows + l.rows_per_extent - 1) / l.rows_per_extent;
  return l;
}

std::uint64_t check_gather(const RunConfig& config) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  const std::string& file = config.scenario.file;
  const auto rows = static_cast<std::uint64_t>(s.rows);
  const GatherLayout l = gather_layout(rows, static_cast<std::uint64_t>(s.row_bytes),
                                       static_cast<std::uint64_t>(s.bs));
  const auto ssds = s.ssds;
  const std::uint64_t per_ssd = (l.extents + ssds.size() - 1) / ssds.size();
  for (const std::string& id : ssds) {
    const NodeConfig& ssd = *config.topology.node(id);
    const double capacity = nvme::SsdParams::from(ssd.params).capacity_gib * 1073741824.0;
    if (static_cast<double>(per_ssd * l.extent_bytes) > capacity) {
      throw ConfigError(file, "$.rows", std::to_string(rows),
                        fmt::format("the table needs {} B on each SSD; {} holds {:.0f} B",
                                    per_ssd * l.extent_bytes, id, capacity));
    }
  }
  const NodeConfig& gpu = *config.topology.node(s.gpu);
  const double gpu_bytes = gpu::GpuParams::from(gpu.params).memory_gib * (1ull << 30);
  const auto batch = static_cast<std::uint64_t>(s.batch_lookups);
  if (static_cast<double>(batch * round_up(l.extent_bytes, 4096)) > gpu_bytes / 2) {
    throw ConfigError(file, "$.batch_lookups", std::to_string(batch),
                      "one batch's buffers would take more than half of the GPU's memory");
  }
  return l.extent_bytes;
}

GatherWorkload::GatherWorkload(const sc_core::sc_module_name& name, const RunConfig& config,
                               Machine& machine)
    : PathWorkload(name, config, machine, check_gather(config)),
      layout_(gather_layout(static_cast<std::uint64_t>(ScenarioParams::from(config.scenario.params).rows),
                            static_cast<std::uint64_t>(ScenarioParams::from(config.scenario.params).row_bytes),
                            static_cast<std::uint64_t>(ScenarioParams::from(config.scenario.params).bs))),
      row_bytes_(static_cast<std::uint64_t>(ScenarioParams::from(config.scenario.params).row_bytes)),
      lookups_(static_cast<std::uint64_t>(ScenarioParams::from(config.scenario.params).lookups)),
      batch_lookups_(static_cast<std::uint64_t>(ScenarioParams::from(config.scenario.params).batch_lookups)),
      coalesce_(ScenarioParams::from(config.scenario.params).coalesce),
      threads_(static_cast<std::uint32_t>(ScenarioParams::from(config.scenario.params).threads)),
      rows_(Pattern::RandRead, ScenarioParams::from(config.scenario.params).distribution,
            static_cast<std::uint64_t>(ScenarioParams::from(config.scenario.params).rows), 100,
            ScenarioParams::from(config.scenario.params).zipf_theta, config.seed, 0, 1) {
  for (const std::string& id : ssd_ids_) {
    lbas_per_extent_.push_back(
        static_cast<std::uint32_t>(layout_.extent_bytes / machine.ssd(id).lba_bytes()));
  }
  buffer_stride_ = round_up(layout_.extent_bytes, 4096);
  buffers_ = gpu_.allocate(std::min(batch_lookups_, lookups_) * buffer_stride_, 4096);
}

void GatherWorkload::begin() { next_batch(); }

void GatherWorkload::next_batch() {
  if (lookups_done_ == lookups_) {
    done();
    return;
  }
  const std::uint64_t count = std::min(batch_lookups_, lookups_ - lookups_done_);
  ++batches_;
  // The batch's extents, in lookup order; coalescing keeps the first of each.
  // With it, how many lookups each extent's I/O serves.
  std::vector<std::uint64_t> extents;
  std::vector<std::uint64_t> served;
  std::unordered_map<std::uint64_t, std::size_t> seen;
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint64_t extent = rows_.next().slot / layout_.rows_per_extent;
    if (coalesce_) {
      const auto [it, first] = seen.emplace(extent, extents.size());
      if (!first) {
        ++served[it->second];
        continue;
      }
    }
    extents.push_back(extent);
    served.push_back(1);
  }
  lookups_done_ += count;
  outstanding_ = extents.size();
  const std::uint64_t ssds = ssd_ids_.size();
  for (std::size_t i = 0; i < extents.size(); ++i) {
    BlockIo request;
    request.ssd = static_cast<std::uint32_t>(extents[i] % ssds);
    request.lbas = lbas_per_extent_[request.ssd];
    request.slba = extents[i] / ssds * request.lbas;
    request.buffer = buffers_ + std::uint64_t{i} * buffer_stride_;
    request.issuer = static_cast<std::uint32_t>(i % threads_);
    ++ios_;
    io().submit(request, [this, lookups = served[i]](std::uint16_t status) {
      if (status != 0) {
        ++failed_ios_;
        failed_lookups_ += lookups;
      }
      if (--outstanding_ == 0) next_batch();
    });
  }
}

nlohmann::json GatherWorkload::summary(Picoseconds) const {
  const double seconds = static_cast<double>(done_at() - began_at()) * 1e-12;
  const std::uint64_t served = lookups_done_ - failed_lookups_;
  return {
      {"lookups_per_s", seconds > 0 ? round_to(static_cast<double>(served) / seconds, 0.001) : 0.0},
      {"data_complete", failed_lookups_ == 0}};
}

nlohmann::json GatherWorkload::sections(Picoseconds elapsed) const {
  nlohmann::json out = PathWorkload::sections(elapsed);
  const double seconds = static_cast<double>(done_at() - began_at()) * 1e-12;
  // Only lookups whose extent arrived are served; only I/Os that succeeded read.
  const std::uint64_t served = lookups_done_ - failed_lookups_;
  const std::uint64_t useful = served * row_bytes_;
  const std::uint64_t read = (ios_ - failed_ios_) * layout_.extent_bytes;
  out["gather"] = {
      {"lookups", lookups_done_},
      {"failed_lookups", failed_lookups_},
      {"data_complete", failed_lookups_ == 0},
      {"batches", batches_},
      {"submitted_ios", ios_},
      {"ios", ios_ - failed_ios_},
      {"failed_ios", failed_ios_},
      {"rows_per_extent", layout_.rows_per_extent},
      {"extent_bytes", layout_.extent_bytes},
      {"useful_bytes", useful},
      {"bytes_read", read},
      {"read_amplification",
       useful == 0 ? 0.0 : round_to(static_cast<double>(read) / useful, 1e-6)},
      {"gather_time_ns", round_to(ps_to_ns(done_at() - began_at()), 0.001)},
      {"lookups_per_s", seconds > 0 ? round_to(static_cast<double>(served) / seconds, 0.001) : 0.0},
      {"useful_gbps",
       seconds > 0 ? round_to(static_cast<double>(useful) / seconds / 1e9, 1e-6) : 0.0},
  };
  return out;
}

}  // namespace gpunvme
