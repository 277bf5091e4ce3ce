// Traces: the file is valid JSON in the Chrome trace format and displays
// correctly in Perfetto: complete slices of one track nest, async slices
// match, every slice sits in the process of the part of the machine it
// belongs to (GPU, host CPU, SSD), and a --trace-window keeps only events
// that overlap it. Runs of the three I/O paths are checked by a checker
// that is itself shown to fail on hand-written bad traces; the writer's slot
// tracks, window and the SSD's steps are checked against hand-worked cases.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sim/system/run/run.h"
#include "sim/system/trace/ssd_commands.h"
#include "sim/system/trace/trace_writer.h"
#include "tests/cli/run_cli.h"

namespace gpunvme {
namespace {

using cli_test::gpunvme;

// Named by process: test runs of other checkouts may share the directory.
std::string temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("gpunvme_trace_test_" + std::to_string(getpid()) + "_" + name))
      .string();
}

nlohmann::json read(const std::string& file) {
  std::ifstream in(file);
  return nlohmann::json::parse(in);  // throws unless the file is valid JSON
}

// ---------------------------------------------------------------------------
// The checker
// ---------------------------------------------------------------------------

// Slice names each kind of process may hold, written out from the stage
// lists the README documents (not taken from the code under test).
const std::set<std::string> kGpuSlices = {
    "end_to_end",      "cid_allocation",     "sqe_construction", "sq_tail_sync", "doorbell",
    "completion_wait", "completion_polling", "cq_head_sync",     "delivery"};
const std::set<std::string> kHostSlices = {"end_to_end",  "request_signal",  "copy_to_host",
                                           "cpu_submit",  "completion_wait", "cpu_completion",
                                           "copy_to_gpu", "delivery"};
const std::set<std::string> kSsdSlices = {"command",     "fetch_wait",  "processing",
                                          "media_read",  "dma_to_host", "dma_from_host",
                                          "media_write", "execution"};

// Trace timestamps (microseconds with six decimals) as whole picoseconds.
long long ps(const nlohmann::json& us) { return std::llround(us.get<double>() * 1e6); }

struct Window {
  long long start_ps;
  long long end_ps;
};

// Everything in `doc` that Perfetto would not display as recorded, or that
// breaks the trace's layout; empty when the trace is correct.
std::vector<std::string> trace_violations(const nlohmann::json& doc,
                                          std::optional<Window> window = std::nullopt) {
  std::vector<std::string> problems;
  std::map<long long, std::string> process_kind;  // pid -> gpu, ssd, host, pcie
  for (const auto& e : doc.at("traceEvents")) {
    if (e.at("ph") != "M" || e.at("name") != "process_name") continue;
    const std::string name = e.at("args").at("name").get<std::string>();
    std::string kind = "unknown";
    if (name.rfind("GPU ", 0) == 0) kind = "gpu";
    if (name.rfind("SSD ", 0) == 0) kind = "ssd";
    if (name.rfind("host ", 0) == 0) kind = "host";
    if (name == "pcie") kind = "pcie";
    process_kind[e.at("pid").get<long long>()] = kind;
  }
  struct Slice {
    long long start, end;
    std::string name;
  };
  std::map<std::pair<long long, long long>, std::vector<Slice>> tracks;
  std::map<std::tuple<long long, std::string, std::string>, std::vector<std::string>> open_async;
  for (const auto& e : doc.at("traceEvents")) {
    const std::string ph = e.at("ph").get<std::string>();
    if (ph == "M") continue;
    const long long pid = e.at("pid").get<long long>();
    const std::string name = e.at("name").get<std::string>();
    const long long ts = ps(e.at("ts"));
    const long long end = ph == "X" ? ts + ps(e.at("dur")) : ts;
    if (window && (end < window->start_ps || ts > window->end_ps)) {
      problems.push_back("outside the window: " + e.dump());
    }
    const std::string kind = process_kind.count(pid) ? process_kind[pid] : "unnamed";
    if (ph == "C") {
      if (kind != "pcie") problems.push_back("counter outside the pcie process: " + e.dump());
      continue;
    }
    const std::set<std::string>* allowed = kind == "gpu"    ? &kGpuSlices
                                           : kind == "ssd"  ? &kSsdSlices
                                           : kind == "host" ? &kHostSlices
                                                            : nullptr;
    if (allowed == nullptr || allowed->count(name) == 0 || e.value("cat", "") != kind) {
      problems.push_back("slice in the wrong process (" + kind + "): " + e.dump());
    }
    if (ph == "X") {
      tracks[{pid, e.at("tid").get<long long>()}].push_back({ts, end, name});
    } else if (ph == "b" || ph == "e") {
      auto& stack = open_async[{pid, e.value("cat", ""), e.at("id").dump()}];
      if (ph == "b") {
        stack.push_back(name);
      } else if (stack.empty() || stack.back() != name) {
        problems.push_back("async end without its begin: " + e.dump());
      } else {
        stack.pop_back();
      }
    } else {
      problems.push_back("unexpected phase: " + e.dump());
    }
  }
  for (const auto& [key, stack] : open_async) {
    for (const std::string& name : stack) problems.push_back("async begin never ended: " + name);
  }
  // Complete slices of one track must nest: sorted by start (the longer
  // first on a tie), each slice lies within every slice still open.
  for (auto& [track, slices] : tracks) {
    std::stable_sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
      return a.start != b.start ? a.start < b.start : a.end > b.end;
    });
    std::vector<const Slice*> open;
    for (const Slice& s : slices) {
      while (!open.empty() && open.back()->end <= s.start) open.pop_back();
      if (!open.empty() && s.end > open.back()->end) {
        problems.push_back("slices overlap without nesting on pid " + std::to_string(track.first) +
                           " tid " + std::to_string(track.second) + ": " + open.back()->name +
                           " and " + s.name);
      }
      open.push_back(&s);
    }
  }
  return problems;
}

