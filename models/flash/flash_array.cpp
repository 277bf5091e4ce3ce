#include "models/flash/flash_array.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace gpunvme::flash {

namespace {

// Bookings held per resource before its vector must grow: a unit rarely has
// more than a few operations ahead of it, a channel one transfer per
// outstanding page on its dies.
constexpr std::size_t kUnitReserve = 8;
constexpr std::size_t kChannelReserve = 64;
// Upper bound on the programs reserved up front for the write buffer; a larger
// buffer of small chunks grows on demand.
constexpr std::size_t kPendingReserveCap = std::size_t{1} << 20;

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

}  // namespace

FlashArray::FlashArray(const FlashParams& params) : p_(params) {
  p_.validate();
  ps_per_byte_ = 1e12 / p_.channel_bytes_per_s();
  admit_ps_per_byte_ = 1e12 / (p_.write_buffer_gbps * 1e9);

  const std::uint32_t units = p_.array_units();
  // Built in place: a copied Timeline would not keep its reserved storage.
  units_.reserve(units);
  for (std::uint32_t i = 0; i < units; ++i) units_.emplace_back(kUnitReserve);
  channels_.reserve(p_.channels);
  for (std::uint32_t i = 0; i < p_.channels; ++i) channels_.emplace_back(kChannelReserve);

  plane_epoch_.assign(p_.planes(), 0);
  plane_page_.assign(p_.planes(), 0);
  plane_ready_.assign(p_.planes(), 0);
  die_epoch_.assign(p_.dies(), 0);
  die_op_ready_.assign(p_.dies(), 0);
  die_planes_used_.assign(p_.dies(), 0);

  // Programs go round robin over the units in striping order (channel first,
  // then die, then plane), as a log-structured FTL spreads its write stream.
  program_order_.reserve(units);
  const std::uint32_t planes_in_order = p_.independent_plane_reads ? p_.planes_per_die : 1;
  for (std::uint32_t plane = 0; plane < planes_in_order; ++plane) {
    for (std::uint32_t die = 0; die < p_.dies_per_channel; ++die) {
      for (std::uint32_t ch = 0; ch < p_.channels; ++ch) {
        const std::uint32_t d = ch * p_.dies_per_channel + die;
        program_order_.push_back(p_.independent_plane_reads ? d * p_.planes_per_die + plane : d);
      }
    }
  }
  pending_.reserve(std::min<std::uint64_t>(kPendingReserveCap,
                                           p_.write_buffer_bytes / p_.program_chunk_bytes() + 2));

  gc_until_.assign(units, 0);
  if (p_.has_ftl()) {
    ftl_ = std::make_unique<Ftl>(p_.ftl_geometry());
    if (p_.precondition != Precondition::none) {
      ftl_->precondition(p_.precondition == Precondition::steady_state);
    }
  }

  stats_.die_busy_ps.assign(p_.dies(), 0);
  stats_.channel_busy_ps.assign(p_.channels, 0);
}

std::uint64_t FlashArray::clamp_now(std::uint64_t now_ps) {
  last_now_ = std::max(last_now_, now_ps);
  return last_now_;
}

std::uint64_t FlashArray::transfer_ps(std::uint64_t bytes) const {
  return static_cast<std::uint64_t>(std::llround(static_cast<double>(bytes) * ps_per_byte_));
}

std::uint64_t FlashArray::admit_ps(std::uint64_t bytes) const {
  return static_cast<std::uint64_t>(std::llround(static_cast<double>(bytes) * admit_ps_per_byte_));
}

void FlashArray::check_range(std::uint64_t byte_offset, std::uint32_t bytes) const {
  if (byte_offset > p_.capacity_bytes || bytes > p_.capacity_bytes - byte_offset) {
    throw std::out_of_range("flash access past capacity: offset " + std::to_string(byte_offset) +
                            " + " + std::to_string(bytes));
  }
}

