// The page-mapped FTL: a short trace checked by hand, steady-state write
// amplification of greedy garbage collection against its closed form, the
// sampled layout of a large drive, and the write path's costs in the flash
// array (garbage collection slows writes; sub-unit writes read first).
#include "models/flash/ftl.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "models/flash/flash_array.h"

namespace gpunvme::flash {
namespace {

// One unit of 5 blocks x 4 slots (one slot a page) for 8 logical slots:
// small enough to follow every step by hand.
FtlGeometry tiny_geometry(GcPolicy policy) {
  FtlGeometry g;
  g.units = 1;
  g.slots_per_page = 1;
  g.pages_per_block = 4;
  g.logical_slots = 8;
  g.over_provisioning = 1.5;  // 20 physical slots = 5 blocks
  g.max_slots = 1024;
  g.gc_foreground_free_blocks = 2;
  g.gc_background_free_blocks = 2;
  g.gc_policy = policy;
  g.min_blocks_per_unit = 1;
  return g;
}

std::uint32_t phys(std::uint32_t block, std::uint32_t offset) { return block * 4 + offset; }

// Two units of 5 blocks x 4 slots for 16 logical slots. Twelve writes, all
// to unit 0 and none overwritten, fill its blocks 0-2 with valid data and
// open block 3, leaving one free block: under the threshold of 2, and every
// full block is valid. Collection moves block 0 (L0-L3) to unit 1, which has
// the most free blocks, and erases it there in unit 0.
TEST(Ftl, AUnitWhoseBlocksAreAllValidMovesAVictimToAnotherUnit) {
  FtlGeometry g = tiny_geometry(GcPolicy::greedy);
  g.units = 2;
  g.logical_slots = 16;  // 40 physical slots = 2 units x 5 blocks x 4
  Ftl ftl(g);
  ASSERT_EQ(ftl.layout().blocks_per_unit, 5u);
  std::vector<GcJob> jobs;
  for (std::uint64_t s = 0; s < 11; ++s) ftl.write(s, 0, false, jobs);
  EXPECT_TRUE(jobs.empty());
  ftl.write(11, 0, false, jobs);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].unit, 0u);
  EXPECT_EQ(jobs[0].moved_slots, 4u);
  EXPECT_TRUE(jobs[0].foreground);
  // Unit 1's block 0 holds L0-L3: physical (1 x 5 + 0) x 4 + k.
  for (std::uint32_t k = 0; k < 4; ++k) EXPECT_EQ(ftl.lookup(k), 20u + k) << "L" << k;
  EXPECT_EQ(ftl.lookup(4), phys(1, 0));
  EXPECT_EQ(ftl.valid_slots(0, 0), 0u);
  EXPECT_EQ(ftl.erase_count(0, 0), 1u);
  EXPECT_EQ(ftl.free_blocks(0), 2u);
  EXPECT_EQ(ftl.valid_slots(1, 0), 4u);
  EXPECT_EQ(ftl.free_blocks(1), 3u);  // its block 0 filled, block 1 opened
  EXPECT_EQ(ftl.stats().gc_cross_unit_victims, 1u);
  EXPECT_EQ(ftl.stats().gc_slots_moved, 4u);
}

