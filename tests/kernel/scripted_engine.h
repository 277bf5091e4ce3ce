// A random engine that hands out chosen 64-bit words, for tests that work a
// draw out by hand: a real draw in [0, 1) is word x 2^-64.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <limits>

namespace gpunvme::test {

struct ScriptedEngine {
  using result_type = std::uint64_t;
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return std::numeric_limits<result_type>::max(); }
  result_type operator()() {
    EXPECT_FALSE(words.empty()) << "the draw asked for more words than scripted";
    if (words.empty()) return 0;
    const result_type w = words.front();
    words.pop_front();
    return w;
  }
  std::deque<result_type> words;
};

}  // namespace gpunvme::test
