// Benchmark of the whole simulator's speed: how many simulated I/Os it completes per wall-clock
// second, how many timed events each I/O costs, how much memory a run peaks at, and how the cost
// scales with the I/O count, the queue count and the number of sweep processes. It is not a test:
// it prints figures (a table, then one JSON document) so any change can be compared before and
// after on the same machine.
//
//   sim_speed_bench [--ios N] [--cases LIST] [--fast] [--out FILE]
//
// --ios N      I/Os of the reference case (default 10,000,000, the reference scenario's own
//              count); the scaling and strategy cases run N/10.
// --cases LIST comma-separated subset of: reference, linear, queues, strategies, sweep,
//              run_length (default: all but run_length).
// --fast       after each exact-mode run of the reference and strategy cases, the same case in
//              fast mode (scenario fidelity = fast), back to back; its row and JSON entry say
//              "fast".
// The run_length case (not in the default list: exact mode at its size takes hours) runs the
// reference and each strategy case at N I/Os in fast mode only, where run-length control
// stops the run once its steady state has converged (README, Fast mode), and prints the I/Os
// it answered for per second of wall time beside the I/Os it issued and those of them in flight
// at the stop (not simulated to completion).
// --out FILE   also write the JSON document to FILE.
//
// Each case runs in a child process of its own, so its peak resident memory (wait4's ru_maxrss)
// is that run's alone, and a case that fails does not stop the others.
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sim/kernel/simulation.h"
#include "sim/system/run/run.h"

#ifndef GPUNVME_CLI
#error "GPUNVME_CLI must name the gpunvme program (set by tests/CMakeLists.txt)"
#endif

namespace {

using nlohmann::json;

const std::string kTopology =
    std::string(GPUNVME_SOURCE_DIR) + "/configs/topologies/four-gen4-ssds.json";
const std::string kScenario = std::string(GPUNVME_SOURCE_DIR) + "/scenarios/speed/reference.json";

// 132 SMs x 2048 resident threads of an H100 (seed 003), the "all threads submit" case.
constexpr std::uint64_t kWholeGpuThreads = 132ull * 2048ull;
// per_warp_queue: one warp per queue of the reference's 4 SSDs x 128 queues.
constexpr std::uint64_t kOwnedQueueThreads = 4ull * 128ull * 32ull;

struct Case {
  std::string name;
  std::vector<std::string> overrides;
};

struct Measured {
  std::string name;
  bool ok = false;
  std::string error;
  std::uint64_t ios = 0;
  std::uint64_t events = 0;
  json events_by_kind;                  // summary.events_by_kind
  std::uint64_t warp_instructions = 0;  // over every GPU
  double wall_s = 0;
  double simulated_ns = 0;
  std::uint64_t peak_rss_kb = 0;
  std::uint64_t requested_ios = 0;  // the scenario's count, which fast mode may answer for
  json run_length;                  // summary.run_length of a fast run
  double iops = 0;

