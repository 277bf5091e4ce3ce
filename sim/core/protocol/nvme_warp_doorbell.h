// Warp doorbells: warp-aware multi-command submission, a proposed NVMe
// extension for GPU hosts (seed 003, enhancement 2: "warp_submit(sq_base,
// warp_commands[32])" in place of one tail doorbell per command or per
// ticket-ordered batch). Nothing here is in NVMe 1.4.
//
// An I/O SQ created with Create I/O SQ CDW11 bit 3 (WDB, reserved in 1.4;
// make_create_io_sq's `warp_doorbells`) takes a second form of SQ tail
// doorbell value, which names a run of entries instead of a new tail:
//
//   bit 31      WARP: 1 = this layout (a plain tail value has bit 31 clear:
//               the largest tail is 65,535)
//   bits 30:21  reserved, 0
//   bits 20:16  count - 1: the run holds 1..32 entries (one warp's)
//   bits 15:0   the SQ slot of the run's first entry
//
// The run's entries are filled and made visible before the write, as for a
// tail doorbell. Runs may arrive in any order: the controller keeps the runs
// announced beyond its tail and moves the tail over each one that starts
// there, so the host need not order its warps' doorbells (no turn counter, no
// wait for an earlier warp). The controller fetches up to 32 entries of such
// a queue in one read (one warp's 2 KiB), whatever its sq_fetch_burst.
#pragma once

#include <cstdint>

#include "sim/core/protocol/portability.h"

namespace gpunvme::nvme {

constexpr std::uint32_t kWarpDoorbellFlag = 1u << 31;
constexpr std::uint32_t kWarpDoorbellMaxRun = 32;
constexpr std::uint32_t kWarpDoorbellCountShift = 16;
constexpr std::uint32_t kWarpDoorbellCountMask = 0x1Fu;
constexpr std::uint32_t kWarpDoorbellSlotMask = 0xFFFFu;
// Create I/O SQ CDW11 bit 3: the queue takes warp doorbells.
constexpr std::uint32_t kCreateSqWarpDoorbellBit = 1u << 3;

struct WarpDoorbell {
  std::uint32_t first_slot;
  std::uint32_t count;  // 1..32
};

// The doorbell value announcing `count` (1..32) entries from `first_slot`.
GPUNVME_HD constexpr std::uint32_t encode_warp_doorbell(std::uint32_t first_slot,
                                                        std::uint32_t count) {
  return kWarpDoorbellFlag | (((count - 1u) & kWarpDoorbellCountMask) << kWarpDoorbellCountShift) |
         (first_slot & kWarpDoorbellSlotMask);
}

GPUNVME_HD constexpr bool is_warp_doorbell(std::uint32_t value) {
  return (value & kWarpDoorbellFlag) != 0;
}

// Whether the reserved bits 30:21 are clear (a value with any set is refused).
GPUNVME_HD constexpr bool warp_doorbell_reserved_clear(std::uint32_t value) {
  return (value & 0x7FE00000u) == 0;
}

GPUNVME_HD constexpr WarpDoorbell decode_warp_doorbell(std::uint32_t value) {
  return WarpDoorbell{value & kWarpDoorbellSlotMask,
                      ((value >> kWarpDoorbellCountShift) & kWarpDoorbellCountMask) + 1u};
}

static_assert(encode_warp_doorbell(0, 1) == 0x80000000u, "one entry at slot 0");
static_assert(encode_warp_doorbell(1000, 32) == 0x801F03E8u, "32 entries at slot 1000");
static_assert(decode_warp_doorbell(0x801F03E8u).first_slot == 1000, "slot: bits 15:0");
static_assert(decode_warp_doorbell(0x801F03E8u).count == 32, "count - 1: bits 20:16");
static_assert(!is_warp_doorbell(65535u), "every plain tail value has bit 31 clear");
static_assert(warp_doorbell_reserved_clear(encode_warp_doorbell(65535, 32)),
              "the encoder sets no reserved bit");

}  // namespace gpunvme::nvme
