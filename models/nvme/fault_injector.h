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
//
// Faults beyond one command's status (schedule only):
// - timeout: the command is lost: the controller never completes it on its
//   own; the host's timeout aborts it (NVMe Abort; it then completes with
//   Command Abort Requested, SCT 0h SC 07h) or a controller reset does;
// - reset: the controller resets (as after a fatal error the host recovers
//   from): every outstanding command completes with Command Aborted due to
//   SQ Deletion (SCT 0h, SC 08h) and the controller fetches nothing until it
//   is back (its CC.EN cycle and queue re-creation);
// - link_down: the SSD's PCIe link goes down and retrains (link_retrain_us):
//   traffic on it waits until the link is up again.
// "reset@cmd=N" and "link_down@cmd=N" happen when the N-th I/O command is
// fetched (the reset aborts that command with the others; behind the link
// it waits like the others); "@us=T" at time T.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/kernel/time.h"

namespace gpunvme::nvme {

enum class FaultKind : std::uint8_t { None, Media, Command, Timeout, Reset, LinkDown };

// Whether the fault is an event of the device (reset, link down) rather
// than a fault of one command.
constexpr bool device_event(FaultKind kind) {
  return kind == FaultKind::Reset || kind == FaultKind::LinkDown;
}

struct ScheduledFault {
  FaultKind kind = FaultKind::Media;
  bool by_time = false;
  std::uint64_t command_index = 0;  // when !by_time: 0-based I/O command index
  Picoseconds at = 0;               // when by_time
};

// Parses one schedule entry: KIND@cmd=N or KIND@us=T, KIND one of media,
// command, timeout, reset, link_down. Throws std::invalid_argument naming
// what is wrong.
ScheduledFault parse_scheduled_fault(const std::string& text);

class FaultInjector {
 public:
  FaultInjector() = default;
  FaultInjector(double media_rate, double command_rate, std::uint64_t seed,
                std::vector<ScheduledFault> schedule);

  // The fault of the I/O command with this index, fetched at `now`. Each
  // scheduled time fault applies once, to the first command at or after it.
  // Device events scheduled at this command come back in `events`.
  FaultKind decide(std::uint64_t command_index, Picoseconds now);
  FaultKind decide(std::uint64_t command_index, Picoseconds now, std::vector<FaultKind>* events);

  // Device events scheduled by time (reset, link_down), in time order.
  const std::vector<ScheduledFault>& timed_events() const { return timed_events_; }
  // Whether a command may go without a completion until the host acts (a
  // lost command, a reset, a link that goes down): the host then needs its
  // timeouts.
  bool may_lose_commands() const { return may_lose_; }
  // Entries of the schedule of this kind.
  std::uint64_t scheduled(FaultKind kind) const;

  bool active() const { return active_; }

 private:
  double media_rate_ = 0;
  double command_rate_ = 0;
  std::uint64_t seed_ = 0;
  std::vector<ScheduledFault> by_index_;  // sorted by command index
  std::vector<ScheduledFault> by_time_;   // sorted by time
  std::vector<ScheduledFault> timed_events_;
  std::vector<ScheduledFault> schedule_;  // as given
  bool may_lose_ = false;
  std::size_t next_by_time_ = 0;
  bool active_ = false;
};

}  // namespace gpunvme::nvme
