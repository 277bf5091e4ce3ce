// Chrome trace / Perfetto JSON of a run ("JSON Object Format" of the Trace
// Event Format). Processes: the GPU that issues I/Os ("GPU <id>": the
// GPU-initiated path's steps), the host CPU of the CPU-initiated paths
// ("host <id>": GDS and bounce steps), each SSD ("SSD <id>": fetch wait,
// processing, media and data transfer of every command) and "pcie" (link
// utilization as counter "C" events).
//
// Each I/O is one enclosing complete ("X") slice (end_to_end, or command in
// an SSD) with its stages as consecutive child slices, placed on one track
// per in-flight slot: a thread "slot N" of its process holds one I/O at a
// time. Perfetto (and chrome://tracing) require the complete slices of one
// thread to nest; thousands of I/Os overlap in time, so each goes to the
// first slot free since before it began. This was chosen over nestable async
// ("b"/"e") events because it keeps one event per slice (async events need
// two, doubling the file) and shows concurrency directly as the number of
// slot tracks in use, while a slot's slices still never overlap without
// nesting. An I/O's enclosing slice starts with its first stage; it is
// written first, since Perfetto orders complete events that start together
// by their place in the file and would otherwise nest the I/O inside its own
// stage (google/perfetto issues 226 and 878).
//
// Events stream to the file as I/Os finish. A window of simulated time keeps
// only events that overlap it; once the file would pass its size limit,
// recording stops and the trailing "otherData" says so. With no trace active
// the hooks cost one pointer test.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/kernel/time.h"

namespace gpunvme::trace {

// The span of simulated time whose events a trace keeps (both ends included).
struct TraceWindow {
  Picoseconds start = 0;
  Picoseconds end = std::numeric_limits<Picoseconds>::max();
  bool overlaps(Picoseconds from, Picoseconds to) const { return from <= end && to >= start; }
};

// Parses "START:END" in microseconds of simulated time, either side may be
// empty ("100:" keeps everything from 100 us on). Throws ConfigError naming
// `option` when the text is not two non-negative numbers with START <= END.
TraceWindow parse_trace_window(const std::string& text, const std::string& option);

// Which part of the machine a slice belongs to: its process and category.
enum class Side { gpu, ssd, host };
const char* side_name(Side side);  // "gpu", "ssd", "host" (the category)

// One stage of an I/O: the interval it ends at `end`, from `start`.
struct StageSlice {
  std::string_view name;
  Picoseconds start;
  Picoseconds end;
};

// Where an I/O ran, shown in the enclosing slice's args.
struct IoTag {
  std::string ssd;
  std::uint32_t queue = 0;
  std::uint32_t cid = 0;
};

class TraceWriter {
 public:
  // `limit_bytes`: the most the finished file may hold (at least 64 KiB).
  // Throws std::runtime_error when the file cannot be written.
  TraceWriter(const std::string& file, std::uint64_t limit_bytes,
              TraceWindow window = TraceWindow{});
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // One I/O on `device` (a GPU, host CPU or SSD id) from `start` to `end`:
  // an enclosing slice `whole` and its `stages` in order. Stages are kept
  // within the I/O and after one another (a stage recorded out of order
  // starts where the previous one ended); stages of no duration are left
  // out, as no viewer can show them and they would tie with their
  // neighbours' ends.
  void io(Side side, const std::string& device, std::string_view whole, Picoseconds start,
          Picoseconds end, const std::vector<StageSlice>& stages, const IoTag& tag);
  // A counter sample: process `device`, series `name`.
  void counter(const std::string& device, const std::string& name, Picoseconds at, double value);

  // Names a GPU-path queue for its I/Os' args: queue trace id -> (SSD, queue id).
  using QueueNamer = std::function<std::pair<std::string, std::uint32_t>(std::uint32_t)>;
  void set_queue_namer(QueueNamer namer) { queue_namer_ = std::move(namer); }
  std::pair<std::string, std::uint32_t> queue_name(std::uint32_t trace_id) const;
  // The GPU whose threads issue the GPU-initiated path's I/Os.
  void set_gpu(std::string gpu) { gpu_ = std::move(gpu); }
  const std::string& gpu() const { return gpu_; }

  // Called (at most once per `period`) with the current time as events are
  // recorded: counters sampled on the run's own events add none.
  void set_sampler(Picoseconds period, std::function<void(TraceWriter&, Picoseconds)> sampler);

  // Closes the event array and writes `metadata` (plus the window and
  // truncation notes).
  void finish(nlohmann::json metadata);

  const TraceWindow& window() const { return window_; }
  bool truncated() const { return truncated_; }
  std::uint64_t events() const { return events_; }
  std::uint64_t dropped() const { return dropped_; }
  std::uint64_t bytes() const { return bytes_; }

 private:
  struct Process {
    std::uint32_t pid = 0;
    // Slot tracks by the time their last I/O ended; a free one is reused.
    std::set<std::pair<Picoseconds, std::uint32_t>> slots_by_end;
  };
  void emit(const std::string& event);
  Process& process(const std::string& name);
  std::uint32_t slot_for(Process& process, Picoseconds start, Picoseconds end);
  void maybe_sample(Picoseconds now);

  std::FILE* out_ = nullptr;
  std::string file_;
  std::uint64_t limit_;
  TraceWindow window_;
  std::uint64_t bytes_ = 0;
  std::uint64_t events_ = 0;
  std::uint64_t dropped_ = 0;
  bool truncated_ = false;
  bool finished_ = false;
  std::map<std::string, Process> processes_;
  QueueNamer queue_namer_;
  std::string gpu_ = "gpu";
  Picoseconds sample_period_ = 0;
  Picoseconds next_sample_ = 0;
  bool sampling_ = false;
  std::function<void(TraceWriter&, Picoseconds)> sampler_;
};

// The trace of the run in progress, or nullptr.
TraceWriter* active();

// Makes `writer` the active trace for its lifetime.
class ScopedTrace {
 public:
  explicit ScopedTrace(TraceWriter* writer);
  ~ScopedTrace();
  ScopedTrace(const ScopedTrace&) = delete;
  ScopedTrace& operator=(const ScopedTrace&) = delete;

 private:
  TraceWriter* previous_;
};

}  // namespace gpunvme::trace