nlohmann::json events(const std::string& json_events) {
  return nlohmann::json::parse(
      R"({"traceEvents":[{"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"GPU gpu0"}},)"
      R"({"name":"process_name","ph":"M","pid":2,"tid":0,"args":{"name":"SSD ssd0"}},)"
      R"({"name":"process_name","ph":"M","pid":3,"tid":0,"args":{"name":"pcie"}},)" +
      json_events + "]}");
}

TEST(TraceChecker, AcceptsNestedAndTouchingSlices) {
  // end_to_end [1, 5] holds doorbell [1, 2] and completion_wait [2, 5]; the
  // next I/O on the track starts as the first ends.
  const nlohmann::json doc =
      events(R"({"name":"end_to_end","cat":"gpu","ph":"X","pid":1,"tid":1,"ts":1,"dur":4},)"
             R"({"name":"doorbell","cat":"gpu","ph":"X","pid":1,"tid":1,"ts":1,"dur":1},)"
             R"({"name":"completion_wait","cat":"gpu","ph":"X","pid":1,"tid":1,"ts":2,"dur":3},)"
             R"({"name":"end_to_end","cat":"gpu","ph":"X","pid":1,"tid":1,"ts":5,"dur":2},)"
             R"({"name":"command","cat":"ssd","ph":"b","pid":2,"tid":1,"ts":2,"id":7},)"
             R"({"name":"fetch_wait","cat":"ssd","ph":"b","pid":2,"tid":1,"ts":2,"id":7},)"
             R"({"name":"fetch_wait","cat":"ssd","ph":"e","pid":2,"tid":1,"ts":3,"id":7},)"
             R"({"name":"command","cat":"ssd","ph":"e","pid":2,"tid":1,"ts":4,"id":7},)"
             R"({"name":"sw0->gpu0","ph":"C","pid":3,"ts":3,"args":{"value":0.5}})");
  EXPECT_TRUE(trace_violations(doc).empty());
  EXPECT_TRUE(trace_violations(doc, Window{2'000'000, 5'000'000}).empty());
}

TEST(TraceChecker, FailsOnOverlappingSlicesOfOneTrack) {
  // Two I/Os on one thread: [1, 4] and [2, 6] overlap without nesting.
  const nlohmann::json doc =
      events(R"({"name":"end_to_end","cat":"gpu","ph":"X","pid":1,"tid":1,"ts":1,"dur":3},)"
             R"({"name":"end_to_end","cat":"gpu","ph":"X","pid":1,"tid":1,"ts":2,"dur":4})");
  ASSERT_EQ(trace_violations(doc).size(), 1u);
  EXPECT_NE(trace_violations(doc)[0].find("overlap"), std::string::npos);
  // On two threads they are fine.
  const nlohmann::json apart =
      events(R"({"name":"end_to_end","cat":"gpu","ph":"X","pid":1,"tid":1,"ts":1,"dur":3},)"
             R"({"name":"end_to_end","cat":"gpu","ph":"X","pid":1,"tid":2,"ts":2,"dur":4})");
  EXPECT_TRUE(trace_violations(apart).empty());
}

