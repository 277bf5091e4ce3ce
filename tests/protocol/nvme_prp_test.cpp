// PRP builder and walker (NVMe Base Specification 1.4, section 4.3). The
// oracle for a buffer's data segments is the buffer cut at memory page
// boundaries; the oracle for list layout fills list slots one by one,
// chaining when a page has one slot left and more than one entry to go.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "sim/core/protocol/nvme.h"

namespace gpunvme::nvme {
namespace {

using Segments = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

// The buffer [addr, addr + len) cut at page boundaries.
Segments page_cut(std::uint64_t addr, std::uint64_t len, std::uint64_t ps) {
  Segments out;
  std::uint64_t p = addr;
  const std::uint64_t end = addr + len;
  while (p < end) {
    const std::uint64_t boundary = (p / ps + 1) * ps;
    const std::uint64_t stop = boundary < end ? boundary : end;
    out.emplace_back(p, stop - p);
    p = stop;
  }
  return out;
}

// List pages by brute force: place `entries` entries slot by slot.
std::uint64_t list_pages_by_filling(std::uint64_t entries, std::uint64_t ps,
                                    std::uint64_t first_offset) {
  if (entries == 0) return 0;
  std::uint64_t pages = 1;
  std::uint64_t slots = (ps - first_offset) / 8;
  while (entries > 0) {
    if (slots == 1 && entries > 1) {  // chain pointer
      ++pages;
      slots = ps / 8;
      continue;
    }
    --entries;
    --slots;
  }
  return pages;
}

struct FakeMemory {
  std::map<std::uint64_t, std::uint64_t> words;
  std::uint64_t reads = 0;
  std::uint64_t writes = 0;
  bool read_unwritten = false;

