// NVMe queue entries: the 64-byte Submission Queue Entry, the 16-byte
// Completion Queue Entry and the 16-byte SGL descriptor, with opcodes.
//
// References are to the NVM Express Base Specification, revision 1.4: section
// 4.2 "Submission Queue Entry - Command Format", section 4.4 "Scatter Gather
// List (SGL)", section 4.6 "Completion Queue Entry" and section 5 (Admin
// Command Set); and to the NVM Command Set (section 6 of the same revision).
//
// The structures are plain, trivially copyable and standard layout, with no
// default member initialisers: they can be memcpy'd onto simulated or real
// memory and declared __shared__ in CUDA code. Value-initialise them
// (`SubmissionEntry e{};`) to get the all-zero entry the builders start from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "sim/core/protocol/nvme_status.h"
#include "sim/core/protocol/portability.h"

namespace gpunvme::nvme {

// ---------------------------------------------------------------------------
// Opcodes and identifiers
// ---------------------------------------------------------------------------

// Admin command opcodes (section 5, Figure "Opcodes for Admin Commands").
enum class AdminOpcode : std::uint8_t {
  DeleteIoSq = 0x00,
  CreateIoSq = 0x01,
  GetLogPage = 0x02,
  DeleteIoCq = 0x04,
  CreateIoCq = 0x05,
  Identify = 0x06,
  Abort = 0x08,
  SetFeatures = 0x09,
  GetFeatures = 0x0A,
  AsynchronousEventRequest = 0x0C,
  DoorbellBufferConfig = 0x7C,
};

// NVM command set I/O opcodes (section 6, Figure "Opcodes for NVM Commands").
// Bits 1:0 of an opcode give the data direction: 01b host to controller,
// 10b controller to host.
enum class NvmOpcode : std::uint8_t {
  Flush = 0x00,
  Write = 0x01,
  Read = 0x02,
  DatasetManagement = 0x09,
};

// Feature identifiers for Set/Get Features (section 5.21.1, "Feature
// Identifiers").
enum class FeatureId : std::uint8_t {
  Arbitration = 0x01,
  PowerManagement = 0x02,
  VolatileWriteCache = 0x06,
  NumberOfQueues = 0x07,
  InterruptCoalescing = 0x08,
};

// Identify Controller or Namespace Structure (CNS) values (Identify command,
// CDW10 bits 7:0).
enum class IdentifyCns : std::uint8_t {
  Namespace = 0x00,
  Controller = 0x01,
  ActiveNamespaceList = 0x02,
};

// PRP or SGL for Data Transfer (PSDT), CDW0 bits 15:14 (section 4.2).
enum class Psdt : std::uint8_t {
  Prp = 0x0,
  // SGL for data; MPTR holds the address of a contiguous metadata buffer.
  SglContiguousMetadata = 0x1,
  // SGL for data; MPTR holds the address of an SGL segment for metadata.
  SglMetadataSegment = 0x2,
};

// Fused Operation (FUSE), CDW0 bits 9:8 (section 4.2).
enum class Fuse : std::uint8_t {
  Normal = 0x0,
  FirstCommand = 0x1,
  SecondCommand = 0x2,
};

// Queue identifier of the admin queue pair; I/O queues use 1..65535.
constexpr std::uint16_t kAdminQueueId = 0;

// Entry sizes, as CC.IOSQES / CC.IOCQES encode them (2^n bytes) for the NVM
// command set.
constexpr std::uint32_t kSqEntrySize = 64;
constexpr std::uint32_t kCqEntrySize = 16;
constexpr std::uint8_t kSqEntrySizeLog2 = 6;
constexpr std::uint8_t kCqEntrySizeLog2 = 4;

// ---------------------------------------------------------------------------
// SGL descriptor (16 bytes), section 4.4
// ---------------------------------------------------------------------------

// SGL Descriptor Type, the upper nibble of byte 15 (SGL Identifier).
enum class SglDescriptorType : std::uint8_t {
  DataBlock = 0x0,
  BitBucket = 0x1,
  Segment = 0x2,
  LastSegment = 0x3,
  KeyedDataBlock = 0x4,
  TransportDataBlock = 0x5,
  VendorSpecific = 0xF,
};

// SGL Descriptor Sub Type, the lower nibble of byte 15. Over PCIe only the
// Address sub type is meaningful; Offset is for NVMe over Fabrics capsules.
enum class SglDescriptorSubtype : std::uint8_t {
  Address = 0x0,
  Offset = 0x1,
};

// Generic SGL descriptor layout: bytes 7:0 Address, bytes 11:8 Length, bytes
// 14:12 reserved, byte 15 SGL Identifier (type in bits 7:4, sub type in 3:0).
// The Bit Bucket descriptor leaves Address reserved; Segment and Last Segment
// descriptors give the address and byte length of the next SGL segment.
struct SglDescriptor {
  std::uint64_t address;
  std::uint32_t length;
  std::uint8_t reserved[3];
  std::uint8_t identifier;

