// Runs the gpunvme program (GPUNVME_CLI, set by CMake) the way a user does,
// for the command-line tests: exit code and everything it printed.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace gpunvme::cli_test {

struct Outcome {
  int code;
  std::string output;  // stdout and stderr together
};

inline Outcome gpunvme(const std::string& args) {
  const std::string command = std::string(GPUNVME_CLI) + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

}  // namespace gpunvme::cli_test
