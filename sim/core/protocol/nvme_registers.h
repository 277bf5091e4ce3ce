// NVMe controller registers (BAR0): offsets, field encode/decode and doorbell
// addressing.
//
// References are to the NVM Express Base Specification 1.4, section 3.1
// "Register Definition": CAP (3.1.1), VS (3.1.2), INTMS/INTMC (3.1.3/3.1.4),
// CC (3.1.5), CSTS (3.1.6), NSSR (3.1.7), AQA (3.1.8), ASQ/ACQ (3.1.9/3.1.10),
// CMBLOC (3.1.11), CMBSZ (3.1.12), and the SQ y Tail / CQ y Head doorbells
// (SQyTDBL / CQyHDBL) that start at offset 1000h.
#pragma once

#include <cstdint>

#include "sim/core/protocol/portability.h"

namespace gpunvme::nvme {

namespace reg {
constexpr std::uint32_t kCap = 0x00;             // Controller Capabilities, 64 bit
constexpr std::uint32_t kVs = 0x08;              // Version
constexpr std::uint32_t kIntms = 0x0C;           // Interrupt Mask Set
constexpr std::uint32_t kIntmc = 0x10;           // Interrupt Mask Clear
constexpr std::uint32_t kCc = 0x14;              // Controller Configuration
constexpr std::uint32_t kCsts = 0x1C;            // Controller Status
constexpr std::uint32_t kNssr = 0x20;            // NVM Subsystem Reset
constexpr std::uint32_t kAqa = 0x24;             // Admin Queue Attributes
constexpr std::uint32_t kAsq = 0x28;             // Admin SQ Base Address, 64 bit
constexpr std::uint32_t kAcq = 0x30;             // Admin CQ Base Address, 64 bit
constexpr std::uint32_t kCmbloc = 0x38;          // Controller Memory Buffer Location
constexpr std::uint32_t kCmbsz = 0x3C;           // Controller Memory Buffer Size
constexpr std::uint32_t kDoorbellBase = 0x1000;  // SQ 0 Tail Doorbell
}  // namespace reg

// Writing this value ("NVMe" in ASCII) to NSSR starts an NVM subsystem reset.
constexpr std::uint32_t kNssrResetValue = 0x4E564D65;

namespace detail {
GPUNVME_HD constexpr std::uint64_t bits(std::uint64_t v, unsigned lo, unsigned width) {
  return (v >> lo) & ((1ull << width) - 1ull);
}
GPUNVME_HD constexpr std::uint64_t place(std::uint64_t v, unsigned lo, unsigned width) {
  return (v & ((1ull << width) - 1ull)) << lo;
}
}  // namespace detail

// Memory page size from an MPS / MPSMIN / MPSMAX value: 2^(12 + mps) bytes.
GPUNVME_HD constexpr std::uint64_t page_size_from_mps(std::uint8_t mps) {
  return 1ull << (12u + (mps & 0xFu));
}

// ---------------------------------------------------------------------------
// CAP - Controller Capabilities (offset 00h, 64 bit)
// ---------------------------------------------------------------------------

// CAP.AMS bits (18:17): optional arbitration mechanisms beyond round robin.
constexpr std::uint8_t kCapAmsWeightedRoundRobinUrgent = 0x1;
constexpr std::uint8_t kCapAmsVendorSpecific = 0x2;
// CAP.CSS bits (44:37): bit 0 NVM command set, bit 7 no I/O command set.
constexpr std::uint8_t kCapCssNvm = 0x01;
constexpr std::uint8_t kCapCssNoIo = 0x80;

struct Cap {
  std::uint16_t mqes;   // 15:0, maximum queue entries supported, zero-based
  bool cqr;             // 16, contiguous queues required
  std::uint8_t ams;     // 18:17, arbitration mechanisms supported
  std::uint8_t to;      // 31:24, worst-case ready timeout, 500 ms units
  std::uint8_t dstrd;   // 35:32, doorbell stride = 4 << DSTRD bytes
  bool nssrs;           // 36, NVM subsystem reset supported
  std::uint8_t css;     // 44:37, command sets supported
  bool bps;             // 45, boot partition support
  std::uint8_t mpsmin;  // 51:48, minimum memory page size = 2^(12 + MPSMIN)
  std::uint8_t mpsmax;  // 55:52, maximum memory page size = 2^(12 + MPSMAX)
  bool pmrs;            // 56, persistent memory region supported
  bool cmbs;            // 57, controller memory buffer supported

