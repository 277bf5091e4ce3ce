// Spawning the run's many model threads (warps, agents, pollers) while it
// runs. They are fibres the run's calendar resumes (sim/kernel/calendar.h),
// not SystemC threads.
#pragma once

#include <cstddef>
#include <functional>

namespace gpunvme {

// Spawns `count` threads, thread i running body(i). Called from a running
// callback or thread: they run after the threads runnable now, in index
// order.
void spawn_threads(std::size_t count, std::function<void(std::size_t)> body);

}  // namespace gpunvme
