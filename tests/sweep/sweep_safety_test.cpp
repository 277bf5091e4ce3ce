// Sweeps under bad specs and kills: point counts that overflow or pass
// kMaxSweepPoints, range bounds beyond 64-bit integers and repeated values
// are ConfigErrors naming the field (exit code 2 from the CLI); points are
// computed from their index and agree with a plain cartesian expansion; any
// bytes given to parse_sweep_spec_text give a spec or a ConfigError; a sweep
// killed while it cleans its rows file loses no row; point processes die
// with a sweep killed by SIGKILL.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <thread>

#include "sim/frontend/sweep/sweep_runner.h"
#include "sim/kernel/params/config_error.h"

namespace gpunvme::sweep {
namespace {

std::string safety_temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("gpunvme_sweep_safety_" + name)).string();
}

SweepSpec spec_from_text(const std::string& text) { return parse_sweep_spec_text(text, "spec.json"); }

// The ConfigError a spec gives (its message is empty when there is none).
ConfigError error_of(const std::string& text) {
  try {
    spec_from_text(text);
  } catch (const ConfigError& e) {
    return e;
  }
  return ConfigError("", "", "", "no error");
}

// An inclusive integer range as spec text.
std::string range(const std::string& start, const std::string& stop, const std::string& step) {
  return R"({"start": )" + start + R"(, "stop": )" + stop + R"(, "step": )" + step + "}";
}

TEST(SweepCount, FourRangesOf65536AreRefusedNotWrappedToZero) {
  const std::string r = range("1", "65536", "1");
  const ConfigError e = error_of(R"({"sweep": {"scenario.a": )" + r + R"(, "scenario.b": )" + r +
                                 R"(, "scenario.c": )" + r + R"(, "scenario.d": )" + r + "}}");
  EXPECT_EQ(e.file(), "spec.json");
  EXPECT_EQ(e.path(), "$.sweep");
  EXPECT_EQ(e.value(), "more than 18446744073709551615 points (65536 x 65536 x 65536 x 65536)");
  EXPECT_NE(e.problem().find("at most 10000000 points"), std::string::npos) << e.problem();
}

TEST(SweepCount, TwoRangesOf100000AreRefusedWithTheirCount) {
  const std::string r = range("1", "100000", "1");
  const ConfigError e =
      error_of(R"({"sweep": {"scenario.a": )" + r + R"(, "scenario.b": )" + r + "}}");
  EXPECT_EQ(e.path(), "$.sweep");
  EXPECT_EQ(e.value(), "10000000000 points (100000 x 100000)");
}

TEST(SweepCount, TheCapIsAllowedAndItsPointsAreComputedFromTheirIndex) {
  const std::string big = range("1", "100000", "1");
  const SweepSpec at_cap = spec_from_text(R"({"sweep": {"scenario.a": )" + big + R"(, "scenario.b": )" +
                                   range("1", "100", "1") + "}}");
  const SweepPoints points(at_cap);
  ASSERT_EQ(points.size(), kMaxSweepPoints);
  EXPECT_EQ(points[0].key, R"({"scenario.a":1,"scenario.b":1})");
  EXPECT_EQ(points[101].key, R"({"scenario.a":2,"scenario.b":2})");
  EXPECT_EQ(points[kMaxSweepPoints - 1].key, R"({"scenario.a":100000,"scenario.b":100})");
  EXPECT_EQ(points[kMaxSweepPoints - 1].index, kMaxSweepPoints - 1);

  const ConfigError past = error_of(R"({"sweep": {"scenario.a": )" + big + R"(, "scenario.b": )" +
                                    range("1", "101", "1") + "}}");
  EXPECT_EQ(past.value(), "10100000 points (100000 x 101)");
}

TEST(SweepCount, ASpecAssembledInCodeIsHeldToTheCapToo) {
  SweepSpec spec;
  spec.file = "code";
  Group group;
  group.axes.push_back(Axis{"scenario.a", std::vector<nlohmann::json>(1 << 12, 1)});
  for (int i = 0; i < 6; ++i) spec.groups.push_back(group);  // 2^72 points
  EXPECT_THROW(point_count(spec), ConfigError);
}