TEST(TraceChecker, FailsOnUnmatchedAsyncSlices) {
  const nlohmann::json unended =
      events(R"({"name":"command","cat":"ssd","ph":"b","pid":2,"tid":1,"ts":2,"id":7})");
  EXPECT_EQ(trace_violations(unended).size(), 1u);
  const nlohmann::json unbegun =
      events(R"({"name":"command","cat":"ssd","ph":"e","pid":2,"tid":1,"ts":2,"id":7})");
  EXPECT_EQ(trace_violations(unbegun).size(), 1u);
  // An end under another id does not close the begin.
  const nlohmann::json crossed =
      events(R"({"name":"command","cat":"ssd","ph":"b","pid":2,"tid":1,"ts":2,"id":7},)"
             R"({"name":"command","cat":"ssd","ph":"e","pid":2,"tid":1,"ts":3,"id":8})");
  EXPECT_EQ(trace_violations(crossed).size(), 2u);
}

TEST(TraceChecker, FailsOnStagesInTheWrongProcess) {
  const nlohmann::json gpu_stage_on_ssd =
      events(R"({"name":"doorbell","cat":"gpu","ph":"X","pid":2,"tid":1,"ts":1,"dur":1})");
  EXPECT_EQ(trace_violations(gpu_stage_on_ssd).size(), 1u);
  const nlohmann::json ssd_stage_on_gpu =
      events(R"({"name":"media_read","cat":"ssd","ph":"X","pid":1,"tid":1,"ts":1,"dur":1})");
  EXPECT_EQ(trace_violations(ssd_stage_on_gpu).size(), 1u);
  const nlohmann::json counter_on_gpu =
      events(R"({"name":"sw0->gpu0","ph":"C","pid":1,"ts":3,"args":{"value":0.5}})");
  EXPECT_EQ(trace_violations(counter_on_gpu).size(), 1u);
}

TEST(TraceChecker, FailsOnEventsOutsideTheWindow) {
  // Window [10, 20] us: a slice ending at 9 us and a counter at 21 us lie
  // outside; a slice from 5 to 10 us touches it.
  const nlohmann::json doc =
      events(R"({"name":"end_to_end","cat":"gpu","ph":"X","pid":1,"tid":1,"ts":5,"dur":4},)"
             R"({"name":"end_to_end","cat":"gpu","ph":"X","pid":1,"tid":2,"ts":5,"dur":5},)"
             R"({"name":"sw0->gpu0","ph":"C","pid":3,"ts":21,"args":{"value":0.5}})");
  EXPECT_EQ(trace_violations(doc, Window{10'000'000, 20'000'000}).size(), 2u);
  EXPECT_TRUE(trace_violations(doc).empty());
}

// ---------------------------------------------------------------------------
// The writer
// ---------------------------------------------------------------------------

std::vector<nlohmann::json> slices_of(const nlohmann::json& doc) {
  std::vector<nlohmann::json> out;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "X") out.push_back(e);
  }
  return out;
}

TEST(TraceWriter, PutsEachIoOnTheSlotFreeLongest) {
  // I/Os in the order they finish: A [0, 10] us, B [5, 15], C [10, 20]
  // (slot 1 is free again at 10), then D [2, 4], which started before the
  // ends of both slots' last I/Os and so needs a third slot.
  const std::string file = temp("slots.json");
  constexpr Picoseconds us = 1'000'000;
  {
    trace::TraceWriter writer(file, 1'000'000);
    const trace::IoTag tag{"ssd0", 1, 0};
    writer.io(trace::Side::gpu, "gpu0", "end_to_end", 0, 10 * us, {}, tag);
    writer.io(trace::Side::gpu, "gpu0", "end_to_end", 5 * us, 15 * us, {}, tag);
    writer.io(trace::Side::gpu, "gpu0", "end_to_end", 10 * us, 20 * us, {}, tag);
    writer.io(trace::Side::gpu, "gpu0", "end_to_end", 2 * us, 4 * us, {}, tag);
    writer.finish({});
  }
  const nlohmann::json doc = read(file);
  const auto x = slices_of(doc);
  ASSERT_EQ(x.size(), 4u);
  EXPECT_EQ(x[0]["tid"], 1);
  EXPECT_EQ(x[1]["tid"], 2);
  EXPECT_EQ(x[2]["tid"], 1);
  EXPECT_EQ(x[3]["tid"], 3);
  EXPECT_TRUE(trace_violations(doc).empty());
}