Location FlashArray::locate(std::uint64_t byte_offset) const {
  const std::uint64_t unit = byte_offset / p_.stripe_bytes;
  const std::uint64_t within_unit = byte_offset % p_.stripe_bytes;
  Location loc;
  loc.channel = static_cast<std::uint32_t>(unit % p_.channels);
  std::uint64_t rest = unit / p_.channels;
  loc.die = static_cast<std::uint32_t>(rest % p_.dies_per_channel);
  rest /= p_.dies_per_channel;
  loc.plane = static_cast<std::uint32_t>(rest % p_.planes_per_die);
  const std::uint64_t row = rest / p_.planes_per_die;
  // Each plane holds its stripe units back to back.
  loc.page = (row * p_.stripe_bytes + within_unit) / p_.page_bytes;
  return loc;
}

Location FlashArray::where(std::uint64_t pos, std::uint64_t end, std::uint64_t now,
                           std::uint64_t* seg_end, bool* buffered) const {
  const std::uint64_t slot_bytes = p_.mapping_unit_bytes;
  const bool mapped_reads = ftl_ != nullptr && ftl_->allocated();
  *buffered = false;
  if (mapped_reads) {
    const std::uint32_t phys = ftl_->lookup(pos / slot_bytes);
    if (phys != Ftl::kUnmapped) {
      *seg_end = std::min(end, (pos / slot_bytes + 1) * slot_bytes);
      const std::uint32_t unit = ftl_->unit_of(phys);
      const std::uint32_t offset = ftl_->offset_of(phys);
      const std::uint32_t slots_per_chunk =
          p_.program_chunk_bytes() / static_cast<std::uint32_t>(slot_bytes);
      const std::size_t page = phys / slots_per_chunk;
      *buffered = page < page_programmed_at_.size() && page_programmed_at_[page] > now;
      const std::uint32_t slots_per_page = p_.page_bytes / static_cast<std::uint32_t>(slot_bytes);
      Location loc{};
      std::uint32_t d = unit;
      if (p_.independent_plane_reads) {
        d = unit / p_.planes_per_die;
        loc.plane = unit % p_.planes_per_die;
      } else {
        loc.plane = (offset % slots_per_chunk) / slots_per_page;
      }
      loc.channel = d / p_.dies_per_channel;
      loc.die = d % p_.dies_per_channel;
      const std::uint64_t chunks_per_block = ftl_->layout().slots_per_block / slots_per_chunk;
      loc.page = ftl_->block_of(phys) * chunks_per_block + offset / slots_per_chunk;
      return loc;
    }
  }
  // Never written (or trimmed): the striped location. The segment ends at
  // the stripe unit's end or the page's end, whichever comes first, and at
  // the mapping unit's end once some units are mapped elsewhere.
  const std::uint64_t unit_end = (pos / p_.stripe_bytes + 1) * p_.stripe_bytes;
  const std::uint64_t within_unit = pos % p_.stripe_bytes;
  const std::uint64_t plane_offset =
      (pos / p_.stripe_bytes / p_.planes()) * p_.stripe_bytes + within_unit;
  const std::uint64_t page_left = p_.page_bytes - plane_offset % p_.page_bytes;
  *seg_end = std::min({end, unit_end, pos + page_left});
  if (mapped_reads) *seg_end = std::min(*seg_end, (pos / slot_bytes + 1) * slot_bytes);
  return locate(pos);
}

std::uint64_t FlashArray::read(std::uint64_t now_ps, std::uint64_t ready_ps,
                               std::uint64_t byte_offset, std::uint32_t bytes) {
  const std::uint64_t now = clamp_now(now_ps);
  const std::uint64_t ready = std::max(now, ready_ps);
  check_range(byte_offset, bytes);
  ++stats_.read_commands;
  stats_.bytes_read += bytes;
  return read_media(now, ready, byte_offset, bytes);
}

