// One deliberate memory or undefined-behaviour error per case, for the
// sanitizer flavour's CTest (tests/CMakeLists.txt): each case must end in the
// sanitizer's report, so a change of that flavour's compiler options (its
// optimization level above all: an optimizer may remove an access the
// sanitizer would have checked) cannot quietly stop it catching errors.
// The accesses go through calls the optimizer may not inline, and indices and
// values come from argc, as they come from data in the simulator.
//   sanitizer_canary CASE   (CASE: one of the names in main)
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

__attribute__((noinline)) int read_at(const int* p, int i) { return p[i]; }
__attribute__((noinline)) void write_at(int* p, int i, int v) { p[i] = v; }

int global_array[4];

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: sanitizer_canary CASE\n");
    return 2;
  }
  const std::string c = argv[1];
  const int one = argc - 1;  // 1, unknown to the compiler
  if (c == "heap-use-after-free") {
    int* p = new int[4];
    delete[] p;
    return read_at(p, one);
  }
  if (c == "heap-buffer-overflow") {
    std::vector<int> v(4);
    return read_at(v.data(), one + 3);
  }
  if (c == "stack-buffer-overflow") {
    int a[4] = {0, 0, 0, 0};
    write_at(a, one + 3, 1);
    return a[0];
  }
  if (c == "stack-use-after-scope") {
    const int* p = nullptr;
    {
      int x = one;
      p = &x;
    }
    return read_at(p, 0);
  }
  if (c == "global-buffer-overflow") return read_at(global_array, one + 3);
  if (c == "memory-leak") {
    void* lost = std::malloc(64);
    std::memset(lost, one, 64);
    return 0;
  }
  if (c == "signed-integer-overflow") {
    const int x = INT_MAX - 1 + one + one;
    return x > 0 ? 0 : 1;
  }
  if (c == "shift-exponent") return 1 << (one + 31 + one);
  std::fprintf(stderr, "unknown case %s\n", argv[1]);
  return 2;
}