  GPUNVME_HD constexpr std::uint64_t encode() const {
    using detail::place;
    return place(mqes, 0, 16) | place(cqr, 16, 1) | place(ams, 17, 2) | place(to, 24, 8) |
           place(dstrd, 32, 4) | place(nssrs, 36, 1) | place(css, 37, 8) | place(bps, 45, 1) |
           place(mpsmin, 48, 4) | place(mpsmax, 52, 4) | place(pmrs, 56, 1) | place(cmbs, 57, 1);
  }

  GPUNVME_HD static constexpr Cap decode(std::uint64_t v) {
    using detail::bits;
    Cap c{};
    c.mqes = static_cast<std::uint16_t>(bits(v, 0, 16));
    c.cqr = bits(v, 16, 1) != 0;
    c.ams = static_cast<std::uint8_t>(bits(v, 17, 2));
    c.to = static_cast<std::uint8_t>(bits(v, 24, 8));
    c.dstrd = static_cast<std::uint8_t>(bits(v, 32, 4));
    c.nssrs = bits(v, 36, 1) != 0;
    c.css = static_cast<std::uint8_t>(bits(v, 37, 8));
    c.bps = bits(v, 45, 1) != 0;
    c.mpsmin = static_cast<std::uint8_t>(bits(v, 48, 4));
    c.mpsmax = static_cast<std::uint8_t>(bits(v, 52, 4));
    c.pmrs = bits(v, 56, 1) != 0;
    c.cmbs = bits(v, 57, 1) != 0;
    return c;
  }

  // Largest queue the controller accepts, in entries (MQES is zero-based).
  GPUNVME_HD constexpr std::uint32_t max_queue_entries() const { return mqes + 1u; }
  GPUNVME_HD constexpr std::uint64_t doorbell_stride_bytes() const {
    return 4ull << (dstrd & 0xFu);
  }
  GPUNVME_HD constexpr std::uint64_t min_page_size() const { return page_size_from_mps(mpsmin); }
  GPUNVME_HD constexpr std::uint64_t max_page_size() const { return page_size_from_mps(mpsmax); }
  GPUNVME_HD constexpr std::uint32_t timeout_ms() const { return to * 500u; }
};

// ---------------------------------------------------------------------------
// VS - Version (offset 08h): MJR 31:16, MNR 15:8, TER 7:0
// ---------------------------------------------------------------------------

GPUNVME_HD constexpr std::uint32_t make_version(std::uint16_t major, std::uint8_t minor,
                                                std::uint8_t tertiary = 0) {
  return (static_cast<std::uint32_t>(major) << 16) | (static_cast<std::uint32_t>(minor) << 8) |
         tertiary;
}

// ---------------------------------------------------------------------------
// CC - Controller Configuration (offset 14h)
// ---------------------------------------------------------------------------

// CC.AMS values (13:11).
constexpr std::uint8_t kCcAmsRoundRobin = 0x0;
constexpr std::uint8_t kCcAmsWeightedRoundRobinUrgent = 0x1;
constexpr std::uint8_t kCcAmsVendorSpecific = 0x7;
// CC.SHN values (15:14).
constexpr std::uint8_t kCcShnNone = 0x0;
constexpr std::uint8_t kCcShnNormal = 0x1;
constexpr std::uint8_t kCcShnAbrupt = 0x2;

struct Cc {
  bool en;              // 0, enable
  std::uint8_t css;     // 6:4, I/O command set selected (000b NVM)
  std::uint8_t mps;     // 10:7, memory page size = 2^(12 + MPS)
  std::uint8_t ams;     // 13:11, arbitration mechanism selected
  std::uint8_t shn;     // 15:14, shutdown notification
  std::uint8_t iosqes;  // 19:16, I/O SQ entry size = 2^IOSQES (6 for 64 B)
  std::uint8_t iocqes;  // 23:20, I/O CQ entry size = 2^IOCQES (4 for 16 B)

  GPUNVME_HD constexpr std::uint32_t encode() const {
    using detail::place;
    return static_cast<std::uint32_t>(place(en, 0, 1) | place(css, 4, 3) | place(mps, 7, 4) |
                                      place(ams, 11, 3) | place(shn, 14, 2) | place(iosqes, 16, 4) |
                                      place(iocqes, 20, 4));
  }