  GPUNVME_HD constexpr SglDescriptorType type() const {
    return static_cast<SglDescriptorType>(identifier >> 4);
  }
  GPUNVME_HD constexpr SglDescriptorSubtype subtype() const {
    return static_cast<SglDescriptorSubtype>(identifier & 0x0F);
  }
};

GPUNVME_HD constexpr std::uint8_t sgl_identifier(SglDescriptorType type,
                                                 SglDescriptorSubtype subtype) {
  return static_cast<std::uint8_t>((static_cast<unsigned>(type) << 4) |
                                   (static_cast<unsigned>(subtype) & 0x0Fu));
}

GPUNVME_HD constexpr SglDescriptor make_sgl_descriptor(SglDescriptorType type,
                                                       std::uint64_t address,
                                                       std::uint32_t length) {
  SglDescriptor d{};
  d.address = address;
  d.length = length;
  d.identifier = sgl_identifier(type, SglDescriptorSubtype::Address);
  return d;
}

// A single Data Block: `length` bytes at `address`. This is what goes into the
// command's DPTR when the whole transfer is one contiguous buffer.
GPUNVME_HD constexpr SglDescriptor make_sgl_data_block(std::uint64_t address,
                                                       std::uint32_t length) {
  return make_sgl_descriptor(SglDescriptorType::DataBlock, address, length);
}

// A Bit Bucket: the controller discards `length` bytes of read data.
GPUNVME_HD constexpr SglDescriptor make_sgl_bit_bucket(std::uint32_t length) {
  return make_sgl_descriptor(SglDescriptorType::BitBucket, 0, length);
}

// Points to an SGL segment of `length` bytes (16 per descriptor) that is not
// the last segment: its last descriptor continues the list.
GPUNVME_HD constexpr SglDescriptor make_sgl_segment(std::uint64_t address, std::uint32_t length) {
  return make_sgl_descriptor(SglDescriptorType::Segment, address, length);
}

// Points to the last SGL segment, which holds only Data Block and Bit Bucket
// descriptors.
GPUNVME_HD constexpr SglDescriptor make_sgl_last_segment(std::uint64_t address,
                                                         std::uint32_t length) {
  return make_sgl_descriptor(SglDescriptorType::LastSegment, address, length);
}

static_assert(sizeof(SglDescriptor) == 16, "SGL descriptor is 16 bytes (section 4.4)");
static_assert(offsetof(SglDescriptor, address) == 0, "SGL Address: bytes 7:0");
static_assert(offsetof(SglDescriptor, length) == 8, "SGL Length: bytes 11:8");
static_assert(offsetof(SglDescriptor, identifier) == 15, "SGL Identifier: byte 15");
static_assert(std::is_trivial<SglDescriptor>::value, "SglDescriptor must be trivial");
static_assert(std::is_standard_layout<SglDescriptor>::value,
              "SglDescriptor must be standard layout");

// ---------------------------------------------------------------------------
// Submission Queue Entry (64 bytes), section 4.2
// ---------------------------------------------------------------------------

// Common command format:
//   bytes  3:0  CDW0: OPC 7:0, FUSE 9:8, reserved 13:10, PSDT 15:14, CID 31:16
//   bytes  7:4  NSID
//   bytes 11:8  CDW2, bytes 15:12 CDW3 (command specific / reserved)
//   bytes 23:16 MPTR (metadata pointer)
//   bytes 39:24 DPTR: PRP1 (bytes 31:24) and PRP2 (bytes 39:32), or one
//               16-byte SGL descriptor (SGL1)
//   bytes 63:40 CDW10..CDW15
// DPTR is stored as two 64-bit words rather than as a union so that the struct
// stays trivially copyable without type punning; sgl1()/set_sgl1() convert.
struct SubmissionEntry {
  std::uint32_t cdw0;
  std::uint32_t nsid;
  std::uint32_t cdw2;
  std::uint32_t cdw3;
  std::uint64_t mptr;
  std::uint64_t prp1;
  std::uint64_t prp2;
  std::uint32_t cdw10;
  std::uint32_t cdw11;
  std::uint32_t cdw12;
  std::uint32_t cdw13;
  std::uint32_t cdw14;
  std::uint32_t cdw15;