  auto writer() {
    return [this](std::uint64_t a, std::uint64_t v) {
      words[a] = v;
      ++writes;
    };
  }
  auto reader() {
    return [this](std::uint64_t a) -> std::uint64_t {
      ++reads;
      auto it = words.find(a);
      if (it == words.end()) {
        read_unwritten = true;
        return 0;
      }
      return it->second;
    };
  }
};

struct Walk {
  Status status;
  Segments segments;
};

Walk walk(FakeMemory& mem, std::uint64_t prp1, std::uint64_t prp2, std::uint64_t len,
          std::uint64_t ps) {
  Walk w{Status::Success, {}};
  w.status = walk_prp(prp1, prp2, len, ps, mem.reader(),
                      [&w](std::uint64_t a, std::uint64_t n) { w.segments.emplace_back(a, n); });
  return w;
}

// Builds with list pages at 0x7000'0000 + i * ps (or the given ones), walks,
// and checks the round trip against the page-cut oracle.
void round_trip(std::uint64_t addr, std::uint64_t len, std::uint64_t ps,
                std::vector<std::uint64_t> list_pages = {}) {
  SCOPED_TRACE(::testing::Message()
               << "addr " << std::hex << addr << " len " << len << " ps " << ps);
  if (list_pages.empty()) {
    for (std::uint64_t i = 0; i < 1100; ++i) list_pages.push_back(0x70000000ull + i * ps);
  }
  FakeMemory mem;
  const PrpBuildResult r = build_prp(addr, len, ps, list_pages.data(),
                                     static_cast<std::uint32_t>(list_pages.size()), mem.writer());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.prp1, addr);
  const Segments expected = page_cut(addr, len, ps);
  const std::uint64_t pages = expected.size();
  EXPECT_EQ(prp_entry_count(addr, len, ps), pages);
  if (pages <= 1) {
    EXPECT_EQ(r.prp2, 0u);
    EXPECT_EQ(mem.writes, 0u);
  } else if (pages == 2) {
    EXPECT_EQ(r.prp2, expected[1].first);  // a data pointer, not a list
    EXPECT_EQ(mem.writes, 0u);
  } else {
    EXPECT_EQ(r.prp2, list_pages[0]);
    const std::uint64_t lp = list_pages_by_filling(pages - 1, ps, list_pages[0] % ps);
    EXPECT_EQ(r.list_pages_used, lp);
    EXPECT_EQ(prp_list_pages_needed(addr, len, ps, list_pages[0] % ps), lp);
    EXPECT_EQ(r.list_entries_written, (pages - 1) + (lp - 1));
    EXPECT_EQ(mem.writes, r.list_entries_written);
  }
  const Walk w = walk(mem, r.prp1, r.prp2, len, ps);
  EXPECT_EQ(w.status, Status::Success);
  EXPECT_FALSE(mem.read_unwritten);
  EXPECT_EQ(w.segments, expected);
  EXPECT_EQ(mem.reads, mem.writes);  // every list entry written is read once
  std::uint64_t total = 0;
  for (const auto& s : w.segments) total += s.second;
  EXPECT_EQ(total, len);
}

TEST(NvmePrp, CountsFromSpecExamples) {
  const std::uint64_t ps = 4096;
  EXPECT_EQ(prp_entry_count(0x10000, 0, ps), 0u);
  EXPECT_EQ(prp_entry_count(0x10000, 4096, ps), 1u);
  EXPECT_EQ(prp_entry_count(0x10010, 100, ps), 1u);
  EXPECT_EQ(prp_entry_count(0x10800, 4096, ps), 2u);  // offset PRP1: 2 pages
  EXPECT_EQ(prp_entry_count(0x10000, 8192, ps), 2u);
  EXPECT_EQ(prp_entry_count(0x10000, 8193, ps), 3u);
  EXPECT_EQ(prp_list_entry_count(0x10000, 8192, ps), 0u);  // PRP2 is data
  EXPECT_EQ(prp_list_entry_count(0x10800, 8192, ps), 2u);  // 3 pages: list
  EXPECT_EQ(prp_list_pages_needed(0x10000, 12288, ps), 1u);
  // 512 slots per 4 KiB list page. 513 pages -> 512 list entries -> 1 page;
  // 514 pages -> 513 entries -> 2 pages (511 + chain, then 2).
  EXPECT_EQ(prp_list_pages_needed(0, 513ull * 4096, ps), 1u);
  EXPECT_EQ(prp_list_pages_needed(0, 514ull * 4096, ps), 2u);
  // A list starting 16 bytes before the end of its page has 2 slots.
  EXPECT_EQ(prp_list_pages_for_entries(2, ps, 4080), 1u);
  EXPECT_EQ(prp_list_pages_for_entries(3, ps, 4080), 2u);
  for (std::uint64_t e :
       {1ull, 2ull, 511ull, 512ull, 513ull, 1022ull, 1023ull, 1024ull, 5000ull, 262143ull}) {
    for (std::uint64_t off : {0ull, 8ull, 2048ull, 4080ull, 4088ull}) {
      EXPECT_EQ(prp_list_pages_for_entries(e, ps, off), list_pages_by_filling(e, ps, off))
          << e << " entries, offset " << off;
    }
  }
  EXPECT_EQ(prp_list_pages_for_entries(262143, ps), list_pages_by_filling(262143, ps, 0));
  EXPECT_TRUE(valid_page_size(4096));
  EXPECT_TRUE(valid_page_size(1ull << 27));
  EXPECT_FALSE(valid_page_size(2048));
  EXPECT_FALSE(valid_page_size(6144));
  EXPECT_FALSE(valid_page_size(1ull << 28));
}

TEST(NvmePrp, SinglePage) {
  round_trip(0x10000, 4096, 4096);
  round_trip(0x10010, 100, 4096);
  round_trip(0x10FFC, 4, 4096);
}

TEST(NvmePrp, UnalignedFirstEntryCrossingOneBoundary) {
  // 4 KiB at offset 800h: 2 KiB in PRP1's page, 2 KiB at PRP2.
  FakeMemory mem;
  const PrpBuildResult r = build_prp(0x10800, 4096, 4096, nullptr, 0, mem.writer());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.prp1, 0x10800u);
  EXPECT_EQ(r.prp2, 0x11000u);
  const Walk w = walk(mem, r.prp1, r.prp2, 4096, 4096);
  ASSERT_EQ(w.status, Status::Success);
  EXPECT_EQ(w.segments, (Segments{{0x10800, 2048}, {0x11000, 2048}}));
  round_trip(0x10800, 4096, 4096);
}

