// Stackful fibres: the warps' execution contexts (sim/kernel/warp_scheduler.h).
//
// A fibre runs a body on a stack of its own and suspends itself at any depth
// of calls, to be resumed later where it stopped; one switch is a few dozen
// instructions (Boost.Context's fcontext: saving and restoring the
// callee-saved registers), where a SystemC thread's wake-up goes through the
// kernel's event, runnable queue and coroutine package.
//
// Stacks are mapped with a guard page below them: a body that overflows its
// stack faults at once instead of overwriting a neighbour. Freed stacks are
// kept for the next fibre of the same size, so a run that starts thousands
// of warps maps their stacks once per process.
//
// AddressSanitizer and ThreadSanitizer are told of every switch
// (__sanitizer_start_switch_fiber / finish, __tsan_switch_to_fiber): without
// it ASan takes the fibre's stack for a stack overflow or reports false
// stack-use errors, and TSan mixes up the fibres' happens-before state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>

namespace gpunvme {

class Fiber {
 public:
  using Body = std::function<void()>;

  // A fibre that will run `body` on a stack of `stack_bytes` (rounded up to
  // whole pages). It starts at the first resume().
  Fiber(Body body, std::size_t stack_bytes);
  // A fibre destroyed before its body finished is abandoned, not unwound:
  // the objects on its stack are not destroyed (as SystemC leaves a thread
  // that never finished), and its stack is unmapped, so that a pointer left
  // into it faults. A finished fibre's stack is kept for reuse.
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // Runs the fibre until it suspends or its body returns. Called from
  // outside any fibre. An exception that leaves the body is thrown here.
  void resume();
  // From inside the running fibre: returns to the resume() that ran it; the
  // next resume() continues after this call.
  static void suspend();
  // The fibre running now, or nullptr outside fibres.
  static Fiber* current() { return running_; }

  // Asks the processor to load the first `lines` cache lines of the
  // suspended fibre's stack from its saved context up: the frames its next
  // resume() returns through. Thousands of fibres take turns, so a fibre's
  // stack is rarely still cached when it runs again; a resumer that knows
  // which fibre comes next overlaps the fetch with the work before it.
  void prefetch_stack(int lines) const {
    if (context_ == nullptr) return;
    const auto* top = static_cast<const char*>(context_);
    for (int line = 0; line < lines; ++line) __builtin_prefetch(top + 64 * line);
  }
  bool started() const { return started_; }
  bool finished() const { return finished_; }
  std::size_t stack_bytes() const { return stack_bytes_; }
  // The deepest its stack has been written: stacks are mapped zeroed and
  // reused as they are, so this is the deepest any fibre that ran on this
  // stack reached (the lowest non-zero byte; a frame's untouched bytes may
  // hide a few more). Scans the stack: a measurement, not for hot paths.
  std::size_t stack_bytes_used() const;
  // The same over the stacks kept for reuse in this thread: the deepest any
  // finished fibre reached.
  static std::size_t deepest_pooled_stack();
  // While on (off by default: it scans each stack), abandoned fibres' stacks
  // are measured before they are unmapped, into deepest_abandoned_stack().
  static void measure_abandoned_stacks(bool on) { measure_abandoned_ = on; }
  static std::size_t deepest_abandoned_stack() { return deepest_abandoned_; }

 private:
  friend struct FiberEntry;  // the body's start and end on the fibre's stack (fiber.cpp)

  Body body_;
  std::size_t stack_bytes_ = 0;
  std::uint8_t* stack_low_ = nullptr;  // the usable stack's lowest byte (above the guard page)
  void* context_ = nullptr;            // the fibre's saved context while it is suspended
  void* caller_ = nullptr;             // the resumer's saved context while the fibre runs
  std::exception_ptr error_;
  bool started_ = false;
  bool finished_ = false;
  // The resumer's stack, for AddressSanitizer's switch back.
  const void* caller_stack_bottom_ = nullptr;
  std::size_t caller_stack_size_ = 0;
  // ThreadSanitizer's fibre state: this fibre's, and the resumer's.
  void* tsan_fiber_ = nullptr;
  void* tsan_caller_ = nullptr;

  static inline thread_local Fiber* running_ = nullptr;
  static inline thread_local bool measure_abandoned_ = false;
  static inline thread_local std::size_t deepest_abandoned_ = 0;
};

}  // namespace gpunvme
