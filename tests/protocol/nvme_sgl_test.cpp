// SGL walker (NVMe Base Specification 1.4, section 4.4), with expected
// segments and error statuses written out per case.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "sim/core/protocol/nvme.h"

namespace gpunvme::nvme {
namespace {

using Seg = std::tuple<std::uint64_t, std::uint64_t, bool>;  // address, bytes, bit bucket

struct SglMemory {
  std::map<std::uint64_t, SglDescriptor> descriptors;
  int reads = 0;

  void put_segment(std::uint64_t addr, const std::vector<SglDescriptor>& ds) {
    for (std::size_t i = 0; i < ds.size(); ++i) descriptors[addr + 16 * i] = ds[i];
  }
};

struct Result {
  Status status;
  std::vector<Seg> segments;
};

Result walk(SglMemory& mem, const SglDescriptor& first, std::uint64_t len,
            const SglWalkOptions& opts = SglWalkOptions{}) {
  Result r{Status::Success, {}};
  r.status = walk_sgl(
      first, len,
      [&mem](std::uint64_t a) {
        ++mem.reads;
        auto it = mem.descriptors.find(a);
        return it == mem.descriptors.end() ? SglDescriptor{} : it->second;
      },
      [&r](std::uint64_t a, std::uint64_t n, bool bucket) {
        r.segments.emplace_back(a, n, bucket);
      },
      opts);
  return r;
}

TEST(NvmeSgl, SingleDataBlockThroughTheCommand) {
  SubmissionEntry e = make_read(1, 1, 0, 7, 0, 0);
  e.set_sgl1(make_sgl_data_block(0x12340000, 4096));
  SglMemory mem;
  const Result r = walk(mem, e.sgl1(), 4096);
  EXPECT_EQ(r.status, Status::Success);
  EXPECT_EQ(r.segments, (std::vector<Seg>{{0x12340000, 4096, false}}));
  EXPECT_EQ(mem.reads, 0);
}

TEST(NvmeSgl, DataBlockLengthMustMatchTransfer) {
  SglMemory mem;
  EXPECT_EQ(walk(mem, make_sgl_data_block(0x1000, 4000), 4096).status,
            Status::DataSglLengthInvalid);
  EXPECT_EQ(walk(mem, make_sgl_data_block(0x1000, 8192), 4096).status,
            Status::DataSglLengthInvalid);
  SglWalkOptions longer;
  longer.allow_longer_sgl = true;
  const Result r = walk(mem, make_sgl_data_block(0x1000, 8192), 4096, longer);
  EXPECT_EQ(r.status, Status::Success);
  EXPECT_EQ(r.segments, (std::vector<Seg>{{0x1000, 4096, false}}));
  // Still too short with the option.
  EXPECT_EQ(walk(mem, make_sgl_data_block(0x1000, 100), 4096, longer).status,
            Status::DataSglLengthInvalid);
}

TEST(NvmeSgl, LastSegmentOfDataBlocks) {
  SglMemory mem;
  mem.put_segment(0x8000, {make_sgl_data_block(0x100000, 512), make_sgl_data_block(0x200000, 1024),
                           make_sgl_data_block(0x300010, 2560)});
  const Result r = walk(mem, make_sgl_last_segment(0x8000, 48), 4096);
  EXPECT_EQ(r.status, Status::Success);
  EXPECT_EQ(
      r.segments,
      (std::vector<Seg>{{0x100000, 512, false}, {0x200000, 1024, false}, {0x300010, 2560, false}}));
  EXPECT_EQ(mem.reads, 3);
}

TEST(NvmeSgl, SegmentChainToLastSegment) {
  SglMemory mem;
  // Segment A: two data blocks, then a Segment descriptor to B.
  mem.put_segment(0x8000, {make_sgl_data_block(0x100000, 1000), make_sgl_data_block(0x110000, 24),
                           make_sgl_segment(0x9000, 32)});
  // Segment B: one data block, then a Last Segment descriptor to C.
  mem.put_segment(0x9000, {make_sgl_data_block(0x120000, 1024), make_sgl_last_segment(0xA000, 32)});
  // Segment C (last): a zero-length data block and a data block.
  mem.put_segment(0xA000, {make_sgl_data_block(0x777000, 0), make_sgl_data_block(0x130000, 2048)});
  const Result r = walk(mem, make_sgl_segment(0x8000, 48), 4096);
  EXPECT_EQ(r.status, Status::Success);
  EXPECT_EQ(r.segments, (std::vector<Seg>{{0x100000, 1000, false},
                                          {0x110000, 24, false},
                                          {0x120000, 1024, false},
                                          {0x130000, 2048, false}}));
  EXPECT_EQ(mem.reads, 7);
  // A segment that ends with a data descriptor ends the list.
  EXPECT_EQ(walk(mem, make_sgl_segment(0xA000, 32), 2048).status, Status::Success);
}

TEST(NvmeSgl, BitBucketOnlyWhereAllowed) {
  SglMemory mem;
  mem.put_segment(0x8000, {make_sgl_data_block(0x100000, 512), make_sgl_bit_bucket(3584)});
  EXPECT_EQ(walk(mem, make_sgl_last_segment(0x8000, 32), 4096).status,
            Status::SglDescriptorTypeInvalid);
  SglWalkOptions reads;
  reads.allow_bit_bucket = true;
  const Result r = walk(mem, make_sgl_last_segment(0x8000, 32), 4096, reads);
  EXPECT_EQ(r.status, Status::Success);
  EXPECT_EQ(r.segments, (std::vector<Seg>{{0x100000, 512, false}, {0, 3584, true}}));
}

TEST(NvmeSgl, BadSegmentDescriptors) {
  SglMemory mem;
  mem.put_segment(0x8000, {make_sgl_data_block(0x100000, 4096)});
  // Segment length zero or not a multiple of 16.
  EXPECT_EQ(walk(mem, make_sgl_last_segment(0x8000, 0), 4096).status,
            Status::InvalidSglSegmentDescriptor);
  EXPECT_EQ(walk(mem, make_sgl_last_segment(0x8000, 24), 4096).status,
            Status::InvalidSglSegmentDescriptor);
  // A chain descriptor inside the last segment.
  mem.put_segment(0x9000, {make_sgl_data_block(0x100000, 1024), make_sgl_segment(0x8000, 16)});
  EXPECT_EQ(walk(mem, make_sgl_last_segment(0x9000, 32), 4096).status,
            Status::InvalidSglSegmentDescriptor);
  mem.put_segment(0x9100, {make_sgl_data_block(0x100000, 1024), make_sgl_last_segment(0x8000, 16)});
  EXPECT_EQ(walk(mem, make_sgl_last_segment(0x9100, 32), 4096).status,
            Status::InvalidSglSegmentDescriptor);
  // A chain descriptor that is not the last in its segment.
  mem.put_segment(0xA000, {make_sgl_last_segment(0x8000, 16), make_sgl_data_block(0x100000, 64)});
  EXPECT_EQ(walk(mem, make_sgl_segment(0xA000, 32), 4160).status,
            Status::InvalidSglSegmentDescriptor);
  // A chained segment with a bad length.
  mem.put_segment(0xB000, {make_sgl_last_segment(0x8000, 20)});
  EXPECT_EQ(walk(mem, make_sgl_segment(0xB000, 16), 4096).status,
            Status::InvalidSglSegmentDescriptor);
}

TEST(NvmeSgl, InvalidTypesAndSubtypes) {
  SglMemory mem;
  SglDescriptor reserved_type = make_sgl_data_block(0x1000, 4096);
  reserved_type.identifier = 0x60;  // type 6h is reserved
  EXPECT_EQ(walk(mem, reserved_type, 4096).status, Status::SglDescriptorTypeInvalid);
  SglDescriptor keyed = make_sgl_data_block(0x1000, 4096);
  keyed.identifier = 0x40;  // Keyed Data Block: fabrics only
  EXPECT_EQ(walk(mem, keyed, 4096).status, Status::SglDescriptorTypeInvalid);
  SglDescriptor offset_subtype = make_sgl_data_block(0x1000, 4096);
  offset_subtype.identifier = 0x01;  // Data Block, Offset sub type
  EXPECT_EQ(walk(mem, offset_subtype, 4096).status, Status::SglDescriptorTypeInvalid);
  mem.put_segment(0x8000, {make_sgl_data_block(0x100000, 1024), reserved_type});
  EXPECT_EQ(walk(mem, make_sgl_last_segment(0x8000, 32), 5120).status,
            Status::SglDescriptorTypeInvalid);
}

TEST(NvmeSgl, CyclicListIsBounded) {
  SglMemory mem;
  mem.put_segment(0x8000, {make_sgl_data_block(0x100000, 16), make_sgl_segment(0x8000, 32)});
  SglWalkOptions opts;
  opts.max_descriptors = 1000;
  EXPECT_EQ(walk(mem, make_sgl_segment(0x8000, 32), 1ull << 40, opts).status,
            Status::InvalidNumberOfSglDescriptors);
  EXPECT_LE(mem.reads, 1001);
}

TEST(NvmeSgl, DwordGranularity) {
  SglMemory mem;
  SglWalkOptions opts;
  opts.dword_granularity = true;
  EXPECT_EQ(walk(mem, make_sgl_data_block(0x1001, 4096), 4096, opts).status,
            Status::SglDataBlockGranularityInvalid);
  EXPECT_EQ(walk(mem, make_sgl_data_block(0x1000, 4095), 4095, opts).status,
            Status::SglDataBlockGranularityInvalid);
  EXPECT_EQ(walk(mem, make_sgl_data_block(0x1001, 4095), 4095).status, Status::Success);
}

}  // namespace
}  // namespace gpunvme::nvme
