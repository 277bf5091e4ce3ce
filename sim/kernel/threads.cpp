#include "sim/kernel/threads.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <systemc>

namespace gpunvme {

void spawn_threads(const std::string& prefix, std::size_t count,
                   std::function<void(std::size_t)> body) {
  if (count == 0) return;
  auto shared_body = std::make_shared<std::function<void(std::size_t)>>(std::move(body));
  sc_core::sc_spawn_options group_options;
  group_options.spawn_method();
  for (std::size_t first = 0; first < count; first += kThreadsPerGroup) {
    const std::size_t last = std::min(count, first + kThreadsPerGroup);
    sc_core::sc_spawn(
        [prefix, first, last, shared_body] {
          sc_core::sc_spawn_options options;
          options.set_stack_size(kThreadStackBytes);
          for (std::size_t i = first; i < last; ++i) {
            sc_core::sc_spawn([shared_body, i] { (*shared_body)(i); },
                              fmt::format("{}{}", prefix, i).c_str(), &options);
          }
        },
        fmt::format("{}{}_to_{}", prefix, first, last - 1).c_str(), &group_options);
  }
}

}  // namespace gpunvme
