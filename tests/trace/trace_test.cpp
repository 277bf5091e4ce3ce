// Traces: the file is valid JSON in the Chrome trace format (traceEvents of
// complete "X" spans and "C" counters, with metadata naming the processes),
// stays within its size limit, and tracing leaves the result unchanged.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "sim/system/run/run.h"
#include "sim/system/trace/trace_writer.h"

namespace gpunvme {
namespace {

std::string temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("gpunvme_trace_test_" + name)).string();
}

nlohmann::json read(const std::string& file) {
  std::ifstream in(file);
  return nlohmann::json::parse(in);  // throws unless the file is valid JSON
}

void expect_chrome_format(const nlohmann::json& doc) {
  ASSERT_TRUE(doc.contains("traceEvents"));
  ASSERT_TRUE(doc["traceEvents"].is_array());
  for (const auto& e : doc["traceEvents"]) {
    const std::string ph = e.at("ph").get<std::string>();
    ASSERT_TRUE(ph == "X" || ph == "C" || ph == "M") << e;
    EXPECT_TRUE(e.at("pid").is_number_integer());
    EXPECT_TRUE(e.at("name").is_string());
    if (ph == "X") {
      EXPECT_TRUE(e.at("tid").is_number_integer());
      EXPECT_GE(e.at("ts").get<double>(), 0.0);
      EXPECT_GE(e.at("dur").get<double>(), 0.0);
    }
    if (ph == "C") {
      EXPECT_TRUE(e.at("args").at("value").is_number());
    }
  }
}

TEST(Trace, GpuRunWritesStageSpansAndLinkCounters) {
  const std::string file = temp("gpu.json");
  RunOptions options;
  options.trace_file = file;
  nlohmann::json traced = run(load_config("", "", {"scenario.ios=300"}, 1), options);
  const nlohmann::json doc = read(file);
  expect_chrome_format(doc);
  std::set<std::string> spans, counters, processes;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "X") spans.insert(e["name"].get<std::string>());
    if (e["ph"] == "C") counters.insert(e["name"].get<std::string>());
    if (e["ph"] == "M" && e["name"] == "process_name")
      processes.insert(e["args"]["name"].get<std::string>());
  }
  for (const char* stage : {"cid_allocation", "doorbell", "completion_wait", "delivery"}) {
    EXPECT_TRUE(spans.count(stage)) << stage;
  }
  EXPECT_TRUE(counters.count("sw0->gpu0"));
  EXPECT_TRUE(processes.count("ssd0"));
  EXPECT_TRUE(processes.count("pcie"));
  EXPECT_FALSE(doc["otherData"]["truncated"].get<bool>());
  // 300 I/Os x 8 stage spans.
  std::size_t x = 0;
  for (const auto& e : doc["traceEvents"]) x += e["ph"] == "X" ? 1 : 0;
  EXPECT_EQ(x, 300u * 8);
  // The trace does not change the run.
  nlohmann::json plain = run(load_config("", "", {"scenario.ios=300"}, 1));
  traced["summary"].erase("wall_time_s");
  plain["summary"].erase("wall_time_s");
  EXPECT_EQ(traced.dump(), plain.dump());
}

TEST(Trace, CpuPathSpansNameTheHostSteps) {
  const std::string file = temp("gds.json");
  RunOptions options;
  options.trace_file = file;
  run(load_config("", "", {"scenario.ios=200", "scenario.path=bounce"}, 1), options);
  const nlohmann::json doc = read(file);
  expect_chrome_format(doc);
  std::set<std::string> spans;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "X") spans.insert(e["name"].get<std::string>());
  }
  for (const char* stage : {"request_signal", "cpu_submit", "completion_wait", "copy_to_gpu"}) {
    EXPECT_TRUE(spans.count(stage)) << stage;
  }
}

TEST(Trace, TheSizeLimitHoldsAndTruncationIsNoted) {
  const std::string file = temp("limited.json");
  RunOptions options;
  options.trace_file = file;
  options.trace_limit_bytes = 100'000;
  run(load_config("", "", {"scenario.ios=600"}, 1), options);
  EXPECT_LE(std::filesystem::file_size(file), 100'000u);
  const nlohmann::json doc = read(file);
  expect_chrome_format(doc);
  EXPECT_TRUE(doc["otherData"]["truncated"].get<bool>());
  EXPECT_GT(doc["otherData"]["dropped_events"].get<std::uint64_t>(), 0u);
}

TEST(TraceWriter, StreamsEventsUntilTheLimit) {
  const std::string file = temp("writer.json");
  {
    trace::TraceWriter writer(file, 70'000);
    for (int i = 0; i < 5000; ++i) writer.span("ssd0", 1, "stage", 1000 * i, 500, 7);
    writer.finish({{"note", "test"}});
    EXPECT_TRUE(writer.truncated());
  }
  EXPECT_LE(std::filesystem::file_size(file), 70'000u);
  const nlohmann::json doc = read(file);
  expect_chrome_format(doc);
  EXPECT_EQ(doc["otherData"]["note"], "test");
  // Microseconds, to the picosecond: the second span starts at 1000 ps.
  EXPECT_EQ(doc["traceEvents"][3]["ts"].get<double>(), 0.001);
  EXPECT_EQ(doc["traceEvents"][3]["dur"].get<double>(), 0.0005);
}

}  // namespace
}  // namespace gpunvme
