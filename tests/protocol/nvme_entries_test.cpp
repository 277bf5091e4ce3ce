// Byte layout of the NVMe queue entries and SGL descriptor, checked against
// the byte offsets and bit positions of the NVMe Base Specification 1.4
// (section 4.2 common command format, section 4.4 SGL descriptor, section 4.6
// completion queue entry) written here as literals.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "sim/core/protocol/nvme.h"

namespace gpunvme::nvme {
namespace {

template <typename T>
void to_bytes(const T& v, std::uint8_t* out) {
  std::memcpy(out, &v, sizeof(T));
}

std::uint64_t le(const std::uint8_t* b, int offset, int width) {
  std::uint64_t v = 0;
  for (int i = width - 1; i >= 0; --i) v = (v << 8) | b[offset + i];
  return v;
}

TEST(NvmeEntries, SizesAndTriviality) {
  EXPECT_EQ(sizeof(SubmissionEntry), 64u);
  EXPECT_EQ(sizeof(CompletionEntry), 16u);
  EXPECT_EQ(sizeof(SglDescriptor), 16u);
  EXPECT_TRUE(std::is_trivially_copyable<SubmissionEntry>::value);
  EXPECT_TRUE(std::is_trivially_copyable<CompletionEntry>::value);
  EXPECT_TRUE(std::is_trivially_copyable<SglDescriptor>::value);
  EXPECT_TRUE(std::is_trivial<SubmissionEntry>::value);
  EXPECT_TRUE(std::is_trivial<CompletionEntry>::value);
}

TEST(NvmeEntries, SubmissionEntryByteOffsets) {
  SubmissionEntry e{};
  e.cdw0 = 0x03020100u;
  e.nsid = 0x07060504u;
  e.cdw2 = 0x0B0A0908u;
  e.cdw3 = 0x0F0E0D0Cu;
  e.mptr = 0x1716151413121110ull;
  e.prp1 = 0x1F1E1D1C1B1A1918ull;
  e.prp2 = 0x2726252423222120ull;
  e.cdw10 = 0x2B2A2928u;
  e.cdw11 = 0x2F2E2D2Cu;
  e.cdw12 = 0x33323130u;
  e.cdw13 = 0x37363534u;
  e.cdw14 = 0x3B3A3938u;
  e.cdw15 = 0x3F3E3D3Cu;
  std::uint8_t b[64];
  to_bytes(e, b);
  // Each byte holds its own offset: the fields sit exactly where the
  // specification's common command format puts them, little endian.
  for (int i = 0; i < 64; ++i) EXPECT_EQ(b[i], i) << "byte " << i;
}

TEST(NvmeEntries, Cdw0Fields) {
  SubmissionEntry e{};
  e.set_opcode(0xAB);
  e.set_fuse(Fuse::FirstCommand);
  e.set_psdt(Psdt::SglContiguousMetadata);
  e.set_cid(0xBEEF);
  std::uint8_t b[64];
  to_bytes(e, b);
  EXPECT_EQ(b[0], 0xAB);  // OPC, bits 7:0
  // Byte 1: FUSE in bits 9:8 (byte bits 1:0), PSDT in bits 15:14 (byte 7:6).
  EXPECT_EQ(b[1], 0x01 | (0x1 << 6));
  EXPECT_EQ(le(b, 2, 2), 0xBEEFu);  // CID, bits 31:16
  EXPECT_EQ(e.opcode(), 0xAB);
  EXPECT_EQ(e.fuse(), Fuse::FirstCommand);
  EXPECT_EQ(e.psdt(), Psdt::SglContiguousMetadata);
  EXPECT_EQ(e.cid(), 0xBEEF);
}

TEST(NvmeEntries, CidRoundTripLeavesOtherFieldsAlone) {
  SubmissionEntry e{};
  e.set_opcode(0x02);
  e.set_psdt(Psdt::SglMetadataSegment);
  for (std::uint32_t cid = 0; cid <= 0xFFFF; ++cid) {
    e.set_cid(static_cast<std::uint16_t>(cid));
    ASSERT_EQ(e.cid(), cid);
    ASSERT_EQ(e.cdw0 >> 16, cid);
    ASSERT_EQ(e.opcode(), 0x02);
    ASSERT_EQ(e.psdt(), Psdt::SglMetadataSegment);
  }
}

TEST(NvmeEntries, CompletionEntryByteOffsets) {
  CompletionEntry c{};
  c.dw0 = 0x03020100u;
  c.dw1 = 0x07060504u;
  c.sqhd = 0x0908;
  c.sqid = 0x0B0A;
  c.cid = 0x0D0C;
  c.status_field = 0x0F0E;
  std::uint8_t b[16];
  to_bytes(c, b);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(b[i], i) << "byte " << i;
  EXPECT_EQ(c.dw2(), 0x0B0A0908u);
  EXPECT_EQ(c.dw3(), 0x0F0E0D0Cu);
}

TEST(NvmeEntries, StatusFieldBitPositions) {
  // P bit 0, SC bits 8:1, SCT bits 11:9, CRD 13:12, M 14, DNR 15.
  CompletionEntry c{};
  c.set_status(Status::InvalidQueueSize, /*phase=*/true, /*dnr=*/true);
  // SCT 1h, SC 02h: 1 | (0x02 << 1) | (0x1 << 9) | (1 << 15)
  EXPECT_EQ(c.status_field, 0x8205);
  c.set_status(Status::Success, true);
  EXPECT_EQ(c.status_field, 0x0001);
  c.set_status(Status::UnrecoveredReadError, false, false, true, 2);
  // SCT 2h, SC 81h, CRD 2, M: (0x81 << 1) | (0x2 << 9) | (2 << 12) | (1 << 14)
  EXPECT_EQ(c.status_field, 0x0102 | 0x0400 | 0x2000 | 0x4000);
  std::uint8_t b[16];
  c.set_status(Status::PrpOffsetInvalid, true);
  c.cid = 0x1234;
  to_bytes(c, b);
  EXPECT_EQ(le(b, 14, 2), 0x0027u);  // 1 | (0x13 << 1)
  // The phase tag is bit 16 of dword 3.
  EXPECT_EQ((le(b, 12, 4) >> 16) & 1u, 1u);
  EXPECT_EQ((c.dw3() >> 16) & 1u, 1u);
}

TEST(NvmeEntries, StatusFieldRoundTrip) {
  for (unsigned sct = 0; sct < 8; ++sct) {
    for (unsigned sc = 0; sc < 256; ++sc) {
      for (unsigned flags = 0; flags < 32; ++flags) {
        const bool phase = flags & 1u;
        const bool dnr = flags & 2u;
        const bool more = flags & 4u;
        const std::uint8_t crd = static_cast<std::uint8_t>(flags >> 3);
        const Status s =
            make_status(static_cast<StatusCodeType>(sct), static_cast<std::uint8_t>(sc));
        CompletionEntry c{};
        c.set_status(s, phase, dnr, more, crd);
        const unsigned expected = (phase ? 1u : 0u) | (sc << 1) | (sct << 9) | (crd << 12u) |
                                  (more ? 1u << 14 : 0u) | (dnr ? 1u << 15 : 0u);
        ASSERT_EQ(c.status_field, expected);
        ASSERT_EQ(c.phase(), phase ? 1 : 0);
        ASSERT_EQ(c.sc(), sc);
        ASSERT_EQ(static_cast<unsigned>(c.sct()), sct);
        ASSERT_EQ(c.status(), s);
        ASSERT_EQ(c.dnr(), dnr);
        ASSERT_EQ(c.more(), more);
        ASSERT_EQ(c.crd(), crd);
      }
    }
  }
}

TEST(NvmeEntries, StatusValuesFromSpec) {
  struct Row {
    Status s;
    unsigned sct;
    unsigned sc;
  };
  const Row rows[] = {
      {Status::Success, 0, 0x00},
      {Status::InvalidCommandOpcode, 0, 0x01},
      {Status::InvalidFieldInCommand, 0, 0x02},
      {Status::CommandIdConflict, 0, 0x03},
      {Status::DataTransferError, 0, 0x04},
      {Status::InternalError, 0, 0x06},
      {Status::CommandAbortRequested, 0, 0x07},
      {Status::AbortedSqDeletion, 0, 0x08},
      {Status::InvalidNamespaceOrFormat, 0, 0x0B},
      {Status::InvalidSglSegmentDescriptor, 0, 0x0D},
      {Status::InvalidNumberOfSglDescriptors, 0, 0x0E},
      {Status::DataSglLengthInvalid, 0, 0x0F},
      {Status::MetadataSglLengthInvalid, 0, 0x10},
      {Status::SglDescriptorTypeInvalid, 0, 0x11},
      {Status::InvalidUseOfControllerMemoryBuffer, 0, 0x12},
      {Status::PrpOffsetInvalid, 0, 0x13},
      {Status::SglOffsetInvalid, 0, 0x16},
      {Status::SglDataBlockGranularityInvalid, 0, 0x1E},
      {Status::LbaOutOfRange, 0, 0x80},
      {Status::CapacityExceeded, 0, 0x81},
      {Status::NamespaceNotReady, 0, 0x82},
      {Status::CompletionQueueInvalid, 1, 0x00},
      {Status::InvalidQueueIdentifier, 1, 0x01},
      {Status::InvalidQueueSize, 1, 0x02},
      {Status::AbortCommandLimitExceeded, 1, 0x03},
      {Status::InvalidInterruptVector, 1, 0x08},
      {Status::InvalidLogPage, 1, 0x09},
      {Status::InvalidQueueDeletion, 1, 0x0C},
      {Status::FeatureNotChangeable, 1, 0x0E},
      {Status::AttemptedWriteToReadOnlyRange, 1, 0x82},
      {Status::WriteFault, 2, 0x80},
      {Status::UnrecoveredReadError, 2, 0x81},
      {Status::CompareFailure, 2, 0x85},
      {Status::AccessDenied, 2, 0x86},
      {Status::InternalPathError, 3, 0x00},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(static_cast<unsigned>(status_code_type(r.s)), r.sct) << status_name(r.s);
    EXPECT_EQ(status_code(r.s), r.sc) << status_name(r.s);
    EXPECT_STRNE(status_name(r.s), "Unknown");
  }
  EXPECT_STREQ(status_name(static_cast<Status>(0x7FF)), "Unknown");
  EXPECT_TRUE(is_success(Status::Success));
  EXPECT_FALSE(is_success(Status::WriteFault));
}

TEST(NvmeEntries, OpcodesAndFeatureIdsFromSpec) {
  EXPECT_EQ(static_cast<int>(AdminOpcode::DeleteIoSq), 0x00);
  EXPECT_EQ(static_cast<int>(AdminOpcode::CreateIoSq), 0x01);
  EXPECT_EQ(static_cast<int>(AdminOpcode::GetLogPage), 0x02);
  EXPECT_EQ(static_cast<int>(AdminOpcode::DeleteIoCq), 0x04);
  EXPECT_EQ(static_cast<int>(AdminOpcode::CreateIoCq), 0x05);
  EXPECT_EQ(static_cast<int>(AdminOpcode::Identify), 0x06);
  EXPECT_EQ(static_cast<int>(AdminOpcode::Abort), 0x08);
  EXPECT_EQ(static_cast<int>(AdminOpcode::SetFeatures), 0x09);
  EXPECT_EQ(static_cast<int>(AdminOpcode::GetFeatures), 0x0A);
  EXPECT_EQ(static_cast<int>(AdminOpcode::DoorbellBufferConfig), 0x7C);
  EXPECT_EQ(static_cast<int>(NvmOpcode::Flush), 0x00);
  EXPECT_EQ(static_cast<int>(NvmOpcode::Write), 0x01);
  EXPECT_EQ(static_cast<int>(NvmOpcode::Read), 0x02);
  EXPECT_EQ(static_cast<int>(FeatureId::Arbitration), 0x01);
  EXPECT_EQ(static_cast<int>(FeatureId::NumberOfQueues), 0x07);
}

TEST(NvmeEntries, SglDescriptorLayout) {
  const SglDescriptor d = make_sgl_data_block(0x1122334455667788ull, 0xA0B0C0D0u);
  std::uint8_t b[16];
  to_bytes(d, b);
  EXPECT_EQ(le(b, 0, 8), 0x1122334455667788ull);  // Address, bytes 7:0
  EXPECT_EQ(le(b, 8, 4), 0xA0B0C0D0u);            // Length, bytes 11:8
  EXPECT_EQ(le(b, 12, 3), 0u);                    // reserved, bytes 14:12
  EXPECT_EQ(b[15], 0x00);                         // type 0h (Data Block), sub type 0h (Address)
  to_bytes(make_sgl_bit_bucket(512), b);
  EXPECT_EQ(b[15], 0x10);
  to_bytes(make_sgl_segment(0x1000, 64), b);
  EXPECT_EQ(b[15], 0x20);
  to_bytes(make_sgl_last_segment(0x1000, 64), b);
  EXPECT_EQ(b[15], 0x30);
  EXPECT_EQ(make_sgl_last_segment(0x1000, 64).type(), SglDescriptorType::LastSegment);
  EXPECT_EQ(make_sgl_last_segment(0x1000, 64).subtype(), SglDescriptorSubtype::Address);
}

TEST(NvmeEntries, SglInDataPointer) {
  SubmissionEntry e = make_read(7, 1, 0, 0, 0, 0);
  const SglDescriptor d = make_sgl_last_segment(0xDEADBEEF000ull, 48);
  e.set_sgl1(d);
  std::uint8_t b[64];
  to_bytes(e, b);
  EXPECT_EQ((b[1] >> 6) & 0x3, 0x1);          // PSDT 01b: SGL for data
  EXPECT_EQ(le(b, 24, 8), 0xDEADBEEF000ull);  // SGL1 address at DPTR bytes 7:0
  EXPECT_EQ(le(b, 32, 4), 48u);               // SGL1 length at DPTR bytes 11:8
  EXPECT_EQ(b[39], 0x30);                     // SGL identifier at DPTR byte 15
  const SglDescriptor back = e.sgl1();
  EXPECT_EQ(std::memcmp(&back, &d, sizeof(d)), 0);
  EXPECT_EQ(e.opcode(), 0x02);
  EXPECT_EQ(e.cid(), 7);
}

constexpr SubmissionEntry kConstexprRead = make_read(1, 1, 0x100, 7, 0x1000, 0);
static_assert(kConstexprRead.cid() == 1, "builders are usable in constant expressions");
static_assert(kConstexprRead.opcode() == 0x02, "builders are usable in constant expressions");

}  // namespace
}  // namespace gpunvme::nvme
