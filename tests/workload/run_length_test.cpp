// How long a microbenchmark runs, in fio's terms: ios (number_ios), io_size
// (bytes, becoming ios), runtime_us (a simulated-time limit) and time_based
// (run for the whole runtime). Checked on the GPU-initiated microbenchmark and
// on a CPU-initiated path, which have separate issue loops.
#include <gtest/gtest.h>

#include "sim/kernel/params/config_error.h"
#include "workload_test_util.h"

namespace gpunvme {
namespace {

constexpr double kRuntimeUs = 1500.0;
constexpr std::uint64_t kThreads = 128;

std::vector<std::string> base(const std::string& path) {
  return {"scenario.path=" + path, "scenario.threads=" + std::to_string(kThreads)};
}

std::vector<std::string> plus(std::vector<std::string> v, const std::vector<std::string>& more) {
  v.insert(v.end(), more.begin(), more.end());
  return v;
}

// I/Os per second once the queues are up: the run's I/Os over the time from
// the first I/O doorbell to the end (bring-up excluded, as runtime excludes it).
double steady_iops(const nlohmann::json& r) {
  const double io_ns = r["summary"]["simulated_time_ns"].get<double>() -
                       r["ssds"]["ssd0"]["first_io_doorbell_ns"].get<double>();
  return static_cast<double>(r["summary"]["ios"].get<std::uint64_t>()) / (io_ns * 1e-9);
}

TEST(RunLength, TimeBasedRunsCompleteIopsTimesRuntime) {
  for (const char* path : {"gpu_initiated", "gds"}) {
    // The reference: a run bounded by ios, long enough that bring-up and the
    // last reads' drain are a small part of it.
    const nlohmann::json reference =
        run(test::scenario("randread-4k", plus(base(path), {"scenario.ios=6000"})));
    const double iops = steady_iops(reference);
    const nlohmann::json timed = run(test::scenario(
        "randread-4k", plus(base(path), {"scenario.time_based=true",
                                         "scenario.runtime_us=" + std::to_string(kRuntimeUs)})));
    const auto done = timed["summary"]["ios"].get<std::uint64_t>();
    EXPECT_EQ(timed["summary"]["errors"].get<std::uint64_t>(), 0u) << path;
    // Every thread issues until the deadline; what it has in flight then (at
    // most one read each) completes after it.
    const double expected = iops * kRuntimeUs * 1e-6;
    EXPECT_NEAR(static_cast<double>(done), expected, 0.1 * expected + kThreads)
        << path << ": " << iops << " IOPS";
    // ios (20,000 in the scenario) does not bound a time-based run.
    EXPECT_NE(done, 20000u);
    // The run lasts the runtime plus at most the drain of the last reads.
    const double io_ns = timed["summary"]["simulated_time_ns"].get<double>() -
                         timed["ssds"]["ssd0"]["first_io_doorbell_ns"].get<double>();
    EXPECT_GE(io_ns, kRuntimeUs * 1000.0) << path;
    EXPECT_LE(io_ns, kRuntimeUs * 1000.0 + 2 * timed["summary"]["latency_ns"]["max"].get<double>())
        << path;
    // Twice the runtime, about twice the I/Os.
    const nlohmann::json twice = run(test::scenario(
        "randread-4k", plus(base(path), {"scenario.time_based=true",
                                         "scenario.runtime_us=" + std::to_string(2 * kRuntimeUs)})));
    EXPECT_NEAR(twice["summary"]["ios"].get<double>() / static_cast<double>(done), 2.0, 0.2)
        << path;
  }
}

TEST(RunLength, RuntimeCapsIosAndIosCapsRuntime) {
  for (const char* path : {"gpu_initiated", "bounce"}) {
    // Without time_based, whichever ends first: the runtime here...
    const nlohmann::json capped = run(test::scenario(
        "randread-4k", plus(base(path), {"scenario.ios=1000000", "scenario.runtime_us=300"})));
    const auto capped_ios = capped["summary"]["ios"].get<std::uint64_t>();
    EXPECT_GT(capped_ios, 0u) << path;
    EXPECT_LT(capped_ios, 100000u) << path;
    // ... and the I/O count here.
    const nlohmann::json counted = run(test::scenario(
        "randread-4k", plus(base(path), {"scenario.ios=500", "scenario.runtime_us=100000"})));
    EXPECT_EQ(counted["summary"]["ios"].get<std::uint64_t>(), 500u) << path;
  }
}

TEST(RunLength, IoSizeBecomesIos) {
  for (const char* path : {"gpu_initiated", "gds"}) {
    const RunConfig config =
        test::scenario("randread-4k", plus(base(path), {"scenario.bs=8192",
                                                        "scenario.io_size=" +
                                                            std::to_string(8192 * 300)}));
    EXPECT_EQ(config.scenario.params.integer("ios"), 300);
    const nlohmann::json r = run(config);
    EXPECT_EQ(r["summary"]["ios"].get<std::uint64_t>(), 300u) << path;
    EXPECT_EQ(r["ssds"]["ssd0"]["bytes_read"].get<std::uint64_t>(), 8192u * 300) << path;
  }
}

}  // namespace
}  // namespace gpunvme
