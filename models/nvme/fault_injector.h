// Injected faults: which I/O commands fail, and how. Faults come by rate
// (each command independently, from a hash of the seed and the command's
// index, so the same configuration fails the same commands whatever else
// changes) or by schedule (the N-th I/O command the controller fetches, or
// the first one fetched at or after a time).
//
// A media fault fails a read with Unrecovered Read Error (SCT 2h, SC 81h)
// and a write with Write Fault (SCT 2h, SC 80h) once the media access is
// done; a command fault fails the command with Internal Error (SCT 0h,
// SC 06h) once it has been processed. Either way the command completes
// exactly once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/kernel/time.h"

namespace gpunvme::nvme {

enum class FaultKind : std::uint8_t { None, Media, Command };

struct ScheduledFault {
  FaultKind kind = FaultKind::Media;
  bool by_time = false;
  std::uint64_t command_index = 0;  // when !by_time: 0-based I/O command index
  Picoseconds at = 0;               // when by_time
};

// Parses one schedule entry: "media@cmd=N", "command@cmd=N", "media@us=T"
// or "command@us=T". Throws std::invalid_argument naming what is wrong.
ScheduledFault parse_scheduled_fault(const std::string& text);

class FaultInjector {
 public:
  FaultInjector() = default;
  FaultInjector(double media_rate, double command_rate, std::uint64_t seed,
                std::vector<ScheduledFault> schedule);

  // The fault of the I/O command with this index, fetched at `now`. Each
  // scheduled time fault applies once, to the first command at or after it.
  FaultKind decide(std::uint64_t command_index, Picoseconds now);

  bool active() const { return active_; }

 private:
  double media_rate_ = 0;
  double command_rate_ = 0;
  std::uint64_t seed_ = 0;
  std::vector<ScheduledFault> by_index_;  // sorted by command index
  std::vector<ScheduledFault> by_time_;   // sorted by time
  std::size_t next_by_time_ = 0;
  bool active_ = false;
};

}  // namespace gpunvme::nvme