std::uint64_t FlashArray::read_media(std::uint64_t now, std::uint64_t ready,
                                     std::uint64_t byte_offset, std::uint64_t bytes) {
  ++epoch_;
  std::uint64_t done = ready;
  std::uint64_t pos = byte_offset;
  const std::uint64_t end = byte_offset + bytes;
  while (pos < end) {
    std::uint64_t seg_end = end;
    bool buffered = false;
    const Location loc = where(pos, end, now, &seg_end, &buffered);
    if (buffered) {
      // Still in the write buffer: the controller returns it from there.
      ++stats_.buffer_read_hits;
      pos = seg_end;
      continue;
    }

    const std::uint32_t d = die_index(loc);
    const std::uint32_t plane = d * p_.planes_per_die + loc.plane;
    std::uint64_t data_ready;
    if (plane_epoch_[plane] == epoch_ && plane_page_[plane] == loc.page) {
      // This command already sensed the page into the plane's register.
      data_ready = plane_ready_[plane];
    } else {
      const std::uint64_t bit = std::uint64_t{1} << loc.plane;
      if (!p_.independent_plane_reads && die_epoch_[d] == epoch_ &&
          (die_planes_used_[d] & bit) == 0) {
        // Joins the multi-plane read this command already runs on the die.
        data_ready = die_op_ready_[d];
        die_planes_used_[d] |= bit;
      } else {
        const std::uint32_t unit = p_.independent_plane_reads ? plane : d;
        data_ready = units_[unit].book(now, ready, p_.read_ps) + p_.read_ps;
        stats_.die_busy_ps[d] += p_.read_ps;
        die_epoch_[d] = epoch_;
        die_op_ready_[d] = data_ready;
        die_planes_used_[d] = bit;
      }
      ++stats_.page_reads;
      plane_epoch_[plane] = epoch_;
      plane_page_[plane] = loc.page;
      plane_ready_[plane] = data_ready;
    }

    const std::uint64_t xfer = transfer_ps(seg_end - pos);
    const std::uint64_t xfer_start = channels_[loc.channel].book(now, data_ready, xfer);
    stats_.channel_busy_ps[loc.channel] += xfer;
    done = std::max(done, xfer_start + xfer);
    pos = seg_end;
  }
  return done;
}

void FlashArray::release_until(std::uint64_t t) {
  while (!pending_.empty() && pending_.front().release_ps <= t) {
    buffered_ -= pending_.front().bytes;
    std::pop_heap(pending_.begin(), pending_.end(), ReleaseLater{});
    pending_.pop_back();
  }
}

void FlashArray::schedule_program(std::uint64_t now, std::uint64_t data_ready,
                                  std::uint64_t bytes) {
  const std::uint32_t unit = program_order_[write_pointer_];
  write_pointer_ = (write_pointer_ + 1) % static_cast<std::uint32_t>(program_order_.size());
  const std::uint32_t d = p_.independent_plane_reads ? unit / p_.planes_per_die : unit;
  const std::uint32_t ch = d / p_.dies_per_channel;
  // The program waits for the old data of a read-modify-write and for the
  // unit's foreground garbage collection.
  std::uint64_t ready = std::max(data_ready, open_chunk_ready_);
  if (gc_until_[unit] > ready) {
    stats_.gc_program_wait_ps += gc_until_[unit] - ready;
    ready = gc_until_[unit];
  }

  // Data crosses the channel into the page register(s), then the array
  // programs it.
  const std::uint64_t xfer = transfer_ps(bytes);
  const std::uint64_t xfer_end = channels_[ch].book(now, ready, xfer) + xfer;
  stats_.channel_busy_ps[ch] += xfer;
  const std::uint64_t prog_end = units_[unit].book(now, xfer_end, p_.program_ps) + p_.program_ps;
  stats_.die_busy_ps[d] += p_.program_ps;
  stats_.page_programs += ceil_div(bytes, p_.page_bytes);

  // The FTL pages this program carries are readable from the array once it
  // ends.
  while (waiting_head_ < waiting_pages_.size() &&
         waiting_pages_[waiting_head_].program == programs_scheduled_) {
    page_programmed_at_[waiting_pages_[waiting_head_].page] = prog_end;
    ++waiting_head_;
  }
  if (waiting_head_ == waiting_pages_.size()) {
    waiting_pages_.clear();
    waiting_head_ = 0;
  }
  ++programs_scheduled_;
  pending_.push_back(Pending{prog_end, bytes});
  std::push_heap(pending_.begin(), pending_.end(), ReleaseLater{});
  last_release_ = std::max(last_release_, prog_end);
}

