// The SSD media back end: dies, planes and channels as booked resources, and a
// write buffer in front of them.
//
// The NVMe controller model calls this like NVMeVirt's or FEMU's flash model:
// each call says when its work finishes given what is already booked, and
// books it. There are no events and no SystemC here; time is picoseconds.
// Calls must come in non-decreasing `now_ps` (the controller's simulated
// time); an earlier time is treated as the latest one seen, which keeps runs
// deterministic. Work booked ahead says when it may start (`ready_ps`), which
// need not be monotonic.
//
// What is modelled: the array time of each page (tR, tPROG) on its plane or
// die, the channel time of the bytes moved, LBA striping, and a write buffer
// that acknowledges writes at its fill rate and drains by programming pages.
// What is not: the FTL's mapping (reads go to the striped location of their
// LBA; writes are programmed wherever the write pointer is, as in a
// log-structured FTL), garbage collection and erases, read hits in the write
// buffer, and the controller's own command processing (the NVMe controller
// model owns that cap).
#pragma once

#include <cstdint>
#include <vector>

#include "models/flash/flash_params.h"
#include "models/flash/timeline.h"

namespace gpunvme::flash {

// Where a logical byte lives.
struct Location {
  std::uint32_t channel;
  std::uint32_t die;    // within its channel
  std::uint32_t plane;  // within its die
  std::uint64_t page;   // within its plane
};

struct FlashStats {
  // Array busy time per die, indexed channel * dies_per_channel + die. With
  // independent plane reads each plane's operation counts, so a die whose
  // planes work at once accrues up to planes_per_die times the elapsed time.
  std::vector<std::uint64_t> die_busy_ps;
  // Channel busy time (data transfers) per channel.
  std::vector<std::uint64_t> channel_busy_ps;
  std::uint64_t page_reads = 0;     // pages sensed (tR), merged multi-plane pages each counted
  std::uint64_t page_programs = 0;  // pages programmed (a padded partial page counts as one)
  std::uint64_t read_commands = 0;
  std::uint64_t write_commands = 0;
  std::uint64_t bytes_read = 0;
  std::uint64_t bytes_written = 0;
  std::uint64_t buffer_high_water_bytes = 0;
  std::uint64_t buffer_full_waits = 0;  // write pieces that had to wait for buffer space
};

class FlashArray {
 public:
  explicit FlashArray(const FlashParams& params);

  // Reads `bytes` at logical `byte_offset`, issued at `now_ps`. Returns when
  // the data is in the controller's buffer: every touched page is sensed on
  // its plane (tR), then its requested bytes cross the channel; pages on
  // different planes, dies and channels proceed in parallel and the read ends
  // with the last. Throws std::out_of_range past the capacity.
  std::uint64_t read(std::uint64_t now_ps, std::uint64_t byte_offset, std::uint32_t bytes) {
    return read(now_ps, now_ps, byte_offset, bytes);
  }
  // The same, booked at `now_ps` for work that may start at `ready_ps` (the
  // controller books a command's media read when it books its processing,
  // which may end later than another processor's command booked after it).
  std::uint64_t read(std::uint64_t now_ps, std::uint64_t ready_ps, std::uint64_t byte_offset,
                     std::uint32_t bytes);

  // Writes `bytes`, issued at `now_ps`. Returns when the data is in the write
  // buffer: admission runs at write_buffer_gbps, one write after another, and
  // waits for space when the buffer is full. Each full program chunk is
  // programmed in the background, round robin over the array units in
  // striping order, and frees its buffer space when its program ends.
  std::uint64_t write(std::uint64_t now_ps, std::uint64_t byte_offset, std::uint32_t bytes);

  // Programs any partly filled chunk (padded) and returns when every buffered
  // byte is programmed; `now_ps` if nothing is buffered.
  std::uint64_t flush(std::uint64_t now_ps) { return flush(now_ps, now_ps); }
  // The same for a flush that may start at `ready_ps`.
  std::uint64_t flush(std::uint64_t now_ps, std::uint64_t ready_ps);

  // Analytic ceilings from geometry and timing alone, for calibration and
  // tests. Random reads of `bytes`, aligned, at unbounded queue depth: the
  // lesser of the array units' and the channels' rates.
  double saturated_read_iops(std::uint32_t bytes) const;
  // Large sequential reads (commands of at least one page, enough of them in
  // flight to cover every plane): the lesser of the array's and the channels'
  // rates, in GB/s (10^9 B/s).
  double saturated_read_bandwidth_gbps() const;
  // Sustained rate at which the buffer drains into the array, in GB/s.
  double saturated_program_bandwidth_gbps() const;

  Location locate(std::uint64_t byte_offset) const;
  // Channel time of `bytes`, the rounding used by every booking.
  std::uint64_t transfer_ps(std::uint64_t bytes) const;
  // Buffer admission time of `bytes`.
  std::uint64_t admit_ps(std::uint64_t bytes) const;

  const FlashParams& params() const { return p_; }
  const FlashStats& stats() const { return stats_; }

 private:
  std::uint64_t clamp_now(std::uint64_t now_ps);
  std::uint32_t die_index(const Location& loc) const {
    return loc.channel * p_.dies_per_channel + loc.die;
  }
  void schedule_program(std::uint64_t now, std::uint64_t ready, std::uint64_t bytes);
  void release_until(std::uint64_t t);
  void check_range(std::uint64_t byte_offset, std::uint32_t bytes) const;

  FlashParams p_;
  double ps_per_byte_;        // channel
  double admit_ps_per_byte_;  // write buffer fill

  std::vector<Timeline> units_;     // array units: planes or dies
  std::vector<Timeline> channels_;  // channel data buses
  std::uint64_t last_now_ = 0;

  // Per-command bookkeeping, valid where the epoch matches the current
  // command: the page a plane already sensed for this command, and the
  // multi-plane operation a die already runs for it.
  std::uint64_t epoch_ = 0;
  std::vector<std::uint64_t> plane_epoch_;
  std::vector<std::uint64_t> plane_page_;
  std::vector<std::uint64_t> plane_ready_;
  std::vector<std::uint64_t> die_epoch_;
  std::vector<std::uint64_t> die_op_ready_;
  std::vector<std::uint64_t> die_planes_used_;  // bit mask

  // Write buffer: admission server, the chunk being filled, and the programs
  // that will free space, as a min-heap on release time.
  struct Pending {
    std::uint64_t release_ps;
    std::uint64_t bytes;
  };
  // Orders pending_ as a min-heap on release time.
  struct ReleaseLater {
    bool operator()(const Pending& a, const Pending& b) const {
      return a.release_ps > b.release_ps;
    }
  };
  std::uint64_t admit_free_ = 0;
  std::uint64_t open_fill_ = 0;
  std::uint64_t buffered_ = 0;  // open chunk plus programs not yet released
  std::uint64_t last_release_ = 0;
  std::vector<Pending> pending_;
  std::uint32_t write_pointer_ = 0;           // next entry of program_order_
  std::vector<std::uint32_t> program_order_;  // array units in striping order

  FlashStats stats_;
};

}  // namespace gpunvme::flash
