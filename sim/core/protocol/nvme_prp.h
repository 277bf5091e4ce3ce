// Physical Region Page (PRP) entries and lists: host-side builder and
// controller-side walker.
//
// NVM Express Base Specification 1.4, section 4.3 "Physical Region Page Entry
// and List", and the PRP Entry 1/2 definitions of the common command format
// (section 4.2):
//   * A PRP entry is a 64-bit memory page address plus an offset in bits n:2
//     (n = log2(page size) - 1); bits 1:0 are zero, i.e. dword aligned.
//   * Only the first PRP entry of a command (PRP1) may carry a non-zero
//     offset. Every other data entry is page aligned; a non-zero offset there
//     is "PRP Offset Invalid".
//   * PRP2 is unused if the transfer stays within PRP1's page; a data pointer
//     to the second page if the transfer touches exactly two pages; otherwise a
//     PRP List pointer.
//   * A PRP List fills the rest of a memory page with 8-byte entries. The list
//     pointer in PRP2 may carry an offset (the list then starts there); when
//     more entries are needed than fit before the end of the page, the last
//     entry of that page points to the next list page, which is page aligned.
//
// Memory page size is CC.MPS: 2^(12 + MPS), 4 KiB to 128 MiB.
#pragma once

#include <cstdint>

#include "sim/core/protocol/nvme_status.h"
#include "sim/core/protocol/portability.h"

namespace gpunvme::nvme {

constexpr std::uint64_t kPrpEntrySize = 8;
constexpr std::uint64_t kMinPageSize = 4096;
constexpr std::uint64_t kMaxPageSize = 1ull << 27;

GPUNVME_HD constexpr bool valid_page_size(std::uint64_t page_size) {
  return page_size >= kMinPageSize && page_size <= kMaxPageSize &&
         (page_size & (page_size - 1)) == 0;
}

GPUNVME_HD constexpr std::uint64_t page_offset(std::uint64_t addr, std::uint64_t page_size) {
  return addr & (page_size - 1);
}

GPUNVME_HD constexpr std::uint64_t page_base(std::uint64_t addr, std::uint64_t page_size) {
  return addr & ~(page_size - 1);
}

// Number of PRP data entries (PRP1 included) a transfer of `length` bytes
// starting at `addr` needs: the number of memory pages it touches. Zero for a
// zero-length transfer.
GPUNVME_HD constexpr std::uint64_t prp_entry_count(std::uint64_t addr, std::uint64_t length,
                                                   std::uint64_t page_size) {
  return length == 0 ? 0 : (page_offset(addr, page_size) + length + page_size - 1) / page_size;
}

// Data entries that live in PRP lists: none for one or two pages (PRP1 and
// PRP2 suffice), otherwise all but PRP1.
GPUNVME_HD constexpr std::uint64_t prp_list_entry_count(std::uint64_t addr, std::uint64_t length,
                                                        std::uint64_t page_size) {
  return prp_entry_count(addr, length, page_size) <= 2
             ? 0
             : prp_entry_count(addr, length, page_size) - 1;
}

// PRP list pages needed to hold `entries` list entries when the first list
// starts at byte offset `first_list_offset` within its page (a multiple of 8)
// and later list pages are whole pages. A page that is not the last one gives
// its final slot to the chain pointer.
GPUNVME_HD constexpr std::uint64_t prp_list_pages_for_entries(std::uint64_t entries,
                                                              std::uint64_t page_size,
                                                              std::uint64_t first_list_offset = 0) {
  if (entries == 0) return 0;
  const std::uint64_t first_slots = (page_size - first_list_offset) / kPrpEntrySize;
  if (entries <= first_slots) return 1;
  // The first page holds first_slots - 1 data entries plus a chain pointer;
  // each further page holds slots - 1 entries plus a chain pointer, except the
  // last, which may use all of its slots.
  const std::uint64_t slots = page_size / kPrpEntrySize;
  const std::uint64_t after_first = entries - (first_slots - 1);
  if (after_first <= slots) return 2;
  const std::uint64_t beyond_last = after_first - slots;
  return 2 + (beyond_last + (slots - 2)) / (slots - 1);
}

// PRP list pages a transfer needs (page-aligned first list unless told
// otherwise).
GPUNVME_HD constexpr std::uint64_t prp_list_pages_needed(std::uint64_t addr, std::uint64_t length,
                                                         std::uint64_t page_size,
                                                         std::uint64_t first_list_offset = 0) {
  return prp_list_pages_for_entries(prp_list_entry_count(addr, length, page_size), page_size,
                                    first_list_offset);
}

// ---------------------------------------------------------------------------
// Host side: build PRP1/PRP2 and the PRP lists
// ---------------------------------------------------------------------------

enum class PrpBuildError : std::uint8_t {
  None = 0,
  InvalidPageSize,     // not a power of two in [4 KiB, 128 MiB]
  MisalignedBuffer,    // buffer address not dword aligned (PRP1 bits 1:0)
  MisalignedListPage,  // first list not qword aligned, or a later one not page aligned
  NotEnoughListPages,  // fewer list pages supplied than prp_list_pages_needed()
};

struct PrpBuildResult {
  PrpBuildError error;
  std::uint64_t prp1;
  std::uint64_t prp2;
  std::uint32_t list_pages_used;
  std::uint64_t list_entries_written;  // data entries plus chain pointers

