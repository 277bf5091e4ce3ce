// The host's per-command timeout, as Linux's nvme_timeout keeps one: a
// command handed to an SSD (its doorbell rung) that has not completed
// io_timeout_us later is aborted with an NVMe Abort through the SSD's admin
// queue. The controller then completes a lost command with Command Abort
// Requested, which the submitter consumes like any completion (so its CID
// is given back only once the controller has let go of the command) and
// reports as a timed-out, failed I/O. A command the controller still holds
// (late, not lost: behind a retraining link, say) is not aborted and
// completes on its own.
//
// On the host paths the driver runs it; on the GPU path it stands for the
// warps' deadline per command, with the host's admin queue doing the abort
// (a GPU cannot issue admin commands). It costs kernel events (one timer
// per distinct deadline), so the paths arm it only when the SSDs' fault
// schedules can lose a command; otherwise no command can go uncompleted and
// a timer that never fires would change nothing but the event count.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "models/nvme/controller.h"
#include "sim/kernel/component.h"
#include "sim/system/machine/sim_warp.h"

namespace gpunvme {

// An I/O status (SCT << 8 | SC, then CRD, More and DNR above) that says the
// host's timeout aborted it (Command Abort Requested), or a controller reset
// did (Command Aborted due to SQ Deletion).
inline bool aborted_by_timeout(std::uint16_t status) { return (status & 0x7FFu) == 0x007u; }
inline bool aborted_by_reset(std::uint16_t status) { return (status & 0x7FFu) == 0x008u; }

class CommandWatchdog {
 public:
  // Aborts command `cid` of queue `queue` (the path's own queue index).
  using Abort = std::function<void(std::uint32_t queue, std::uint16_t cid)>;

  CommandWatchdog(Component& owner, Picoseconds timeout, Abort abort)
      : owner_(owner), timeout_(timeout), abort_(std::move(abort)) {}

  // The command's doorbell was rung at `at`.
  void started(std::uint32_t queue, std::uint16_t cid, Picoseconds at);
  // Its completion entry has landed (whatever its status).
  void finished(std::uint32_t queue, std::uint16_t cid);

  std::uint64_t aborts() const { return aborts_; }
  Picoseconds timeout() const { return timeout_; }

 private:
  struct Entry {
    std::uint64_t key;
    std::uint64_t serial;
    Picoseconds deadline;
  };
  static std::uint64_t key(std::uint32_t queue, std::uint16_t cid) {
    return (std::uint64_t{queue} << 16) | cid;
  }
  void check();
  void arm();

  Component& owner_;
  Picoseconds timeout_;
  Abort abort_;
  std::deque<Entry> order_;                                // by deadline (= by start)
  std::unordered_map<std::uint64_t, std::uint64_t> live_;  // key -> serial of its start
  std::uint64_t next_serial_ = 1;
  Picoseconds armed_at_ = 0;
  bool armed_ = false;
  std::uint64_t aborts_ = 0;
};

// The GPU paths' deadlines: one watchdog per SSD whose faults can lose a
// command, fed by the warps' stage records (queue = trace id; queue i of
// SSD k is i * ssds + k, qid i + 1) through sink(): a command's deadline
// starts when its doorbell is rung and ends when its completion entry lands.
class GpuDeadlines : public platform::StageSink {
 public:
  using Abort = std::function<void(std::uint32_t ssd, std::uint16_t qid, std::uint16_t cid)>;
  // Arms a watchdog for each SSD that needs one.
  void arm(Component& owner, const std::vector<nvme::Controller*>& ssds, Abort abort);
  // What the warps record into: this, in front of `recorder`, when a
  // watchdog is armed; `recorder` itself otherwise.
  platform::StageSink& sink(platform::StageSink& recorder);
  void stage(std::uint16_t queue, std::uint32_t cid, algo::Stage stage, Picoseconds when) override;

 private:
  std::vector<std::unique_ptr<CommandWatchdog>> per_ssd_;
  platform::StageSink* next_ = nullptr;
  bool armed_ = false;
};

}  // namespace gpunvme
