#include "sim/kernel/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <boost/context/detail/fcontext.hpp>
#include <map>
#include <new>
#include <stdexcept>
#include <utility>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define GPUNVME_FIBER_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define GPUNVME_FIBER_TSAN 1
#endif

namespace gpunvme {

namespace context = boost::context::detail;

namespace {

std::size_t page_bytes() {
  static const std::size_t bytes = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return bytes;
}

// Stacks of finished or abandoned fibres, by size, for the next fibres of
// the process's thread: a run starts thousands of warps, and a process runs
// many simulations (tests, sweeps, the Python module).
class StackPool {
 public:
  ~StackPool() {
    for (auto& [bytes, stacks] : free_) {
      for (std::uint8_t* low : stacks) munmap(low - page_bytes(), bytes + page_bytes());
    }
  }
  // The lowest usable byte of a stack of `bytes` (whole pages), with a
  // guard page below it.
  std::uint8_t* take(std::size_t bytes) {
    std::vector<std::uint8_t*>& stacks = free_[bytes];
    if (!stacks.empty()) {
      std::uint8_t* low = stacks.back();
      stacks.pop_back();
      return low;
    }
    void* mapped = mmap(nullptr, bytes + page_bytes(), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mapped == MAP_FAILED) throw std::bad_alloc();
    if (mprotect(mapped, page_bytes(), PROT_NONE) != 0) {
      munmap(mapped, bytes + page_bytes());
      throw std::bad_alloc();
    }
    return static_cast<std::uint8_t*>(mapped) + page_bytes();
  }
  void give_back(std::uint8_t* low, std::size_t bytes) { free_[bytes].push_back(low); }
  void unmap(std::uint8_t* low, std::size_t bytes) {
#if defined(GPUNVME_FIBER_ASAN)
    // An abandoned body's frames keep their redzones poisoned: whatever is
    // mapped here next starts clean.
    __asan_unpoison_memory_region(low, bytes);
#endif
    munmap(low - page_bytes(), bytes + page_bytes());
  }
  template <class Visit>
  void for_each(Visit visit) const {
    for (const auto& [bytes, stacks] : free_) {
      for (const std::uint8_t* low : stacks) visit(low, bytes);
    }
  }

 private:
  std::map<std::size_t, std::vector<std::uint8_t*>> free_;
};

StackPool& stack_pool() {
  static thread_local StackPool pool;
  return pool;
}

}  // namespace

// Runs on the fibre's own stack: the body, then the final switch back.
struct FiberEntry {
  static void run(context::transfer_t transfer) {
    Fiber& self = *static_cast<Fiber*>(transfer.data);
    self.caller_ = transfer.fctx;
#if defined(GPUNVME_FIBER_ASAN)
    __sanitizer_finish_switch_fiber(nullptr, &self.caller_stack_bottom_, &self.caller_stack_size_);
#endif
    try {
      self.body_();
    } catch (...) {
      // Thrown again by resume(), on the resumer's stack: an exception cannot
      // unwind across the switch.
      self.error_ = std::current_exception();
    }
    self.finished_ = true;
    // Leaving for good: nullptr tells ASan to drop the fibre's fake stack.
#if defined(GPUNVME_FIBER_ASAN)
    __sanitizer_start_switch_fiber(nullptr, self.caller_stack_bottom_, self.caller_stack_size_);
#endif
#if defined(GPUNVME_FIBER_TSAN)
    __tsan_switch_to_fiber(self.tsan_caller_, 0);
#endif
    context::jump_fcontext(self.caller_, nullptr);
    // Not reached: a finished fibre is never resumed.
  }
};

Fiber::Fiber(Body body, std::size_t stack_bytes) : body_(std::move(body)) {
  if (!body_) throw std::invalid_argument("a fibre needs a body");
  const std::size_t page = page_bytes();
  stack_bytes_ = std::max(page, (stack_bytes + page - 1) / page * page);
  stack_low_ = stack_pool().take(stack_bytes_);
  context_ = context::make_fcontext(stack_low_ + stack_bytes_, stack_bytes_, &FiberEntry::run);
#if defined(GPUNVME_FIBER_TSAN)
  tsan_fiber_ = __tsan_create_fiber(0);
#endif
}

Fiber::~Fiber() {
#if defined(GPUNVME_FIBER_TSAN)
  __tsan_destroy_fiber(tsan_fiber_);
#endif
  if (started_ && !finished_) {
    if (measure_abandoned_) deepest_abandoned_ = std::max(deepest_abandoned_, stack_bytes_used());
    stack_pool().unmap(stack_low_, stack_bytes_);
  } else {
    stack_pool().give_back(stack_low_, stack_bytes_);
  }
}

void Fiber::resume() {
  if (running_ != nullptr) throw std::logic_error("a fibre is resumed from outside fibres");
  if (finished_) throw std::logic_error("a finished fibre cannot be resumed");
  started_ = true;
  running_ = this;
#if defined(GPUNVME_FIBER_ASAN)
  void* fake_stack = nullptr;
  __sanitizer_start_switch_fiber(&fake_stack, stack_low_, stack_bytes_);
#endif
#if defined(GPUNVME_FIBER_TSAN)
  tsan_caller_ = __tsan_get_current_fiber();
  __tsan_switch_to_fiber(tsan_fiber_, 0);
#endif
  context_ = context::jump_fcontext(context_, this).fctx;
#if defined(GPUNVME_FIBER_ASAN)
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#endif
  running_ = nullptr;
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void Fiber::suspend() {
  Fiber* self = running_;
  if (self == nullptr) throw std::logic_error("Fiber::suspend outside a fibre");
#if defined(GPUNVME_FIBER_ASAN)
  void* fake_stack = nullptr;
  __sanitizer_start_switch_fiber(&fake_stack, self->caller_stack_bottom_, self->caller_stack_size_);
#endif
#if defined(GPUNVME_FIBER_TSAN)
  __tsan_switch_to_fiber(self->tsan_caller_, 0);
#endif
  self->caller_ = context::jump_fcontext(self->caller_, nullptr).fctx;
#if defined(GPUNVME_FIBER_ASAN)
  __sanitizer_finish_switch_fiber(fake_stack, &self->caller_stack_bottom_,
                                  &self->caller_stack_size_);
#endif
}

namespace {
// Reads below the frames in use, which ASan may keep poisoned.
__attribute__((no_sanitize("address"))) std::size_t bytes_written(const std::uint8_t* low,
                                                                  std::size_t bytes) {
  // Word by word (stacks are whole pages), then the first written word's bytes.
  std::size_t untouched = 0;
  while (untouched < bytes && *reinterpret_cast<const std::uint64_t*>(low + untouched) == 0) {
    untouched += sizeof(std::uint64_t);
  }
  while (untouched < bytes && low[untouched] == 0) ++untouched;
  return bytes - untouched;
}
}  // namespace

std::size_t Fiber::stack_bytes_used() const { return bytes_written(stack_low_, stack_bytes_); }

std::size_t Fiber::deepest_pooled_stack() {
  std::size_t deepest = 0;
  stack_pool().for_each([&](const std::uint8_t* low, std::size_t bytes) {
    deepest = std::max(deepest, bytes_written(low, bytes));
  });
  return deepest;
}

}  // namespace gpunvme
