#include "sim/system/workload/stage_recorder.h"

#include <algorithm>
#include <vector>

#include "sim/system/trace/trace_writer.h"

namespace gpunvme {

StageRecorder::Times& StageRecorder::times_of(std::uint16_t queue, std::uint32_t cid) {
  if (queue >= in_flight_.size()) in_flight_.resize(std::size_t{queue} + 1);
  auto& blocks = in_flight_[queue];
  const std::size_t block = cid >> kBlockBits;
  if (block >= blocks.size()) blocks.resize(block + 1);
  if (!blocks[block]) blocks[block] = std::make_unique<Block>();  // zeroed: no stage seen yet
  return (*blocks[block])[cid & ((1u << kBlockBits) - 1)];
}

void StageRecorder::stage(std::uint16_t queue, std::uint32_t cid, algo::Stage stage,
                          Picoseconds when) {
  Times& times = times_of(queue, cid);
  times[static_cast<int>(stage)] = when;
  if (stage != algo::Stage::Delivered) return;
  // Each interval runs from the previous step's end to this step's end.
  trace::TraceWriter* trace = trace::active();
  for (int s = 1; s < kStages; ++s) {
    const Picoseconds interval = times[s] >= times[s - 1] ? times[s] - times[s - 1] : 0;
    intervals_[s].record(interval);
  }
  if (trace != nullptr) {
    std::vector<trace::StageSlice> slices;
    slices.reserve(kStages - 1);
    for (int s = 1; s < kStages; ++s) {
      slices.push_back({algo::stage_interval_name(static_cast<algo::Stage>(s)), times[s - 1],
                        std::max(times[s], times[s - 1])});
    }
    const auto [ssd, qid] = trace->queue_name(queue);
    trace->io(trace::Side::gpu, trace->gpu(), "end_to_end",
              times[static_cast<int>(algo::Stage::Request)], when, slices, {ssd, qid, cid});
  }
  end_to_end_.record(when - times[static_cast<int>(algo::Stage::Request)]);
  fio_.record(times[static_cast<int>(algo::Stage::Request)],
              times[static_cast<int>(algo::Stage::DoorbellRung)], when);
  last_delivered_ = std::max(last_delivered_, when);
  if (run_length_ != nullptr) {
    run_length_->record(when, when - times[static_cast<int>(algo::Stage::Request)]);
  }
  times = Times{};  // the CID's next command starts a fresh record
}

std::vector<std::string> StageRecorder::stage_order() {
  std::vector<std::string> names;
  for (int s = 1; s < kStages; ++s) {
    names.emplace_back(algo::stage_interval_name(static_cast<algo::Stage>(s)));
  }
  return names;
}

nlohmann::json StageRecorder::stages_json() const {
  nlohmann::json out = nlohmann::json::object();
  for (int s = 1; s < kStages; ++s) {
    out[algo::stage_interval_name(static_cast<algo::Stage>(s))] = intervals_[s].summary_ns();
  }
  out["end_to_end"] = end_to_end_.summary_ns();
  return out;
}

}  // namespace gpunvme
