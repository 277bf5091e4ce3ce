// A move-only callable that keeps callables of up to `Capacity` bytes in
// place. std::function (libstdc++) allocates for any capture larger than two
// words, and most timed callbacks of the models capture more (a this pointer
// and a shared_ptr, a few ids): one allocation and one free per event.
// Larger callables still work; they go to the heap.
#pragma once

#include <cstddef>
#include <functional>
#include <new>
#include <type_traits>
#include <utility>

namespace gpunvme {

template <class Signature, std::size_t Capacity>
class InplaceFunction;

namespace detail {
// Callables that may be null, which make an empty InplaceFunction as they
// make an empty std::function: function and member pointers, and wrappers.
template <class Fn>
struct IsFunctionWrapper : std::false_type {};
template <class Signature>
struct IsFunctionWrapper<std::function<Signature>> : std::true_type {};
template <class Signature, std::size_t Capacity>
struct IsFunctionWrapper<InplaceFunction<Signature, Capacity>> : std::true_type {};
template <class Fn>
constexpr bool kNullable =
    std::is_pointer_v<Fn> || std::is_member_pointer_v<Fn> || IsFunctionWrapper<Fn>::value;
}  // namespace detail

template <class R, class... Args, std::size_t Capacity>
class InplaceFunction<R(Args...), Capacity> {
 public:
  InplaceFunction() noexcept = default;
  InplaceFunction(std::nullptr_t) noexcept {}  // NOLINT: as std::function
  template <class F, class Fn = std::decay_t<F>,
            class = std::enable_if_t<!std::is_same_v<Fn, InplaceFunction> &&
                                     std::is_invocable_r_v<R, Fn&, Args...>>>
  InplaceFunction(F&& f) {  // NOLINT: implicit, as std::function
    // An empty std::function handed on stays empty, so that callers that
    // test the callback before calling it still see "none".
    if constexpr (detail::kNullable<Fn>) {
      if (!f) return;
    }
    if constexpr (kInPlace<Fn>) {
      ::new (static_cast<void*>(storage_)) Fn(std::forward<F>(f));
      ops_ = &kInPlaceOps<Fn>;
    } else {
      ::new (static_cast<void*>(storage_)) Fn*(new Fn(std::forward<F>(f)));
      ops_ = &kHeapOps<Fn>;
    }
  }
  InplaceFunction(InplaceFunction&& other) noexcept : ops_(other.ops_) {
    if (ops_ != nullptr) ops_->move(storage_, other.storage_);
    other.ops_ = nullptr;
  }
  InplaceFunction& operator=(InplaceFunction&& other) noexcept {
    if (this != &other) {
      reset();
      ops_ = other.ops_;
      if (ops_ != nullptr) ops_->move(storage_, other.storage_);
      other.ops_ = nullptr;
    }
    return *this;
  }
  InplaceFunction& operator=(std::nullptr_t) noexcept {
    reset();
    return *this;
  }
  InplaceFunction(const InplaceFunction&) = delete;
  InplaceFunction& operator=(const InplaceFunction&) = delete;
  ~InplaceFunction() { reset(); }

  explicit operator bool() const noexcept { return ops_ != nullptr; }
  // Calling an empty one throws, as std::function does.
  R operator()(Args... args) {
    if (ops_ == nullptr) throw std::bad_function_call();
    return ops_->invoke(storage_, std::forward<Args>(args)...);
  }

 private:
  struct Ops {
    R (*invoke)(void* storage, Args&&... args);
    void (*move)(void* to, void* from) noexcept;  // leaves `from` destroyed
    void (*destroy)(void* storage) noexcept;
  };
  template <class Fn>
  static constexpr bool kInPlace =
      sizeof(Fn) <= Capacity &&
      alignof(Fn) <= alignof(std::max_align_t) && std::is_nothrow_move_constructible_v<Fn>;
  template <class Fn>
  static constexpr Ops kInPlaceOps = {
      [](void* s, Args&&... args) -> R {
        return (*std::launder(static_cast<Fn*>(s)))(std::forward<Args>(args)...);
      },
      [](void* to, void* from) noexcept {
        Fn* f = std::launder(static_cast<Fn*>(from));
        ::new (to) Fn(std::move(*f));
        f->~Fn();
      },
      [](void* s) noexcept { std::launder(static_cast<Fn*>(s))->~Fn(); }};
  template <class Fn>
  static constexpr Ops kHeapOps = {
      [](void* s, Args&&... args) -> R {
        return (**std::launder(static_cast<Fn**>(s)))(std::forward<Args>(args)...);
      },
      [](void* to, void* from) noexcept { ::new (to) Fn*(*std::launder(static_cast<Fn**>(from))); },
      [](void* s) noexcept { delete *std::launder(static_cast<Fn**>(s)); }};

  void reset() noexcept {
    if (ops_ != nullptr) ops_->destroy(storage_);
    ops_ = nullptr;
  }

  alignas(std::max_align_t) unsigned char storage_[Capacity];
  const Ops* ops_ = nullptr;
};

}  // namespace gpunvme