TEST(Ftl, HandTrace) {
  Ftl ftl(tiny_geometry(GcPolicy::greedy));
  ASSERT_EQ(ftl.layout().blocks_per_unit, 5u);
  ASSERT_EQ(ftl.layout().slots_per_block, 4u);
  ASSERT_FALSE(ftl.layout().sampled);
  std::vector<GcJob> jobs;
  auto write = [&](std::uint64_t slot) { ftl.write(slot, 0, false, jobs); };

  // Block 0 opens first; free blocks are taken 1, 2, 3, 4.
  for (std::uint64_t s = 0; s < 8; ++s) write(s);  // block 0 = L0-L3, block 1 = L4-L7
  EXPECT_EQ(ftl.open_block(0), 2u);
  EXPECT_EQ(ftl.free_blocks(0), 2u);
  write(0);     // block 2 slot 0; block 0 slot 0 invalid
  write(1);     // block 2 slot 1; block 0 slot 1 invalid
  ftl.trim(2);  // block 0 slot 2 invalid, L2 unmapped
  write(0);     // block 2 slot 2; block 2 slot 0 invalid
  EXPECT_TRUE(jobs.empty());
  EXPECT_EQ(ftl.valid_slots(0, 0), 1u);  // L3
  EXPECT_EQ(ftl.valid_slots(0, 2), 2u);  // L1, L0
  // L5 fills block 2 (slot 3) and invalidates block 1 slot 1; block 3 opens,
  // leaving one free block (4), under the threshold of 2: foreground
  // collection. Full blocks: 0 (1 valid: L3), 1 (3 valid), 2 (3 valid).
  // Greedy takes block 0, moves L3 to block 3 slot 0 and erases block 0.
  write(5);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].unit, 0u);
  EXPECT_EQ(jobs[0].moved_slots, 1u);
  EXPECT_TRUE(jobs[0].foreground);
  EXPECT_EQ(ftl.free_blocks(0), 2u);  // 4 and the erased 0

  const std::uint32_t expected_map[8] = {phys(2, 2), phys(2, 1), Ftl::kUnmapped, phys(3, 0),
                                         phys(1, 0), phys(2, 3), phys(1, 2),     phys(1, 3)};
  for (std::uint64_t s = 0; s < 8; ++s) EXPECT_EQ(ftl.lookup(s), expected_map[s]) << "L" << s;
  const std::uint32_t expected_valid[5] = {0, 3, 3, 1, 0};
  for (std::uint32_t b = 0; b < 5; ++b) EXPECT_EQ(ftl.valid_slots(0, b), expected_valid[b]) << b;
  EXPECT_EQ(ftl.erase_count(0, 0), 1u);
  EXPECT_EQ(ftl.erase_count(0, 1), 0u);
  EXPECT_EQ(ftl.open_block(0), 3u);

  const FtlStats& st = ftl.stats();
  EXPECT_EQ(st.host_slots_written, 12u);
  EXPECT_EQ(st.gc_slots_moved, 1u);
  EXPECT_EQ(st.erases, 1u);
  EXPECT_EQ(st.foreground_gc, 1u);
  EXPECT_EQ(st.trimmed_slots, 1u);
  EXPECT_DOUBLE_EQ(st.write_amplification(), 13.0 / 12.0);
}

// Both policies, traced by hand: a tie on valid slots goes to the older
// block (cost-benefit by age, greedy by lower index), and an empty block is
// taken at once, with nothing to move.
TEST(Ftl, VictimsOfBothPolicies) {
  for (GcPolicy policy : {GcPolicy::greedy, GcPolicy::cost_benefit}) {
    Ftl ftl(tiny_geometry(policy));
    std::vector<GcJob> jobs;
    auto write = [&](std::uint64_t slot) { ftl.write(slot, 0, false, jobs); };
    for (std::uint64_t s = 0; s < 8; ++s) write(s);  // blocks 0 and 1, full
    write(0);                                        // block 2 slot 0; block 0: 3 valid
    write(1);                                        // block 2 slot 1; block 0: 2 valid
    write(4);                                        // block 2 slot 2; block 1: 3 valid
    write(5);  // block 2 slot 3, block 1: 2 valid; block 2 full, block 3 opens
    // One free block (4) left: collect. Block 0 (2 valid, last appended at
    // write 4), block 1 (2 valid, at write 8), block 2 (4 valid). Cost-benefit
    // scores (1 - u) age / 2u: block 0 (1/2) x 8 / 1 = 4, block 1 2.
    ASSERT_EQ(jobs.size(), 1u) << to_string(policy);
    EXPECT_EQ(jobs[0].moved_slots, 2u);  // L2, L3 to block 3 slots 0, 1
    EXPECT_EQ(ftl.erase_count(0, 0), 1u);
    EXPECT_EQ(ftl.lookup(2), phys(3, 0));
    EXPECT_EQ(ftl.lookup(3), phys(3, 1));
    jobs.clear();
    // L6, L7 fill block 3 and empty block 1; block 4 opens, one free block
    // (0) left: collect block 1, which has nothing to move.
    write(6);
    EXPECT_TRUE(jobs.empty());
    write(7);
    ASSERT_EQ(jobs.size(), 1u);
    EXPECT_EQ(jobs[0].moved_slots, 0u);
    EXPECT_EQ(ftl.erase_count(0, 1), 1u);
    EXPECT_EQ(ftl.open_block(0), 4u);
  }
}

