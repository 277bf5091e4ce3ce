// Injected faults: by rate (deterministic per seed and command index) and by
// schedule (command index or time); each failed command completes exactly
// once with the status the spec gives the fault.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "models/nvme/fault_injector.h"
#include "sim/kernel/params/config_error.h"
#include "tests/nvme/nvme_bench.h"

namespace gpunvme::nvme::testing {
namespace {

TEST(FaultSchedule, ParsesEntries) {
  ScheduledFault f = parse_scheduled_fault("media@cmd=12");
  EXPECT_EQ(f.kind, FaultKind::Media);
  EXPECT_FALSE(f.by_time);
  EXPECT_EQ(f.command_index, 12u);
  f = parse_scheduled_fault("command@us=2.5");
  EXPECT_EQ(f.kind, FaultKind::Command);
  EXPECT_TRUE(f.by_time);
  EXPECT_EQ(f.at, 2'500'000u);
  for (const char* bad : {"media", "media@cmd", "media@cmd=", "media@cmd=-1", "media@cmd=1x",
                          "disk@cmd=1", "media@ms=1", "command@us=abc", "command@us=-3"}) {
    EXPECT_THROW(parse_scheduled_fault(bad), std::invalid_argument) << bad;
  }
}

TEST(FaultSchedule, ParsesDeviceFaults) {
  ScheduledFault f = parse_scheduled_fault("timeout@cmd=7");
  EXPECT_EQ(f.kind, FaultKind::Timeout);
  EXPECT_EQ(f.command_index, 7u);
  f = parse_scheduled_fault("reset@us=300");
  EXPECT_EQ(f.kind, FaultKind::Reset);
  EXPECT_TRUE(f.by_time);
  EXPECT_EQ(f.at, 300'000'000u);
  f = parse_scheduled_fault("link_down@cmd=4");
  EXPECT_EQ(f.kind, FaultKind::LinkDown);
  for (const char* bad : {"timeout", "reset@", "reset@us=", "link-down@us=1", "linkdown@cmd=1"}) {
    EXPECT_THROW(parse_scheduled_fault(bad), std::invalid_argument) << bad;
  }
  // Device events by time are not command faults; a timeout can lose a
  // command; media and command faults cannot.
  FaultInjector injector(
      0, 0, 1,
      {parse_scheduled_fault("reset@us=5"), parse_scheduled_fault("timeout@cmd=2"),
       parse_scheduled_fault("link_down@cmd=2")});
  EXPECT_TRUE(injector.may_lose_commands());
  EXPECT_EQ(injector.timed_events().size(), 1u);
  EXPECT_EQ(injector.scheduled(FaultKind::Reset), 1u);
  std::vector<FaultKind> events;
  EXPECT_EQ(injector.decide(2, 10'000'000, &events), FaultKind::Timeout);
  EXPECT_EQ(events, std::vector<FaultKind>{FaultKind::LinkDown});
  EXPECT_FALSE(
      FaultInjector(0.5, 0.5, 1, {parse_scheduled_fault("media@cmd=1")}).may_lose_commands());
}

TEST(FaultSchedule, MalformedEntryIsAConfigError) {
  const BenchOptions options{"samsung-pm1743", {{"fault_schedule", {"media@cmd=3", "oops"}}}};
  try {
    Bench bench(options);
    ADD_FAILURE() << "no ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "$.nodes[3].fault_schedule[1]");
    EXPECT_EQ(e.value(), "\"oops\"");
  }
}

TEST(FaultInjectorRates, DeterministicAndNearTheRate) {
  const std::uint64_t n = 20000;
  FaultInjector a(0.1, 0.02, 42, {});
  FaultInjector b(0.1, 0.02, 42, {});
  FaultInjector c(0.1, 0.02, 43, {});
  std::uint64_t media = 0, command = 0, differ = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    const FaultKind k = a.decide(i, 0);
    EXPECT_EQ(k, b.decide(i, 0));
    if (k != c.decide(i, 0)) ++differ;
    media += k == FaultKind::Media;
    command += k == FaultKind::Command;
  }
  // Binomial: within 4 standard deviations of n p. A command fault takes
  // precedence, so media faults come at p = 0.1 x (1 - 0.02).
  auto near = [&](std::uint64_t count, double p) {
    EXPECT_NEAR(static_cast<double>(count), n * p, 4 * std::sqrt(n * p * (1 - p)));
  };
  near(command, 0.02);
  near(media, 0.1 * 0.98);
  EXPECT_GT(differ, n / 20);  // another seed fails other commands
}

TEST(FaultInjectorSchedule, IndexAndTimeEntries) {
  FaultInjector f(0, 0, 1,
                  {parse_scheduled_fault("media@cmd=3"), parse_scheduled_fault("command@cmd=0"),
                   parse_scheduled_fault("media@us=10"), parse_scheduled_fault("media@us=10")});
  EXPECT_EQ(f.decide(0, 0), FaultKind::Command);
  EXPECT_EQ(f.decide(1, 0), FaultKind::None);
  EXPECT_EQ(f.decide(2, us_to_ps(9.999)), FaultKind::None);
  EXPECT_EQ(f.decide(3, us_to_ps(9.999)), FaultKind::Media);
  // Two entries at the same time fail the next two commands.
  EXPECT_EQ(f.decide(4, us_to_ps(10)), FaultKind::Media);
  EXPECT_EQ(f.decide(5, us_to_ps(11)), FaultKind::Media);
  EXPECT_EQ(f.decide(6, us_to_ps(12)), FaultKind::None);
}

// Reads through the controller at QD 8; returns the status of each command
// by its index.
std::vector<CompletionEntry> run_reads(const nlohmann::json& params, std::uint64_t count,
                                       bool writes = false) {
  Bench bench({"samsung-pm1743", params});
  TestHost host("host", bench);
  host.attach(bench.bring_up_one(64));
  const std::uint64_t buffers = bench.driver().allocate(host::QueuePlacement::host, 64 * 4096);
  std::vector<CompletionEntry> by_index(count);
  std::vector<int> seen(count, 0);
  std::uint64_t issued = 0;
  std::function<void()> issue = [&] {
    const std::uint64_t i = issued++;
    const SubmissionEntry sqe = writes ? make_write(0, 1, i * 8, 7, buffers + (i % 64) * 4096, 0)
                                       : make_read(0, 1, i * 8, 7, buffers + (i % 64) * 4096, 0);
    host.submit(sqe, [&, i](const CompletionEntry& cqe, Picoseconds) {
      by_index[i] = cqe;
      ++seen[i];
      if (issued < count) issue();
    });
  };
  for (int d = 0; d < 8; ++d) issue();
  bench.run();
  for (std::uint64_t i = 0; i < count; ++i) EXPECT_EQ(seen[i], 1) << "command " << i;
  EXPECT_NO_THROW(bench.ssd().check_drained());
  EXPECT_EQ(bench.ssd().commands_completed(), count);
  return by_index;
}

TEST(ControllerFaults, MediaErrorsByRateCarryUnrecoveredReadError) {
  const std::uint64_t n = 1000;
  const auto result = run_reads({{"fault_media_error_rate", 0.05}, {"fault_seed", 7}}, n);
  std::uint64_t failed = 0;
  for (const CompletionEntry& cqe : result) {
    if (cqe.ok()) continue;
    ++failed;
    EXPECT_EQ(cqe.sct(), StatusCodeType::MediaAndDataIntegrity);
    EXPECT_EQ(cqe.sc(), 0x81);
    EXPECT_TRUE(cqe.dnr());
  }
  EXPECT_NEAR(static_cast<double>(failed), n * 0.05, 4 * std::sqrt(n * 0.05 * 0.95));
  // The same configuration fails the same commands.
  const auto again = run_reads({{"fault_media_error_rate", 0.05}, {"fault_seed", 7}}, n);
  for (std::uint64_t i = 0; i < n; ++i) EXPECT_EQ(result[i].ok(), again[i].ok()) << i;
}

TEST(ControllerFaults, ScheduledFaultsHitTheirCommands) {
  const std::uint64_t n = 40;
  const auto result =
      run_reads({{"fault_schedule", {"media@cmd=5", "command@cmd=17", "media@cmd=39"}}}, n);
  for (std::uint64_t i = 0; i < n; ++i) {
    SCOPED_TRACE(i);
    if (i == 5 || i == 39) {
      EXPECT_EQ(result[i].status(), Status::UnrecoveredReadError);
    } else if (i == 17) {
      EXPECT_EQ(result[i].status(), Status::InternalError);
      EXPECT_EQ(result[i].sct(), StatusCodeType::Generic);
      EXPECT_EQ(result[i].sc(), 0x06);
      EXPECT_FALSE(result[i].dnr());  // a retry may succeed
    } else {
      EXPECT_TRUE(result[i].ok()) << status_name(result[i].status());
    }
  }
}

TEST(ControllerFaults, WriteFaultsAndCommandErrorsByRate) {
  const std::uint64_t n = 1000;
  const auto result = run_reads(
      {{"fault_media_error_rate", 0.1}, {"fault_command_error_rate", 0.1}, {"fault_seed", 3}}, n,
      /*writes=*/true);
  std::uint64_t media = 0, command = 0;
  for (const CompletionEntry& cqe : result) {
    if (cqe.status() == Status::WriteFault) ++media;
    if (cqe.status() == Status::InternalError) ++command;
    EXPECT_TRUE(cqe.ok() || cqe.status() == Status::WriteFault ||
                cqe.status() == Status::InternalError);
  }
  EXPECT_NEAR(static_cast<double>(command), n * 0.1, 4 * std::sqrt(n * 0.1 * 0.9));
  EXPECT_NEAR(static_cast<double>(media), n * 0.09, 4 * std::sqrt(n * 0.09 * 0.91));
}

TEST(ControllerFaults, TimedFaultHitsTheFirstCommandAfterIt) {
  // Bring-up takes some tens of microseconds; the fault is due well after.
  Bench bench({"samsung-pm1743", {{"fault_schedule", {"media@us=500"}}}});
  TestHost host("host", bench);
  host.attach(bench.bring_up_one(64));
  const std::uint64_t buffer = bench.driver().allocate(host::QueuePlacement::host, 4096);
  std::vector<std::pair<Picoseconds, Status>> results;
  std::function<void()> issue = [&] {
    host.submit(make_read(0, 1, 0, 7, buffer, 0), [&](const CompletionEntry& cqe, Picoseconds) {
      results.push_back({Simulation::now(), cqe.status()});
      if (results.size() < 20) issue();
    });
  };
  issue();
  bench.run();
  ASSERT_EQ(results.size(), 20u);
  int failures = 0;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (results[i].second == Status::Success) continue;
    ++failures;
    EXPECT_EQ(results[i].second, Status::UnrecoveredReadError);
    // QD1: command i is issued when command i - 1 completes and fetched
    // within a few microseconds; it is the first fetched at or after 500 us.
    ASSERT_GE(i, 2u);
    EXPECT_GE(results[i - 1].first + us_to_ps(3), us_to_ps(500));
    EXPECT_LT(results[i - 2].first, us_to_ps(500));
  }
  EXPECT_EQ(failures, 1);
}

}  // namespace
}  // namespace gpunvme::nvme::testing