void FlashArray::book_gc(std::uint64_t now, const GcJob& job) {
  const std::uint32_t unit = job.unit;
  const std::uint32_t d = p_.independent_plane_reads ? unit / p_.planes_per_die : unit;
  const std::uint32_t ch = d / p_.dies_per_channel;
  const std::uint64_t chunk = p_.program_chunk_bytes();
  const std::uint64_t moved_bytes = std::uint64_t{job.moved_slots} * p_.mapping_unit_bytes;
  const std::uint64_t ops = ceil_div(moved_bytes, chunk);
  const std::uint64_t pages_per_op = chunk / p_.page_bytes;
  // The victim's valid pages are read, cross the channel to the controller
  // (ECC) and back, and are programmed at the unit's frontier; then the
  // victim is erased. All on the victim's unit, one step after the other.
  std::uint64_t t = now;
  std::uint64_t busy = 0;
  if (ops > 0) {
    const std::uint64_t reading = ops * p_.read_ps;
    t = units_[unit].book(now, t, reading) + reading;
    const std::uint64_t xfer = transfer_ps(2 * moved_bytes);
    t = channels_[ch].book(now, t, xfer) + xfer;
    stats_.channel_busy_ps[ch] += xfer;
    const std::uint64_t programming = ops * p_.program_ps;
    t = units_[unit].book(now, t, programming) + programming;
    busy += reading + programming;
    stats_.gc_page_reads += ops * pages_per_op;
    stats_.gc_page_programs += ops * pages_per_op;
    stats_.page_reads += ops * pages_per_op;
    stats_.page_programs += ops * pages_per_op;
  }
  const auto erase = static_cast<std::uint64_t>(
      std::llround(static_cast<double>(p_.erase_ps) * ftl_->erase_scale()));
  t = units_[unit].book(now, t, erase) + erase;
  busy += erase;
  stats_.die_busy_ps[d] += busy;
  stats_.gc_busy_ps += busy;
  if (job.foreground) gc_until_[unit] = std::max(gc_until_[unit], t);
}

// Maps each mapping unit the write touches in the FTL, at the unit whose
// program will carry its bytes, and books the garbage collection that
// triggers.
void FlashArray::place_in_ftl(std::uint64_t now, std::uint64_t byte_offset, std::uint32_t bytes) {
  const std::uint64_t slot_bytes = p_.mapping_unit_bytes;
  const std::uint64_t chunk = p_.program_chunk_bytes();
  const std::uint64_t slots_per_chunk = chunk / slot_bytes;
  const std::uint64_t first = byte_offset / slot_bytes;
  const std::uint64_t last = (byte_offset + bytes - 1) / slot_bytes;
  for (std::uint64_t slot = first; slot <= last; ++slot) {
    // Whole units enter the buffer (see write()).
    const std::uint64_t at = (slot - first) * slot_bytes;
    const std::uint64_t chunk_index = (open_fill_ + at) / chunk;
    const std::uint32_t unit =
        program_order_[(write_pointer_ + chunk_index) % program_order_.size()];
    gc_jobs_.clear();
    ftl_->write(slot, unit, units_[unit].last_end() <= now, gc_jobs_);
    for (const GcJob& job : gc_jobs_) book_gc(now, job);
    if (page_programmed_at_.empty()) {
      const FtlLayout& l = ftl_->layout();
      page_programmed_at_.assign(
          std::uint64_t{l.units} * l.blocks_per_unit * l.slots_per_block / slots_per_chunk, 0);
    }
    const auto page = static_cast<std::uint32_t>(ftl_->lookup(slot) / slots_per_chunk);
    page_programmed_at_[page] = kNotProgrammed;
    const std::uint64_t program = programs_scheduled_ + chunk_index;
    if (waiting_pages_.empty() || waiting_pages_.back().page != page ||
        waiting_pages_.back().program != program) {
      waiting_pages_.push_back(WaitingPage{program, page});
    }
  }
}

void FlashArray::trim(std::uint64_t byte_offset, std::uint64_t bytes) {
  if (ftl_ == nullptr || bytes == 0) return;
  const std::uint64_t slot_bytes = p_.mapping_unit_bytes;
  const std::uint64_t first = (byte_offset + slot_bytes - 1) / slot_bytes;
  const std::uint64_t end = std::min(byte_offset + bytes, p_.capacity_bytes) / slot_bytes;
  if (end <= first) return;
  // The model holds logical_slots slots, each standing for every logical
  // slot congruent to it: a longer range trims each once.
  const std::uint64_t count = std::min(end - first, ftl_->layout().logical_slots);
  for (std::uint64_t i = 0; i < count; ++i) ftl_->trim(first + i);
}