TEST(TraceWriter, KeepsStagesInsideTheirIoAndInOrder) {
  // An I/O [0, 10] ps with stages a [0, 4], b [4, 4] (no duration: left
  // out), c recorded as [3, 6] (starts where a ended: [4, 6]) and d [6, 12]
  // (cut at the I/O's end: [6, 10]).
  const std::string file = temp("stages.json");
  {
    trace::TraceWriter writer(file, 1'000'000);
    writer.io(trace::Side::ssd, "ssd0", "command", 0, 10,
              {{"a", 0, 4}, {"b", 4, 4}, {"c", 3, 6}, {"d", 6, 12}}, {"ssd0", 2, 9});
    writer.finish({});
  }
  const auto x = slices_of(read(file));
  ASSERT_EQ(x.size(), 4u);
  EXPECT_EQ(x[0]["name"], "command");
  EXPECT_EQ(x[0]["args"]["cid"], 9);
  EXPECT_EQ(x[0]["args"]["queue"], 2);
  EXPECT_EQ(x[1]["name"], "a");
  EXPECT_EQ(x[2]["name"], "c");
  EXPECT_EQ(ps(x[2]["ts"]), 4);
  EXPECT_EQ(ps(x[2]["dur"]), 2);
  EXPECT_EQ(x[3]["name"], "d");
  EXPECT_EQ(ps(x[3]["ts"]) + ps(x[3]["dur"]), 10);
}

TEST(TraceWriter, KeepsOnlyEventsThatOverlapItsWindow) {
  // Window [12, 18] us: A [0, 10] is left out, B [5, 15] kept with its
  // stage [8, 15] but not [5, 8], C [18, 30] kept (it touches the end).
  const std::string file = temp("window.json");
  constexpr Picoseconds us = 1'000'000;
  {
    trace::TraceWriter writer(file, 1'000'000, trace::TraceWindow{12 * us, 18 * us});
    const trace::IoTag tag{"ssd0", 1, 0};
    writer.io(trace::Side::host, "cpu0", "end_to_end", 0, 10 * us, {{"cpu_submit", 0, 10 * us}},
              tag);
    writer.io(trace::Side::host, "cpu0", "end_to_end", 5 * us, 15 * us,
              {{"cpu_submit", 5 * us, 8 * us}, {"completion_wait", 8 * us, 15 * us}}, tag);
    writer.io(trace::Side::host, "cpu0", "end_to_end", 18 * us, 30 * us, {}, tag);
    writer.counter("pcie", "sw0->gpu0", 11 * us, 0.5);
    writer.counter("pcie", "sw0->gpu0", 13 * us, 0.25);
    writer.finish({});
  }
  const nlohmann::json doc = read(file);
  EXPECT_TRUE(trace_violations(doc, Window{12'000'000, 18'000'000}).empty());
  const auto x = slices_of(doc);
  ASSERT_EQ(x.size(), 3u);
  EXPECT_EQ(ps(x[0]["ts"]), 5'000'000);
  EXPECT_EQ(x[1]["name"], "completion_wait");
  EXPECT_EQ(ps(x[2]["ts"]), 18'000'000);
  std::size_t counters = 0;
  for (const auto& e : doc["traceEvents"]) counters += e["ph"] == "C" ? 1 : 0;
  EXPECT_EQ(counters, 1u);
  EXPECT_EQ(doc["otherData"]["window"]["start_us"], 12.0);
  EXPECT_EQ(doc["otherData"]["window"]["end_us"], 18.0);
}