TEST(NvmePrp, ExactlyTwoPagesUsesPrp2AsDataPointer) {
  FakeMemory mem;
  const PrpBuildResult r = build_prp(0x10000, 8192, 4096, nullptr, 0, mem.writer());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.prp2, 0x11000u);
  EXPECT_EQ(r.list_pages_used, 0u);
  EXPECT_EQ(mem.writes, 0u);
  const Walk w = walk(mem, r.prp1, r.prp2, 8192, 4096);
  ASSERT_EQ(w.status, Status::Success);
  EXPECT_EQ(w.segments, (Segments{{0x10000, 4096}, {0x11000, 4096}}));
  EXPECT_EQ(mem.reads, 0u);  // no list was fetched
}

TEST(NvmePrp, ThreePagesUseAList) {
  FakeMemory mem;
  const std::uint64_t lists[] = {0x900000};
  const PrpBuildResult r = build_prp(0x10000, 12288, 4096, lists, 1, mem.writer());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.prp2, 0x900000u);
  EXPECT_EQ(mem.words.at(0x900000), 0x11000u);
  EXPECT_EQ(mem.words.at(0x900008), 0x12000u);
  EXPECT_EQ(mem.words.size(), 2u);
  round_trip(0x10000, 12288, 4096);
  round_trip(0x10800, 8192, 4096);  // offset PRP1, 3 pages touched
}

TEST(NvmePrp, ListChainsToNextPage) {
  // 600 pages: PRP1 + 599 list entries; page 1 holds 511 entries and a chain
  // pointer in its last slot (byte 4088), page 2 holds the remaining 88.
  const std::uint64_t lists[] = {0x900000, 0x7FF000, 0xA00000};
  FakeMemory mem;
  const PrpBuildResult r = build_prp(0x40000000, 600ull * 4096, 4096, lists, 3, mem.writer());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.list_pages_used, 2u);
  EXPECT_EQ(mem.words.at(0x900000), 0x40001000u);
  EXPECT_EQ(mem.words.at(0x900000 + 510 * 8), 0x40000000u + 511 * 4096);
  EXPECT_EQ(mem.words.at(0x900000 + 511 * 8), 0x7FF000u);  // chain
  EXPECT_EQ(mem.words.at(0x7FF000), 0x40000000u + 512 * 4096);
  EXPECT_EQ(mem.words.at(0x7FF000 + 87 * 8), 0x40000000u + 599 * 4096);
  EXPECT_EQ(mem.words.count(0x7FF000 + 88 * 8), 0u);
  const Walk w = walk(mem, r.prp1, r.prp2, 600ull * 4096, 4096);
  ASSERT_EQ(w.status, Status::Success);
  EXPECT_EQ(w.segments, page_cut(0x40000000, 600ull * 4096, 4096));

  round_trip(0x40000000, 600ull * 4096, 4096);
  round_trip(0x40000000, 513ull * 4096, 4096);           // 512 entries: exactly one full list
  round_trip(0x40000000, 514ull * 4096, 4096);           // 513 entries: first chain
  round_trip(0x40000123 & ~3ull, 2000ull * 4096, 4096);  // several chains, offset PRP1
  round_trip(0x40000000, 1024ull * 4096 + 4, 4096);
}

TEST(NvmePrp, FirstListPageWithOffset) {
  // The list pointer in PRP2 may start inside a page: here 4 slots remain.
  std::vector<std::uint64_t> lists = {0x900FE0};
  for (int i = 1; i < 8; ++i) lists.push_back(0xB00000 + i * 0x1000);
  FakeMemory mem;
  const PrpBuildResult r = build_prp(0x10000, 10ull * 4096, 4096, lists.data(), 8, mem.writer());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.prp2, 0x900FE0u);
  EXPECT_EQ(r.list_pages_used, 2u);
  EXPECT_EQ(mem.words.at(0x900FF8), 0xB01000u);  // chain from the 4th slot
  round_trip(0x10000, 10ull * 4096, 4096, lists);
  round_trip(0x10004, 700ull * 4096, 4096, {0x900FF0, 0xB01000, 0xB02000, 0xB03000});
}