std::uint64_t FlashArray::write(std::uint64_t now_ps, std::uint64_t byte_offset,
                                std::uint32_t bytes) {
  const std::uint64_t now = clamp_now(now_ps);
  check_range(byte_offset, bytes);
  ++stats_.write_commands;
  stats_.bytes_written += bytes;
  if (bytes == 0) return std::max(now, admit_free_);

  // A mapping unit the write covers only in part is read first if it holds
  // data (on XPoint, written in place, it always does); the program that
  // carries it waits for the read.
  const std::uint64_t slot_bytes = p_.mapping_unit_bytes;
  auto read_old = [&](std::uint64_t slot) {
    const std::uint64_t start = slot * slot_bytes;
    if (byte_offset <= start && byte_offset + bytes >= start + slot_bytes) return;
    if (ftl_ != nullptr && ftl_->lookup(slot) == Ftl::kUnmapped) return;
    ++stats_.rmw_reads;
    const std::uint64_t len = std::min(slot_bytes, p_.capacity_bytes - start);
    open_chunk_ready_ = std::max(open_chunk_ready_, read_media(now, now, start, len));
  };
  const std::uint64_t first_slot = byte_offset / slot_bytes;
  const std::uint64_t last_slot = (byte_offset + bytes - 1) / slot_bytes;
  stats_.host_slots_written += last_slot - first_slot + 1;
  read_old(first_slot);
  if (last_slot != first_slot) read_old(last_slot);
  if (ftl_ != nullptr) place_in_ftl(now, byte_offset, bytes);

  // The buffer holds, and the array programs, whole mapping units: the
  // host's bytes merged into the old (or, never written, blank) rest of each
  // unit. Admission runs at the host's bytes.
  const std::uint64_t media_bytes = (last_slot - first_slot + 1) * slot_bytes;
  const std::uint64_t chunk = p_.program_chunk_bytes();
  std::uint64_t cursor = std::max(now, admit_free_);
  std::uint64_t remaining = media_bytes;
  while (remaining > 0) {
    const std::uint64_t piece = std::min(remaining, chunk - open_fill_);
    release_until(cursor);
    if (p_.write_buffer_bytes - buffered_ < piece) {
      ++stats_.buffer_full_waits;
      // Wait for the earliest programs to finish until the piece fits. The
      // open chunk is never larger than the buffer, so programs exist.
      while (p_.write_buffer_bytes - buffered_ < piece) {
        if (pending_.empty()) throw std::logic_error("flash: write buffer accounting broken");
        cursor = std::max(cursor, pending_.front().release_ps);
        release_until(cursor);
      }
    }
    cursor += admit_ps(media_bytes == bytes ? piece : piece * bytes / media_bytes);
    buffered_ += piece;
    open_fill_ += piece;
    stats_.buffer_high_water_bytes = std::max(stats_.buffer_high_water_bytes, buffered_);
    if (open_fill_ == chunk) {
      // The chunk's bytes stay counted in buffered_ until its program ends.
      schedule_program(now, cursor, chunk);
      open_fill_ = 0;
    }
    remaining -= piece;
  }
  if (open_fill_ == 0) open_chunk_ready_ = 0;
  admit_free_ = cursor;
  return cursor;
}

std::uint64_t FlashArray::flush(std::uint64_t now_ps, std::uint64_t ready_ps) {
  const std::uint64_t now = clamp_now(now_ps);
  const std::uint64_t ready = std::max(now, ready_ps);
  if (open_fill_ > 0) {
    schedule_program(now, std::max(ready, admit_free_), open_fill_);
    open_fill_ = 0;
    open_chunk_ready_ = 0;
  }
  return std::max(ready, last_release_);
}

