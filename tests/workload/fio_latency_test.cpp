// fio's slat, clat and lat, ramp_time and percentile_list: by hand on
// FioLatency, and through whole runs of the microbenchmark on the GPU and
// CPU paths (iodepth refilled against the submit-all, wait-for-all loop).
#include "sim/system/workload/fio_latency.h"

#include <gtest/gtest.h>

#include "workload_test_util.h"

namespace gpunvme {
namespace {

TEST(FioLatency, RampLeavesOutIosDeliveredBeforeItsEnd) {
  FioLatency f;
  f.set_ramp_end(100);
  f.record(0, 5, 50);       // delivered before the ramp's end: left out
  f.record(10, 20, 99);     // likewise
  f.record(60, 70, 100);    // at the end: counted (slat 10, clat 30, lat 40)
  f.record(100, 120, 200);  // slat 20, clat 80, lat 100
  f.record(150, 0, 170);    // doorbell not reached: slat 0, clat 20, lat 20
  EXPECT_EQ(f.ramped(), 2u);
  EXPECT_EQ(f.lat().count(), 3u);
  EXPECT_EQ(f.slat().min(), 0u);
  EXPECT_EQ(f.slat().max(), 20u);
  EXPECT_DOUBLE_EQ(f.slat().mean(), 10.0);
  EXPECT_DOUBLE_EQ(f.clat().mean(), (30.0 + 80.0 + 20.0) / 3);
  EXPECT_DOUBLE_EQ(f.lat().mean(), (40.0 + 100.0 + 20.0) / 3);
  const nlohmann::json j = f.json({50});
  EXPECT_EQ(j["ramp_ios"].get<int>(), 2);
  EXPECT_DOUBLE_EQ(j["ramp_end_ns"].get<double>(), 0.1);
  EXPECT_DOUBLE_EQ(j["lat_ns"]["percentile"]["50.000000"].get<double>(), 0.04);
}

std::vector<std::string> with(std::vector<std::string> v, const std::vector<std::string>& more) {
  v.insert(v.end(), more.begin(), more.end());
  return v;
}

// On every path: lat is end_to_end, slat + clat = lat on average, the
// percentile list is the one asked for, and a ramp leaves out the I/Os that
// complete before it (and only those) while throughput still counts them.
TEST(FioLatency, RunsReportSlatClatLatAndHonourTheRamp) {
  for (const char* path : {"gpu_initiated", "gds", "bounce"}) {
    const std::vector<std::string> base = {"scenario.path=" + std::string(path),
                                           "scenario.threads=64", "scenario.ios=3000",
                                           "scenario.iodepth=2"};
    const nlohmann::json plain =
        run(test::scenario("randread-4k", with(base, {"scenario.percentile_list=[50, 99.5]"})));
    const nlohmann::json& fio = plain["fio"];
    const nlohmann::json& e2e = plain["stages"]["end_to_end"];
    EXPECT_EQ(fio["lat_ns"]["count"], e2e["count"]) << path;
    EXPECT_DOUBLE_EQ(fio["lat_ns"]["mean"].get<double>(), e2e["mean"].get<double>()) << path;
    EXPECT_DOUBLE_EQ(fio["lat_ns"]["max"].get<double>(), e2e["max"].get<double>()) << path;
    EXPECT_NEAR(fio["slat_ns"]["mean"].get<double>() + fio["clat_ns"]["mean"].get<double>(),
                fio["lat_ns"]["mean"].get<double>(), 0.01)
        << path;
    EXPECT_GT(fio["slat_ns"]["mean"].get<double>(), 0.0) << path;
    EXPECT_GT(fio["lat_ns"]["stdev"].get<double>(), 0.0) << path;
    EXPECT_EQ(fio["clat_ns"]["percentile"].size(), 2u) << path;
    EXPECT_TRUE(fio["clat_ns"]["percentile"].contains("99.500000")) << path;

    // A ramp ending at the median completion time leaves out about half.
    const double io_start_us = plain["summary"]["bring_up_ns"].get<double>() / 1000.0;
    const double ramp_us = plain["summary"]["io_time_ns"].get<double>() / 2000.0;
    const nlohmann::json ramped = run(test::scenario(
        "randread-4k", with(base, {"scenario.ramp_time_us=" + std::to_string(ramp_us)})));
    const auto left_out = ramped["fio"]["ramp_ios"].get<std::uint64_t>();
    const auto kept = ramped["fio"]["lat_ns"]["count"].get<std::uint64_t>();
    EXPECT_EQ(left_out + kept, 3000u) << path;
    EXPECT_GT(left_out, 500u) << path;
    EXPECT_GT(kept, 500u) << path;
    EXPECT_NEAR(ramped["fio"]["ramp_end_ns"].get<double>() / 1000.0, io_start_us + ramp_us, 0.01)
        << path;
    // The run itself is unchanged: the ramp only filters the statistics.
    EXPECT_EQ(ramped["summary"]["iops"], plain["summary"]["iops"]) << path;
    EXPECT_EQ(ramped["stages"], plain["stages"]) << path;
  }
}

// iodepth 4 refilled keeps more I/Os in flight than submit-4-wait-for-4 at
// the same thread count, so it moves more I/Os per second on a device with
// room to spare; iodepth_batch_submit = iodepth_batch_complete_min = iodepth
// is the batch loop. Mean in flight is Little's law over the run (iops x
// mean latency), so it is the queue-depth timeline's average.
TEST(FioLatency, RefilledIodepthKeepsMoreInFlightThanBatches) {
  for (const char* path : {"gpu_initiated", "gds"}) {
    const std::vector<std::string> base = {"scenario.path=" + std::string(path),
                                           "scenario.threads=8", "scenario.ios=4000",
                                           "scenario.iodepth=4"};
    const nlohmann::json refill = run(test::scenario("randread-4k", base));
    const nlohmann::json batch = run(test::scenario(
        "randread-4k",
        with(base, {"scenario.iodepth_batch_submit=4", "scenario.iodepth_batch_complete_min=4"})));
    const double refill_depth = refill["summary"]["mean_in_flight"].get<double>();
    const double batch_depth = batch["summary"]["mean_in_flight"].get<double>();
    // At most threads x iodepth = 32 in flight either way.
    EXPECT_LE(refill_depth, 32.0) << path;
    EXPECT_GT(refill_depth, batch_depth * 1.1) << path;
    EXPECT_GT(refill["summary"]["iops"].get<double>(), batch["summary"]["iops"].get<double>())
        << path;
    EXPECT_EQ(refill["summary"]["errors"].get<int>(), 0) << path;
  }
}

// A CID scheme that derives the CID from the I/O's slot (thread_pool) stays
// unique under refills: a refilled I/O takes the freed round's index. Every
// CID scheme and completion policy must finish clean with rounds reaped out
// of order, and so must io_agents (which waits for rounds in post order).
TEST(FioLatency, CidsStayUniqueUnderRefills) {
  const std::vector<std::vector<std::string>> cases = {
      {"scenario.cid_scheme=thread_pool"},
      {"scenario.cid_scheme=warp_partition"},
      {"scenario.cid_scheme=counter_lock"},
      {"scenario.cid_scheme=thread_pool", "scenario.queue_mapping=per_warp",
       "scenario.submission=exclusive", "scenario.completion=owner_drain"},
      {"scenario.strategy=bam_ticket"},
      {"scenario.strategy=io_agents"},
  };
  for (const auto& extra : cases) {
    const nlohmann::json r = run(test::scenario(
        "randread-4k", with({"scenario.threads=256", "scenario.ios=8000", "scenario.iodepth=3",
                             "scenario.iodepth_batch_complete_min=1"},
                            extra)));
    EXPECT_EQ(r["summary"]["ios"].get<int>(), 8000) << extra[0];
    EXPECT_EQ(r["summary"]["errors"].get<int>(), 0) << extra[0];
  }
}

}  // namespace
}  // namespace gpunvme
