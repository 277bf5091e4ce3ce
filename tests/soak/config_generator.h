// Random small configurations for the soak test, its long benchmark and the
// simulation fuzzer: a shipped topology and a shipped scenario of the chosen
// kind and path, with `--set` overrides drawn for the fields that shape a
// run (strategy, threads, queues, iodepth, bs, SSDs, the kind's size, seed,
// injected faults). Sizes stay at a few hundred I/Os so a run takes
// milliseconds. Most draws are valid; the rest must be refused with a
// ConfigError.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/kernel/random.h"
#include "sim/system/config/run_config.h"
#include "sim/system/run/invariants.h"

namespace gpunvme::soak {

// Where the generator's decisions come from.
class Choices {
 public:
  virtual ~Choices() = default;
  // A number in [0, n), n >= 1.
  virtual std::uint64_t below(std::uint64_t n) = 0;
};

// Decisions from a seeded generator: the same seed, the same configuration.
class RandomChoices : public Choices {
 public:
  explicit RandomChoices(std::uint64_t seed) : engine_(seed) {}
  std::uint64_t below(std::uint64_t n) override;

 private:
  RandomEngine engine_;
};

// Decisions read from a fuzzer's bytes, a byte or more per decision; once
// the bytes run out every decision is 0.
class ByteChoices : public Choices {
 public:
  ByteChoices(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  std::uint64_t below(std::uint64_t n) override;

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t at_ = 0;
};

inline const std::vector<std::string>& kinds() {
  static const std::vector<std::string> k{"microbenchmark", "kv_cache", "graph", "gather"};
  return k;
}
inline const std::vector<std::string>& paths() {
  static const std::vector<std::string> p{"gpu_initiated", "gds", "bounce"};
  return p;
}

struct GeneratedConfig {
  std::string kind;
  std::string path;
  std::string topology_file;
  std::string scenario_file;
  std::vector<std::string> overrides;  // --set assignments, seed=N last
  bool faults = false;                 // an SSD injects media or command errors

  // The configuration, loaded and validated (ConfigError when invalid).
  RunConfig load() const;
  // The equivalent `gpunvme run` command line, to reproduce a failure.
  std::string command_line() const;
};

// Every invariant the result breaks (invariants::check), except that a run
// with injected faults is held to io_accounting only when its result counts
// submitted I/Os (summary.submitted): results without that count report
// failed I/Os in summary.ios as well as in summary.errors.
std::vector<invariants::Violation> check_result(const GeneratedConfig& generated,
                                                const nlohmann::json& result);

// A configuration of the given kind and path (indexes into kinds() and
// paths()), or of drawn ones when negative.
GeneratedConfig generate(Choices& choices, int kind = -1, int path = -1);

}  // namespace gpunvme::soak
