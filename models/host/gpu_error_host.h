// The host thread that handles the errors of GPU-initiated I/O: GPU threads
// whose command completed with an error status report it in the error ring
// in pinned host memory (sim/core/protocol/gpu_error_mailbox.h,
// sim/core/algo/error_mailbox.h) and wait; this thread polls the ring,
// decides per its policy and writes each verdict into GPU memory.
//
// Timing:
// - the thread polls the ring every `poll_period` (a fixed grid from time
//   0): a record that lands at t is seen at the first poll at or after t,
//   or as soon as the thread has finished the record before it;
// - reading the record and deciding costs `decision` of core time (the
//   thread handles one record at a time);
// - a retry's verdict goes out `backoff` after the decision (the thread is
//   free meanwhile); a verdict is one 8-byte posted write from the cpu node
//   to the GPU's memory through the fabric;
// - a controller reset (after `reset_after` errors of one SSD since its
//   last reset, or on a timed-out command with `reset_on_timeout`) uses the
//   controller's reset model (nvme::Controller::host_reset: every
//   outstanding command aborted, nothing fetched for the ready delay and a
//   bring-up's admin commands). Retries on that SSD go out once it is back.
//
// Policy: a command aborted by a reset is retried whatever caused the reset
// (it did nothing wrong) and does not count towards `reset_after`; any
// other error is retried when the policy retries, the command has had fewer
// than `max_retries` retries and its status does not say Do Not Retry
// (unless `retry_dnr`), as Linux's nvme_decide_disposition does; otherwise
// the error goes back to the requester.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "models/nvme/controller.h"
#include "models/pcie/fabric.h"
#include "sim/core/algo/error_mailbox.h"
#include "sim/kernel/component.h"
#include "sim/kernel/memory_space.h"

namespace gpunvme::host {

struct GpuErrorPolicy {
  bool retry = true;  // false: every error goes back to the requester (the I/O is aborted)
  std::uint32_t max_retries = 5;
  Picoseconds backoff = 0;
  bool retry_dnr = false;
  std::uint32_t reset_after = 0;  // errors of one SSD between resets; 0 = never
  bool reset_on_timeout = false;
  Picoseconds poll_period = 0;
  Picoseconds decision = 0;
};

// What the host did for one SSD's errors.
struct GpuErrorCounts {
  std::uint64_t records = 0;          // error records handled
  std::uint64_t retries = 0;          // verdicts "retry"
  std::uint64_t failed = 0;           // verdicts "fail": the error went back to the requester
  std::uint64_t resets = 0;           // controller resets the host made
  std::uint64_t reset_retries = 0;    // retries of commands a reset aborted
  Picoseconds host_ps = 0;            // record landed -> verdict written, summed
  Picoseconds reset_recovery_ps = 0;  // time the host's resets kept the controller down
};

class GpuErrorHost : public Component {
 public:
  // `ssd_of_queue` maps a record's queue (the GPU path's queue index) to an
  // index into `ssds`.
  GpuErrorHost(const sc_core::sc_module_name& name, MemorySpace& memory, pcie::Fabric& fabric,
               std::size_t cpu_node, const algo::ErrorMailbox& mailbox,
               const GpuErrorPolicy& policy, std::vector<nvme::Controller*> ssds,
               std::function<std::size_t(std::uint32_t queue)> ssd_of_queue);
  ~GpuErrorHost() override;

  const GpuErrorCounts& counts(std::size_t ssd) const { return counts_[ssd]; }
  GpuErrorCounts total() const;

 private:
  void arm();
  void on_ring_write();
  // A record landed: when the thread decides on it.
  void handle(const nvme::GpuErrorRecord& record, Picoseconds landed);
  // The decision, at its time.
  void decide(const nvme::GpuErrorRecord& record, Picoseconds landed);
  void send_verdict(const nvme::GpuErrorRecord& record, nvme::GpuErrorAction action, Picoseconds at,
                    Picoseconds landed, std::size_t ssd);
  std::uint64_t entry_address(std::uint32_t position) const;

  MemorySpace& memory_;
  pcie::Fabric& fabric_;
  std::size_t cpu_node_;
  algo::ErrorMailbox mailbox_;
  GpuErrorPolicy policy_;
  std::vector<nvme::Controller*> ssds_;
  std::function<std::size_t(std::uint32_t)> ssd_of_queue_;

  std::uint32_t next_ = 0;  // ring position the thread reads next
  MemorySpace::WatchId watch_ = 0;
  bool watching_ = false;
  Picoseconds busy_until_ = 0;              // the thread's last decision
  std::vector<Picoseconds> back_at_;        // per SSD: when its last reset is over
  std::vector<std::uint32_t> since_reset_;  // per SSD: errors counted towards reset_after
  std::vector<GpuErrorCounts> counts_;
};

}  // namespace gpunvme::host
