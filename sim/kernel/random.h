// Random numbers that give the same sequence with every C++ standard library.
//
// std::mt19937_64 is specified bit for bit by the standard, but the
// std::uniform_*_distribution and std::shuffle algorithms are not: libstdc++
// and libc++ turn the same engine output into different numbers, so a result
// would be byte-identical only for builds with one library. Boost.Random's
// distributions are one implementation everywhere; every draw in the
// simulator goes through the functions below.
#pragma once

#include <boost/random/uniform_01.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace gpunvme {

using RandomEngine = std::mt19937_64;

// The functions take any engine so that tests can script its output; the
// simulator always passes a RandomEngine.

// A uniformly chosen integer in [0, n); n must be at least 1.
template <typename Engine>
std::uint64_t random_below(Engine& engine, std::uint64_t n) {
  return boost::random::uniform_int_distribution<std::uint64_t>(0, n - 1)(engine);
}

// A uniformly chosen integer in [low, high].
template <typename Engine>
std::uint64_t random_between(Engine& engine, std::uint64_t low, std::uint64_t high) {
  return boost::random::uniform_int_distribution<std::uint64_t>(low, high)(engine);
}

// A uniformly chosen real in [0, 1).
template <typename Engine>
double random_unit(Engine& engine) {
  return boost::random::uniform_01<double>()(engine);
}

// Fisher-Yates shuffle with random_below, so the permutation is the same with
// every standard library (std::shuffle's is not).
template <typename T, typename Engine>
void random_shuffle(std::vector<T>& values, Engine& engine) {
  for (std::size_t i = values.size(); i > 1; --i) {
    const auto j = static_cast<std::size_t>(random_below(engine, i));
    std::swap(values[i - 1], values[j]);
  }
}

}  // namespace gpunvme
