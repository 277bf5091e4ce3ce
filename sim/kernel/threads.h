// Spawning the run's many model threads (warps, agents, pollers) while it
// runs.
//
// SystemC keeps a process's children in a vector and, when a child thread
// finishes, finds it there by a linear search: 8,192 warps spawned by one
// process cost O(n^2) to finish, 113 M instructions (2.6 %) of the speed
// reference at 60 K I/Os and 9 % of a 20 K I/O warp_batch run. The threads
// are spawned instead by method processes of their own, a group of at most
// kThreadsPerGroup each, in index order: a finished thread is looked for
// among its group only.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace gpunvme {

// Threads per spawning method process: a finished thread's search is at most
// this long, and the group processes (a few hundred bytes each) number
// count / kThreadsPerGroup.
inline constexpr std::size_t kThreadsPerGroup = 64;

// The threads' stacks: the algorithms keep a few lane arrays on the stack;
// sanitizers need much more room for their redzones.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr int kThreadStackBytes = 512 * 1024;
#else
inline constexpr int kThreadStackBytes = 64 * 1024;
#endif

// Spawns threads named `prefix`0 .. `prefix`(count - 1), thread i running
// body(i). Called from a running process (a model's callback): the groups'
// methods run after it in the same evaluation phase, in order, and their
// threads after them, in index order (after any thread the calling process
// itself made runnable).
void spawn_threads(const std::string& prefix, std::size_t count,
                   std::function<void(std::size_t)> body);

}  // namespace gpunvme
