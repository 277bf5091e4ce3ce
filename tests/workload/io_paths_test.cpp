// The three I/O paths on the same workload: the order the seeds give for a
// saturated link, the CPU paths bound by cores when they have few, and the
// steps each path takes.
#include <gtest/gtest.h>

#include "workload_test_util.h"

namespace gpunvme {
namespace {

double iops(const nlohmann::json& r) { return r["summary"]["iops"].get<double>(); }

// 4 KiB random reads from 1024 GPU threads (2 each); the switch's uplink to the host
// is narrowed to Gen3 x4 (~3.5 GB/s of payload), so host-bound traffic
// saturates it while the SSD (2.5 M IOPS, ~10 GB/s) could go faster.
RunConfig saturated(const std::string& path) {
  return test::scenario("randread-4k", {"scenario.ios=2048", "scenario.path=" + path,
                                        "topology.links.0.gen=3", "topology.links.0.width=4"});
}

TEST(IoPaths, SaturatedLinkOrdersGpuInitiatedThenGdsThenBounce) {
  const nlohmann::json gpu = run(saturated("gpu_initiated"));
  const nlohmann::json gds = run(saturated("gds"));
  const nlohmann::json bounce = run(saturated("bounce"));
  for (const auto* r : {&gpu, &gds, &bounce}) {
    EXPECT_EQ((*r)["summary"]["ios"].get<std::uint64_t>(), 2048u);
    EXPECT_EQ((*r)["summary"]["errors"].get<std::uint64_t>(), 0u);
  }
  EXPECT_EQ(gpu["summary"]["path"], "gpu_initiated");
  EXPECT_EQ(gds["summary"]["path"], "gds");
  EXPECT_EQ(bounce["summary"]["path"], "bounce");
  EXPECT_GE(iops(gpu), iops(gds));
  EXPECT_GE(iops(gds), iops(bounce));
  // The bounce path moves every byte over the host link twice: it is link
  // bound, far below the others.
  EXPECT_LT(iops(bounce), 0.5 * iops(gds));
  // Data of the two direct paths never touches host memory.
  EXPECT_EQ(gds["cpu"]["copies"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(bounce["cpu"]["copies"].get<std::uint64_t>(), 2048u);
}

TEST(IoPaths, CpuPathsBecomeCoreBoundWithOneCore) {
  // One core, IOMMU translating: each read costs the core 50 ns to take the
  // GPU's request, 50 ns to submit, 400 ns to map, 40 ns to reap and 20 ns
  // to post the flag, plus its share of a 300 ns system call per batch.
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
    EXPECT_LE(busy_per_io, per_io_ns + 300.0);  // + at most one system call per read
    EXPECT_GT(r["cpu"]["max_utilization"].get<double>(), 0.75);
    EXPECT_LE(iops(r), 1e9 / per_io_ns * 1.001);
    EXPECT_GE(iops(r), 0.75e9 / per_io_ns);
  };
  const nlohmann::json gds = with("gds");
  core_bound(gds, 50 + 50 + 400 + 40 + 20);  // 1.79 M IOPS, system calls aside
  EXPECT_EQ(gds["cpu"]["dma_mapped_commands"].get<std::uint64_t>(), 2000u);
  // The bounce path pays a 2 us copy launch per read instead of the flag.
  const nlohmann::json bounce = with("bounce");
  core_bound(bounce, 50 + 50 + 400 + 40 + 2000);
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