TEST(TraceWriter, StreamsEventsUntilTheLimit) {
  const std::string file = temp("writer.json");
  {
    trace::TraceWriter writer(file, 70'000);
    for (int i = 0; i < 5000; ++i) {
      writer.io(trace::Side::ssd, "ssd0", "command", 1000 * i, 1000 * i + 500, {}, {"ssd0", 1, 7});
    }
    writer.finish({{"note", "test"}});
    EXPECT_TRUE(writer.truncated());
  }
  EXPECT_LE(std::filesystem::file_size(file), 70'000u);
  const nlohmann::json doc = read(file);
  EXPECT_TRUE(trace_violations(doc).empty());
  EXPECT_EQ(doc["otherData"]["note"], "test");
  // Microseconds, to the picosecond: the second command starts at 1000 ps
  // (after the process and slot names and the first command).
  EXPECT_EQ(doc["traceEvents"][3]["ts"].get<double>(), 0.001);
  EXPECT_EQ(doc["traceEvents"][3]["dur"].get<double>(), 0.0005);
}

TEST(TraceWindow, ParsesEitherSideOptional) {
  const trace::TraceWindow both = trace::parse_trace_window("100:250.5", "--trace-window");
  EXPECT_EQ(both.start, 100'000'000);
  EXPECT_EQ(both.end, 250'500'000);
  const trace::TraceWindow open_end = trace::parse_trace_window("100:", "--trace-window");
  EXPECT_EQ(open_end.start, 100'000'000);
  EXPECT_EQ(open_end.end, trace::TraceWindow{}.end);
  const trace::TraceWindow open_start = trace::parse_trace_window(":7", "--trace-window");
  EXPECT_EQ(open_start.start, 0);
  EXPECT_EQ(open_start.end, 7'000'000);
}

// ---------------------------------------------------------------------------
// The SSD's steps
// ---------------------------------------------------------------------------

TEST(SsdCommandStages, ReadWriteAndEarlyEnd) {
  using trace::ssd_command_stages;
  // A read rung at 1, fetched at 3, processed at 7, media and data pointer
  // done at 12, completion posted at 15.
  const auto read = ssd_command_stages({1, 5, 0x02, 1, 3, 7, 12, 15});
  ASSERT_EQ(read.size(), 4u);
  EXPECT_EQ(read[0].name, "fetch_wait");
  EXPECT_EQ(read[0].start, 1);
  EXPECT_EQ(read[0].end, 3);
  EXPECT_EQ(read[1].name, "processing");
  EXPECT_EQ(read[1].end, 7);
  EXPECT_EQ(read[2].name, "media_read");
  EXPECT_EQ(read[2].end, 12);
  EXPECT_EQ(read[3].name, "dma_to_host");
  EXPECT_EQ(read[3].start, 12);
  EXPECT_EQ(read[3].end, 15);
  // A write: its data in by 9, stored by 20.
  const auto write = ssd_command_stages({1, 5, 0x01, 1, 3, 7, 9, 20});
  ASSERT_EQ(write.size(), 4u);
  EXPECT_EQ(write[2].name, "dma_from_host");
  EXPECT_EQ(write[2].start, 7);
  EXPECT_EQ(write[2].end, 9);
  EXPECT_EQ(write[3].name, "media_write");
  EXPECT_EQ(write[3].end, 20);
  // A read that failed after processing (no data): execution to the end.
  const auto failed = ssd_command_stages({1, 5, 0x02, 1, 3, 7, std::nullopt, 30});
  ASSERT_EQ(failed.size(), 3u);
  EXPECT_EQ(failed[2].name, "execution");
  EXPECT_EQ(failed[2].start, 7);
  EXPECT_EQ(failed[2].end, 30);
}

// ---------------------------------------------------------------------------
// Runs of each I/O path, through the command line
// ---------------------------------------------------------------------------

std::map<std::string, std::size_t> count_by_process_and_name(const nlohmann::json& doc) {
  std::map<long long, std::string> names;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") {
      names[e["pid"].get<long long>()] = e["args"]["name"].get<std::string>();
    }
  }
  std::map<std::string, std::size_t> counts;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "X")
      ++counts[names[e["pid"].get<long long>()] + "/" + e["name"].get<std::string>()];
  }
  return counts;
}

nlohmann::json traced_run(const std::string& name, const std::string& args) {
  const std::string file = temp(name + ".json");
  const auto outcome = gpunvme("run " + args + " --trace " + file);
  EXPECT_EQ(outcome.code, 0) << outcome.output;
  return read(file);
}

TEST(TracedRuns, GpuInitiatedRunDisplaysCorrectly) {
  const nlohmann::json doc = traced_run("gpu", "--set scenario.ios=300");
  EXPECT_EQ(trace_violations(doc), std::vector<std::string>{});
  auto counts = count_by_process_and_name(doc);
  EXPECT_EQ(counts["GPU gpu0/end_to_end"], 300u);
  EXPECT_EQ(counts["GPU gpu0/doorbell"], 300u);
  EXPECT_EQ(counts["SSD ssd0/command"], 300u);
  EXPECT_EQ(counts["SSD ssd0/fetch_wait"], 300u);
  EXPECT_EQ(counts["SSD ssd0/media_read"], 300u);
  EXPECT_FALSE(doc["otherData"]["truncated"].get<bool>());
}

