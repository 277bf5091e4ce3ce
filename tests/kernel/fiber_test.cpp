// Fibres (sim/kernel/fiber.h): switches in and out at any call depth,
// exceptions, stacks and their measure. No SystemC: the ThreadSanitizer
// flavour runs this file too (fiber_tsan_tests), through its annotations.
#include "sim/kernel/fiber.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpunvme {
namespace {

constexpr std::size_t kTestStack = 64 * 1024;

// A call chain `depth` deep that suspends at its bottom.
int suspend_deep(int depth, std::vector<std::string>& log) {
  if (depth == 0) {
    log.push_back("bottom");
    Fiber::suspend();
    log.push_back("bottom again");
    return 0;
  }
  const int below = suspend_deep(depth - 1, log);
  return below + 1;
}

// Two fibres interleave as resumed: each suspend returns to the resume()
// that ran it, and the next resume() goes on after the suspend, with the
// fibre's locals as they were.
TEST(Fiber, SuspendAndResumeInterleave) {
  std::vector<std::string> log;
  Fiber a(
      [&] {
        int local = 1;
        log.push_back("a" + std::to_string(local));
        Fiber::suspend();
        local += 1;
        log.push_back("a" + std::to_string(local));
      },
      kTestStack);
  Fiber b(
      [&] {
        log.push_back("b1");
        EXPECT_EQ(Fiber::current() != nullptr, true);
        Fiber::suspend();
        log.push_back("b2");
        Fiber::suspend();
        log.push_back("b3");
      },
      kTestStack);
  EXPECT_FALSE(a.started());
  EXPECT_EQ(Fiber::current(), nullptr);
  a.resume();
  b.resume();
  EXPECT_TRUE(a.started());
  EXPECT_FALSE(a.finished());
  b.resume();
  a.resume();
  EXPECT_TRUE(a.finished());
  EXPECT_FALSE(b.finished());
  b.resume();
  EXPECT_TRUE(b.finished());
  EXPECT_EQ(Fiber::current(), nullptr);
  EXPECT_EQ(log, (std::vector<std::string>{"a1", "b1", "b2", "a2", "b3"}));
}

// A suspend deep in a call chain keeps the chain: the frames return through
// it once resumed.
TEST(Fiber, SuspendsAtAnyDepth) {
  std::vector<std::string> log;
  int result = -1;
  Fiber fiber([&] { result = suspend_deep(50, log); }, kTestStack);
  fiber.resume();
  EXPECT_EQ(log, (std::vector<std::string>{"bottom"}));
  EXPECT_EQ(result, -1);
  fiber.resume();
  EXPECT_EQ(result, 50);
  EXPECT_TRUE(fiber.finished());
}

// An exception leaving the body is thrown by the resume() that ran it, and
// the fibre is finished.
TEST(Fiber, ExceptionReachesTheResumer) {
  Fiber fiber(
      [] {
        Fiber::suspend();
        throw std::runtime_error("from the fibre");
      },
      kTestStack);
  fiber.resume();
  try {
    fiber.resume();
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& error) {
    EXPECT_STREQ(error.what(), "from the fibre");
  }
  EXPECT_TRUE(fiber.finished());
  EXPECT_THROW(fiber.resume(), std::logic_error);
}

TEST(Fiber, RefusesMisuse) {
  EXPECT_THROW(Fiber::suspend(), std::logic_error);
  EXPECT_THROW(Fiber(nullptr, kTestStack), std::invalid_argument);
  // A fibre does not resume another: the calendar's method resumes them all.
  Fiber inner([] {}, kTestStack);
  bool refused = false;
  Fiber outer(
      [&] {
        try {
          inner.resume();
        } catch (const std::logic_error&) {
          refused = true;
        }
      },
      kTestStack);
  outer.resume();
  EXPECT_TRUE(refused);
  EXPECT_FALSE(inner.started());
}

// The stack's measure follows what the body wrote: a 20 KiB local array
// shows, and the measure stays within the stack. (A size no other test uses:
// stacks are reused as they are, and the measure keeps their history.)
TEST(Fiber, MeasuresTheDeepestStackWrite) {
  constexpr std::size_t kOwnSize = 68 * 1024;
  auto shallow = std::make_unique<Fiber>([] { Fiber::suspend(); }, kOwnSize);
  shallow->resume();
  const std::size_t small = shallow->stack_bytes_used();
  EXPECT_GT(small, 0u);
  EXPECT_LT(small, 4096u);
  auto deep = std::make_unique<Fiber>(
      [] {
        volatile unsigned char buffer[20 * 1024];
        for (std::size_t i = 0; i < sizeof(buffer); ++i) buffer[i] = 1;
        Fiber::suspend();
      },
      kOwnSize);
  deep->resume();
  EXPECT_GE(deep->stack_bytes_used(), 20u * 1024);
  EXPECT_LE(deep->stack_bytes_used(), deep->stack_bytes());
  shallow->resume();
  deep->resume();
  shallow.reset();
  deep.reset();
  // Finished, the stacks wait for reuse and still show how deep they went.
  EXPECT_GE(Fiber::deepest_pooled_stack(), 20u * 1024);
}

// Stacks are whole pages, and a finished fibre's stack is reused by the
// next fibre of the same size.
TEST(Fiber, StacksArePagesAndReused) {
  const std::uint8_t* seen[3] = {};
  auto body = [&](int i) {
    return [&seen, i] {
      std::uint8_t local = 0;
      seen[i] = &local;
    };
  };
  auto first = std::make_unique<Fiber>(body(0), 10000);
  EXPECT_GE(first->stack_bytes(), 10000u);
  EXPECT_EQ(first->stack_bytes() % 4096, 0u);
  first->resume();
  Fiber other(body(1), 10000);  // first's stack is not free yet
  other.resume();
  first.reset();
  Fiber next(body(2), 10000);
  next.resume();
  auto distance = [](const std::uint8_t* a, const std::uint8_t* b) {
    return a > b ? static_cast<std::size_t>(a - b) : static_cast<std::size_t>(b - a);
  };
  EXPECT_LT(distance(seen[0], seen[2]), 4096u);  // the same stack
  EXPECT_GE(distance(seen[0], seen[1]), 4096u);  // another one
}

// A fibre destroyed while suspended is abandoned: its body's objects are not
// destroyed, and the run goes on.
TEST(Fiber, AbandonedWhileSuspended) {
  bool destroyed = false;
  struct Flag {
    bool* flag;
    ~Flag() { *flag = true; }
  };
  {
    Fiber fiber(
        [&] {
          Flag flag{&destroyed};
          Fiber::suspend();
        },
        kTestStack);
    fiber.resume();
  }
  EXPECT_FALSE(destroyed);
  Fiber next([] {}, kTestStack);
  next.resume();
  EXPECT_TRUE(next.finished());
}

// Thousands of fibres, each resumed a few times in turn: the order and the
// counts stay exact (the sanitizer flavours check the switches).
TEST(Fiber, ManyFibresRoundRobin) {
  constexpr int kFibres = 500;
  constexpr int kRounds = 5;
  std::vector<int> steps(kFibres, 0);
  std::vector<int> order;
  std::vector<std::unique_ptr<Fiber>> fibres;
  for (int i = 0; i < kFibres; ++i) {
    fibres.push_back(std::make_unique<Fiber>(
        [&, i] {
          for (int round = 0; round < kRounds; ++round) {
            ++steps[static_cast<std::size_t>(i)];
            order.push_back(i);
            Fiber::suspend();
          }
        },
        kTestStack));
  }
  for (int round = 0; round <= kRounds; ++round) {
    for (auto& fibre : fibres) fibre->resume();
  }
  for (int i = 0; i < kFibres; ++i) {
    EXPECT_EQ(steps[static_cast<std::size_t>(i)], kRounds);
    EXPECT_TRUE(fibres[static_cast<std::size_t>(i)]->finished());
  }
  ASSERT_EQ(order.size(), static_cast<std::size_t>(kFibres * kRounds));
  for (std::size_t k = 0; k < order.size(); ++k) {
    EXPECT_EQ(order[k], static_cast<int>(k % kFibres));
  }
}

}  // namespace
}  // namespace gpunvme
