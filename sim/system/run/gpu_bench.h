// A GPU alone on a root complex with host memory, and warps run on it: the
// machine of the GPU microbenchmarks' simulated counterparts
// (sim/frontend/validate/microbench.cpp) and of the GPU model's tests.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "sim/kernel/calendar.h"
#include "sim/kernel/simulation.h"
#include "sim/system/config/run_config.h"
#include "sim/system/machine/machine.h"
#include "sim/system/machine/sim_warp.h"
#include "sim/system/run/catalog.h"

namespace gpunvme {

class GpuBench {
 public:
  // `gpu` holds the GPU node's fields beyond id and kind (a profile, params);
  // the GPU sits on a Gen `gen` x16 link. dram0 is placed first: host memory
  // starts at 4 GiB.
  explicit GpuBench(nlohmann::json gpu = nlohmann::json::object(), int gen = 5) {
    nlohmann::json node = {{"id", "gpu0"}, {"kind", "gpu"}};
    node.update(gpu);
    const nlohmann::json doc = {
        {"name", "gpu-bench"},
        {"nodes",
         {{{"id", "dram0"}, {"kind", "host_memory"}, {"socket", "cpu0"}},
          {{"id", "cpu0"}, {"kind", "cpu"}},
          {{"id", "rc0"}, {"kind", "root_complex"}, {"socket", "cpu0"}},
          node}},
        {"links", {{{"from", "rc0"}, {"to", "gpu0"}, {"gen", gen}, {"width", 16}}}}};
    topology_ = resolve_topology(catalog(), doc, shipped_configs_dir() + "/gpu-bench");
    machine_ = std::make_unique<Machine>(topology_);
  }

  gpu::Gpu& gpu() { return machine_->gpu("gpu0"); }
  Machine& machine() { return *machine_; }
  platform::WarpCounters& counters() { return counters_; }
  static std::uint64_t host_memory() { return 1ull << 32; }

  // Runs `body` as one warp on `placement` (spawned now; runs in run()).
  void spawn(platform::WarpPlacement placement, std::function<void(platform::SimWarp&)> body,
             Picoseconds backoff = 0) {
    Calendar::current().spawn([this, placement, body, backoff] {
      platform::SimWarp p(gpu(), machine_->fabric(), machine_->memory(), sink_, counters_,
                          placement, backoff);
      body(p);
    });
  }
  void run() { simulation_.run(); }
  // From a warp's body: lets `delay` of simulated time pass without an
  // operation (nothing charged, no event counted), as a test's script wants.
  static void idle_for(Picoseconds delay) {
    Calendar& calendar = Calendar::current();
    FiberEvent idle_over;
    calendar.wake_at(Calendar::now() + delay, idle_over);
    calendar.wait(idle_over);
  }

 private:
  class NullSink : public platform::StageSink {
   public:
    void stage(std::uint16_t, std::uint32_t, algo::Stage, Picoseconds) override {}
  };

  Simulation simulation_;
  TopologyConfig topology_;
  std::unique_ptr<Machine> machine_;
  NullSink sink_;
  platform::WarpCounters counters_;
};

}  // namespace gpunvme
