#include "sim/kernel/threads.h"

#include <memory>

#include "sim/kernel/calendar.h"

namespace gpunvme {

void spawn_threads(std::size_t count, std::function<void(std::size_t)> body) {
  if (count == 0) return;
  auto shared_body = std::make_shared<std::function<void(std::size_t)>>(std::move(body));
  Calendar& calendar = Calendar::current();
  for (std::size_t i = 0; i < count; ++i) {
    calendar.spawn([shared_body, i] { (*shared_body)(i); });
  }
}

}  // namespace gpunvme