  GPUNVME_HD static constexpr Cc decode(std::uint32_t v) {
    using detail::bits;
    Cc c{};
    c.en = bits(v, 0, 1) != 0;
    c.css = static_cast<std::uint8_t>(bits(v, 4, 3));
    c.mps = static_cast<std::uint8_t>(bits(v, 7, 4));
    c.ams = static_cast<std::uint8_t>(bits(v, 11, 3));
    c.shn = static_cast<std::uint8_t>(bits(v, 14, 2));
    c.iosqes = static_cast<std::uint8_t>(bits(v, 16, 4));
    c.iocqes = static_cast<std::uint8_t>(bits(v, 20, 4));
    return c;
  }

  GPUNVME_HD constexpr std::uint64_t page_size() const { return page_size_from_mps(mps); }
};

// ---------------------------------------------------------------------------
// CSTS - Controller Status (offset 1Ch)
// ---------------------------------------------------------------------------

// CSTS.SHST values (3:2).
constexpr std::uint8_t kCstsShstNormal = 0x0;
constexpr std::uint8_t kCstsShstOccurring = 0x1;
constexpr std::uint8_t kCstsShstComplete = 0x2;

struct Csts {
  bool rdy;           // 0, ready
  bool cfs;           // 1, controller fatal status
  std::uint8_t shst;  // 3:2, shutdown status
  bool nssro;         // 4, NVM subsystem reset occurred
  bool pp;            // 5, processing paused

  GPUNVME_HD constexpr std::uint32_t encode() const {
    using detail::place;
    return static_cast<std::uint32_t>(place(rdy, 0, 1) | place(cfs, 1, 1) | place(shst, 2, 2) |
                                      place(nssro, 4, 1) | place(pp, 5, 1));
  }

  GPUNVME_HD static constexpr Csts decode(std::uint32_t v) {
    using detail::bits;
    Csts c{};
    c.rdy = bits(v, 0, 1) != 0;
    c.cfs = bits(v, 1, 1) != 0;
    c.shst = static_cast<std::uint8_t>(bits(v, 2, 2));
    c.nssro = bits(v, 4, 1) != 0;
    c.pp = bits(v, 5, 1) != 0;
    return c;
  }
};

// ---------------------------------------------------------------------------
// AQA - Admin Queue Attributes (offset 24h): ACQS 27:16, ASQS 11:0, zero-based
// ---------------------------------------------------------------------------

// The admin queues hold 2..4096 entries.
constexpr std::uint32_t kMaxAdminQueueEntries = 4096;

struct Aqa {
  std::uint32_t sq_entries;  // ASQS + 1
  std::uint32_t cq_entries;  // ACQS + 1

  GPUNVME_HD constexpr std::uint32_t encode() const {
    return (((cq_entries - 1u) & 0xFFFu) << 16) | ((sq_entries - 1u) & 0xFFFu);
  }
  GPUNVME_HD static constexpr Aqa decode(std::uint32_t v) {
    return Aqa{(v & 0xFFFu) + 1u, ((v >> 16) & 0xFFFu) + 1u};
  }
};

// ---------------------------------------------------------------------------
// CMBLOC (offset 38h) and CMBSZ (offset 3Ch)
// ---------------------------------------------------------------------------

struct Cmbloc {
  std::uint8_t bir;    // 2:0, BAR holding the CMB
  std::uint32_t ofst;  // 31:12, offset into that BAR in CMBSZ.SZU units

  GPUNVME_HD static constexpr Cmbloc decode(std::uint32_t v) {
    return Cmbloc{static_cast<std::uint8_t>(v & 0x7u), v >> 12};
  }
  GPUNVME_HD constexpr std::uint32_t encode() const { return (ofst << 12) | (bir & 0x7u); }
};

struct Cmbsz {
  bool sqs;          // 0, submission queues may live in the CMB
  bool cqs;          // 1, completion queues may live in the CMB
  bool lists;        // 2, PRP/SGL lists may live in the CMB
  bool rds;          // 3, read data may target the CMB
  bool wds;          // 4, write data may come from the CMB
  std::uint8_t szu;  // 11:8, size unit = 4 KiB * 16^SZU
  std::uint32_t sz;  // 31:12, size in SZU units

