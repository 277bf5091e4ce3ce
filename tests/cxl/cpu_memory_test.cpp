// Host cores' accesses to host memory and CXL memory (models/host/memory_access.h) against
// hand-worked oracles: the stall closed forms (fill-buffer rounds of the load-to-use latency,
// pointer chases, one core's streaming bandwidth, the cache lines of ring runs), and runs of the
// gds and bounce paths with their NVMe queues in the CXL expander or in DRAM, whose extra core
// time per I/O is counted by hand from the lines each pass touches.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "models/host/memory_access.h"
#include "tests/cli/run_cli.h"

namespace gpunvme::host::testing {
namespace {

using cli_test::gpunvme;

const std::string kCxlTopology =
    std::string(GPUNVME_SOURCE_DIR) + "/configs/topologies/cxl-memory.json";
const std::string kQueuesCxl = std::string(GPUNVME_SOURCE_DIR) + "/scenarios/cxl/queues-cxl.json";
const std::string kQueuesDram = std::string(GPUNVME_SOURCE_DIR) + "/scenarios/cxl/queues-dram.json";

TEST(CoreMemory, IndependentLinesTakeFillBufferRoundsOfTheLatency) {
  const CoreMemoryTiming cxl{ns_to_ps(240.0)};
  EXPECT_EQ(independent_lines_stall(cxl, 16, 0), 0);
  EXPECT_EQ(independent_lines_stall(cxl, 16, 1), ns_to_ps(240.0));
  // 16 fill buffers: 16 lines in flight together, the 17th waits for a second round.
  EXPECT_EQ(independent_lines_stall(cxl, 16, 16), ns_to_ps(240.0));
  EXPECT_EQ(independent_lines_stall(cxl, 16, 17), ns_to_ps(480.0));
  EXPECT_EQ(independent_lines_stall(cxl, 4, 10), ns_to_ps(720.0));
  // A pointer chase pays the whole latency per line.
  EXPECT_EQ(dependent_lines_stall(cxl, 3), ns_to_ps(720.0));
  // Little's law: 16 x 64 B per 100 ns = 10.24 GB/s from DRAM; per 240 ns 4.267 GB/s.
  EXPECT_DOUBLE_EQ(core_bytes_per_ns(CoreMemoryTiming{ns_to_ps(100.0)}, 16), 10.24);
  EXPECT_NEAR(core_bytes_per_ns(cxl, 16), 1024.0 / 240.0, 1e-12);
}

TEST(CoreMemory, RingRunsTouchTheLinesTheirEntriesSpan) {
  // 16 B CQEs, four to a line.
  EXPECT_EQ(ring_lines(0, 0, 1024, 16), 0u);
  EXPECT_EQ(ring_lines(0, 1, 1024, 16), 1u);
  EXPECT_EQ(ring_lines(0, 4, 1024, 16), 1u);
  EXPECT_EQ(ring_lines(0, 5, 1024, 16), 2u);
  EXPECT_EQ(ring_lines(3, 2, 1024, 16), 2u);  // entries 3 and 4 straddle lines 0 and 1
  // A run that wraps: entries 1022, 1023 (line 255) and 0, 1 (line 0).
  EXPECT_EQ(ring_lines(1022, 4, 1024, 16), 2u);
  // 64 B SQEs: a line each.
  EXPECT_EQ(ring_lines(7, 3, 16, 64), 3u);
}

nlohmann::json run(const std::string& scenario, const std::string& args) {
  static int n = 0;
  const std::string out = ::testing::TempDir() + "cpu_memory_" + std::to_string(n++) + ".json";
  const cli_test::Outcome o = gpunvme("run --topology " + kCxlTopology + " --scenario " + scenario +
                                      " " + args + " --out " + out);
  EXPECT_EQ(o.code, 0) << o.output;
  return nlohmann::json::parse(std::ifstream(out));
}

// One I/O at a time, polled: each I/O is one submission pass that owns one SQE line and one
// completion pass that loads one CQE line, and nothing else uses the expander meanwhile.
const std::string kOneAtATime =
    "--set scenario.threads=1 --set scenario.iodepth=1 --set scenario.ios=200 "
    "--set topology.nodes.cpu0.completion=polling";

TEST(CxlQueues, EachPassPaysTheExpandersExtraLatencyPerRoundOfLines) {
  const nlohmann::json cxl = run(kQueuesCxl, kOneAtATime);
  const nlohmann::json dram = run(kQueuesDram, kOneAtATime);
  const nlohmann::json& cpu = cxl.at("cpu");
  // Hand-worked: (240 - 100) ns for the SQE line + (240 - 100) ns for the CQE line.
  EXPECT_DOUBLE_EQ(cpu.at("host_cost_per_io_ns").at("memory_stall").get<double>(), 280.0);
  const nlohmann::json& in_cxl = cpu.at("queue_memory").at("nodes").at("cxl0");
  EXPECT_EQ(cpu.at("queue_memory").at("reference"), "dram0");
  EXPECT_EQ(in_cxl.at("lines_stored").get<std::uint64_t>(), 200u);
  EXPECT_EQ(in_cxl.at("lines_loaded").get<std::uint64_t>(), 200u);
  EXPECT_DOUBLE_EQ(in_cxl.at("stall_ns_per_io").get<double>(), 480.0);
  EXPECT_DOUBLE_EQ(in_cxl.at("reference_stall_ns_per_io").get<double>(), 200.0);
  EXPECT_DOUBLE_EQ(in_cxl.at("bandwidth_wait_ns_per_io").get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(in_cxl.at("charged_ns_per_io").get<double>(), 280.0);
  EXPECT_DOUBLE_EQ(in_cxl.at("core_bandwidth_gbps").get<double>(), 4.267);
  // The core's lines were booked on the expander's DRAM beside the SSD's queue DMA.
  EXPECT_EQ(cxl.at("pcie").at("cxl_memory")[0].at("core_bytes").get<std::uint64_t>(), 400u * 64);
  // The per-I/O core time and its IOPS ceiling carry the stall.
  EXPECT_DOUBLE_EQ(cpu.at("core_time_per_io_ns").get<double>() -
                       dram.at("cpu").at("core_time_per_io_ns").get<double>(),
                   280.0);
  // In DRAM the same lines stall the cores 200 ns, inside the fitted costs: nothing charged.
  const nlohmann::json& in_dram = dram.at("cpu").at("queue_memory").at("nodes").at("dram0");
  EXPECT_DOUBLE_EQ(in_dram.at("stall_ns_per_io").get<double>(), 200.0);
  EXPECT_DOUBLE_EQ(in_dram.at("charged_ns_per_io").get<double>(), 0.0);
  EXPECT_FALSE(dram.at("cpu").at("host_cost_per_io_ns").contains("memory_stall"));
  // The I/O waits for both passes, and the SSD's queue DMA crosses the CXL link too.
  EXPECT_GT(cxl.at("summary").at("latency_ns").at("mean").get<double>(),
            dram.at("summary").at("latency_ns").at("mean").get<double>() + 280.0);
}

TEST(CxlQueues, TheChargeFollowsTheExpandersLoadToUseLatency) {
  // An expander as fast as DRAM costs the cores nothing more: the model, not a constant.
  const nlohmann::json same =
      run(kQueuesCxl, kOneAtATime + " --set topology.nodes.cxl0.cpu_load_to_use_ns=100");
  EXPECT_FALSE(same.at("cpu").at("host_cost_per_io_ns").contains("memory_stall"));
  const nlohmann::json slow =
      run(kQueuesCxl, kOneAtATime + " --set topology.nodes.cxl0.cpu_load_to_use_ns=400");
  EXPECT_DOUBLE_EQ(slow.at("cpu").at("host_cost_per_io_ns").at("memory_stall").get<double>(),
                   600.0);
}

TEST(CxlQueues, PrpListsAndGpuRequestRingsAreQueueMemoryToo) {
  // 128 KiB on the bounce path: 32 pages, a PRP list of 31 entries (248 B, 4 lines) beside the
  // SQE's line, all five owned in one round of fill buffers; a GPU-originated request's
  // descriptor is one more line loaded from its ring (it delays the notice, not a core).
  const nlohmann::json r =
      run(kQueuesCxl, kOneAtATime +
                          " --set scenario.path=bounce --set scenario.bs=131072 "
                          "--set scenario.request_origin=gpu");
  const nlohmann::json& in_cxl = r.at("cpu").at("queue_memory").at("nodes").at("cxl0");
  EXPECT_EQ(in_cxl.at("lines_stored").get<std::uint64_t>(), 200u * 5);
  EXPECT_EQ(in_cxl.at("lines_loaded").get<std::uint64_t>(), 200u * 2);
  EXPECT_DOUBLE_EQ(r.at("cpu").at("host_cost_per_io_ns").at("memory_stall").get<double>(), 280.0);
  EXPECT_DOUBLE_EQ(in_cxl.at("charged_ns_per_io").get<double>(), 420.0);
}

TEST(CxlQueues, DramQueuesLeaveTheRunAsItWas) {
  const nlohmann::json named = run(kQueuesDram, "--set scenario.ios=2000");
  const nlohmann::json unnamed =
      run(kQueuesDram, "--set scenario.ios=2000 --set scenario.host_queues=");
  EXPECT_EQ(named.at("summary").at("latency_ns"), unnamed.at("summary").at("latency_ns"));
  EXPECT_EQ(named.at("ssds"), unnamed.at("ssds"));
  EXPECT_EQ(named.at("pcie").at("host_memory"), unnamed.at("pcie").at("host_memory"));
  EXPECT_FALSE(unnamed.at("cpu").contains("queue_memory"));
}

TEST(CxlQueues, BadPlacementsAreErrorsWithTheirPaths) {
  auto check = [](const std::string& args) {
    return gpunvme("check --topology " + kCxlTopology + " --scenario " + kQueuesCxl + " " + args);
  };
  EXPECT_EQ(check("").code, 0);
  cli_test::Outcome o = check("--set scenario.host_queues=gpu0");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("$.host_queues = \"gpu0\": expected the id of a host_memory or "
                          "cxl_memory node"),
            std::string::npos)
      << o.output;
  o = check("--set scenario.path=gpu_initiated");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("$.host_queues = \"cxl0\": host_queues places the host driver's queues"),
            std::string::npos)
      << o.output;
  // Tenants' queues are made by the driver they share, in the host memory nearest each SSD.
  const std::string tenants = ::testing::TempDir() + "cpu_memory_tenants.json";
  std::ofstream(tenants) << R"({"name": "t", "tenants": [{"name": "db", "scenario": {
      "kind": "microbenchmark", "path": "gds", "request_origin": "cpu", "rw": "randread",
      "bs": 4096, "threads": 8, "iodepth": 4, "ios": 400, "gpu": "gpu0", "ssds": ["ssd0"],
      "queues": 4, "queue_entries": 256, "host_queues": "dram0"}}]})";
  o = gpunvme("check --topology " + kCxlTopology + " --scenario " + tenants);
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("$.tenants[0].scenario.host_queues = \"dram0\""), std::string::npos)
      << o.output;
  EXPECT_NE(gpunvme("describe scenario").output.find("host_queues"), std::string::npos);
  const cli_test::Outcome cpu = gpunvme("describe cpu");
  EXPECT_NE(cpu.output.find("line_fill_buffers"), std::string::npos) << cpu.output;
  EXPECT_NE(gpunvme("describe cxl_memory").output.find("cpu_load_to_use_ns"), std::string::npos);
}

}  // namespace
}  // namespace gpunvme::host::testing
