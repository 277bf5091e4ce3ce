// The three I/O paths on the same workload: the order the seeds give when
// the CPU control path is the bottleneck (and why there is none when it is
// not), the CPU paths bound by cores when they have few, over several SSDs,
// and the steps each path takes.
#include <gtest/gtest.h>

#include "workload_test_util.h"

namespace gpunvme {
namespace {

double iops(const nlohmann::json& r) { return r["summary"]["iops"].get<double>(); }

// The regime the seeds describe (seed 000: "the NVMe driver handles 8-12M
// IOPS per core in IOMMU passthrough mode, dropping to roughly 2M IOPS with
// DMA mapping overhead"; seed 001: the CPU control path): 4 KiB random reads
// from 4,096 GPU threads over four Gen5 SSDs (10 M IOPS of flash), on a host
// whose IOMMU translates and which gives the I/O path two cores. With
// translation every request, peer-to-peer included, climbs to the root
// complex, so all three paths share the rc0 -> sw0 uplink; it is wide enough
// (Gen5 x16) not to be what limits them. What does:
//   gpu_initiated: the GPU's threads and the SSDs; no host core per I/O.
//   gds: the two cores, each 50 (request) + 450 (file system) + 550 (driver)
//        + 1000 (cuFile) + 200 (GPU buffer look-up) + 400 (DMA map) + 400
//        (completion) + 80 (flag) = 3130 ns per read plus shares of system
//        calls and interrupts: ~0.64 M IOPS at most.
//   bounce: the two cores again, with a 2.2 us copy launch and a 330 ns
//        copy sync per read instead of cuFile, the look-up and the flag:
//        4380 ns, ~0.46 M IOPS at most.
RunConfig control_path_bound(const std::string& path, std::uint64_t seed) {
  return load_config(test::multi_ssd_topology(4), test::scenario_file("randread-4k"),
                     {test::ssds_override(4), "scenario.threads=4096", "scenario.ios=8192",
                      "scenario.path=" + path, "topology.nodes.rc0.iommu=translate",
                      "topology.nodes.cpu0.cores=2"},
                     seed);
}

TEST(IoPaths, CpuControlPathBoundOrdersGpuInitiatedThenGdsThenBounceOnEverySeed) {
#if defined(__SANITIZE_ADDRESS__)
  // Two seeds under ASan (24 runs take a minute there); the release build runs eight.
  constexpr std::uint64_t kSeeds = 2;
#else
  constexpr std::uint64_t kSeeds = 8;
#endif
  for (std::uint64_t seed = 1; seed <= kSeeds; ++seed) {
    const nlohmann::json gpu = run(control_path_bound("gpu_initiated", seed));
    const nlohmann::json gds = run(control_path_bound("gds", seed));
    const nlohmann::json bounce = run(control_path_bound("bounce", seed));
    for (const auto* r : {&gpu, &gds, &bounce}) {
      EXPECT_EQ((*r)["summary"]["ios"].get<std::uint64_t>(), 8192u) << seed;
      EXPECT_EQ((*r)["summary"]["errors"].get<std::uint64_t>(), 0u) << seed;
    }
    EXPECT_EQ(gpu["summary"]["path"], "gpu_initiated");
    EXPECT_EQ(gds["summary"]["path"], "gds");
    EXPECT_EQ(bounce["summary"]["path"], "bounce");
    // The CPU paths are bound by their two cores (busy nearly throughout,
    // at most the closed-form rate), the GPU-initiated path by neither.
    for (const auto* r : {&gds, &bounce}) {
      EXPECT_GT((*r)["cpu"]["max_utilization"].get<double>(), 0.85) << seed;
      EXPECT_EQ((*r)["cpu"]["dma_mapped_commands"].get<std::uint64_t>(), 8192u) << seed;
    }
    EXPECT_LE(iops(gds), 2 * 1e9 / 3130.0) << seed;
    // (Bounce reads reach the GPU with the copy; the cores' copy syncs of
    // the last ones run after it, so the rate over the run may pass the
    // bound by that backlog, a few percent.)
    EXPECT_LE(iops(bounce), 2 * 1e9 / 4380.0 * 1.03) << seed;
    EXPECT_FALSE(gpu.contains("cpu"));
    // The seeds' order, with margins far above seed-to-seed variation
    // (4380 / 3130 = 1.40 between the CPU paths).
    EXPECT_GT(iops(gpu), 1.5 * iops(gds)) << seed;
    EXPECT_GT(iops(gds), 1.3 * iops(bounce)) << seed;
    // Data of the direct paths never touches host memory; the bounce path
    // copies every read.
    EXPECT_EQ(gds["cpu"]["copies"].get<std::uint64_t>(), 0u);
    EXPECT_EQ(bounce["cpu"]["copies"].get<std::uint64_t>(), 8192u);
  }
}

// The regime where the order does not hold, and why: one SSD, 32 cores with
// no IOMMU (~2.7 us per read: ~12 M IOPS of host capacity against 2.5 M of
// flash), 1,024 threads.
// GDS's control path then has capacity to spare, both direct paths sit at the
// SSD's ceiling and differ only by where random reads land on its dies: GDS
// comes out ahead at some seeds, GPU-initiated at others. Seed 001 says as
// much (GDS reaches the drives' rate when the CPU is not the bottleneck).
// The bounce path still moves each read twice and launches a copy per read.
TEST(IoPaths, WithCoresToSpareGdsAndGpuInitiatedShareTheSsdCeiling) {
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    auto with = [&](const std::string& path) {
      return run(
          test::scenario("randread-4k", {"scenario.ios=2048", "scenario.path=" + path}, seed));
    };
    const nlohmann::json gpu = with("gpu_initiated");
    const nlohmann::json gds = with("gds");
    EXPECT_NEAR(iops(gds) / iops(gpu), 1.0, 0.12) << seed;
    EXPECT_LT(gds["cpu"]["mean_utilization"].get<double>(), 0.4) << seed;
    EXPECT_EQ(gds["cpu"]["dma_mapped_commands"].get<std::uint64_t>(), 0u) << seed;
  }
}

// gds and bounce over 2 to 4 SSDs: block b of the striped span goes to SSD
// b mod N, so every drive serves about 1/N of the reads, each read is one
// command, and drives not named get none.
TEST(IoPaths, CpuPathsSpreadOverSeveralSsds) {
  const std::string topology = test::multi_ssd_topology(4);
  for (const char* path : {"gds", "bounce"}) {
    for (int n = 2; n <= 4; ++n) {
      const std::string what = std::string(path) + " over " + std::to_string(n);
      const nlohmann::json r = run(load_config(
          topology, test::scenario_file("randread-4k"),
          {test::ssds_override(n), "scenario.ios=1200", std::string("scenario.path=") + path}, 1));
      EXPECT_EQ(r["summary"]["ios"].get<std::uint64_t>(), 1200u) << what;
      EXPECT_EQ(r["summary"]["errors"].get<std::uint64_t>(), 0u) << what;
      std::uint64_t commands = 0;
      for (int k = 0; k < 4; ++k) {
        const nlohmann::json& ssd = r["ssds"]["ssd" + std::to_string(k)];
        const auto c = ssd["commands"].get<std::uint64_t>();
        if (k >= n) {
          EXPECT_EQ(c, 0u) << what << " ssd" << k;
          EXPECT_EQ(ssd["admin_commands"].get<std::uint64_t>(), 0u) << what << " ssd" << k;
          continue;
        }
        commands += c;
        // Binomial(1200, 1/N): 25 % either side is over 4 standard deviations.
        EXPECT_NEAR(static_cast<double>(c), 1200.0 / n, 0.25 * 1200.0 / n) << what << " ssd" << k;
        EXPECT_EQ(ssd["bytes_read"].get<std::uint64_t>(), c * 4096) << what << " ssd" << k;
        EXPECT_GT(ssd["admin_commands"].get<std::uint64_t>(), 0u) << what << " ssd" << k;
      }
      EXPECT_EQ(commands, 1200u) << what;
      EXPECT_EQ(r["cpu"]["copies"].get<std::uint64_t>(), std::string(path) == "bounce" ? 1200u : 0u)
          << what;
    }
  }
}

TEST(IoPaths, CpuPathsBecomeCoreBoundWithOneCore) {
  // One core, IOMMU translating: each gds read costs the core 50 ns to take
  // the GPU's request, 450 ns in the file system, 550 ns in the driver,
  // 1000 ns in cuFile, 200 ns to look the GPU buffer up, 400 ns to map,
  // 400 ns to complete and 80 ns to post the flag, plus its share of a
  // 300 ns system call per batch and a 1500 ns interrupt per handler run.
  const std::vector<std::string> one_core{"scenario.ios=2000", "topology.nodes.cpu0.cores=1",
                                          "topology.nodes.rc0.iommu=translate"};
  auto with = [&](const std::string& path) {
    std::vector<std::string> o = one_core;
    o.push_back("scenario.path=" + path);
    return run(test::scenario("randread-4k", o));
  };
  // The core is the bottleneck: busy for nearly the whole run (bring-up and
  // the last reads' flash time aside), at the closed-form cost per read.
  auto core_bound = [](const nlohmann::json& r, double per_io_ns) {
    const double busy_per_io = r["cpu"]["busy_ns"].get<double>() / 2000.0;
    EXPECT_GE(busy_per_io, per_io_ns);
    // + at most one system call and one interrupt per read
    EXPECT_LE(busy_per_io, per_io_ns + 300.0 + 1500.0);
    EXPECT_GT(r["cpu"]["max_utilization"].get<double>(), 0.75);
    EXPECT_LE(iops(r), 1e9 / per_io_ns * 1.03);  // bounce: copy syncs after the last reads
    EXPECT_GE(iops(r), 0.75e9 / per_io_ns);
  };
  const nlohmann::json gds = with("gds");
  core_bound(gds, 50 + 450 + 550 + 1000 + 200 + 400 + 400 + 80);  // 0.32 M IOPS
  EXPECT_EQ(gds["cpu"]["dma_mapped_commands"].get<std::uint64_t>(), 2000u);
  // Each stage's share per read is its parameter (one each per read).
  const nlohmann::json& stages = gds["cpu"]["host_cost_per_io_ns"];
  for (const auto& [stage, ns] : std::vector<std::pair<std::string, double>>{{"request", 50},
                                                                             {"file_system", 450},
                                                                             {"driver_submit", 550},
                                                                             {"cufile", 1000},
                                                                             {"buffer_lookup", 200},
                                                                             {"dma_map", 400},
                                                                             {"completion", 400},
                                                                             {"notify", 80}}) {
    EXPECT_DOUBLE_EQ(stages[stage].get<double>(), ns) << stage;
  }
  EXPECT_FALSE(stages.contains("copy_launch"));
  // The bounce path pays a 2.2 us copy launch and a 330 ns copy sync per
  // read instead of cuFile, the look-up and the flag.
  const nlohmann::json bounce = with("bounce");
  core_bound(bounce, 50 + 450 + 550 + 400 + 400 + 2200 + 330);
  EXPECT_DOUBLE_EQ(bounce["cpu"]["host_cost_per_io_ns"]["copy_launch"].get<double>(), 2200.0);
  EXPECT_DOUBLE_EQ(bounce["cpu"]["host_cost_per_io_ns"]["copy_sync"].get<double>(), 330.0);
  EXPECT_FALSE(bounce["cpu"]["host_cost_per_io_ns"].contains("cufile"));
  // The GPU-initiated path does not use the host's cores at all; GDS with
  // 4 cores is no longer core bound either.
  const nlohmann::json gpu = with("gpu_initiated");
  EXPECT_GT(iops(gpu), 1.2 * iops(gds));
  EXPECT_FALSE(gpu.contains("cpu"));
  std::vector<std::string> more = one_core;
  more[1] = "topology.nodes.cpu0.cores=4";
  more.push_back("scenario.path=gds");
  EXPECT_GT(iops(run(test::scenario("randread-4k", more))), 1.2 * iops(gds));
}

TEST(IoPaths, CpuPathStagesFollowTheSeedsSteps) {
  const nlohmann::json bounce = run(test::scenario("randread-4k-bounce", {"scenario.ios=500"}));
  for (const char* stage : {"request_signal", "cpu_submit", "completion_wait", "cpu_completion",
                            "copy_to_gpu", "end_to_end", "ssd_service"}) {
    EXPECT_EQ(bounce["stages"][stage]["count"].get<std::uint64_t>(), 500u) << stage;
  }
  EXPECT_FALSE(bounce["stages"].contains("copy_to_host"));  // reads only
  const nlohmann::json gds =
      run(test::scenario("randread-4k-gds", {"scenario.ios=500", "scenario.request_origin=cpu"}));
  EXPECT_FALSE(gds["stages"].contains("copy_to_gpu"));
  EXPECT_EQ(gds["stages"]["request_signal"]["max"].get<double>(), 0.0);
  EXPECT_EQ(gds["cpu"]["request_origin"], "cpu");
}

TEST(IoPaths, InterruptCompletionWakesTheCoreOncePerPass) {
  const nlohmann::json r = run(test::scenario(
      "randread-4k-gds", {"scenario.ios=500", "topology.nodes.cpu0.completion=interrupt"}));
  EXPECT_EQ(r["summary"]["ios"].get<std::uint64_t>(), 500u);
  EXPECT_EQ(r["summary"]["strategy"], "host_interrupt");
  EXPECT_EQ(r["ssds"]["ssd0"]["interrupts"].get<std::uint64_t>() >= 500u, true);
  EXPECT_GT(r["cpu"]["completion_passes"].get<std::uint64_t>(), 0u);
}

// One read at a time from one host thread, completions by interrupt. By
// hand: the handler run after each completion entry lands costs the core
// 1500 ns (interrupt) + 400 ns (completion) = 1900 ns, so cpu_completion is
// 1900 ns for every read; with Interrupt Coalescing at threshold 4 and
// 100 us, a lone entry never reaches the threshold and waits the whole
// aggregation time: 100,000 + 1,900 ns, one interrupt per read, by time.
TEST(IoPaths, InterruptCoalescingHoldsALoneCompletionForTheAggregationTime) {
  auto serial = [](bool coalesce) {
    std::vector<std::string> o{"scenario.ios=40", "scenario.threads=1", "scenario.iodepth=1",
                               "scenario.request_origin=cpu"};
    if (coalesce) {
      o.push_back("topology.nodes.cpu0.irq_coalescing_threshold=4");
      o.push_back("topology.nodes.cpu0.irq_coalescing_time_100us=1");
    }
    return run(test::scenario("randread-4k-gds", o));
  };
  const nlohmann::json off = serial(false);
  const nlohmann::json on = serial(true);
  for (const char* q : {"min", "max"}) {
    EXPECT_DOUBLE_EQ(off["stages"]["cpu_completion"][q].get<double>(), 1900.0) << q;
    EXPECT_DOUBLE_EQ(on["stages"]["cpu_completion"][q].get<double>(), 101900.0) << q;
  }
  const nlohmann::json& irq = on["cpu"]["interrupts"];
  EXPECT_EQ(irq["raised"].get<std::uint64_t>(), 40u);
  EXPECT_EQ(irq["raised_by_time"].get<std::uint64_t>(), 40u);
  EXPECT_EQ(irq["raised_by_threshold"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(irq["handler_runs"].get<std::uint64_t>(), 40u);
  EXPECT_EQ(irq["coalescing_time_us"].get<std::uint64_t>(), 100u);
  EXPECT_EQ(off["cpu"]["interrupts"]["raised_by_time"].get<std::uint64_t>(), 0u);
}

// Under load (1,024 threads, 2,000 reads) a threshold of 8 takes interrupts
// from one per entry to at most one per 8 entries plus those the time
// forces, and the handler runs fewer times.
TEST(IoPaths, InterruptCoalescingUnderLoadRaisesAtMostOneInterruptPerThresholdEntries) {
  auto with = [](const std::vector<std::string>& extra) {
    std::vector<std::string> o{"scenario.ios=2000", "topology.nodes.cpu0.cores=4"};
    o.insert(o.end(), extra.begin(), extra.end());
    return run(test::scenario("randread-4k-gds", o));
  };
  const nlohmann::json off = with({});
  const nlohmann::json on = with({"topology.nodes.cpu0.irq_coalescing_threshold=8",
                                  "topology.nodes.cpu0.irq_coalescing_time_100us=2"});
  EXPECT_EQ(on["summary"]["ios"].get<std::uint64_t>(), 2000u);
  EXPECT_EQ(off["cpu"]["interrupts"]["raised"].get<std::uint64_t>(), 2000u);
  const nlohmann::json& irq = on["cpu"]["interrupts"];
  const auto by_threshold = irq["raised_by_threshold"].get<std::uint64_t>();
  const auto by_time = irq["raised_by_time"].get<std::uint64_t>();
  EXPECT_EQ(irq["raised"].get<std::uint64_t>(), by_threshold + by_time);
  EXPECT_LE(8 * by_threshold, 2000u);
  EXPECT_GT(by_threshold, 0u);
  EXPECT_LE(by_time, 8u);  // one per queue at the end of the run, at most
  EXPECT_LT(irq["handler_runs"].get<std::uint64_t>(),
            off["cpu"]["interrupts"]["handler_runs"].get<std::uint64_t>());
}

// The host thread's reaction to a GPU request: the PCIe flight of the
// 64 B posted write, the cache-line transfer (request_notice_ns) and, on
// average, half the poll loop's period: a 1 us period adds exactly 500 ns to
// every request's signal time.
TEST(IoPaths, APollLoopPeriodAddsHalfAPeriodToEveryRequestSignal) {
  auto with = [](const std::string& period) {
    return run(test::scenario(
        "randread-4k-gds", {"scenario.ios=300", "topology.nodes.cpu0.poll_period_ns=" + period}));
  };
  const nlohmann::json base = with("0");
  const nlohmann::json slow = with("1000");
  EXPECT_NEAR(slow["stages"]["request_signal"]["min"].get<double>() -
                  base["stages"]["request_signal"]["min"].get<double>(),
              500.0, 0.01);
}

TEST(IoPaths, WritesAndMixedPatternsCompleteOnEveryPath) {
  for (const char* path : {"gpu_initiated", "gds", "bounce"}) {
    const nlohmann::json r = run(
        test::scenario("randrw-zipf", {"scenario.ios=600", std::string("scenario.path=") + path}));
    EXPECT_EQ(r["summary"]["ios"].get<std::uint64_t>(), 600u) << path;
    EXPECT_EQ(r["summary"]["errors"].get<std::uint64_t>(), 0u) << path;
    const auto reads = r["summary"]["reads"].get<std::uint64_t>();
    const auto writes = r["summary"]["writes"].get<std::uint64_t>();
    EXPECT_EQ(reads + writes, 600u);
    EXPECT_NEAR(static_cast<double>(writes) / 600.0, 0.3, 0.1) << path;
    EXPECT_EQ(r["ssds"]["ssd0"]["commands"].get<std::uint64_t>() >= 600u, true);
    if (std::string(path) == "bounce") {
      EXPECT_EQ(r["stages"]["copy_to_host"]["count"].get<std::uint64_t>(), writes);
    }
  }
}

TEST(IoPaths, SameSeedSameResultOnEveryPath) {
  for (const char* path : {"gds", "bounce"}) {
    auto once = [&] {
      nlohmann::json r = run(test::scenario(
          "randread-4k", {"scenario.ios=400", std::string("scenario.path=") + path}, 9));
      r["summary"].erase("wall_time_s");
      return r.dump();
    };
    EXPECT_EQ(once(), once()) << path;
  }
}

}  // namespace
}  // namespace gpunvme