// The command line turns each of these into `error: FILE: $.PATH = VALUE:
// problem` and exit code 2, running nothing.
TEST(SweepCount, TheCommandLineExitsWith2AndNamesTheSpec) {
  struct Case {
    std::string sweep;
    std::string message;
  };
  const std::string r = range("1", "65536", "1");
  const std::vector<Case> cases{
      {R"({"scenario.a": )" + r + R"(, "scenario.b": )" + r + R"(, "scenario.c": )" + r +
           R"(, "scenario.d": )" + r + "}",
       ": $.sweep = more than 18446744073709551615 points (65536 x 65536 x 65536 x 65536): a "
       "sweep has at most 10000000 points"},
      {R"({"scenario.threads": [32, 64, 32]})", ": $.sweep.scenario.threads[2] = 32: repeats "},
      {R"({"seed": {"start": 10000000000000000000, "stop": 10000000000000000002, "step": 1}})",
       ": $.sweep.seed.start = 10000000000000000000: an integer range's bounds are 64-bit "
       "signed integers"},
  };
  for (const Case& c : cases) {
    const std::string spec = safety_temp("cli.json");
    std::ofstream(spec) << R"({"set": ["scenario.ios=100"], "sweep": )" + c.sweep + "}";
    const std::string prefix = safety_temp("cli");
    std::filesystem::remove(prefix + ".jsonl");
    const std::string command =
        std::string(GPUNVME_CLI) + " sweep " + spec + " --jobs 1 --out " + prefix + " 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string output;
    char buffer[4096];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
    const int status = pclose(pipe);
    ASSERT_TRUE(WIFEXITED(status)) << output;
    EXPECT_EQ(WEXITSTATUS(status), 2) << output;
    EXPECT_NE(output.find("error: " + spec + c.message), std::string::npos) << output;
    EXPECT_FALSE(std::filesystem::exists(prefix + ".jsonl")) << "nothing runs";
  }
}

TEST(SweepRange, BoundsBeyondInt64AreErrorsOfThatBound) {
  const ConfigError start =
      error_of(R"({"sweep": {"scenario.threads": )" +
               range("10000000000000000000", "10000000000000000002", "1") + "}}");
  EXPECT_EQ(start.path(), "$.sweep.scenario.threads.start");
  EXPECT_EQ(start.value(), "10000000000000000000");
  EXPECT_EQ(
      error_of(R"({"sweep": {"seed": )" + range("1", "18446744073709551615", "1") + "}}").path(),
      "$.sweep.seed.stop");
  EXPECT_EQ(error_of(R"({"sweep": {"scenario.threads": {"start": 1, "stop": 4, )"
                     R"("factor": 9223372036854775808}}})")
                .path(),
            "$.sweep.scenario.threads.factor");
}

TEST(SweepRange, IntegerRangesAreExactAtEveryMagnitude) {
  auto values_of = [](const std::string& r) {
    return spec_from_text(R"({"sweep": {"scenario.a": )" + r + "}}").groups.at(0).axes.at(0).values;
  };
  // Past 2^53 a double cannot tell these apart.
  EXPECT_EQ(
      values_of(range("9223372036854775805", "9223372036854775807", "1")),
      (std::vector<nlohmann::json>{9223372036854775805, 9223372036854775806, 9223372036854775807}));
  // stop - start is 2^64 - 1, more than an int64 holds.
  EXPECT_EQ(values_of(range("-9223372036854775808", "9223372036854775807", "4611686018427387904")),
            (std::vector<nlohmann::json>{std::numeric_limits<std::int64_t>::min(),
                                         -4611686018427387904, 0, 4611686018427387904}));
  EXPECT_EQ(
      values_of(range("9223372036854775807", "9223372036854775800", "-3")),
      (std::vector<nlohmann::json>{9223372036854775807, 9223372036854775804, 9223372036854775801}));
  // A geometric range up to INT64_MAX stops at the last power below it.
  const auto powers = values_of(R"({"start": 1, "stop": 9223372036854775807, "factor": 2})");
  ASSERT_EQ(powers.size(), 63u);
  EXPECT_EQ(powers.back(), 4611686018427387904);
  // Values as the double expansion gave them where doubles are exact.
  EXPECT_EQ(values_of(range("1", "10", "4")), (std::vector<nlohmann::json>{1, 5, 9}));
  EXPECT_EQ(values_of(range("10", "1", "-4")), (std::vector<nlohmann::json>{10, 6, 2}));
  EXPECT_EQ(values_of(R"({"start": 3, "stop": 100, "factor": 3})"),
            (std::vector<nlohmann::json>{3, 9, 27, 81}));
}