TEST(TracedRuns, BounceRunDisplaysCorrectly) {
  const nlohmann::json doc =
      traced_run("bounce", "--set scenario.path=bounce --set scenario.ios=300");
  EXPECT_EQ(trace_violations(doc), std::vector<std::string>{});
  auto counts = count_by_process_and_name(doc);
  EXPECT_EQ(counts["host cpu0/end_to_end"], 300u);
  EXPECT_EQ(counts["host cpu0/copy_to_gpu"], 300u);
  EXPECT_EQ(counts["SSD ssd0/command"], 300u);
}

TEST(TracedRuns, GdsWriteRunDisplaysCorrectly) {
  const nlohmann::json doc = traced_run(
      "gds", "--set scenario.path=gds --set scenario.ios=300 --set scenario.rw=randwrite");
  EXPECT_EQ(trace_violations(doc), std::vector<std::string>{});
  auto counts = count_by_process_and_name(doc);
  EXPECT_EQ(counts["host cpu0/end_to_end"], 300u);
  EXPECT_EQ(counts["SSD ssd0/command"], 300u);
  EXPECT_EQ(counts["SSD ssd0/dma_from_host"], 300u);
  EXPECT_EQ(counts["GPU gpu0/end_to_end"], 0u);
}

TEST(TracedRuns, AWindowKeepsOnlyItsEvents) {
  const nlohmann::json doc = traced_run(
      "window", "--set scenario.path=bounce --set scenario.ios=600 --trace-window 150:250");
  EXPECT_EQ(trace_violations(doc, Window{150'000'000, 250'000'000}), std::vector<std::string>{});
  auto counts = count_by_process_and_name(doc);
  EXPECT_GT(counts["host cpu0/end_to_end"], 0u);
  EXPECT_LT(counts["host cpu0/end_to_end"], 600u);
  EXPECT_GT(counts["SSD ssd0/command"], 0u);
}

TEST(TracedRuns, BadWindowsAreRefusedWithTheOption) {
  for (const std::string bad : {"abc", "5:3", "1:2:3", "-1:5", "5", "1e400:", "nan:"}) {
    const auto outcome = gpunvme("run --set scenario.ios=10 --trace " + temp("bad.json") +
                                 " --trace-window '" + bad + "'");
    EXPECT_EQ(outcome.code, 2) << bad << ": " << outcome.output;
    EXPECT_NE(outcome.output.find("error: --trace-window: trace_window = " + bad + ": "),
              std::string::npos)
        << outcome.output;
  }
  // A window without a trace is refused, not ignored.
  const auto alone = gpunvme("run --set scenario.ios=10 --trace-window 1:2");
  EXPECT_NE(alone.code, 0);
  EXPECT_NE(alone.output.find("--trace"), std::string::npos) << alone.output;
}

// ---------------------------------------------------------------------------
// Tracing leaves the run as it was
// ---------------------------------------------------------------------------

TEST(Trace, TracingDoesNotChangeTheResult) {
  const std::string file = temp("same.json");
  RunOptions options;
  options.trace_file = file;
  nlohmann::json traced = run(load_config("", "", {"scenario.ios=300"}, 1), options);
  nlohmann::json plain = run(load_config("", "", {"scenario.ios=300"}, 1));
  traced["summary"].erase("wall_time_s");
  plain["summary"].erase("wall_time_s");
  EXPECT_EQ(traced.dump(), plain.dump());
  // PCIe link counters sampled on the run's own events.
  std::set<std::string> counters;
  const nlohmann::json doc = read(file);
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "C") counters.insert(e["name"].get<std::string>());
  }
  EXPECT_TRUE(counters.count("sw0->gpu0"));
}

TEST(Trace, TheSizeLimitHoldsAndTruncationIsNoted) {
  const std::string file = temp("limited.json");
  RunOptions options;
  options.trace_file = file;
  options.trace_limit_bytes = 100'000;
  run(load_config("", "", {"scenario.ios=600"}, 1), options);
  EXPECT_LE(std::filesystem::file_size(file), 100'000u);
  const nlohmann::json doc = read(file);
  EXPECT_TRUE(trace_violations(doc).empty());
  EXPECT_TRUE(doc["otherData"]["truncated"].get<bool>());
  EXPECT_GT(doc["otherData"]["dropped_events"].get<std::uint64_t>(), 0u);
}

}  // namespace
}  // namespace gpunvme