TEST(NvmePrp, LargerMemoryPageSize) {
  round_trip(0x100000, 65536, 65536);
  round_trip(0x108000, 65536, 65536);
  round_trip(0x100000, 3ull * 65536, 65536);
  round_trip(0x100000, 8200ull * 65536, 65536);  // 8192 slots per list page
}

TEST(NvmePrp, SweepOffsetsAndLengths) {
  const std::uint64_t ps = 4096;
  for (std::uint64_t off : {0ull, 4ull, 0x800ull, 0xFFCull}) {
    for (std::uint64_t len : {1ull, 4ull, 4092ull, 4096ull, 4100ull, 8192ull, 8196ull, 3ull * 4096,
                              511ull * 4096, 512ull * 4096, 513ull * 4096, 1025ull * 4096 + 4}) {
      round_trip(0x20000000 + off, len, ps);
    }
  }
}

TEST(NvmePrp, BuilderErrors) {
  FakeMemory mem;
  const std::uint64_t one[] = {0x900000};
  EXPECT_EQ(build_prp(0x10001, 100, 4096, one, 1, mem.writer()).error,
            PrpBuildError::MisalignedBuffer);
  EXPECT_EQ(build_prp(0x10000, 100, 3000, one, 1, mem.writer()).error,
            PrpBuildError::InvalidPageSize);
  EXPECT_EQ(build_prp(0x10000, 3 * 4096, 4096, nullptr, 0, mem.writer()).error,
            PrpBuildError::NotEnoughListPages);
  EXPECT_EQ(build_prp(0x10000, 600ull * 4096, 4096, one, 1, mem.writer()).error,
            PrpBuildError::NotEnoughListPages);
  const std::uint64_t bad_first[] = {0x900004};
  EXPECT_EQ(build_prp(0x10000, 3 * 4096, 4096, bad_first, 1, mem.writer()).error,
            PrpBuildError::MisalignedListPage);
  const std::uint64_t bad_second[] = {0x900000, 0xA00800};
  EXPECT_EQ(build_prp(0x10000, 600ull * 4096, 4096, bad_second, 2, mem.writer()).error,
            PrpBuildError::MisalignedListPage);
  EXPECT_EQ(mem.writes, 0u);  // nothing written on failure
}

TEST(NvmePrp, WalkerRejectsOffsetsOutsidePrp1) {
  FakeMemory mem;
  // PRP2 as a data pointer with an offset.
  EXPECT_EQ(walk(mem, 0x10000, 0x11008, 8192, 4096).status, Status::PrpOffsetInvalid);
  // PRP1 not dword aligned.
  EXPECT_EQ(walk(mem, 0x10002, 0, 100, 4096).status, Status::PrpOffsetInvalid);
  // PRP2 as a list pointer that is not qword aligned.
  EXPECT_EQ(walk(mem, 0x10000, 0x900004, 3 * 4096, 4096).status, Status::PrpOffsetInvalid);
  // A list data entry with an offset.
  mem.words[0x900000] = 0x11000;
  mem.words[0x900008] = 0x12010;
  EXPECT_EQ(walk(mem, 0x10000, 0x900000, 3 * 4096, 4096).status, Status::PrpOffsetInvalid);
  // A chain pointer with an offset.
  FakeMemory chain;
  for (std::uint64_t i = 0; i < 511; ++i) chain.words[0x900000 + i * 8] = 0x100000 + i * 4096;
  chain.words[0x900000 + 511 * 8] = 0xA00100;
  EXPECT_EQ(walk(chain, 0x10000, 0x900000, 600ull * 4096, 4096).status, Status::PrpOffsetInvalid);
  chain.words[0x900000 + 511 * 8] = 0xA00000;
  for (std::uint64_t i = 0; i < 88; ++i) chain.words[0xA00000 + i * 8] = 0x300000 + i * 4096;
  EXPECT_EQ(walk(chain, 0x10000, 0x900000, 600ull * 4096, 4096).status, Status::Success);
  // Zero length: nothing to do, nothing read.
  FakeMemory empty;
  const Walk w = walk(empty, 0x10002, 0x5, 0, 4096);
  EXPECT_EQ(w.status, Status::Success);
  EXPECT_TRUE(w.segments.empty());
  EXPECT_EQ(empty.reads, 0u);
}

}  // namespace
}  // namespace gpunvme::nvme