// Where the policies part, traced by hand, on 6 blocks of 4 slots (blocks
// 1, 2, 3, 4 open in turn, 5 stays free). After the fill (block 0 = L0-L3
// at writes 1-4, block 1 = L4-L7 at 5-8) the writes L5 L6 L5 L0 fill block 2
// ([L5 stale, L6, L5, L0], appended last at write 12) and leave block 0 with
// 3 valid, block 1 with 2 (L4, L7); L6 four times fills block 3 with one
// valid copy (last appended at 16) and leaves block 2 with 2 (L5, L0).
// Block 4 opens with one free block left: collect at write 16.
// Greedy: fewest valid, block 3 (1 valid), moves L6.
// Cost-benefit, (1 - u) age / 2u: block 0 0.25 x 12 / 1.5 = 2, block 1
// 0.5 x 8 / 1 = 4, block 2 0.5 x 4 / 1 = 2, block 3 0.75 x 0 / 0.5 = 0:
// block 1, moves L4 and L7.
TEST(Ftl, PoliciesPartOnAge) {
  const std::uint64_t tail[] = {5, 6, 5, 0, 6, 6, 6, 6};
  for (GcPolicy policy : {GcPolicy::greedy, GcPolicy::cost_benefit}) {
    FtlGeometry g = tiny_geometry(policy);
    g.over_provisioning = 2.0;  // 24 physical slots: 6 blocks
    Ftl ftl(g);
    ASSERT_EQ(ftl.layout().blocks_per_unit, 6u);
    std::vector<GcJob> jobs;
    for (std::uint64_t s = 0; s < 8; ++s) ftl.write(s, 0, false, jobs);
    for (std::uint64_t s : tail) ftl.write(s, 0, false, jobs);
    ASSERT_EQ(jobs.size(), 1u) << to_string(policy);
    EXPECT_EQ(ftl.open_block(0), 4u);
    if (policy == GcPolicy::greedy) {
      EXPECT_EQ(jobs[0].moved_slots, 1u);
      EXPECT_EQ(ftl.erase_count(0, 3), 1u);
      EXPECT_EQ(ftl.lookup(6), phys(4, 0));
      EXPECT_EQ(ftl.valid_slots(0, 1), 2u);
    } else {
      EXPECT_EQ(jobs[0].moved_slots, 2u);
      EXPECT_EQ(ftl.erase_count(0, 1), 1u);
      EXPECT_EQ(ftl.lookup(4), phys(4, 0));
      EXPECT_EQ(ftl.lookup(7), phys(4, 1));
      EXPECT_EQ(ftl.valid_slots(0, 3), 1u);
    }
  }
}

// Fraction of valid slots in the victim under uniform random writes in the
// large-block limit, where greedy cleans the oldest block as FIFO does
// (Bux and Iliadis 2010; Desnoyers 2012, eq. for LRU/FIFO; Van Houdt 2013):
// X = exp(-alpha (1 - X)), alpha = physical / logical slots in circulation;
// write amplification 1 / (1 - X).
double closed_form_wa(double alpha) {
  double x = 0.5;
  for (int i = 0; i < 200; ++i) x = std::exp(-alpha * (1.0 - x));
  return 1.0 / (1.0 - x);
}

