#include "sim/system/workload/path_stages.h"

#include "sim/system/trace/trace_writer.h"

namespace gpunvme {

PathStages::PathStages(std::vector<std::string> names, std::size_t submitted)
    : names_(std::move(names)), intervals_(names_.size()), submitted_(submitted) {}

void PathStages::record(const Picoseconds* times, const std::string& host, const std::string& ssd,
                        std::uint32_t queue, std::uint16_t cid) {
  trace::TraceWriter* trace = trace::active();
  std::vector<trace::StageSlice> slices;
  Picoseconds previous = times[0];
  for (std::size_t i = 0; i < names_.size(); ++i) {
    const Picoseconds t = times[i + 1];
    if (t == kNotReached) continue;
    const Picoseconds interval = t >= previous ? t - previous : 0;
    intervals_[i].record(interval);
    if (trace != nullptr) slices.push_back({names_[i], previous, previous + interval});
    previous = t;
  }
  end_to_end_.record(previous - times[0]);
  if (trace != nullptr) {
    trace->io(trace::Side::host, host, "end_to_end", times[0], previous, slices, {ssd, queue, cid});
  }
  const Picoseconds submitted = times[submitted_] == kNotReached ? times[0] : times[submitted_];
  fio_.record(times[0], submitted, previous);
}

nlohmann::json PathStages::stages_json() const {
  nlohmann::json out = nlohmann::json::object();
  for (std::size_t i = 0; i < names_.size(); ++i) {
    if (intervals_[i].count() != 0) out[names_[i]] = intervals_[i].summary_ns();
  }
  out["end_to_end"] = end_to_end_.summary_ns();
  return out;
}

}  // namespace gpunvme