TEST(SweepRange, NonFiniteAndOversizedFloatRangesAreErrors) {
  // 1e400 is beyond a double: the parser refuses it or reads infinity.
  EXPECT_NE(
      error_of(R"({"sweep": {"scenario.a": {"start": 1e400, "stop": 1, "step": -1.5}}})").problem(),
      "no error");
  EXPECT_EQ(error_of(R"({"sweep": {"scenario.a": {"start": -1.7e308, "stop": 1.7e308, )"
                     R"("step": 1.5}}})")
                .path(),
            "$.sweep.scenario.a");
}

TEST(SweepRepeats, ARepeatedListValueIsNamed) {
  const ConfigError e = error_of(R"({"sweep": {"scenario.threads": [32, 64, 32]}})");
  EXPECT_EQ(e.path(), "$.sweep.scenario.threads[2]");
  EXPECT_EQ(e.value(), "32");
  EXPECT_NE(e.problem().find("repeats $.sweep.scenario.threads[0]"), std::string::npos)
      << e.problem();
  // The same number written two ways is the same value.
  EXPECT_EQ(error_of(R"({"sweep": {"scenario.bs": [4096, 4096.0]}})").path(),
            "$.sweep.scenario.bs[1]");
  EXPECT_EQ(error_of(R"({"sweep": {"scenario.path": ["gds", "bounce", "gds"]}})").value(),
            "\"gds\"");
  EXPECT_EQ(error_of(R"({"sweep": {"zip": [{"seed": [1, 1]}]}})").path(), "$.sweep.zip[0].seed[1]");
}

TEST(SweepRepeats, AZipGroupRepeatsOnlyWhenTheWholeCombinationDoes) {
  EXPECT_EQ(spec_from_text(R"({"sweep": {"zip": [{"scenario.bs": [4096, 4096],
                                           "scenario.queues": [8, 16]}]}})")
                .groups.at(0)
                .size(),
            2u);
  const ConfigError e = error_of(R"({"sweep": {"zip": [{"scenario.bs": [4096, 8192, 4096],
                                                        "scenario.queues": [8, 16, 8]}]}})");
  EXPECT_EQ(e.path(), "$.sweep.zip[0]");
  EXPECT_EQ(e.value(), R"({"scenario.bs":4096,"scenario.queues":8})");
  EXPECT_NE(e.problem().find("positions 0 and 2"), std::string::npos) << e.problem();
}

TEST(SweepRepeats, ARangeThatRepeatsAValueThroughRoundingIsNamed) {
  // Around 1e16 doubles are 2 apart: a step of 0.5 gives each value twice.
  const ConfigError e = error_of(
      R"({"sweep": {"scenario.a": {"start": 1e16, "stop": 1.0000000000000004e16, "step": 0.5}}})");
  EXPECT_EQ(e.path(), "$.sweep.scenario.a");
  EXPECT_NE(e.problem().find("the range gives 1e+16 at positions 0 and 1"), std::string::npos)
      << e.problem();
}

// A plain expansion written apart from SweepPoints: the odometer over the
// group positions, last group fastest, each point's params, overrides and
// seed as the runner needs them.
std::vector<SweepPoint> odometer_expansion(const SweepSpec& spec) {
  std::vector<SweepPoint> points;
  std::vector<std::size_t> position(spec.groups.size(), 0);
  for (std::size_t index = 0;; ++index) {
    SweepPoint p;
    p.index = index;
    p.seed = spec.seed;
    p.overrides = spec.base_overrides;
    p.params = nlohmann::ordered_json::object();
    for (std::size_t g = 0; g < spec.groups.size(); ++g) {
      for (const Axis& axis : spec.groups[g].axes) {
        const nlohmann::json& value = axis.values.at(position[g]);
        p.params[axis.path] = value;
        if (axis.path == "seed") {
          p.seed = value.get<std::uint64_t>();
        } else {
          p.overrides.push_back(axis.path + "=" + value.dump());
        }
      }
    }
    p.key = p.params.dump();
    points.push_back(std::move(p));
    std::size_t g = spec.groups.size();
    while (g > 0 && ++position[g - 1] == spec.groups[g - 1].size()) position[--g] = 0;
    if (g == 0) return points;
  }
}

