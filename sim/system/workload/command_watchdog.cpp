#include "sim/system/workload/command_watchdog.h"

namespace gpunvme {

void CommandWatchdog::started(std::uint32_t queue, std::uint16_t cid, Picoseconds at) {
  const std::uint64_t k = key(queue, cid);
  const std::uint64_t serial = next_serial_++;
  live_[k] = serial;
  order_.push_back({k, serial, at + timeout_});
  arm();
}

void CommandWatchdog::finished(std::uint32_t queue, std::uint16_t cid) {
  live_.erase(key(queue, cid));
}

// One timer, at the earliest deadline of a command still outstanding.
void CommandWatchdog::arm() {
  while (!order_.empty()) {
    const Entry& front = order_.front();
    auto it = live_.find(front.key);
    if (it != live_.end() && it->second == front.serial) break;
    order_.pop_front();  // completed (or its CID reused since)
  }
  if (order_.empty() || armed_) return;
  armed_ = true;
  armed_at_ = std::max(order_.front().deadline, Component::now());
  owner_.schedule_at(armed_at_, [this] {
    armed_ = false;
    check();
  });
}

void CommandWatchdog::check() {
  while (!order_.empty()) {
    const Entry front = order_.front();
    auto it = live_.find(front.key);
    if (it == live_.end() || it->second != front.serial) {
      order_.pop_front();
      continue;
    }
    if (front.deadline > Component::now()) break;
    // One abort per command: a command the controller still serves is left
    // to finish.
    order_.pop_front();
    live_.erase(it);
    ++aborts_;
    abort_(static_cast<std::uint32_t>(front.key >> 16), static_cast<std::uint16_t>(front.key));
  }
  arm();
}

void GpuDeadlines::arm(Component& owner, const std::vector<nvme::Controller*>& ssds, Abort abort) {
  const auto count = static_cast<std::uint32_t>(ssds.size());
  for (std::uint32_t k = 0; k < count; ++k) {
    if (!ssds[k]->may_lose_commands()) {
      per_ssd_.push_back(nullptr);
      continue;
    }
    armed_ = true;
    per_ssd_.push_back(std::make_unique<CommandWatchdog>(
        owner, ssds[k]->io_timeout(), [abort, k, count](std::uint32_t queue, std::uint16_t cid) {
          abort(k, static_cast<std::uint16_t>(queue / count + 1), cid);
        }));
  }
}

platform::StageSink& GpuDeadlines::sink(platform::StageSink& recorder) {
  if (!armed_) return recorder;
  next_ = &recorder;
  return *this;
}

void GpuDeadlines::stage(std::uint16_t queue, std::uint32_t cid, algo::Stage stage,
                         Picoseconds when) {
  if (CommandWatchdog* w = per_ssd_[queue % per_ssd_.size()].get()) {
    // Watched commands have 16-bit CIDs: an Abort names no wider one, and
    // wide CIDs are refused on SSDs that may lose commands
    // (check_microbenchmark).
    const auto short_cid = static_cast<std::uint16_t>(cid);
    if (stage == algo::Stage::DoorbellRung) w->started(queue, short_cid, when);
    if (stage == algo::Stage::CqePosted) w->finished(queue, short_cid);
  }
  next_->stage(queue, cid, stage, when);
}

}  // namespace gpunvme
