// Starts `gpunvme sweep SPEC --out PREFIX --jobs 1` in a process group of its
// own (stdout to PREFIX.log), waits until PREFIX.jsonl holds `rows` rows or
// `timeout` passes, sends `sig` to the whole group (the sweep and its point
// processes) and reaps the sweep. The sweep tests that stop a sweep half-way
// and resume it share it.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "sim/frontend/sweep/sweep_runner.h"

namespace gpunvme::test {

// Returns the sweep's wait status, or -1 when it could not be started.
inline int stop_sweep_after_rows(const std::string& spec, const std::string& prefix,
                                 std::size_t rows, int sig, std::chrono::seconds timeout) {
  const pid_t pid = fork();
  if (pid < 0) {
    ADD_FAILURE() << "fork failed";
    return -1;
  }
  if (pid == 0) {
    setpgid(0, 0);
    const std::string out = prefix + ".log";
    if (freopen(out.c_str(), "w", stdout) == nullptr) _exit(126);
    execl(GPUNVME_CLI, GPUNVME_CLI, "sweep", spec.c_str(), "--out", prefix.c_str(), "--jobs", "1",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (sweep::read_rows(prefix + ".jsonl").size() < rows &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  kill(-pid, sig);
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

}  // namespace gpunvme::test
