// InplaceFunction against std::function's rules: null callables make an
// empty one, calling an empty one throws, and captures in place or on the
// heap both call through.
#include "sim/kernel/inplace_function.h"

#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <memory>

namespace gpunvme {
namespace {

using Small = InplaceFunction<int(int), 32>;

int twice(int x) { return 2 * x; }

TEST(InplaceFunction, NullCallablesMakeItEmpty) {
  EXPECT_FALSE(Small());
  EXPECT_FALSE(Small(nullptr));
  EXPECT_FALSE(Small(std::function<int(int)>()));
  int (*none)(int) = nullptr;
  EXPECT_FALSE(Small(none));
  EXPECT_FALSE((InplaceFunction<int(int), 64>(Small())));
}

TEST(InplaceFunction, CallingEmptyThrows) {
  Small empty(std::function<int(int)>{});
  EXPECT_THROW(empty(1), std::bad_function_call);
}

TEST(InplaceFunction, CallsWrappedAndCapturedCallables) {
  Small pointer(&twice);
  EXPECT_EQ(pointer(3), 6);
  Small wrapped(std::function<int(int)>([](int x) { return x + 1; }));
  EXPECT_EQ(wrapped(3), 4);
  auto shared = std::make_shared<int>(10);
  Small in_place([shared](int x) { return *shared + x; });
  EXPECT_EQ(in_place(1), 11);
  std::array<int, 64> big{};
  big[63] = 5;
  Small on_heap([big](int x) { return big[63] * x; });
  EXPECT_EQ(on_heap(2), 10);
  Small moved(std::move(on_heap));
  EXPECT_FALSE(on_heap);  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_EQ(moved(3), 15);
}

}  // namespace
}  // namespace gpunvme
