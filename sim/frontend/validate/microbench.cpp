// Simulated counterparts of the hardware microbenchmarks
// (tests/hardware/gpu_microbench.cu, configs/measurements/gpu-microbench-*.json):
// the same loops run by simulated warps on a GPU of the given profile on a
// Gen5 x16 root complex with host memory, compared with the measured figures.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <systemc>
#include <utility>
#include <vector>

#include "sim/frontend/validate/validate.h"
#include "sim/kernel/params/config_error.h"
#include "sim/kernel/simulation.h"
#include "sim/system/config/run_config.h"
#include "sim/system/machine/sim_warp.h"
#include "sim/system/run/gpu_bench.h"

namespace gpunvme::validate {
namespace {

double ns(Picoseconds t) { return static_cast<double>(t) / 1000.0; }

// Mean time of one iteration of `op`, one warp on SM `sm`.
double per_op(const std::string& profile, std::uint32_t sm, std::uint32_t iterations,
              const std::function<void(platform::SimWarp&, std::uint64_t gpu_word)>& op) {
  GpuBench bench(nlohmann::json{{"profile", profile}});
  const std::uint64_t word = bench.gpu().allocate(4096, 128);
  Picoseconds span = 0;
  bench.spawn({sm, 0}, [&](platform::SimWarp& p) {
    const Picoseconds start = p.clock();
    for (std::uint32_t i = 0; i < iterations; ++i) op(p, word);
    span = p.clock() - start;
  });
  bench.run();
  return ns(span) / iterations;
}

// `warps` one-warp blocks, one per SM in turn, `lanes` lanes each, every lane
// a dependent chain of atomicAdd on one word (the hardware's k_contend, same
// address): mean per-op latency and the chip's ops per second.
std::pair<double, double> contend(const std::string& profile, std::uint32_t warps,
                                  std::uint32_t lanes, std::uint32_t iterations) {
  GpuBench bench(nlohmann::json{{"profile", profile}});
  const std::uint32_t sms = bench.gpu().sms();
  // The measured run's word is far from its first block's SM: one lane alone
  // takes 248 ns per atomic there, the far mode of the per-SM map (253 ns),
  // not the near one (153 ns). The simulated word is likewise far from the
  // first block's SM.
  gpu::Gpu& g = bench.gpu();
  std::uint64_t word = g.allocate(128, 128);
  while (g.atomic_latency(g.block_sm(0), word) < g.costs().atomic_far) {
    word = g.allocate(128, 128);
  }
  Picoseconds first = ~Picoseconds{0}, last = 0;
  double latency_sum = 0;
  for (std::uint32_t w = 0; w < warps; ++w) {
    bench.spawn({g.block_sm(w), (w / sms) % 4}, [&](platform::SimWarp& p) {
      const Picoseconds start = p.clock();
      for (std::uint32_t i = 0; i < iterations; ++i) {
        p.for_lanes(algo::lanes_below(lanes), [&](int) { p.atomic_add_u32(word, 1); });
      }
      const Picoseconds end = p.clock();
      first = std::min(first, start);
      last = std::max(last, end);
      latency_sum += ns(end - start) / iterations;
    });
  }
  bench.run();
  const double ops = static_cast<double>(warps) * lanes * iterations;
  return {latency_sum / warps, ops / (ns(last - first) * 1e-9)};
}

// The per-SM atomic latency map's two modes (near and far L2 partition):
// means of its 10 ns histogram bins below and above the widest empty gap.
std::optional<std::pair<double, double>> near_far_modes(const nlohmann::json& map) {
  if (!map.contains("histogram_10ns_bins") || !map.at("histogram_10ns_bins").is_object()) {
    return std::nullopt;
  }
  std::vector<std::pair<double, double>> bins;  // (bin centre ns, count)
  for (const auto& [start, count] : map.at("histogram_10ns_bins").items()) {
    bins.emplace_back(std::stod(start) + 5.0, count.get<double>());
  }
  std::sort(bins.begin(), bins.end());
  if (bins.size() < 2) return std::nullopt;
  std::size_t split = 1;
  for (std::size_t i = 1; i < bins.size(); ++i) {
    if (bins[i].first - bins[i - 1].first > bins[split].first - bins[split - 1].first) split = i;
  }
  auto mean = [&](std::size_t from, std::size_t to) {
    double sum = 0, n = 0;
    for (std::size_t i = from; i < to; ++i) {
      sum += bins[i].first * bins[i].second;
      n += bins[i].second;
    }
    return sum / n;
  };
  return std::make_pair(mean(0, split), mean(split, bins.size()));
}

const nlohmann::json* find(const nlohmann::json& doc, std::initializer_list<const char*> path) {
  const nlohmann::json* at = &doc;
  for (const char* k : path) {
    if (!at->is_object() || !at->contains(k)) return nullptr;
    at = &at->at(k);
  }
  return at;
}

}  // namespace

nlohmann::json correlate_microbenchmarks(const nlohmann::json& mb, const std::string& file,
                                         const std::string& profile, double tolerance) {
  if (mb.value("schema", "") != "gpunvme.gpu_microbench/1") {
    throw ConfigError(file, "$.schema", mb.value("schema", ""),
                      "expected \"gpunvme.gpu_microbench/1\" (a gpu_microbench results file)");
  }
  nlohmann::json rows = nlohmann::json::array();
  auto add = [&](const std::string& name, const nlohmann::json* measured, double simulated,
                 const std::string& how) {
    if (measured == nullptr || !measured->is_object() || !measured->contains("value")) return;
    const double h = measured->at("value").get<double>();
    const double err = h > 0 ? (simulated - h) / h : NAN;
    rows.push_back(
        {{"name", name},
         {"unit", measured->value("unit", "")},
         {"measured", h},
         {"simulated", simulated},
         {"error_pct", std::isfinite(err) ? nlohmann::json(100.0 * err) : nlohmann::json(nullptr)},
         {"within_tolerance", std::isfinite(err) && std::fabs(err) <= tolerance},
         {"simulated_as", how}});
  };
  const nlohmann::json& f = mb.at("figures");
  constexpr std::uint32_t kIters = 200;

  // Uncontended atomic: a lone thread's dependent chain on one L2-resident
  // word. The model has a near and a far L2 partition. The hardware's chain
  // (162 ns, two integer ops per step included) ran near its word; the
  // per-SM map gives both modes (4224 SM-line pairs, half in each).
  const auto atomic_chain = [&](bool near) {
    // An SM near (or far from) per_op's word, the first allocation of a
    // fresh bench.
    GpuBench probe(nlohmann::json{{"profile", profile}});
    gpu::Gpu& g = probe.gpu();
    const std::uint64_t word = g.allocate(4096, 128);
    std::uint32_t sm = 0;
    while (sm + 1 < g.sms() && (g.atomic_latency(sm, word) == g.costs().atomic_near) != near) {
      ++sm;
    }
    return per_op(profile, sm, kIters, [](platform::SimWarp& p, std::uint64_t w) {
      p.for_lanes(algo::lanes_below(1), [&](int) { p.atomic_add_u32(w, 1); });
    });
  };
  const double near_chain = atomic_chain(true);
  const double far_chain = atomic_chain(false);
  add("atomic_add_uncontended_latency", find(f, {"atomic_add_uncontended_latency"}), near_chain,
      "one lane, dependent atomicAdd chain on one GPU word near its SM");
  if (const nlohmann::json* map = find(f, {"atomic_add_latency_by_sm_and_address"})) {
    const std::optional<std::pair<double, double>> modes = near_far_modes(*map);
    if (modes) {
      const nlohmann::json near = {{"value", modes->first}, {"unit", "ns"}};
      const nlohmann::json far = {{"value", modes->second}, {"unit", "ns"}};
      add("atomic_latency_near_mode", &near, near_chain,
          "dependent atomicAdd chain, word in the SM's near L2 partition (hardware: mean of the "
          "per-SM map's lower mode)");
      add("atomic_latency_far_mode", &far, far_chain,
          "the same, word in the far partition (hardware: the map's upper mode)");
    }
  }

  // Same-address contention against the number of contending warps.
  if (const nlohmann::json* rowsj = find(f, {"atomic_contention", "rows"})) {
    for (std::uint32_t lanes : {1u, 32u}) {
      for (std::uint32_t warps : {1u, 8u, 32u, 132u, 528u}) {
        const nlohmann::json* m = nullptr;
        for (const nlohmann::json& r : *rowsj) {
          if (r.value("addresses", "") == "same" && r.value("lanes_per_warp", 0u) == lanes &&
              r.value("warps", 0u) == warps) {
            m = &r;
          }
        }
        if (m == nullptr) continue;
        const auto [latency, throughput] = contend(profile, warps, lanes, lanes == 1 ? 200 : 20);
        const nlohmann::json lat = {{"value", m->value("mean_op_latency_ns", 0.0)}, {"unit", "ns"}};
        add(fmt::format("same_address_atomic_latency_{}w_{}l", warps, lanes), &lat, latency,
            fmt::format("{} one-warp blocks x {} lanes, dependent atomicAdd on one word: mean op "
                        "latency",
                        warps, lanes));
        if (warps == 528 && lanes == 32) {
          add("l2_same_address_atomic_interval", find(f, {"l2_same_address_atomic_interval"}),
              1e9 / throughput, "528 warps x 32 lanes on one word: ns per operation, chip-wide");
        }
      }
    }
  }

  // Fences by scope, idle and after a host store (loop of store + fence minus
  // the store alone, as the hardware program computes it).
  add("fence_block_idle", find(f, {"fences", "fence_block_idle"}),
      per_op(profile, 0, kIters, [](platform::SimWarp& p, std::uint64_t) { p.fence_block(); }),
      "fence_block in a loop");
  add("fence_gpu_idle", find(f, {"fences", "fence_gpu_idle"}),
      per_op(profile, 0, kIters, [](platform::SimWarp& p, std::uint64_t) { p.fence_gpu(); }),
      "fence_gpu in a loop");
  add("fence_system_idle", find(f, {"fences", "fence_system_idle"}),
      per_op(profile, 0, kIters, [](platform::SimWarp& p, std::uint64_t) { p.fence_system(); }),
      "fence_system in a loop");
  const double host_store = per_op(profile, 0, kIters, [](platform::SimWarp& p, std::uint64_t) {
    p.store_u32(GpuBench::host_memory(), 1);
  });
  const double host_store_fence =
      per_op(profile, 0, kIters, [](platform::SimWarp& p, std::uint64_t) {
        p.store_u32(GpuBench::host_memory(), 1);
        p.fence_system();
      });
  add("fence_system_after_host_store", find(f, {"fences", "fence_system_after_host_store"}),
      host_store_fence - host_store, "(host store + fence_system) - host store, in a loop");
  add("fence_gpu_after_global_store", find(f, {"fences", "fence_gpu_after_global_store"}),
      per_op(profile, 0, kIters,
             [](platform::SimWarp& p, std::uint64_t w) {
               p.store_u32(w, 1);
               p.fence_gpu();
             }) -
          per_op(profile, 0, kIters,
                 [](platform::SimWarp& p, std::uint64_t w) { p.store_u32(w, 1); }),
      "(GPU store + fence_gpu) - GPU store, in a loop");

  // Loads: L2 hit and zero-copy (a dependent load of pinned host memory).
  add("l2_hit_load_latency", find(f, {"load_latency", "l2_hit_load_latency"}),
      per_op(profile, 0, kIters,
             [](platform::SimWarp& p, std::uint64_t w) { (void)p.load_u32(w); }),
      "dependent load of a GPU word (L2 hit)");
  add("host_read_latency_64KiB", find(f, {"zero_copy", "host_read_latency_64KiB"}),
      per_op(
          profile, 0, kIters,
          [](platform::SimWarp& p, std::uint64_t) { (void)p.load_u32(GpuBench::host_memory()); }),
      "dependent load of pinned host memory over PCIe");
  // GPU -> CPU -> GPU: the GPU's fenced store to a host flag and its read of
  // the reply; the host thread's own reaction time is not modelled (0).
  add("gpu_cpu_gpu_round_trip_fenced", find(f, {"round_trip", "gpu_cpu_gpu_round_trip_fenced"}),
      per_op(profile, 0, 50,
             [](platform::SimWarp& p, std::uint64_t) {
               p.store_u32(GpuBench::host_memory(), 1);
               p.fence_system();
               (void)p.load_u32(GpuBench::host_memory() + 128);
             }),
      "host store + fence_system + one zero-copy read of the reply (host reaction time 0)");

  double mae = 0, worst = 0;
  std::size_t n = 0;
  bool all_within = true;
  for (const nlohmann::json& r : rows) {
    if (r.at("error_pct").is_null()) continue;
    const double e = std::fabs(r.at("error_pct").get<double>());
    mae += e;
    worst = std::max(worst, e);
    ++n;
    all_within = all_within && r.at("within_tolerance").get<bool>();
  }
  return {{"measured_file", file},
          {"date_measured", mb.value("date", "")},
          {"gpu_profile", profile},
          {"calibrated", true},
          {"within_tolerance", all_within},
          {"mean_abs_error_pct", n ? mae / static_cast<double>(n) : 0.0},
          {"max_abs_error_pct", worst},
          {"figures", rows}};
}

}  // namespace gpunvme::validate