void expect_same_points(const SweepSpec& spec, const std::string& name) {
  const std::vector<SweepPoint> expected = odometer_expansion(spec);
  const SweepPoints lazy(spec);
  const std::vector<SweepPoint> eager = expand(spec);
  ASSERT_EQ(lazy.size(), expected.size()) << name;
  ASSERT_EQ(eager.size(), expected.size()) << name;
  const std::string id = spec_id(spec);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const SweepPoint point = lazy[i];
    EXPECT_EQ(point.index, expected[i].index) << name;
    EXPECT_EQ(point.key, expected[i].key) << name;
    EXPECT_EQ(point.params.dump(), expected[i].params.dump()) << name;
    EXPECT_EQ(point.overrides, expected[i].overrides) << name;
    EXPECT_EQ(point.seed, expected[i].seed) << name;
    EXPECT_EQ(point.spec_id, id) << name;
    EXPECT_EQ(eager[i].key, point.key) << name;
    EXPECT_EQ(eager[i].overrides, point.overrides) << name;
  }
}

TEST(SweepPointsTest, AgreeWithAPlainExpansionOnTheShippedSpecs) {
  std::size_t specs = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(GPUNVME_SOURCE_DIR) + "/scenarios/sweeps")) {
    if (entry.path().extension() != ".json") continue;
    expect_same_points(load_sweep_spec(entry.path().string()), entry.path().string());
    ++specs;
  }
  EXPECT_GE(specs, 1u);
  // The README's example: lists, geometric and arithmetic ranges, a zip.
  expect_same_points(spec_from_text(R"({"seed": 1, "set": ["scenario.ios=4000"], "sweep": {
      "scenario.path": ["gpu_initiated", "gds", "bounce"],
      "topology.nodes.cpu0.cores": {"start": 1, "stop": 8, "factor": 2},
      "scenario.threads": {"start": 256, "stop": 1024, "step": 256},
      "zip": [{"scenario.bs": [4096, 8192], "scenario.queues": [8, 16]}]}})"),
                     "README");
  expect_same_points(spec_from_text(R"({"sweep": {"seed": {"start": 3, "stop": 9, "step": 3},
      "scenario.span_gib": {"start": 0.5, "stop": 1.5, "step": 0.25}}})"),
                     "seeds and fractions");
  expect_same_points(spec_from_text(R"({"sweep": {}})"), "no groups");
}

// Whatever the bytes, parsing a spec and counting its points gives a spec
// or a ConfigError: never another exception, a crash or a hang.
void expect_spec_or_config_error(const std::string& bytes) {
  try {
    const SweepSpec spec = parse_sweep_spec_text(bytes, "fuzz.json");
    EXPECT_LE(point_count(spec), kMaxSweepPoints);
  } catch (const ConfigError&) {
  }
}

