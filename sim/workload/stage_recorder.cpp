#include "sim/workload/stage_recorder.h"

#include <algorithm>

#include "sim/trace/trace_writer.h"

namespace gpunvme {

void StageRecorder::stage(std::uint16_t queue, std::uint16_t cid, algo::Stage stage,
                          Picoseconds when) {
  const std::uint32_t key = (std::uint32_t{queue} << 16) | cid;
  Times& times = in_flight_[key];
  times[static_cast<int>(stage)] = when;
  if (stage != algo::Stage::Delivered) return;
  // Each interval runs from the previous step's end to this step's end.
  trace::TraceWriter* trace = trace::active();
  for (int s = 1; s < kStages; ++s) {
    const Picoseconds interval = times[s] >= times[s - 1] ? times[s] - times[s - 1] : 0;
    intervals_[s].record(interval);
    if (trace != nullptr) {
      const auto [device, qid] = trace->queue_name(queue);
      trace->span(device, qid, algo::stage_interval_name(static_cast<algo::Stage>(s)), times[s - 1],
                  interval, cid);
    }
  }
  end_to_end_.record(when - times[static_cast<int>(algo::Stage::Request)]);
  last_delivered_ = std::max(last_delivered_, when);
  in_flight_.erase(key);
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
