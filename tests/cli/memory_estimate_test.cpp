// The memory estimate that `check` prints and the cap is compared with is a
// real estimate: within a factor of the peak resident memory a run takes.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

namespace {

std::string output_of(const std::string& args) {
  const std::string command = std::string(GPUNVME_CLI) + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  pclose(pipe);
  return output;
}

// Peak resident memory of one `gpunvme run` (MiB), from wait4 on that child.
double peak_rss_mib(const std::vector<std::string>& args) {
  std::vector<char*> argv{const_cast<char*>(GPUNVME_CLI), const_cast<char*>("run")};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    std::freopen("/dev/null", "w", stdout);
    execv(GPUNVME_CLI, argv.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB
}

double estimate_mib(const std::vector<std::string>& args) {
  std::string joined;
  for (const std::string& a : args) joined += " '" + a + "'";
  const std::string out = output_of("check" + joined);
  const auto at = out.find("estimated memory ");
  EXPECT_NE(at, std::string::npos) << out;
  return at == std::string::npos ? 0 : std::stod(out.substr(at + 17));
}

TEST(MemoryEstimate, IsWithinAFactorOfTwoOfPeakResidentMemory) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "sanitizer shadow memory is not part of the estimate";
#endif
  const std::string source = GPUNVME_SOURCE_DIR;
  const std::vector<std::vector<std::string>> configs = {
      // Dominated by the graph: 2^18 vertices, 4 M edges.
      {"--scenario", source + "/scenarios/graph-bfs-gpu.json", "--set", "scenario.scale=18"},
      // Dominated by warps and queues: 1,024 warps, 128 queues of 16,384 entries.
      {"--set", "scenario.threads=32768", "--set", "scenario.queues=128", "--set",
       "scenario.queue_entries=16384", "--set", "scenario.ios=33000"},
  };
  for (const auto& args : configs) {
    const double estimate = estimate_mib(args);
    const double measured = peak_rss_mib(args);
    EXPECT_LT(estimate, 2 * measured) << args[1] << ": estimate " << estimate << " MiB";
    EXPECT_GT(estimate, measured / 2) << args[1] << ": measured " << measured << " MiB";
    // The figure is not the fixed part alone.
    EXPECT_GT(estimate, 30) << args[1];
  }
}

}  // namespace