TEST(SweepFuzzEntry, HostileDocumentsGiveConfigErrors) {
  const std::string deep_array = std::string(200000, '[') + std::string(200000, ']');
  std::string deep_object;
  for (int i = 0; i < 100000; ++i) deep_object += R"({"a":)";
  deep_object += "1" + std::string(100000, '}');
  for (const std::string& text :
       {std::string(),
        std::string("\xff\xfe"),
        std::string("null"),
        std::string("[]"),
        std::string(R"({"sweep": []})"),
        std::string(R"({"sweep": {"zip": {}}})"),
        std::string(R"({"sweep": {"zip": [[]]}})"),
        std::string(R"({"sweep": {"zip": [{}]}})"),
        std::string(R"({"sweep": {"seed": [-1]}})"),
        std::string(R"({"seed": -1, "sweep": {}})"),
        std::string(R"({"seed": 18446744073709551615, "sweep": {}})"),
        std::string(R"({"sweep": {"seed": [1.5]}})"),
        std::string(R"({"sweep": {"scenario.a": {"start": "1", "stop": 2, "step": 1}}})"),
        std::string(R"({"sweep": {"scenario.a": {"start": 1, "stop": 2}}})"),
        std::string(R"({"sweep": {"scenario.a": {"start": 1, "stop": 2, "step": 1e-300}}})"),
        std::string(R"({"sweep": {"scenario.a": {"start": 1e-300, "stop": 1e300, "factor": )"
                    R"(1.0000001}}})"),
        std::string(R"({"sweep": {"scenario.a": {"start": -9223372036854775808, "stop": )"
                    R"(9223372036854775807, "step": 1}}})"),
        std::string(R"({"set": [1], "sweep": {}})"),
        std::string(R"({"metrics": {}, "sweep": {}})"),
        std::string(R"({"topology": 1, "sweep": {}})"),
        "{\"sweep\": {\"scenario.a\": " + deep_array + "}}",
        "{\"sweep\": " + deep_object + "}",
        "{\"doc\": " + deep_array + ", \"sweep\": {}}"}) {
    expect_spec_or_config_error(text);
  }
}

TEST(SweepFuzzEntry, MutatedSpecsGiveASpecOrAConfigError) {
  const std::string seed_text = R"({"topology": "../../configs/topologies/default.json",
    "seed": 1, "set": ["scenario.ios=4000"],
    "sweep": {"scenario.path": ["gpu_initiated", "gds", "bounce"],
      "topology.nodes.cpu0.cores": {"start": 1, "stop": 8, "factor": 2},
      "scenario.threads": {"start": 256, "stop": 1024, "step": 256},
      "seed": [1, 2], "zip": [{"scenario.bs": [4096, 8192], "scenario.queues": [8, 16]}]},
    "metrics": ["cpu.max_utilization"]})";
  const std::string alphabet = "{}[]\",:0123456789-+.eE \\stzfn9";
  std::uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&state](std::uint64_t bound) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::size_t>((state >> 33) % bound);
  };
  std::size_t parsed = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string text = seed_text;
    for (std::size_t edits = 1 + next(4); edits > 0; --edits) {
      const std::size_t at = next(text.size());
      switch (next(3)) {
        case 0: text[at] = alphabet[next(alphabet.size())]; break;
        case 1: text.insert(at, 1, alphabet[next(alphabet.size())]); break;
        default: text.erase(at, 1 + next(8)); break;
      }
      if (text.empty()) text = "{";
    }
    try {
      const SweepSpec spec = parse_sweep_spec_text(text, "fuzz.json");
      EXPECT_LE(point_count(spec), kMaxSweepPoints);
      ++parsed;
    } catch (const ConfigError&) {
    }
  }
  EXPECT_GT(parsed, 0u) << "some mutations leave a valid spec";
}

// Rows of the sweep that only failed_row() fills: `count` points over
// "seed", each row padded to about 700 bytes.
std::string write_done_rows(const std::string& spec_file, const std::string& prefix,
                            std::size_t count) {
  std::ofstream(spec_file) << R"({"set": ["scenario.ios=100"], "sweep": {"seed": )"
                           << range("1", std::to_string(count), "1") << "}}";
  const SweepSpec spec = load_sweep_spec(spec_file);
  const SweepPoints points(spec);
  std::ofstream out(prefix + ".jsonl", std::ios::trunc);
  for (std::size_t i = 0; i < points.size(); ++i) {
    out << failed_row(spec, points[i], std::string(300, 'x')).dump() << "\n";
  }
  return spec_file;
}

std::size_t row_count(const std::string& jsonl) { return read_rows(jsonl).size(); }

// Runs `gpunvme sweep` in a process group of its own; returns its pid.
pid_t start_sweep(const std::string& spec, const std::string& prefix,
                  const std::string& jobs = "1") {
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    if (freopen((prefix + ".log").c_str(), "w", stdout) == nullptr) _exit(126);
    execl(GPUNVME_CLI, GPUNVME_CLI, "sweep", spec.c_str(), "--out", prefix.c_str(), "--jobs",
          jobs.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);
  return pid;
}

