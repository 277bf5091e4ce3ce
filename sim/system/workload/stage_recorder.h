// Collects the stage times of every I/O and turns them into per-stage latency
// distributions once the requesting thread has seen the I/O complete.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/core/algo/stages.h"
#include "sim/kernel/latency_histogram.h"
#include "sim/system/machine/sim_warp.h"
#include "sim/system/workload/fio_latency.h"
#include "sim/system/workload/run_length.h"

namespace gpunvme {

class StageRecorder : public platform::StageSink {
 public:
  void stage(std::uint16_t queue, std::uint32_t cid, algo::Stage stage, Picoseconds when) override;

  const LatencyHistogram& end_to_end() const { return end_to_end_; }
  std::uint64_t completed() const { return end_to_end_.count(); }
  // When the last I/O was seen complete by its requester (0 before any).
  Picoseconds last_delivered() const { return last_delivered_; }
  // Per-stage distributions, in the order of the I/O's steps.
  nlohmann::json stages_json() const;
  // The stage names of stages_json(), in the order an I/O passes them.
  static std::vector<std::string> stage_order();
  // slat, clat and lat (slat ends at the SQ tail doorbell write).
  const FioLatency& fio_latency() const { return fio_; }
  FioLatency& fio_latency() { return fio_; }
  // Fast mode's run-length control, told of every I/O its requester saw
  // complete.
  void observe_completions(RunLengthController* controller) { run_length_ = controller; }

 private:
  static constexpr int kStages = static_cast<int>(algo::Stage::kCount);
  using Times = std::array<Picoseconds, kStages>;
  // Records of the I/Os in flight, by queue and CID: a table, not a hash map,
  // since every stage of every I/O looks its record up. CIDs come in blocks
  // allocated on first use, so sparse CID spaces stay small.
  static constexpr std::uint32_t kBlockBits = 6;
  using Block = std::array<Times, std::size_t{1} << kBlockBits>;
  Times& times_of(std::uint16_t queue, std::uint32_t cid);
  std::vector<std::vector<std::unique_ptr<Block>>> in_flight_;  // [queue][cid >> kBlockBits]
  std::array<LatencyHistogram, kStages> intervals_;             // indexed by the stage that ends it
  LatencyHistogram end_to_end_;
  FioLatency fio_;
  Picoseconds last_delivered_ = 0;
  RunLengthController* run_length_ = nullptr;
};

}  // namespace gpunvme