  double ios_per_s() const { return wall_s > 0 ? ios / wall_s : 0; }
  // The kernel's and the models' cost per event, apart from how many events
  // the simulated system needs per I/O.
  double events_per_s() const { return wall_s > 0 ? events / wall_s : 0; }
  double events_per_io() const { return ios > 0 ? double(events) / ios : 0; }
  double per_io(std::uint64_t count) const { return ios > 0 ? double(count) / ios : 0; }
  double kind_per_io(gpunvme::Simulation::EventKind kind) const {
    const char* name = gpunvme::Simulation::kEventKindNames[static_cast<int>(kind)];
    return per_io(events_by_kind.value(name, std::uint64_t{0}));
  }
};

// Reads everything a child wrote to `fd`.
std::string drain(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

// Runs one simulation in a child process; the child sends its summary back through a pipe.
Measured run_case(const Case& c) {
  Measured m;
  m.name = c.name;
  int fds[2];
  if (pipe(fds) != 0) {
    m.error = "pipe failed";
    return m;
  }
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    json reply;
    try {
      const auto config = gpunvme::load_config(kTopology, kScenario, c.overrides, 1);
      const auto start = std::chrono::steady_clock::now();
      const json result = gpunvme::run(config);
      const double wall =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::uint64_t instructions = 0;
      for (const auto& [id, gpu] : result["gpus"].items()) {
        instructions += gpu.at("instructions").get<std::uint64_t>();
      }
      reply = {{"ok", true},
               {"ios", result["summary"]["ios"]},
               {"events", result["summary"]["events"]},
               {"events_by_kind", result["summary"]["events_by_kind"]},
               {"warp_instructions", instructions},
               {"simulated_ns", result["summary"]["simulated_time_ns"]},
               {"requested_ios", result["config"]["scenario"]["ios"]},
               {"run_length", result["summary"].value("run_length", json())},
               {"iops", result["summary"]["iops"]},
               {"wall_s", wall}};
    } catch (const std::exception& e) {
      reply = {{"ok", false}, {"error", e.what()}};
    }
    const std::string text = reply.dump();
    const ssize_t written = write(fds[1], text.data(), text.size());
    _exit(written == static_cast<ssize_t>(text.size()) ? 0 : 1);
  }
  close(fds[1]);
  const std::string text = drain(fds[0]);
  close(fds[0]);
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  m.peak_rss_kb = static_cast<std::uint64_t>(usage.ru_maxrss);
  try {
    const json reply = json::parse(text);
    m.ok = reply.at("ok").get<bool>();
    if (m.ok) {
      m.ios = reply.at("ios").get<std::uint64_t>();
      m.events = reply.at("events").get<std::uint64_t>();
      m.events_by_kind = reply.at("events_by_kind");
      m.warp_instructions = reply.at("warp_instructions").get<std::uint64_t>();
      m.simulated_ns = reply.at("simulated_ns").get<double>();
      m.wall_s = reply.at("wall_s").get<double>();
      m.requested_ios = reply.at("requested_ios").get<std::uint64_t>();
      m.run_length = reply.at("run_length");
      m.iops = reply.at("iops").get<double>();
    } else {
      m.error = reply.at("error").get<std::string>();
    }
  } catch (const std::exception&) {
    m.error = fmt::format("child exited with status {} and no summary", status);
  }
  return m;
}

void print_row(const Measured& m) {
  using Kind = gpunvme::Simulation::EventKind;
  if (!m.ok) {
    fmt::print("{:<38} FAILED: {}\n", m.name, m.error);
    return;
  }
  fmt::print(
      "{:<38} {:>11} {:>9.2f} {:>13.0f} {:>10.1f} {:>12.0f} {:>10.1f} | {:>8.1f} {:>8.1f} {:>8.1f} "
      "{:>8.1f}\n",
      m.name, m.ios, m.wall_s, m.ios_per_s(), m.events_per_io(), m.events_per_s(),
      m.peak_rss_kb / 1024.0, m.kind_per_io(Kind::kWarpStep), m.kind_per_io(Kind::kWarpWakeup),
      m.kind_per_io(Kind::kModelCallback), m.per_io(m.warp_instructions));
  std::fflush(stdout);
}

json to_json(const Measured& m) {
  json j = {{"case", m.name}, {"ok", m.ok}};
  if (!m.ok) {
    j["error"] = m.error;
    return j;
  }
  j.update({{"ios", m.ios},
            {"wall_s", m.wall_s},
            {"simulated_ios_per_s", m.ios_per_s()},
            {"events", m.events},
            {"events_per_io", m.events_per_io()},
            {"events_per_s", m.events_per_s()},
            {"events_by_kind", m.events_by_kind},
            {"warp_instructions", m.warp_instructions},
            {"warp_instructions_per_io", m.per_io(m.warp_instructions)},
            {"simulated_ns", m.simulated_ns},
            {"peak_rss_mib", m.peak_rss_kb / 1024.0}});
  return j;
}

// Wall time of `gpunvme sweep` over a fixed spec of kSweepPoints points with `jobs` processes.
// Points differ in cost (queue count, strategy): with few of them per process the last one
// runs alone and the measure is of that tail (8 points: 1.75x with 2 processes), not of the
// throughput a sweep of many configurations gets; 32 points (4 seeds of each) measure it.
constexpr int kSweepPoints = 32;
double time_sweep(int jobs, std::uint64_t ios, const std::string& dir) {
  const std::string spec_path = dir + "/speed-sweep.json";
  const json spec = {{"name", "speed-sweep"},
                     {"topology", kTopology},
                     {"scenario", kScenario},
                     {"seed", 1},
                     {"set", {fmt::format("scenario.ios={}", ios), "scenario.threads=8192"}},
                     {"sweep",
                      {{"scenario.queues", {8, 16, 32, 64}},
                       {"scenario.strategy", {"warp_batch", "bam_ticket"}},
                       {"seed", {{"start", 1}, {"stop", 4}, {"step", 1}}}}}};
  std::ofstream(spec_path) << spec.dump(2);
  const std::string out = fmt::format("{}/speed-sweep-{}", dir, jobs);
  std::remove((out + ".jsonl").c_str());
  std::remove((out + ".csv").c_str());
  const std::string command = fmt::format("{} sweep {} --out {} --jobs {} > /dev/null 2>&1",
                                          GPUNVME_CLI, spec_path, out, jobs);
  const auto start = std::chrono::steady_clock::now();
  const int rc = std::system(command.c_str());
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return rc == 0 ? wall : -1.0;
}

std::set<std::string> parse_cases(const std::string& list) {
  std::set<std::string> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) out.insert(item);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t ios = 10'000'000;
  std::set<std::string> cases = {"reference", "linear", "queues", "strategies", "sweep"};
  std::string out_file;
  bool with_fast = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--ios" && i + 1 < argc) {
      ios = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--cases" && i + 1 < argc) {
      cases = parse_cases(argv[++i]);
    } else if (arg == "--fast") {
      with_fast = true;
    } else if (arg == "--out" && i + 1 < argc) {
      out_file = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: sim_speed_bench [--ios N >= 10] [--cases "
                   "reference,linear,queues,strategies,sweep,run_length] [--fast] [--out FILE]\n");
      return 2;
    }
  }
  if (ios < 10) {
    std::fprintf(stderr, "sim_speed_bench: --ios must be at least 10, got %llu\n",
                 static_cast<unsigned long long>(ios));
    return 2;
  }
  const std::uint64_t small = ios / 10;
  const auto ios_set = [](std::uint64_t n) { return fmt::format("scenario.ios={}", n); };

  fmt::print("simulator speed on {}\n", kScenario);
  // Right of the bar, per I/O: events by kind (the warps' steps between operations, their
  // wake-ups from waits, the models' callbacks) and the warp instructions the strategy ran.
  fmt::print("{:<38} {:>11} {:>9} {:>13} {:>10} {:>12} {:>10} | {:>8} {:>8} {:>8} {:>8}\n", "case",
             "I/Os", "wall s", "I/Os per s", "events/IO", "events per s", "peak MiB", "steps",
             "wakeups", "models", "instr");
  json report = {{"schema", "gpunvme.speed-bench/1"},
                 {"topology", kTopology},
                 {"scenario", kScenario},
                 {"reference_ios", ios},
                 {"cases", json::array()},
                 {"ratios", json::object()}};
  const auto record = [&](const Measured& m) {
    print_row(m);
    report["cases"].push_back(to_json(m));
    return m;
  };
  // The case in fast mode, right after its exact run.
  const auto fast_too = [&](const Case& c) {
    if (!with_fast) return;
    Case fast = c;
    fast.name += " [fast]";
    fast.overrides.push_back("scenario.fidelity=fast");
    const Measured m = run_case(fast);
    print_row(m);
    json entry = to_json(m);
    entry["fidelity"] = "fast";
    report["cases"].push_back(entry);
  };

  Measured reference, reference_small;
  if (cases.count("reference") || cases.count("linear")) {
    reference = record(run_case({"reference", {ios_set(ios)}}));
    fast_too({"reference", {ios_set(ios)}});
  }
  if (cases.count("linear")) {
    reference_small = record(run_case({"reference/10", {ios_set(small)}}));
    if (reference.ok && reference_small.ok) {
      // 10x the I/Os should cost at most 11x the wall time.
      report["ratios"]["wall_10x_ios"] = reference.wall_s / reference_small.wall_s;
    }
  }
  if (cases.count("queues")) {
    const Measured one =
        record(run_case({"queues=1 (ios/10)", {ios_set(small), "scenario.queues=1"}}));
    // Real drives grant up to ~135 queue pairs (CALIBRATION.md); the case raises the profile's
    // limit, since it measures the simulator's cost per queue, not a drive.
    std::vector<std::string> many_queues = {ios_set(small), "scenario.queues=1024"};
    for (int ssd = 0; ssd < 4; ++ssd) {
      many_queues.push_back(fmt::format("topology.nodes.ssd{}.max_io_queues=1024", ssd));
    }
    const Measured many = record(run_case({"queues=1024 (ios/10)", many_queues}));
    if (one.ok && many.ok) report["ratios"]["wall_1024_over_1_queue"] = many.wall_s / one.wall_s;
  }
  // The strategy cases at `n` I/Os (`label` in their names).
  const auto strategy_cases = [&](std::uint64_t n, const std::string& label) {
    std::vector<Case> out;
    for (const char* strategy : {"warp_batch", "all_threads", "bam_ticket", "io_agents"}) {
      out.push_back({fmt::format("{} ({})", strategy, label),
                     {ios_set(n), fmt::format("scenario.strategy={}", strategy)}});
    }
    // A warp owns a queue: as many warps as the SSDs have queues (4 x 128).
    out.push_back({fmt::format("per_warp_queue {} threads ({})", kOwnedQueueThreads, label),
                   {ios_set(n), "scenario.strategy=per_warp_queue",
                    fmt::format("scenario.threads={}", kOwnedQueueThreads)}});
    out.push_back({fmt::format("all_threads {} threads ({})", kWholeGpuThreads, label),
                   {ios_set(n), "scenario.strategy=all_threads",
                    fmt::format("scenario.threads={}", kWholeGpuThreads)}});
    return out;
  };
  if (cases.count("strategies")) {
    for (const Case& c : strategy_cases(small, "ios/10")) {
      record(run_case(c));
      fast_too(c);
    }
  }
  if (cases.count("run_length")) {
    // Fast mode with run-length control, at the full count: what it simulated, and the
    // requested I/Os it answered for per second of wall time.
    fmt::print("{:<38} {:>11} {:>11} {:>11} {:>9} {:>15} {:>12} {:>9}\n", "run length (fast)",
               "requested", "simulated", "in flight", "wall s", "answered per s", "KIOPS",
               "applied");
    std::vector<Case> fast_cases = {{"reference (ios)", {ios_set(ios)}}};
    for (const Case& c : strategy_cases(ios, "ios")) fast_cases.push_back(c);
    for (Case c : fast_cases) {
      c.name += " [fast]";
      c.overrides.push_back("scenario.fidelity=fast");
      const Measured m = run_case(c);
      if (!m.ok) {
        print_row(m);
        continue;
      }
      const bool applied = m.run_length.value("applied", false);
      const double answered = m.wall_s > 0 ? static_cast<double>(m.requested_ios) / m.wall_s : 0;
      // The I/Os in flight at the run-length stop, issued and not simulated to completion.
      const std::uint64_t in_flight = m.run_length.value("in_flight_at_stop", std::uint64_t{0});
      // Issued: those completed before the stop and those in flight at it.
      const std::uint64_t simulated = m.run_length.value("simulated_ios", m.ios);
      fmt::print("{:<38} {:>11} {:>11} {:>11} {:>9.2f} {:>15.0f} {:>12.1f} {:>9}\n", m.name,
                 m.requested_ios, simulated, in_flight, m.wall_s, answered, m.iops / 1000.0,
                 applied ? "yes" : m.run_length.value("reason", std::string("-")));
      std::fflush(stdout);
      json entry = to_json(m);
      entry["fidelity"] = "fast";
      entry["requested_ios"] = m.requested_ios;
      entry["answered_ios_per_s"] = answered;
      entry["iops"] = m.iops;
      entry["run_length"] = m.run_length;
      report["cases"].push_back(entry);
    }
  }
  if (cases.count("sweep")) {
    char dir_template[] = "/tmp/gpunvme-speed-XXXXXX";
    const char* dir = mkdtemp(dir_template);
    const std::uint64_t point_ios = std::max<std::uint64_t>(small / 8, 1000);
    const double one = dir ? time_sweep(1, point_ios, dir) : -1;
    const double two = dir ? time_sweep(2, point_ios, dir) : -1;
    fmt::print("sweep of {} points x {} I/Os: 1 process {:.2f} s, 2 processes {:.2f} s\n",
               kSweepPoints, point_ios, one, two);
    if (one > 0 && two > 0) {
      // Points per hour grow by one/two when the same points take `two` seconds instead.
      report["ratios"]["sweep_points_per_hour_2_over_1"] = one / two;
      report["sweep"] = {{"points", kSweepPoints},
                         {"ios_per_point", point_ios},
                         {"wall_s_1_process", one},
                         {"wall_s_2_processes", two}};
    } else {
      report["sweep"] = {{"error", "gpunvme sweep failed"}};
    }
  }

  for (const auto& [name, value] : report["ratios"].items()) {
    fmt::print("{:<38} {:.3f}\n", name, value.get<double>());
  }
  const std::string text = report.dump(2);
  fmt::print("{}\n", text);
  if (!out_file.empty()) std::ofstream(out_file) << text << "\n";
  return 0;
}
