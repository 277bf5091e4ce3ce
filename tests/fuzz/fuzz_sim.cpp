// libFuzzer harness that runs tiny simulations (a few hundred I/Os) of
// configurations drawn from the fuzzer's bytes (the soak test's generator,
// tests/soak/config_generator.h: kind, path, topology, SSDs, strategy and its
// parts, threads, queues, iodepth, bs, the kind's size, faults, seed) and
// holds each result to every invariant (sim/system/run/invariants.h).
//
// A configuration the simulator refuses with a ConfigError is skipped; a run
// that throws anything, or a result that breaks an invariant, aborts with the
// configuration's command line (and libFuzzer records the input).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "sim/kernel/params/config_error.h"
#include "sim/system/run/invariants.h"
#include "sim/system/run/run.h"
#include "tests/soak/config_generator.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpunvme;
  soak::ByteChoices choices(data, size);
  const soak::GeneratedConfig generated = soak::generate(choices);
  RunConfig config;
  try {
    config = generated.load();
  } catch (const ConfigError&) {
    return 0;
  }
  std::string problem;
  try {
    problem = invariants::describe(soak::check_result(generated, run(config)));
  } catch (const std::exception& e) {
    problem = std::string("run failed: ") + e.what() + "\n";
  }
  if (!problem.empty()) {
    std::fprintf(stderr, "FINDING: %s  %s\n", problem.c_str(), generated.command_line().c_str());
    std::fflush(stderr);
    std::abort();
  }
  return 0;
}