  GPUNVME_HD constexpr bool ok() const { return error == PrpBuildError::None; }
};

// Describes the buffer [buffer, buffer + length) with PRPs. `list_pages`
// holds `num_list_pages` addresses of caller-owned memory for PRP lists (the
// first may start at a qword-aligned offset within its page; the rest must be
// page aligned). PRP list entries are stored through
// `write_entry(uint64_t address, uint64_t value)`. Nothing is written unless
// the whole description fits.
GPUNVME_EXEC_CHECK_DISABLE
template <typename WriteEntry>
GPUNVME_HD PrpBuildResult build_prp(std::uint64_t buffer, std::uint64_t length,
                                    std::uint64_t page_size, const std::uint64_t* list_pages,
                                    std::uint32_t num_list_pages, WriteEntry&& write_entry) {
  PrpBuildResult r{PrpBuildError::None, 0, 0, 0, 0};
  if (!valid_page_size(page_size)) {
    r.error = PrpBuildError::InvalidPageSize;
    return r;
  }
  if ((buffer & 0x3u) != 0) {
    r.error = PrpBuildError::MisalignedBuffer;
    return r;
  }
  r.prp1 = buffer;
  const std::uint64_t pages = prp_entry_count(buffer, length, page_size);
  if (pages <= 1) return r;
  // Every page after the first starts on a page boundary.
  std::uint64_t next_data = page_base(buffer, page_size) + page_size;
  if (pages == 2) {
    r.prp2 = next_data;
    return r;
  }

  const std::uint64_t entries = pages - 1;
  if (num_list_pages == 0 || list_pages == nullptr) {
    r.error = PrpBuildError::NotEnoughListPages;
    return r;
  }
  if ((list_pages[0] & (kPrpEntrySize - 1)) != 0) {
    r.error = PrpBuildError::MisalignedListPage;
    return r;
  }
  const std::uint64_t first_offset = page_offset(list_pages[0], page_size);
  const std::uint64_t needed = prp_list_pages_for_entries(entries, page_size, first_offset);
  if (needed > num_list_pages) {
    r.error = PrpBuildError::NotEnoughListPages;
    return r;
  }
  for (std::uint64_t i = 1; i < needed; ++i) {
    if (page_offset(list_pages[i], page_size) != 0) {
      r.error = PrpBuildError::MisalignedListPage;
      return r;
    }
  }

  std::uint32_t page_index = 0;
  std::uint64_t slot_addr = list_pages[0];
  std::uint64_t slots_left = (page_size - first_offset) / kPrpEntrySize;
  std::uint64_t remaining = entries;
  while (remaining > 0) {
    if (slots_left == 1 && remaining > 1) {
      // Last slot of a full list page: chain to the next list page.
      ++page_index;
      write_entry(slot_addr, list_pages[page_index]);
      ++r.list_entries_written;
      slot_addr = list_pages[page_index];
      slots_left = page_size / kPrpEntrySize;
      continue;
    }
    write_entry(slot_addr, next_data);
    ++r.list_entries_written;
    next_data += page_size;
    slot_addr += kPrpEntrySize;
    --slots_left;
    --remaining;
  }
  r.prp2 = list_pages[0];
  r.list_pages_used = page_index + 1;
  return r;
}

// ---------------------------------------------------------------------------
// Controller side: walk PRP1/PRP2 and the lists into data segments
// ---------------------------------------------------------------------------

// Resolves the data pointer of a command moving `length` bytes into data
// segments, in transfer order, through `on_segment(uint64_t address,
// uint64_t bytes)`: one segment per PRP entry, never crossing a page boundary,
// together covering exactly `length` bytes. PRP list entries are fetched with
// `read_entry(uint64_t address) -> uint64_t`, in list order, so a timed model
// can count and batch the list reads.
//
// Returns Success, or PrpOffsetInvalid if:
//   * PRP1 is not dword aligned (bits 1:0 set; the specification allows the
//     controller to report this rather than ignore the bits),
//   * PRP2 used as a data pointer has a non-zero page offset,
//   * PRP2 used as a list pointer is not qword aligned,
//   * any list entry (data pointer or chain pointer) has a non-zero offset.
// Segments already delivered before an error stay delivered; a controller
// completes the command with the error and discards them.
// An invalid page size (a controller misconfiguration, not a host error)
// returns InternalError.
GPUNVME_EXEC_CHECK_DISABLE
template <typename ReadEntry, typename OnSegment>
GPUNVME_HD Status walk_prp(std::uint64_t prp1, std::uint64_t prp2, std::uint64_t length,
                           std::uint64_t page_size, ReadEntry&& read_entry,
                           OnSegment&& on_segment) {
  if (!valid_page_size(page_size)) return Status::InternalError;
  if (length == 0) return Status::Success;
  if ((prp1 & 0x3u) != 0) return Status::PrpOffsetInvalid;

  const std::uint64_t first = page_size - page_offset(prp1, page_size);
  const std::uint64_t first_len = length < first ? length : first;
  on_segment(prp1, first_len);
  std::uint64_t remaining = length - first_len;
  if (remaining == 0) return Status::Success;

  if (remaining <= page_size) {
    // Exactly two pages: PRP2 is the second data page.
    if (page_offset(prp2, page_size) != 0) return Status::PrpOffsetInvalid;
    on_segment(prp2, remaining);
    return Status::Success;
  }

  // PRP2 is a list pointer.
  if ((prp2 & (kPrpEntrySize - 1)) != 0) return Status::PrpOffsetInvalid;
  std::uint64_t slot_addr = prp2;
  std::uint64_t slots_left = (page_size - page_offset(prp2, page_size)) / kPrpEntrySize;
  while (remaining > 0) {
    const std::uint64_t entry = read_entry(slot_addr);
    if (slots_left == 1 && remaining > page_size) {
      // More than one data entry still to come and this is the last slot of
      // the list page: it is a pointer to the next list page.
      if (page_offset(entry, page_size) != 0) return Status::PrpOffsetInvalid;
      slot_addr = entry;
      slots_left = page_size / kPrpEntrySize;
      continue;
    }
    if (page_offset(entry, page_size) != 0) return Status::PrpOffsetInvalid;
    const std::uint64_t seg = remaining < page_size ? remaining : page_size;
    on_segment(entry, seg);
    remaining -= seg;
    slot_addr += kPrpEntrySize;
    --slots_left;
  }
  return Status::Success;
}

}  // namespace gpunvme::nvme