std::uint64_t splitmix(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class GreedyWriteAmplification : public ::testing::TestWithParam<double> {};

// 200 blocks of 1024 slots: the valid share of a block is close to a
// function of its age, so greedy behaves as FIFO; with finite blocks it does
// a little better (lower WA), so the simulated figure lies within 8 % below
// the closed form and not above it (+1 %). alpha counts the slots in
// circulation: the free blocks held back (the foreground threshold) are not.
TEST_P(GreedyWriteAmplification, MatchesClosedForm) {
  const double op = GetParam();
  FtlGeometry g;
  g.units = 1;
  g.slots_per_page = 1;
  g.pages_per_block = 1024;
  g.logical_slots = static_cast<std::uint64_t>(200.0 * 1024 / (1.0 + op));
  g.over_provisioning = op;
  g.max_slots = 1u << 20;
  g.min_blocks_per_unit = 1;
  Ftl ftl(g);
  ASSERT_FALSE(ftl.layout().sampled);
  ASSERT_EQ(ftl.layout().slots_per_block, 1024u);
  ftl.precondition(true);
  std::vector<GcJob> jobs;
  std::uint64_t rng = 42;
  const std::uint64_t logical = ftl.layout().logical_slots;
  for (std::uint64_t i = 0; i < 3 * logical; ++i) {
    ftl.write(splitmix(rng) % logical, 0, false, jobs);
    jobs.clear();
  }
  const double circulating =
      static_cast<double>(ftl.layout().blocks_per_unit - g.gc_foreground_free_blocks) *
      ftl.layout().slots_per_block;
  const double oracle = closed_form_wa(circulating / static_cast<double>(logical));
  const double wa = ftl.stats().write_amplification();
  EXPECT_LE(wa, oracle * 1.01) << "op " << op;
  EXPECT_GE(wa, oracle * 0.92) << "op " << op;
  // Preconditioning ended in the same regime.
  EXPECT_NEAR(ftl.preconditioned_write_amplification(), wa, 0.03 * wa);
}

INSTANTIATE_TEST_SUITE_P(OverProvisioning, GreedyWriteAmplification,
                         ::testing::Values(0.12, 0.28, 0.5));

TEST(Ftl, LargeDriveIsSampledWithItsOverProvisioning) {
  FtlGeometry g;
  g.units = 64;
  g.slots_per_page = 4;
  g.pages_per_block = 1152;
  g.logical_slots = 1'000'000'000'000ull / 4096;
  g.over_provisioning = 0.0995;
  g.max_slots = 8u << 20;
  const FtlLayout l = ftl_layout(g);
  EXPECT_TRUE(l.sampled);
  EXPECT_EQ(l.blocks_per_unit, kMinModelBlocksPerUnit);
  // 8 Mi slots / 64 units / 256 blocks = 512 slots, whole pages of 4.
  EXPECT_EQ(l.slots_per_block, 512u);
  const double physical = 64.0 * 256 * 512;
  EXPECT_LE(static_cast<double>(l.logical_slots), physical / 1.0995);
  EXPECT_GT(static_cast<double>(l.logical_slots), physical / 1.0995 - 1);
  Ftl ftl(g);
  EXPECT_DOUBLE_EQ(ftl.erase_scale(), 512.0 / (1152 * 4));
  EXPECT_FALSE(ftl.allocated());  // no map until something is written
}

TEST(Ftl, RefusesTooLittleSpare) {
  FtlGeometry g = tiny_geometry(GcPolicy::greedy);
  g.over_provisioning = 0.5;  // 12 physical slots: 3 blocks for 8 logical slots
  EXPECT_THROW(ftl_layout(g), std::invalid_argument);
}

// The flash array: 1 channel, 1 die, 2 planes as separate units, 16 KiB pages
// of 4 slots, 64 MiB at 7 % spare.
FlashParams array_params() {
  FlashParams p;
  p.channels = 1;
  p.dies_per_channel = 1;
  p.planes_per_die = 2;
  p.independent_plane_reads = true;
  p.page_bytes = 16384;
  p.stripe_bytes = 16384;
  p.read_ps = 50'000'000;      // 50 us
  p.program_ps = 500'000'000;  // 500 us
  p.erase_ps = 3'000'000'000;  // 3 ms
  p.channel_mts = 1000;
  p.channel_bus_bytes = 8;
  p.write_buffer_bytes = 1 << 20;
  p.write_buffer_gbps = 10.0;
  p.capacity_bytes = 64ull << 20;
  p.pages_per_block = 64;
  p.over_provisioning = 0.07;
  return p;
}

// Sustained random 4 KiB writes on a preconditioned drive take longer than on
// a fresh one by at least the programs garbage collection adds: per host
// slot, WA slots are programmed.
TEST(FlashWritePath, SteadyStateWritesPayForGarbageCollection) {
  auto run = [](Precondition pre, FlashStats* stats, double* wa) {
    FlashParams p = array_params();
    p.precondition = pre;
    FlashArray f(p);
    std::uint64_t rng = 7;
    std::uint64_t now = 0;
    const std::uint64_t slots = p.capacity_bytes / 4096;
    const int writes = 10000;  // 40 MiB: a fresh drive never collects
    for (int i = 0; i < writes; ++i) now = f.write(now, (splitmix(rng) % slots) * 4096, 4096);
    now = f.flush(now);
    *stats = f.stats();
    *wa = f.ftl()->stats().write_amplification();
    return now;
  };
  FlashStats fresh_stats, steady_stats;
  double fresh_wa = 0, steady_wa = 0;
  const std::uint64_t fresh = run(Precondition::none, &fresh_stats, &fresh_wa);
  const std::uint64_t steady = run(Precondition::steady_state, &steady_stats, &steady_wa);
  EXPECT_DOUBLE_EQ(fresh_wa, 1.0);
  EXPECT_EQ(fresh_stats.gc_page_programs, 0u);
  EXPECT_GT(steady_wa, 3.0);  // 7 % spare
  EXPECT_GT(steady_stats.gc_page_programs, 0u);
  EXPECT_GT(steady_stats.gc_busy_ps, 0u);
  // Program-bound: each unit programs 16 KiB per 500 us, so 10000 x 4 KiB on
  // 2 units take 1250 programs each; in steady state each host slot brings
  // WA - 1 moved slots to program as well.
  const double fresh_program_s = 10000.0 * 4096 / (2 * 16384) * 500e-6;
  EXPECT_GT(static_cast<double>(fresh) * 1e-12, 0.9 * fresh_program_s);
  EXPECT_GT(static_cast<double>(steady) * 1e-12, 0.9 * fresh_program_s * steady_wa);
}

// A 512 B write into a written 4 KiB unit reads the unit first; into a
// never-written one it does not. On XPoint every partial write reads.
TEST(FlashWritePath, SubUnitWritesReadModifyWrite) {
  FlashParams p = array_params();
  FlashArray f(p);
  f.write(0, 0, 512);
  EXPECT_EQ(f.stats().rmw_reads, 0u);  // never written
  f.write(0, 4096, 4096);
  EXPECT_EQ(f.stats().rmw_reads, 0u);  // whole unit
  // While the unit waits in the buffer, the old data comes from there.
  std::uint64_t reads_before = f.stats().page_reads;
  f.write(0, 4096 + 512, 512);
  EXPECT_EQ(f.stats().rmw_reads, 1u);
  EXPECT_EQ(f.stats().page_reads, reads_before);
  EXPECT_EQ(f.stats().buffer_read_hits, 1u);
  // Once programmed, from the array: one page read.
  const std::uint64_t programmed = f.flush(0);
  reads_before = f.stats().page_reads;
  f.write(programmed, 4096 + 1024, 512);
  EXPECT_EQ(f.stats().rmw_reads, 2u);
  EXPECT_EQ(f.stats().page_reads, reads_before + 1);

  FlashParams x = array_params();
  x.media = Media::xpoint;
  x.page_bytes = 512;
  x.stripe_bytes = 512;
  x.read_ps = 1'000'000;
  x.program_ps = 2'000'000;
  FlashArray xp(x);
  EXPECT_EQ(xp.ftl(), nullptr);
  xp.write(0, 0, 512);
  EXPECT_EQ(xp.stats().rmw_reads, 1u);
  // The read covers the 4 KiB unit: 8 sectors of 512 B.
  EXPECT_EQ(xp.stats().page_reads, 8u);
}

// Trimmed units are unmapped: garbage collection has nothing to move in a
// drive whose data was all trimmed.
TEST(FlashWritePath, TrimUnmaps) {
  FlashParams p = array_params();
  p.precondition = Precondition::sequential;
  FlashArray f(p);
  ASSERT_NE(f.ftl()->lookup(0), Ftl::kUnmapped);
  f.trim(1024, 8192);  // covers unit 1 only wholly (1024..9216)
  EXPECT_NE(f.ftl()->lookup(0), Ftl::kUnmapped);
  EXPECT_EQ(f.ftl()->lookup(1), Ftl::kUnmapped);
  EXPECT_NE(f.ftl()->lookup(2), Ftl::kUnmapped);
  f.trim(0, p.capacity_bytes);
  EXPECT_EQ(f.ftl()->lookup(0), Ftl::kUnmapped);
  std::uint64_t now = 0;
  for (int i = 0; i < 20000; ++i)
    now = f.write(now, static_cast<std::uint64_t>(i % 1000) * 4096, 4096);
  EXPECT_EQ(f.ftl()->stats().gc_slots_moved, 0u);
}

}  // namespace
}  // namespace gpunvme::flash
