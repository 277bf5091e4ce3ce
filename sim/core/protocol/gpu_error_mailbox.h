// The GPU-to-host error mailbox: how a GPU thread whose command completed
// with an error status hands the decision to the host, and how the host
// answers. A GPU thread cannot recover on its own (freezing a queue,
// aborting a command or resetting the controller take admin commands and
// registers only the host driver owns: seed 000), so every error goes to a
// host thread.
//
// - The error ring: GpuErrorRecord entries in pinned host memory. A GPU
//   thread claims position `pos` with a device-scope atomic add on a tail
//   word in GPU memory, writes the record body (bytes 4..31) to entry
//   pos % entries with posted PCIe writes, fences at system scope, and only
//   then writes `sequence` = pos + 1: a host thread that reads that
//   sequence at the entry it expects next sees the whole record. The ring
//   holds one entry per I/O the GPU keeps in flight (threads x iodepth): a
//   thread has at most one record outstanding per I/O (it waits for the
//   verdict), so a claimed entry is always free and the ring needs no flow
//   control.
// - The verdicts: one GpuErrorVerdict per (thread, I/O slot) in GPU memory,
//   at index thread * iodepth + pool_index. The host answers a record with
//   one 8-byte posted write there (a CPU store to the GPU's BAR through a
//   write-combining mapping, as GDRCopy does); the waiting thread watches
//   the word until `sequence` equals its record's.
//
// Plain, trivially copyable, standard layout and little endian like the
// NVMe structures (nvme_entries.h), so that they can be copied byte for byte
// onto simulated or real memory and compiled for CUDA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "sim/core/protocol/portability.h"

namespace gpunvme::nvme {

// One error report, 32 bytes (two per 64 B host cache line).
struct GpuErrorRecord {
  std::uint32_t sequence;       // 0: ring position + 1, written last
  std::uint16_t sqid;           // 4: the command's submission queue
  std::uint16_t cid;            // 6: its command identifier
  std::uint16_t status;         // 8: CQE status field without the phase tag
  std::uint16_t attempt;        // 10: 0 for the first submission, n for the n-th retry
  std::uint32_t thread;         // 12: the requesting GPU thread
  std::uint64_t slba;           // 16: starting LBA
  std::uint32_t verdict_index;  // 24: where the verdict goes (thread * iodepth + pool_index)
  std::uint32_t queue;          // 28: the requester's queue table index
};

// What the host decided.
enum class GpuErrorAction : std::uint16_t {
  None = 0,   // no verdict yet
  Retry = 1,  // submit the command again (a new command: new SQ slot, CID per the scheme)
  Fail = 2,   // give the error status back to the requester
};

// The host's answer to one record, 8 bytes, written in one store.
struct GpuErrorVerdict {
  std::uint32_t sequence;  // 0: the sequence of the record it answers
  std::uint16_t action;    // 4: a GpuErrorAction
  std::uint16_t reserved;  // 6
};

constexpr std::uint32_t kGpuErrorRecordSize = 32;
constexpr std::uint32_t kGpuErrorVerdictSize = 8;
// The record's bytes the GPU writes before the fence (all but `sequence`).
constexpr std::uint32_t kGpuErrorBodyOffset = 4;

static_assert(sizeof(GpuErrorRecord) == kGpuErrorRecordSize, "error record must be 32 bytes");
static_assert(offsetof(GpuErrorRecord, sequence) == 0, "sequence at byte 0");
static_assert(offsetof(GpuErrorRecord, sqid) == 4, "sqid at byte 4");
static_assert(offsetof(GpuErrorRecord, cid) == 6, "cid at byte 6");
static_assert(offsetof(GpuErrorRecord, status) == 8, "status at byte 8");
static_assert(offsetof(GpuErrorRecord, attempt) == 10, "attempt at byte 10");
static_assert(offsetof(GpuErrorRecord, thread) == 12, "thread at byte 12");
static_assert(offsetof(GpuErrorRecord, slba) == 16, "slba at byte 16");
static_assert(offsetof(GpuErrorRecord, verdict_index) == 24, "verdict_index at byte 24");
static_assert(offsetof(GpuErrorRecord, queue) == 28, "queue at byte 28");
static_assert(sizeof(GpuErrorVerdict) == kGpuErrorVerdictSize, "verdict must be 8 bytes");
static_assert(offsetof(GpuErrorVerdict, sequence) == 0, "verdict sequence at byte 0");
static_assert(offsetof(GpuErrorVerdict, action) == 4, "verdict action at byte 4");
static_assert(std::is_trivially_copyable<GpuErrorRecord>::value &&
                  std::is_standard_layout<GpuErrorRecord>::value,
              "error record must be plain data");
static_assert(std::is_trivially_copyable<GpuErrorVerdict>::value &&
                  std::is_standard_layout<GpuErrorVerdict>::value,
              "verdict must be plain data");

}  // namespace gpunvme::nvme
