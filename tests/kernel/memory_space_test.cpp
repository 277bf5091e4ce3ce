// Memory watches (sim/kernel/memory_space.h) against an independent oracle:
// a plain list of every watch in registration order, where a write fires,
// in that order, each live watch whose byte range it overlaps. A lost,
// extra or misordered firing fails the comparison, whatever index the
// memory space keeps its watches in.
#include "sim/kernel/memory_space.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace gpunvme {
namespace {

// What a watch's callback does with its watch, as a waiter would.
enum class OnFire { kForget, kRearm, kPark };

struct OracleWatch {
  MemorySpace::WatchId id = 0;
  std::uint64_t addr = 0;
  std::uint64_t len = 0;
  std::uint64_t order = 0;  // registration order while live
  bool live = false;
  bool parked = false;
  OnFire on_fire = OnFire::kForget;
};

struct WatchHarness {
  MemorySpace memory;
  std::vector<OracleWatch> oracle;  // every watch not yet forgotten
  std::vector<std::size_t> fired;   // oracle indices, in the order the space fired them
  std::uint64_t next_order = 1;

  static void on_write(void* context, MemorySpace::WatchId id) {
    auto& self = *static_cast<WatchHarness*>(context);
    auto it = std::find_if(self.oracle.begin(), self.oracle.end(),
                           [id](const OracleWatch& w) { return w.id == id; });
    ASSERT_NE(it, self.oracle.end()) << "a forgotten watch fired";
    self.fired.push_back(static_cast<std::size_t>(it - self.oracle.begin()));
    if (it->on_fire == OnFire::kRearm) self.memory.rearm(id);
    if (it->on_fire == OnFire::kPark) self.memory.park(id);
  }

  void add(std::uint64_t addr, std::uint64_t len, OnFire on_fire) {
    OracleWatch w;
    w.id = memory.watch(addr, len, &WatchHarness::on_write, this);
    w.addr = addr;
    w.len = len;
    w.order = next_order++;
    w.live = true;
    w.on_fire = on_fire;
    oracle.push_back(w);
  }

  // Writes, and checks that the space fired what the oracle says, in order.
  void write_and_check(std::uint64_t addr, std::uint64_t len, const std::string& where) {
    std::vector<std::size_t> expected;
    for (std::size_t i = 0; i < oracle.size(); ++i) {
      const OracleWatch& w = oracle[i];
      if (w.live && w.addr < addr + len && addr < w.addr + w.len) expected.push_back(i);
    }
    std::sort(expected.begin(), expected.end(),
              [this](std::size_t a, std::size_t b) { return oracle[a].order < oracle[b].order; });
    fired.clear();
    const std::vector<std::uint8_t> bytes(len, 0xa5);
    memory.write(addr, bytes.data(), len);
    ASSERT_EQ(fired, expected) << where;
    // The oracle's side of the firing: each fired watch leaves, is kept for
    // the next write (last in the order) or is parked.
    for (const std::size_t i : expected) {
      OracleWatch& w = oracle[i];
      w.live = false;
      if (w.on_fire == OnFire::kRearm) {
        w.live = true;
        w.order = next_order++;
      } else if (w.on_fire == OnFire::kPark) {
        w.parked = true;
      }
    }
    oracle.erase(std::remove_if(oracle.begin(), oracle.end(),
                                [](const OracleWatch& w) { return !w.live && !w.parked; }),
                 oracle.end());
  }
};

// Random watches (word-sized, a few words, long ranges over several pages),
// parks, resumes, cancels and writes (inside a word, across words, blocks and
// pages), with many watches on the same words.
TEST(MemoryWatches, FireAsAPlainOrderedListSays) {
  std::mt19937_64 random(20261127);
  WatchHarness harness;
  constexpr std::uint64_t kBase = 1ull << 32;
  constexpr std::uint64_t kSpan = 4 * 4096;  // four pages
  auto pick_addr = [&] { return kBase + random() % kSpan; };
  std::uint64_t writes_firing_several = 0;
  std::uint64_t long_watches = 0;
  for (int step = 0; step < 20000; ++step) {
    const std::string where = "step " + std::to_string(step);
    switch (random() % 8) {
      case 0:
      case 1: {  // a new watch
        std::uint64_t len = 0;
        switch (random() % 4) {
          case 0: len = 1 + random() % 8; break;     // a word or less
          case 1: len = 9 + random() % 56; break;    // up to 64 bytes: filed by word
          case 2: len = 65 + random() % 600; break;  // filed by block
          default:
            len = 1 + random() % 9000;  // up to three pages
            break;
        }
        // Aligned like a CQ entry or a flag, or not at all.
        std::uint64_t addr = pick_addr();
        if (random() % 2 == 0) addr &= ~std::uint64_t{15};
        if (len > 64) ++long_watches;
        harness.add(addr, len, static_cast<OnFire>(random() % 3));
        break;
      }
      case 2: {  // park or resume one
        if (harness.oracle.empty()) break;
        OracleWatch& w = harness.oracle[random() % harness.oracle.size()];
        if (w.live) {
          harness.memory.park(w.id);
          w.live = false;
          w.parked = true;
        } else {
          harness.memory.resume(w.id);
          w.parked = false;
          w.live = true;
          w.order = harness.next_order++;
        }
        break;
      }
      case 3: {  // cancel one
        if (harness.oracle.empty()) break;
        const std::size_t i = random() % harness.oracle.size();
        harness.memory.cancel(harness.oracle[i].id);
        harness.oracle.erase(harness.oracle.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
      default: {  // a write: a word, an entry, or a long one over pages
        std::uint64_t len = 0;
        switch (random() % 4) {
          case 0: len = 4; break;
          case 1: len = 8; break;
          case 2: len = 1 + random() % 64; break;
          default: len = 1 + random() % 6000; break;
        }
        std::uint64_t addr = pick_addr();
        if (random() % 2 == 0) addr &= ~(len - 1 < 8 ? std::uint64_t{3} : std::uint64_t{7});
        harness.write_and_check(addr, len, where);
        if (HasFatalFailure()) return;
        if (harness.fired.size() >= 2) ++writes_firing_several;
        break;
      }
    }
  }
  // The sequence exercised what it is for.
  EXPECT_GT(writes_firing_several, 1000u);
  EXPECT_GT(long_watches, 1000u);
}

// A watch covering several words fires once per write, and a write next to
// a watched word (same word, other bytes; same block, other words) does not
// fire it.
TEST(MemoryWatches, ExactBytesOnceEach) {
  MemorySpace memory;
  const std::uint64_t base = 1ull << 32;
  int entry_fired = 0;
  int flag_fired = 0;
  int ring_fired = 0;
  memory.watch(base + 16, 16, [&] { ++entry_fired; });     // a CQ entry: two words
  memory.watch(base + 36, 4, [&] { ++flag_fired; });       // the upper half of a word
  memory.watch(base + 4000, 1000, [&] { ++ring_fired; });  // blocks over two pages
  const std::uint32_t value = 1;
  memory.store(base + 32, value);  // the flag's word, other bytes
  memory.store(base + 12, value);  // the word before the entry
  EXPECT_EQ(entry_fired + flag_fired + ring_fired, 0);
  memory.write(base + 8, std::vector<std::uint8_t>(40, 1).data(), 40);  // entry and flag
  EXPECT_EQ(entry_fired, 1);
  EXPECT_EQ(flag_fired, 1);
  memory.store(base + 4999, std::uint8_t{1});  // the ring's last byte, on the second page
  EXPECT_EQ(ring_fired, 1);
}

}  // namespace
}  // namespace gpunvme