  GPUNVME_HD constexpr std::uint8_t opcode() const {
    return static_cast<std::uint8_t>(cdw0 & 0xFFu);
  }
  GPUNVME_HD constexpr void set_opcode(std::uint8_t opc) { cdw0 = (cdw0 & ~0xFFu) | opc; }

  GPUNVME_HD constexpr Fuse fuse() const { return static_cast<Fuse>((cdw0 >> 8) & 0x3u); }
  GPUNVME_HD constexpr void set_fuse(Fuse f) {
    cdw0 = (cdw0 & ~(0x3u << 8)) | ((static_cast<std::uint32_t>(f) & 0x3u) << 8);
  }

  GPUNVME_HD constexpr Psdt psdt() const { return static_cast<Psdt>((cdw0 >> 14) & 0x3u); }
  GPUNVME_HD constexpr void set_psdt(Psdt p) {
    cdw0 = (cdw0 & ~(0x3u << 14)) | ((static_cast<std::uint32_t>(p) & 0x3u) << 14);
  }

  GPUNVME_HD constexpr std::uint16_t cid() const { return static_cast<std::uint16_t>(cdw0 >> 16); }
  GPUNVME_HD constexpr void set_cid(std::uint16_t id) {
    cdw0 = (cdw0 & 0x0000FFFFu) | (static_cast<std::uint32_t>(id) << 16);
  }

  // The SGL descriptor held in DPTR (SGL1) when PSDT selects SGLs. On a
  // little-endian host, bytes 31:24 are the address (= prp1), bytes 35:32 the
  // length (= low half of prp2) and byte 39 the identifier (= top byte of prp2).
  GPUNVME_HD constexpr SglDescriptor sgl1() const {
    SglDescriptor d{};
    d.address = prp1;
    d.length = static_cast<std::uint32_t>(prp2 & 0xFFFFFFFFull);
    d.reserved[0] = static_cast<std::uint8_t>(prp2 >> 32);
    d.reserved[1] = static_cast<std::uint8_t>(prp2 >> 40);
    d.reserved[2] = static_cast<std::uint8_t>(prp2 >> 48);
    d.identifier = static_cast<std::uint8_t>(prp2 >> 56);
    return d;
  }
  // Stores `d` in DPTR and selects SGLs for data (PSDT 01b, metadata, if any,
  // in a contiguous buffer at MPTR).
  GPUNVME_HD constexpr void set_sgl1(const SglDescriptor& d) {
    prp1 = d.address;
    prp2 = static_cast<std::uint64_t>(d.length) |
           (static_cast<std::uint64_t>(d.reserved[0]) << 32) |
           (static_cast<std::uint64_t>(d.reserved[1]) << 40) |
           (static_cast<std::uint64_t>(d.reserved[2]) << 48) |
           (static_cast<std::uint64_t>(d.identifier) << 56);
    set_psdt(Psdt::SglContiguousMetadata);
  }
};

static_assert(sizeof(SubmissionEntry) == 64, "SQE is 64 bytes (section 4.2)");
static_assert(alignof(SubmissionEntry) == 8, "SQE aligns to its 64-bit fields");
static_assert(offsetof(SubmissionEntry, cdw0) == 0, "CDW0: bytes 3:0");
static_assert(offsetof(SubmissionEntry, nsid) == 4, "NSID: bytes 7:4");
static_assert(offsetof(SubmissionEntry, cdw2) == 8, "CDW2: bytes 11:8");
static_assert(offsetof(SubmissionEntry, cdw3) == 12, "CDW3: bytes 15:12");
static_assert(offsetof(SubmissionEntry, mptr) == 16, "MPTR: bytes 23:16");
static_assert(offsetof(SubmissionEntry, prp1) == 24, "DPTR/PRP1: bytes 31:24");
static_assert(offsetof(SubmissionEntry, prp2) == 32, "DPTR/PRP2: bytes 39:32");
static_assert(offsetof(SubmissionEntry, cdw10) == 40, "CDW10: bytes 43:40");
static_assert(offsetof(SubmissionEntry, cdw11) == 44, "CDW11: bytes 47:44");
static_assert(offsetof(SubmissionEntry, cdw12) == 48, "CDW12: bytes 51:48");
static_assert(offsetof(SubmissionEntry, cdw13) == 52, "CDW13: bytes 55:52");
static_assert(offsetof(SubmissionEntry, cdw14) == 56, "CDW14: bytes 59:56");
static_assert(offsetof(SubmissionEntry, cdw15) == 60, "CDW15: bytes 63:60");
static_assert(std::is_trivial<SubmissionEntry>::value, "SubmissionEntry must be trivial");
static_assert(std::is_standard_layout<SubmissionEntry>::value,
              "SubmissionEntry must be standard layout");

// ---------------------------------------------------------------------------
// Completion Queue Entry (16 bytes), section 4.6
// ---------------------------------------------------------------------------

// Status half-word (DW3 bits 31:16), section 4.6.1:
//   bit 0 P (phase tag), bits 8:1 SC, bits 11:9 SCT, bits 13:12 CRD,
//   bit 14 M (more), bit 15 DNR (do not retry).
// Seen as DW3, the phase tag is bit 16 and the CID is bits 15:0.
GPUNVME_HD constexpr std::uint16_t make_status_field(Status s, bool phase, bool dnr = false,
                                                     bool more = false, std::uint8_t crd = 0) {
  return static_cast<std::uint16_t>(
      (phase ? 1u : 0u) | (static_cast<unsigned>(status_code(s)) << 1) |
      ((static_cast<unsigned>(status_code_type(s)) & 0x7u) << 9) | ((crd & 0x3u) << 12) |
      (more ? 1u << 14 : 0u) | (dnr ? 1u << 15 : 0u));
}

struct CompletionEntry {
  std::uint32_t dw0;           // command specific (e.g. Set Features result)
  std::uint32_t dw1;           // command specific, reserved for most commands
  std::uint16_t sqhd;          // SQ head pointer, for SQ flow control
  std::uint16_t sqid;          // SQ the command was submitted to
  std::uint16_t cid;           // command identifier from the SQE
  std::uint16_t status_field;  // phase tag and status, see make_status_field()

