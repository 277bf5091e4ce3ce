// Spawning many threads from a running process (sim/kernel/threads.h). It
// runs SystemC threads, so its file sorts after the tests of this program
// that throw (see calendar_test.cpp).
#include "sim/kernel/threads.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <set>
#include <string>
#include <systemc>
#include <vector>

#include "sim/kernel/calendar.h"
#include "sim/kernel/simulation.h"

namespace gpunvme {
namespace {

// Threads start in index order, each runs its body once under its own name,
// and no process parents more than kThreadsPerGroup of them (the finish of
// each is a search among its siblings).
TEST(SpawnThreads, IndexOrderUnderSmallParents) {
  Simulation simulation;
  const std::size_t count = 3 * kThreadsPerGroup + 5;
  std::vector<std::size_t> started;
  std::vector<std::size_t> finished;
  std::vector<std::string> names;
  std::set<const sc_core::sc_object*> parents;
  std::size_t most_siblings = 0;
  const std::size_t zero_before = sc_core::sc_get_top_level_objects().size();
  Calendar::current().schedule_at(1000, [&] {
    spawn_threads("none", 0, [&](std::size_t) { ADD_FAILURE() << "no thread was asked for"; });
    spawn_threads("worker", count, [&](std::size_t i) {
      started.push_back(i);
      const sc_core::sc_process_handle self = sc_core::sc_get_current_process_handle();
      names.push_back(self.basename());
      const sc_core::sc_object* parent = self.get_parent_object();
      parents.insert(parent);
      most_siblings = std::max(most_siblings, parent->get_child_objects().size());
      // Finish in reverse order, the worst case for one long list of siblings.
      sc_core::wait(sc_core::sc_time(static_cast<double>(count - i), sc_core::SC_NS));
      finished.push_back(i);
    });
  });
  simulation.run();
  ASSERT_EQ(started.size(), count);
  for (std::size_t i = 0; i < count; ++i) {
    EXPECT_EQ(started[i], i);
    EXPECT_EQ(finished[i], count - 1 - i);
    EXPECT_EQ(names[i], "worker" + std::to_string(i));
  }
  EXPECT_EQ(parents.size(), (count + kThreadsPerGroup - 1) / kThreadsPerGroup);
  EXPECT_LE(most_siblings, kThreadsPerGroup);
  EXPECT_EQ(sc_core::sc_get_top_level_objects().size(), zero_before);
}

}  // namespace
}  // namespace gpunvme
