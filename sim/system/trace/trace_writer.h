// Chrome trace / Perfetto JSON of a run ("JSON Object Format" of the Trace
// Event Format): per-command spans through each stage as complete ("X")
// events, with pid = the device (an SSD) and tid = its queue; PCIe link
// utilization as counter ("C") events. Events stream to the file as they
// happen; once the file would pass its size limit, recording stops and the
// trailing "otherData" says so. With no trace active the hooks cost one
// pointer test.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "sim/kernel/time.h"

namespace gpunvme::trace {

class TraceWriter {
 public:
  // `limit_bytes`: the most the finished file may hold (at least 64 KiB).
  // Throws std::runtime_error when the file cannot be written.
  TraceWriter(const std::string& file, std::uint64_t limit_bytes);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // A span of `duration` from `start` on thread `lane` of process `device`.
  void span(const std::string& device, std::uint32_t lane, const std::string& name,
            Picoseconds start, Picoseconds duration, std::uint16_t cid);
  // A counter sample: process `device`, series `name`.
  void counter(const std::string& device, const std::string& name, Picoseconds at, double value);

  // Names a GPU-path queue for spans: queue trace id -> (device, queue id).
  using QueueNamer = std::function<std::pair<std::string, std::uint32_t>(std::uint32_t)>;
  void set_queue_namer(QueueNamer namer) { queue_namer_ = std::move(namer); }
  std::pair<std::string, std::uint32_t> queue_name(std::uint32_t trace_id) const;

  // Called (at most once per `period`) with the current time as events are
  // recorded: counters sampled on the run's own events add none.
  void set_sampler(Picoseconds period, std::function<void(TraceWriter&, Picoseconds)> sampler);

  // Closes the event array and writes `metadata` (plus truncation notes).
  void finish(nlohmann::json metadata);

  bool truncated() const { return truncated_; }
  std::uint64_t events() const { return events_; }
  std::uint64_t dropped() const { return dropped_; }
  std::uint64_t bytes() const { return bytes_; }

 private:
  void emit(const std::string& event);
  std::uint32_t pid_of(const std::string& device);
  void maybe_sample(Picoseconds now);

  std::FILE* out_ = nullptr;
  std::string file_;
  std::uint64_t limit_;
  std::uint64_t bytes_ = 0;
  std::uint64_t events_ = 0;
  std::uint64_t dropped_ = 0;
  bool truncated_ = false;
  bool finished_ = false;
  std::map<std::string, std::uint32_t> pids_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, bool> tids_;
  QueueNamer queue_namer_;
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
