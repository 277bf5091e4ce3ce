#include "models/nvme/fault_injector.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

namespace gpunvme::nvme {

namespace {
// SplitMix64's finalizer: a well-mixed 64-bit hash, so each (seed, index,
// stream) triple gives an independent uniform draw.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

double uniform(std::uint64_t seed, std::uint64_t index, std::uint64_t stream) {
  const std::uint64_t h = mix(mix(seed ^ (stream * 0xD1B54A32D192ED03ull)) + index);
  return static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
}
}  // namespace

ScheduledFault parse_scheduled_fault(const std::string& text) {
  const auto at = text.find('@');
  const auto eq = text.find('=');
  if (at == std::string::npos || eq == std::string::npos || eq < at) {
    throw std::invalid_argument("expected KIND@cmd=N or KIND@us=T, KIND media or command");
  }
  ScheduledFault fault;
  const std::string kind = text.substr(0, at);
  if (kind == "media") {
    fault.kind = FaultKind::Media;
  } else if (kind == "command") {
    fault.kind = FaultKind::Command;
  } else {
    throw std::invalid_argument("fault kind '" + kind + "' is not media or command");
  }
  const std::string key = text.substr(at + 1, eq - at - 1);
  const std::string value = text.substr(eq + 1);
  if (value.empty()) throw std::invalid_argument("missing value after '='");
  char* end = nullptr;
  if (key == "cmd") {
    if (value.find_first_not_of("0123456789") != std::string::npos) {
      throw std::invalid_argument("command index '" + value + "' is not a non-negative integer");
    }
    fault.command_index = std::strtoull(value.c_str(), &end, 10);
  } else if (key == "us") {
    const double us = std::strtod(value.c_str(), &end);
    if (end == value.c_str() || *end != '\0' || !(us >= 0) || us > 1e12) {
      throw std::invalid_argument("time '" + value + "' is not a non-negative number of us");
    }
    fault.by_time = true;
    fault.at = us_to_ps(us);
  } else {
    throw std::invalid_argument("'" + key + "' is not cmd or us");
  }
  return fault;
}

FaultInjector::FaultInjector(double media_rate, double command_rate, std::uint64_t seed,
                             std::vector<ScheduledFault> schedule)
    : media_rate_(media_rate), command_rate_(command_rate), seed_(seed) {
  for (const ScheduledFault& f : schedule) (f.by_time ? by_time_ : by_index_).push_back(f);
  std::stable_sort(by_index_.begin(), by_index_.end(),
                   [](const auto& a, const auto& b) { return a.command_index < b.command_index; });
  std::stable_sort(by_time_.begin(), by_time_.end(),
                   [](const auto& a, const auto& b) { return a.at < b.at; });
  active_ = media_rate_ > 0 || command_rate_ > 0 || !by_index_.empty() || !by_time_.empty();
}

FaultKind FaultInjector::decide(std::uint64_t command_index, Picoseconds now) {
  if (!active_) return FaultKind::None;
  FaultKind kind = FaultKind::None;
  // Each time entry fails one command: the first one fetched at or after its
  // time that no earlier time entry took.
  if (next_by_time_ < by_time_.size() && by_time_[next_by_time_].at <= now) {
    kind = by_time_[next_by_time_++].kind;
  }
  auto it = std::lower_bound(
      by_index_.begin(), by_index_.end(), command_index,
      [](const ScheduledFault& f, std::uint64_t index) { return f.command_index < index; });
  if (it != by_index_.end() && it->command_index == command_index) kind = it->kind;
  if (kind != FaultKind::None) return kind;
  if (command_rate_ > 0 && uniform(seed_, command_index, 1) < command_rate_) {
    return FaultKind::Command;
  }
  if (media_rate_ > 0 && uniform(seed_, command_index, 2) < media_rate_) return FaultKind::Media;
  return FaultKind::None;
}

}  // namespace gpunvme::nvme
