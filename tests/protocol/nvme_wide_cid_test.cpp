// Byte layout of wide CIDs (a proposed extension, sim/core/protocol/
// nvme_wide_cid.h): the 32-bit CID in SQE bytes 11:8 with its low half in
// bytes 3:2, echoed in CQE bytes 7:4 with its low half in bytes 13:12, and
// Create I/O SQ CDW11 bit 4, checked byte by byte against literals.
#include "sim/core/protocol/nvme_wide_cid.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>

#include "sim/core/protocol/nvme_commands.h"

namespace gpunvme::nvme {
namespace {

template <typename T>
std::array<std::uint8_t, sizeof(T)> wide_cid_bytes(const T& v) {
  std::array<std::uint8_t, sizeof(T)> out{};
  std::memcpy(out.data(), &v, sizeof(T));
  return out;
}

TEST(WideCidLayout, SubmissionEntryCarriesAll32BitsInCdw2) {
  SubmissionEntry e = make_read(0, 1, 0x1000, 7, 0x200000, 0);
  set_wide_cid(e, 0x0012ABCDu);
  const auto b = wide_cid_bytes(e);
  // CDW0: opcode 02h, FUSE/PSDT 0, CID (low half) CDh ABh, little endian.
  EXPECT_EQ(b[0], 0x02);
  EXPECT_EQ(b[1], 0x00);
  EXPECT_EQ(b[2], 0xCD);
  EXPECT_EQ(b[3], 0xAB);
  // NSID 1 in bytes 7:4 is untouched.
  EXPECT_EQ(b[4], 0x01);
  // CDW2: the whole CID.
  EXPECT_EQ(b[8], 0xCD);
  EXPECT_EQ(b[9], 0xAB);
  EXPECT_EQ(b[10], 0x12);
  EXPECT_EQ(b[11], 0x00);
  // The read's own fields stay where NVMe puts them: SLBA in CDW10.
  EXPECT_EQ(b[40], 0x00);
  EXPECT_EQ(b[41], 0x10);
  EXPECT_EQ(wide_cid(e), 0x0012ABCDu);
  EXPECT_EQ(e.cid(), 0xABCDu);
}

TEST(WideCidLayout, CompletionEntryEchoesAll32BitsInDw1) {
  CompletionEntry e{};
  e.sqid = 3;
  set_wide_cid(e, 0xFEDC0042u);
  e.set_status(Status::Success, true);
  const auto b = wide_cid_bytes(e);
  EXPECT_EQ(b[4], 0x42);
  EXPECT_EQ(b[5], 0x00);
  EXPECT_EQ(b[6], 0xDC);
  EXPECT_EQ(b[7], 0xFE);
  EXPECT_EQ(b[10], 0x03);  // SQID
  EXPECT_EQ(b[12], 0x42);  // CID: the low half
  EXPECT_EQ(b[13], 0x00);
  EXPECT_EQ(b[14], 0x01);  // phase tag
  EXPECT_EQ(completion_cid(e, true), 0xFEDC0042u);
  EXPECT_EQ(completion_cid(e, false), 0x0042u);
}

TEST(WideCidLayout, CreateIoSqWcidIsCdw11Bit4) {
  const SubmissionEntry plain = make_create_io_sq(0, 5, 64, 0x10000, 5, QueuePriority::Urgent);
  const SubmissionEntry wide = make_create_io_sq(0, 5, 64, 0x10000, 5, QueuePriority::Urgent, true,
                                                 false, /*wide_cids=*/true);
  EXPECT_EQ(wide.cdw11 ^ plain.cdw11, 0x10u);
  EXPECT_EQ(wide.cdw11, kCreateSqWideCidBit | 0x00050001u);  // CQID 5, QPRIO 00b, PC
  EXPECT_TRUE(decode_create_io_sq(wide).wide_cids);
  EXPECT_FALSE(decode_create_io_sq(plain).wide_cids);
}

}  // namespace
}  // namespace gpunvme::nvme