double FlashArray::saturated_read_iops(std::uint32_t bytes) const {
  if (bytes == 0) return 0.0;
  // Pages an aligned read of `bytes` touches, one per segment.
  const std::uint64_t segment = std::min(p_.stripe_bytes, p_.page_bytes);
  const std::uint64_t pages = ceil_div(bytes, segment);
  // Array operations per read: one per page with independent planes; without,
  // pages of one command that share a die but not a plane merge into one
  // multi-plane read. Consecutive pages go round robin over the dies.
  std::uint64_t ops = pages;
  if (!p_.independent_plane_reads) {
    const std::uint64_t dies = p_.dies();
    const std::uint64_t q = pages / dies;
    const std::uint64_t r = pages % dies;
    ops = r * ceil_div(q + 1, p_.planes_per_die) + (dies - r) * ceil_div(q, p_.planes_per_die);
  }
  const double read_s = static_cast<double>(p_.read_ps) * 1e-12;
  const double array_iops = p_.array_units() / (static_cast<double>(ops) * read_s);
  const double channel_iops = p_.channels * p_.channel_bytes_per_s() / bytes;
  return std::min(array_iops, channel_iops);
}

double FlashArray::saturated_read_bandwidth_gbps() const {
  const double read_s = static_cast<double>(p_.read_ps) * 1e-12;
  // Every plane senses a full page per tR, independently or in a multi-plane
  // read, and every sensed byte is used.
  const double array_bps = static_cast<double>(p_.planes()) * p_.page_bytes / read_s;
  const double channel_bps = p_.channels * p_.channel_bytes_per_s();
  return std::min(array_bps, channel_bps) / 1e9;
}

double FlashArray::saturated_program_bandwidth_gbps() const {
  const double program_s = static_cast<double>(p_.program_ps) * 1e-12;
  const double array_bps =
      static_cast<double>(p_.array_units()) * p_.program_chunk_bytes() / program_s;
  const double channel_bps = p_.channels * p_.channel_bytes_per_s();
  return std::min(array_bps, channel_bps) / 1e9;
}

}  // namespace gpunvme::flash

namespace gpunvme::flash {

nlohmann::json FlashArray::write_path_statistics() const {
  const double ps_per_ns = 1e3;
  nlohmann::json j = {
      {"mapping_unit_bytes", p_.mapping_unit_bytes},
      {"host_slots_written", stats_.host_slots_written},
      {"rmw_reads", stats_.rmw_reads},
      {"buffer_full_waits", stats_.buffer_full_waits},
      {"buffer_high_water_bytes", stats_.buffer_high_water_bytes},
  };
  if (ftl_ == nullptr) {
    // Written in place: every host slot is programmed once.
    j["ftl"] = false;
    j["media_slots_programmed"] = stats_.host_slots_written;
    j["write_amplification"] = stats_.host_slots_written == 0 ? 0.0 : 1.0;
    return j;
  }
  const FtlStats& f = ftl_->stats();
  const FtlLayout& l = ftl_->layout();
  j["ftl"] = true;
  j["gc_policy"] = to_string(p_.gc_policy);
  j["gc_slots_moved"] = f.gc_slots_moved;
  j["media_slots_programmed"] = f.host_slots_written + f.gc_slots_moved;
  j["write_amplification"] = f.write_amplification();
  j["erases"] = f.erases;
  j["foreground_gc"] = f.foreground_gc;
  j["background_gc"] = f.background_gc;
  j["gc_cross_unit_victims"] = f.gc_cross_unit_victims;
  j["trimmed_slots"] = f.trimmed_slots;
  j["buffer_read_hits"] = stats_.buffer_read_hits;
  j["gc_page_reads"] = stats_.gc_page_reads;
  j["gc_page_programs"] = stats_.gc_page_programs;
  j["gc_busy_ns"] = static_cast<double>(stats_.gc_busy_ps) / ps_per_ns;
  j["gc_program_wait_ns"] = static_cast<double>(stats_.gc_program_wait_ps) / ps_per_ns;
  j["layout"] = {{"units", l.units},
                 {"blocks_per_unit", l.blocks_per_unit},
                 {"slots_per_block", l.slots_per_block},
                 {"real_slots_per_block", l.real_slots_per_block},
                 {"logical_slots", l.logical_slots},
                 {"sampled", l.sampled}};
  const FtlStats& pre = ftl_->preconditioning();
  j["precondition"] = {{"kind", to_string(p_.precondition)},
                       {"host_slots_written", pre.host_slots_written},
                       {"gc_slots_moved", pre.gc_slots_moved},
                       {"write_amplification", pre.write_amplification()},
                       {"steady_write_amplification", ftl_->preconditioned_write_amplification()}};
  return j;
}

}  // namespace gpunvme::flash
