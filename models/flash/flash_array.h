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
// die, the channel time of the bytes moved, LBA striping, a write buffer that
// acknowledges writes at its fill rate and drains by programming pages, and
// on NAND a page-mapped FTL (models/flash/ftl.h): writes go to the frontier
// of the unit the program order gives, reads of written data go where the
// map says (never-written data is read at its striped location), and garbage
// collection's reads, programs and erases are booked on the units, ahead of
// the host programs they hold up. A write covering part of a written mapping
// unit reads the unit first (read-modify-write); its program waits for the
// read. Reads of data whose program has not ended are served from the write
// buffer (NAND), without array or channel time. What is not: the
// controller's own command processing (the NVMe controller model owns that
// cap).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "models/flash/flash_params.h"
#include "models/flash/ftl.h"
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
  // Write path: read-modify-write reads of partly written mapping units,
  // pages read and programmed by garbage collection (also in page_reads and
  // page_programs), array time garbage collection booked, and the time host
  // programs waited behind foreground garbage collection.
  std::uint64_t host_slots_written = 0;  // mapping units host writes touched
  std::uint64_t rmw_reads = 0;
  std::uint64_t buffer_read_hits = 0;  // read segments served from the write buffer
  std::uint64_t gc_page_reads = 0;
  std::uint64_t gc_page_programs = 0;
  std::uint64_t gc_busy_ps = 0;
  std::uint64_t gc_program_wait_ps = 0;
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

  // Deallocates the mapping units that lie wholly inside the range (Dataset
  // Management, Deallocate): later reads find no data there and garbage
  // collection no longer moves them. No array time. XPoint: nothing to do.
  void trim(std::uint64_t byte_offset, std::uint64_t bytes);

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
  // The write path's figures for a run's results: host and media writes,
  // write amplification, garbage collection, read-modify-write, trim, the
  // FTL's layout and the preconditioning done before the run.
  nlohmann::json write_path_statistics() const;
  // The FTL (NAND), or nullptr (XPoint).
  const Ftl* ftl() const { return ftl_.get(); }

 private:
  std::uint64_t clamp_now(std::uint64_t now_ps);
  std::uint32_t die_index(const Location& loc) const {
    return loc.channel * p_.dies_per_channel + loc.die;
  }
  void schedule_program(std::uint64_t now, std::uint64_t ready, std::uint64_t bytes);
  std::uint64_t read_media(std::uint64_t now, std::uint64_t ready, std::uint64_t byte_offset,
                           std::uint64_t bytes);
  // Where the byte at `pos` lives, and the end of the segment that shares
  // its page (at most `end`).
  // `buffered`: the data is in the write buffer, its program not ended.
  Location where(std::uint64_t pos, std::uint64_t end, std::uint64_t now, std::uint64_t* seg_end,
                 bool* buffered) const;
  void place_in_ftl(std::uint64_t now, std::uint64_t byte_offset, std::uint32_t bytes);
  void book_gc(std::uint64_t now, const GcJob& job);
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
  // Read-modify-write reads the open chunk's program waits for.
  std::uint64_t open_chunk_ready_ = 0;

  std::unique_ptr<Ftl> ftl_;
  std::vector<std::uint64_t> gc_until_;  // per unit: end of its foreground GC
  std::vector<GcJob> gc_jobs_;
  // Per flash page (program chunk) of the FTL: when its program ends, or
  // kNotProgrammed while its chunk waits in the buffer; and the pages of
  // chunks not yet scheduled, by the sequence number of their program.
  static constexpr std::uint64_t kNotProgrammed = ~std::uint64_t{0};
  std::vector<std::uint64_t> page_programmed_at_;
  struct WaitingPage {
    std::uint64_t program;
    std::uint32_t page;
  };
  std::vector<WaitingPage> waiting_pages_;  // FIFO from waiting_head_
  std::size_t waiting_head_ = 0;
  std::uint64_t programs_scheduled_ = 0;

  FlashStats stats_;
};

}  // namespace gpunvme::flash