// A sweep whose rows are all done but whose file ends in a line cut short
// must replace the file to drop that line. It is killed with SIGKILL at
// moments spread over that work, again and again: every kill must leave
// every finished row in the file. (Truncating the file and writing it again
// in place loses the rows not yet rewritten when the kill comes.)
TEST(SweepCrashSafety, KillsWhileTheRowsFileIsCleanedLoseNoRow) {
  const std::string prefix = safety_temp("kills");
  const std::size_t rows = 3000;
  const std::string spec = write_done_rows(safety_temp("kills.json"), prefix, rows);
  const std::string cut_line = R"({"index": 7, "key": "{\"seed)";
  ASSERT_EQ(row_count(prefix + ".jsonl"), rows);

  // How long a whole run takes (read, clean, nothing to run, CSV).
  std::ofstream(prefix + ".jsonl", std::ios::app) << cut_line;
  const auto begin = std::chrono::steady_clock::now();
  const pid_t first = start_sweep(spec, prefix);
  int status = 0;
  waitpid(first, &status, 0);
  const auto whole = std::chrono::steady_clock::now() - begin;
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_EQ(row_count(prefix + ".jsonl"), rows);

  // 20 kills, fewer where a run is slow (under the sanitizers): the kills'
  // waits add up to about 0.55 x kills x whole, kept near 15 s; never fewer
  // than 8.
  const double whole_s = std::chrono::duration<double>(whole).count();
  const int kKills = std::clamp(static_cast<int>(15.0 / (0.55 * whole_s)), 8, 20);
  int lossy = 0;
  for (int k = 0; k < kKills; ++k) {
    std::ofstream(prefix + ".jsonl", std::ios::app) << cut_line;
    const pid_t pid = start_sweep(spec, prefix);
    std::this_thread::sleep_for(whole * (k + 1) / kKills);
    kill(-pid, SIGKILL);
    waitpid(pid, &status, 0);
    const std::size_t left = row_count(prefix + ".jsonl");
    if (left != rows) ++lossy;
    EXPECT_EQ(left, rows) << "kill " << k << " after "
                          << std::chrono::duration<double>(whole * (k + 1) / kKills).count()
                          << " s";
    if (left != rows) write_done_rows(spec, prefix, rows);  // start the next kill whole
  }
  EXPECT_EQ(lossy, 0);
  for (const char* suffix : {".jsonl", ".jsonl.tmp", ".csv", ".csv.tmp"}) {
    std::filesystem::remove(prefix + suffix);  // a few megabytes
  }
}

TEST(SweepCrashSafety, AStaleTemporaryFileIsIgnoredAndRemoved) {
  const std::string prefix = safety_temp("stale");
  const std::string spec = write_done_rows(safety_temp("stale.json"), prefix, 20);
  // Left by a sweep killed while writing the cleaned file: part of a row.
  std::ofstream(prefix + ".jsonl.tmp") << R"({"index": 0, "key": "{\"seed\":1}", "spec)";
  std::ostringstream log;
  const RunnerReport report = run_sweep(load_sweep_spec(spec), {1, 0, prefix, false}, log);
  EXPECT_EQ(report.skipped, 20u);
  EXPECT_EQ(report.ran, 0u);
  EXPECT_EQ(row_count(prefix + ".jsonl"), 20u);
  EXPECT_FALSE(std::filesystem::exists(prefix + ".jsonl.tmp"));
  EXPECT_FALSE(std::filesystem::exists(prefix + ".csv.tmp"));
}

TEST(SweepCrashSafety, ACutLastLineIsDroppedAndTheNextRowStartsOnALineOfItsOwn) {
  const std::string prefix = safety_temp("cut");
  const std::string spec_file = safety_temp("cut.json");
  std::ofstream(spec_file) << R"({"set": ["scenario.ios=100"], "sweep": {"seed": [1, 2, 3]}})";
  std::filesystem::remove(prefix + ".jsonl");
  std::ostringstream log;
  EXPECT_EQ(run_sweep(load_sweep_spec(spec_file), {1, 2, prefix, false}, log).ran, 2u);
  // The last row lost its newline and part of its text, then the kill came.
  std::string text;
  {
    std::ifstream in(prefix + ".jsonl");
    std::stringstream buffer;
    buffer << in.rdbuf();
    text = buffer.str();
  }
  std::ofstream(prefix + ".jsonl", std::ios::trunc) << text.substr(0, text.size() - 10);
  const RunnerReport rerun = run_sweep(load_sweep_spec(spec_file), {1, 0, prefix, false}, log);
  EXPECT_EQ(rerun.skipped, 1u);
  EXPECT_EQ(rerun.ran, 2u);
  EXPECT_EQ(row_count(prefix + ".jsonl"), 3u);
  std::ifstream in(prefix + ".jsonl");
  std::string line;
  std::size_t lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    EXPECT_TRUE(nlohmann::json::accept(line)) << line;
  }
  EXPECT_EQ(lines, 3u);
}

TEST(SweepCrashSafety, AWholeLastRowWithoutItsNewlineIsKeptOnALineOfItsOwn) {
  const std::string prefix = safety_temp("unterminated");
  const std::string spec_file = safety_temp("unterminated.json");
  std::ofstream(spec_file) << R"({"set": ["scenario.ios=100"], "sweep": {"seed": [1, 2, 3]}})";
  std::filesystem::remove(prefix + ".jsonl");
  std::ostringstream log;
  EXPECT_EQ(run_sweep(load_sweep_spec(spec_file), {1, 2, prefix, false}, log).ran, 2u);
  std::string text;
  {
    std::ifstream in(prefix + ".jsonl");
    std::stringstream buffer;
    buffer << in.rdbuf();
    text = buffer.str();
  }
  ASSERT_EQ(text.back(), '\n');
  std::ofstream(prefix + ".jsonl", std::ios::trunc) << text.substr(0, text.size() - 1);
  const RunnerReport rerun = run_sweep(load_sweep_spec(spec_file), {1, 0, prefix, false}, log);
  EXPECT_EQ(rerun.skipped, 2u);
  EXPECT_EQ(rerun.ran, 1u);
  EXPECT_EQ(row_count(prefix + ".jsonl"), 3u);
}

// The pids whose parent is `parent` (from /proc/PID/stat).
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> children;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return children;
  while (const dirent* entry = readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (pid <= 0) continue;
    std::ifstream stat("/proc/" + std::string(entry->d_name) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(text.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    fields >> state >> ppid;
    if (ppid == parent) children.push_back(pid);
  }
  closedir(proc);
  return children;
}

// SIGKILL to the sweep alone (not its process group): its point processes,
// each with half a minute of simulation ahead, must end within seconds.
// This test process adopts them (a child subreaper) to see them end.
TEST(SweepCrashSafety, PointProcessesDieWithASweepKilledBySigkill) {
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  const std::string prefix = safety_temp("orphans");
  std::filesystem::remove(prefix + ".jsonl");
  const std::string spec = safety_temp("orphans.json");
  std::ofstream(spec) << R"({"set": ["scenario.ios=5000000"], "sweep": {"seed": [1, 2]}})";
  const pid_t sweep_pid = start_sweep(spec, prefix, "2");
  std::vector<pid_t> points;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (points.size() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    points = children_of(sweep_pid);
  }
  ASSERT_EQ(points.size(), 2u);
  kill(sweep_pid, SIGKILL);
  int status = 0;
  waitpid(sweep_pid, &status, 0);
  // Orphans come to this process; each must be gone within 5 seconds.
  const auto grace = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (const pid_t point : points) {
    pid_t reaped = 0;
    while ((reaped = waitpid(point, &status, WNOHANG)) == 0 &&
           std::chrono::steady_clock::now() < grace) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_EQ(reaped, point) << "point process " << point << " outlived the sweep";
    if (reaped == point) {
      EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    } else {
      kill(point, SIGKILL);
      waitpid(point, &status, 0);
    }
  }
  prctl(PR_SET_CHILD_SUBREAPER, 0);
}

}  // namespace
}  // namespace gpunvme::sweep
