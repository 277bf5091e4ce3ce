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
    throw std::invalid_argument(
        "expected KIND@cmd=N or KIND@us=T, KIND media, command, timeout, reset or link_down");
  }
  ScheduledFault fault;
  const std::string kind = text.substr(0, at);
  if (kind == "media") {
    fault.kind = FaultKind::Media;
  } else if (kind == "command") {
    fault.kind = FaultKind::Command;
  } else if (kind == "timeout") {
    fault.kind = FaultKind::Timeout;
  } else if (kind == "reset") {
    fault.kind = FaultKind::Reset;
  } else if (kind == "link_down") {
    fault.kind = FaultKind::LinkDown;
  } else {
    throw std::invalid_argument("fault kind '" + kind +
                                "' is not media, command, timeout, reset or link_down");
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
    : media_rate_(media_rate), command_rate_(command_rate), seed_(seed), schedule_(schedule) {
  for (const ScheduledFault& f : schedule) {
    if (f.by_time && device_event(f.kind)) {
      timed_events_.push_back(f);
    } else {
      (f.by_time ? by_time_ : by_index_).push_back(f);
    }
    if (f.kind == FaultKind::Timeout || device_event(f.kind)) may_lose_ = true;
  }
  std::stable_sort(timed_events_.begin(), timed_events_.end(),
                   [](const auto& a, const auto& b) { return a.at < b.at; });
  std::stable_sort(by_index_.begin(), by_index_.end(),
                   [](const auto& a, const auto& b) { return a.command_index < b.command_index; });
  std::stable_sort(by_time_.begin(), by_time_.end(),
                   [](const auto& a, const auto& b) { return a.at < b.at; });
  active_ = media_rate_ > 0 || command_rate_ > 0 || !by_index_.empty() || !by_time_.empty();
}

std::uint64_t FaultInjector::scheduled(FaultKind kind) const {
  return static_cast<std::uint64_t>(std::count_if(
      schedule_.begin(), schedule_.end(), [&](const ScheduledFault& f) { return f.kind == kind; }));
}

FaultKind FaultInjector::decide(std::uint64_t command_index, Picoseconds now) {
  return decide(command_index, now, nullptr);
}

FaultKind FaultInjector::decide(std::uint64_t command_index, Picoseconds now,
                                std::vector<FaultKind>* events) {
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
  // Several entries may name one command: device events all happen; the
  // first command fault applies.
  bool named = false;
  for (; it != by_index_.end() && it->command_index == command_index; ++it) {
    if (device_event(it->kind)) {
      if (events != nullptr) events->push_back(it->kind);
    } else if (!named) {
      kind = it->kind;
      named = true;
    }
  }
  if (kind != FaultKind::None) return kind;
  if (command_rate_ > 0 && uniform(seed_, command_index, 1) < command_rate_) {
    return FaultKind::Command;
  }
  if (media_rate_ > 0 && uniform(seed_, command_index, 2) < media_rate_) return FaultKind::Media;
  return FaultKind::None;
}

}  // namespace gpunvme::nvme