  GPUNVME_HD constexpr std::uint8_t phase() const {
    return static_cast<std::uint8_t>(status_field & 0x1u);
  }
  GPUNVME_HD constexpr std::uint8_t sc() const {
    return static_cast<std::uint8_t>((status_field >> 1) & 0xFFu);
  }
  GPUNVME_HD constexpr StatusCodeType sct() const {
    return static_cast<StatusCodeType>((status_field >> 9) & 0x7u);
  }
  GPUNVME_HD constexpr Status status() const { return make_status(sct(), sc()); }
  GPUNVME_HD constexpr std::uint8_t crd() const {
    return static_cast<std::uint8_t>((status_field >> 12) & 0x3u);
  }
  GPUNVME_HD constexpr bool more() const { return ((status_field >> 14) & 0x1u) != 0; }
  GPUNVME_HD constexpr bool dnr() const { return ((status_field >> 15) & 0x1u) != 0; }
  GPUNVME_HD constexpr bool ok() const { return status() == Status::Success; }

  GPUNVME_HD constexpr void set_status(Status s, bool phase_tag, bool do_not_retry = false,
                                       bool more_info = false, std::uint8_t retry_delay = 0) {
    status_field = make_status_field(s, phase_tag, do_not_retry, more_info, retry_delay);
  }

  // DW2 and DW3 as 32-bit words, as a poller that loads one dword sees them.
  GPUNVME_HD constexpr std::uint32_t dw2() const {
    return static_cast<std::uint32_t>(sqhd) | (static_cast<std::uint32_t>(sqid) << 16);
  }
  GPUNVME_HD constexpr std::uint32_t dw3() const {
    return static_cast<std::uint32_t>(cid) | (static_cast<std::uint32_t>(status_field) << 16);
  }
};

static_assert(sizeof(CompletionEntry) == 16, "CQE is 16 bytes (section 4.6)");
static_assert(alignof(CompletionEntry) == 4, "CQE aligns to its 32-bit fields");
static_assert(offsetof(CompletionEntry, dw0) == 0, "DW0: bytes 3:0");
static_assert(offsetof(CompletionEntry, dw1) == 4, "DW1: bytes 7:4");
static_assert(offsetof(CompletionEntry, sqhd) == 8, "SQHD: bytes 9:8");
static_assert(offsetof(CompletionEntry, sqid) == 10, "SQID: bytes 11:10");
static_assert(offsetof(CompletionEntry, cid) == 12, "CID: bytes 13:12");
static_assert(offsetof(CompletionEntry, status_field) == 14, "Status and phase: bytes 15:14");
static_assert(std::is_trivial<CompletionEntry>::value, "CompletionEntry must be trivial");
static_assert(std::is_standard_layout<CompletionEntry>::value,
              "CompletionEntry must be standard layout");

}  // namespace gpunvme::nvme