  GPUNVME_HD static constexpr Cmbsz decode(std::uint32_t v) {
    using detail::bits;
    Cmbsz c{};
    c.sqs = bits(v, 0, 1) != 0;
    c.cqs = bits(v, 1, 1) != 0;
    c.lists = bits(v, 2, 1) != 0;
    c.rds = bits(v, 3, 1) != 0;
    c.wds = bits(v, 4, 1) != 0;
    c.szu = static_cast<std::uint8_t>(bits(v, 8, 4));
    c.sz = static_cast<std::uint32_t>(bits(v, 12, 20));
    return c;
  }
  GPUNVME_HD constexpr std::uint32_t encode() const {
    using detail::place;
    return static_cast<std::uint32_t>(place(sqs, 0, 1) | place(cqs, 1, 1) | place(lists, 2, 1) |
                                      place(rds, 3, 1) | place(wds, 4, 1) | place(szu, 8, 4) |
                                      place(sz, 12, 20));
  }
  GPUNVME_HD constexpr std::uint64_t unit_bytes() const { return 4096ull << (4u * szu); }
  GPUNVME_HD constexpr std::uint64_t size_bytes() const { return unit_bytes() * sz; }
};

// ---------------------------------------------------------------------------
// Doorbells (from offset 1000h)
// ---------------------------------------------------------------------------

// SQ y Tail doorbell at 1000h + (2y) * (4 << DSTRD); CQ y Head doorbell at
// 1000h + (2y + 1) * (4 << DSTRD). Offsets are 64-bit because qid 65535 with
// DSTRD 15 lies beyond 4 GiB.
enum class DoorbellKind : std::uint8_t {
  SqTail = 0,
  CqHead = 1,
};

GPUNVME_HD constexpr std::uint64_t doorbell_stride_bytes(std::uint8_t dstrd) {
  return 4ull << (dstrd & 0xFu);
}

GPUNVME_HD constexpr std::uint64_t sq_tail_doorbell_offset(std::uint16_t qid, std::uint8_t dstrd) {
  return reg::kDoorbellBase + (2ull * qid) * doorbell_stride_bytes(dstrd);
}

GPUNVME_HD constexpr std::uint64_t cq_head_doorbell_offset(std::uint16_t qid, std::uint8_t dstrd) {
  return reg::kDoorbellBase + (2ull * qid + 1ull) * doorbell_stride_bytes(dstrd);
}

GPUNVME_HD constexpr std::uint64_t doorbell_offset(DoorbellKind kind, std::uint16_t qid,
                                                   std::uint8_t dstrd) {
  return kind == DoorbellKind::SqTail ? sq_tail_doorbell_offset(qid, dstrd)
                                      : cq_head_doorbell_offset(qid, dstrd);
}

// The result of mapping a BAR0 offset back to a doorbell. An offset is a
// doorbell only if it lies at or above 1000h, at the start of a stride slot,
// and names a queue id that fits in 16 bits; the bytes between doorbells when
// DSTRD > 0 are reserved.
struct DoorbellTarget {
  bool valid;
  DoorbellKind kind;
  std::uint16_t qid;
};

GPUNVME_HD constexpr DoorbellTarget decode_doorbell_offset(std::uint64_t offset,
                                                           std::uint8_t dstrd) {
  DoorbellTarget t{false, DoorbellKind::SqTail, 0};
  if (offset < reg::kDoorbellBase) return t;
  const std::uint64_t stride = doorbell_stride_bytes(dstrd);
  const std::uint64_t rel = offset - reg::kDoorbellBase;
  if (rel % stride != 0) return t;
  const std::uint64_t index = rel / stride;
  if (index / 2 > 0xFFFFull) return t;
  t.valid = true;
  t.kind = (index & 1ull) ? DoorbellKind::CqHead : DoorbellKind::SqTail;
  t.qid = static_cast<std::uint16_t>(index / 2);
  return t;
}

// Byte offset of a queue's entry in the Shadow Doorbell and EventIdx buffers
// set up by Doorbell Buffer Config: the buffers mirror the doorbell registers
// from 1000h on, with the same stride (as the Linux driver's dbbuf indexing
// does: SQ y at 2y * stride, CQ y at (2y + 1) * stride, in dwords of stride).
GPUNVME_HD constexpr std::uint64_t shadow_doorbell_offset(DoorbellKind kind, std::uint16_t qid,
                                                          std::uint8_t dstrd) {
  return doorbell_offset(kind, qid, dstrd) - reg::kDoorbellBase;
}

}  // namespace gpunvme::nvme
