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

std::uint64_t FlashArray::read(std::uint64_t now_ps, std::uint64_t ready_ps,
                               std::uint64_t byte_offset, std::uint32_t bytes) {
  const std::uint64_t now = clamp_now(now_ps);
  const std::uint64_t ready = std::max(now, ready_ps);
  check_range(byte_offset, bytes);
  ++stats_.read_commands;
  stats_.bytes_read += bytes;
  ++epoch_;

  std::uint64_t done = ready;
  std::uint64_t pos = byte_offset;
  const std::uint64_t end = byte_offset + bytes;
  while (pos < end) {
    const Location loc = locate(pos);
    // The segment ends at the stripe unit's end or the page's end, whichever
    // comes first.
    const std::uint64_t unit_end = (pos / p_.stripe_bytes + 1) * p_.stripe_bytes;
    const std::uint64_t within_unit = pos % p_.stripe_bytes;
    const std::uint64_t plane_offset =
        (pos / p_.stripe_bytes / p_.planes()) * p_.stripe_bytes + within_unit;
    const std::uint64_t page_left = p_.page_bytes - plane_offset % p_.page_bytes;
    const std::uint64_t seg_end = std::min({end, unit_end, pos + page_left});

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

void FlashArray::schedule_program(std::uint64_t now, std::uint64_t ready, std::uint64_t bytes) {
  const std::uint32_t unit = program_order_[write_pointer_];
  write_pointer_ = (write_pointer_ + 1) % static_cast<std::uint32_t>(program_order_.size());
  const std::uint32_t d = p_.independent_plane_reads ? unit / p_.planes_per_die : unit;
  const std::uint32_t ch = d / p_.dies_per_channel;

  // Data crosses the channel into the page register(s), then the array
  // programs it.
  const std::uint64_t xfer = transfer_ps(bytes);
  const std::uint64_t xfer_end = channels_[ch].book(now, ready, xfer) + xfer;
  stats_.channel_busy_ps[ch] += xfer;
  const std::uint64_t prog_end = units_[unit].book(now, xfer_end, p_.program_ps) + p_.program_ps;
  stats_.die_busy_ps[d] += p_.program_ps;
  stats_.page_programs += ceil_div(bytes, p_.page_bytes);

  pending_.push_back(Pending{prog_end, bytes});
  std::push_heap(pending_.begin(), pending_.end(), ReleaseLater{});
  last_release_ = std::max(last_release_, prog_end);
}

std::uint64_t FlashArray::write(std::uint64_t now_ps, std::uint64_t byte_offset,
                                std::uint32_t bytes) {
  const std::uint64_t now = clamp_now(now_ps);
  check_range(byte_offset, bytes);
  ++stats_.write_commands;
  stats_.bytes_written += bytes;

  const std::uint64_t chunk = p_.program_chunk_bytes();
  std::uint64_t cursor = std::max(now, admit_free_);
  std::uint64_t remaining = bytes;
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
    cursor += admit_ps(piece);
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
  admit_free_ = cursor;
  return cursor;
}

std::uint64_t FlashArray::flush(std::uint64_t now_ps, std::uint64_t ready_ps) {
  const std::uint64_t now = clamp_now(now_ps);
  const std::uint64_t ready = std::max(now, ready_ps);
  if (open_fill_ > 0) {
    schedule_program(now, std::max(ready, admit_free_), open_fill_);
    open_fill_ = 0;
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
