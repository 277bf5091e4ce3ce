#include "sim/system/trace/trace_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <stdexcept>

#include "sim/kernel/params/config_error.h"

namespace gpunvme::trace {

namespace {
TraceWriter* g_active = nullptr;

// Room kept for closing the array and the metadata object.
constexpr std::uint64_t kTailReserve = 16 * 1024;

// Trace timestamps are in microseconds; picosecond precision is kept.
std::string micros(Picoseconds t) { return fmt::format("{:.6f}", static_cast<double>(t) / 1e6); }

// One side of a window: empty, or a non-negative number of microseconds
// within the range of simulated time.
std::optional<Picoseconds> window_bound(const std::string& text, bool* ok) {
  *ok = true;
  if (text.empty()) return std::nullopt;
  *ok = text.find_first_not_of("0123456789.eE+") == std::string::npos;
  if (!*ok) return std::nullopt;
  char* end = nullptr;
  const double us = std::strtod(text.c_str(), &end);
  constexpr double kMaxUs = 1e12;  // 11.6 days of simulated time, far beyond any run
  *ok = end == text.c_str() + text.size() && std::isfinite(us) && us >= 0 && us <= kMaxUs;
  if (!*ok) return std::nullopt;
  return static_cast<Picoseconds>(std::llround(us * 1e6));
}
}  // namespace

TraceWindow parse_trace_window(const std::string& text, const std::string& option) {
  const std::string allowed =
      "expected START:END in microseconds of simulated time, each a non-negative number or "
      "empty (100:500, 100: or :500)";
  const std::size_t colon = text.find(':');
  if (colon == std::string::npos || text.find(':', colon + 1) != std::string::npos) {
    throw ConfigError(option, "trace_window", text, allowed);
  }
  bool start_ok = false, end_ok = false;
  const std::optional<Picoseconds> start = window_bound(text.substr(0, colon), &start_ok);
  const std::optional<Picoseconds> end = window_bound(text.substr(colon + 1), &end_ok);
  if (!start_ok || !end_ok) throw ConfigError(option, "trace_window", text, allowed);
  TraceWindow window;
  if (start) window.start = *start;
  if (end) window.end = *end;
  if (window.start > window.end) {
    throw ConfigError(option, "trace_window", text, "START must not be after END");
  }
  return window;
}

const char* side_name(Side side) {
  switch (side) {
    case Side::gpu: return "gpu";
    case Side::ssd: return "ssd";
    case Side::host: return "host";
  }
  return "";
}

TraceWriter* active() { return g_active; }

ScopedTrace::ScopedTrace(TraceWriter* writer) : previous_(g_active) { g_active = writer; }
ScopedTrace::~ScopedTrace() { g_active = previous_; }

TraceWriter::TraceWriter(const std::string& file, std::uint64_t limit_bytes, TraceWindow window)
    : file_(file), limit_(std::max<std::uint64_t>(limit_bytes, 4 * kTailReserve)), window_(window) {
  out_ = std::fopen(file.c_str(), "w");
  if (out_ == nullptr) throw std::runtime_error("cannot write trace file " + file);
  const std::string head = "{\"traceEvents\":[\n";
  std::fwrite(head.data(), 1, head.size(), out_);
  bytes_ = head.size();
}

TraceWriter::~TraceWriter() {
  if (!finished_) finish(nlohmann::json::object());
}

void TraceWriter::emit(const std::string& event) {
  if (truncated_) {
    ++dropped_;
    return;
  }
  const std::uint64_t need = event.size() + 2;
  if (bytes_ + need + kTailReserve > limit_) {
    truncated_ = true;
    ++dropped_;
    return;
  }
  if (events_ != 0) std::fputs(",\n", out_);
  std::fwrite(event.data(), 1, event.size(), out_);
  bytes_ += need;
  ++events_;
}

TraceWriter::Process& TraceWriter::process(const std::string& name) {
  auto it = processes_.find(name);
  if (it != processes_.end()) return it->second;
  Process& p = processes_[name];
  p.pid = static_cast<std::uint32_t>(processes_.size());
  emit(fmt::format(R"({{"name":"process_name","ph":"M","pid":{},"tid":0,"args":{{"name":{}}}}})",
                   p.pid, nlohmann::json(name).dump()));
  return p;
}

std::uint32_t TraceWriter::slot_for(Process& p, Picoseconds start, Picoseconds end) {
  // The slot that has been free longest, if it was free by `start`: every
  // slice placed on a slot begins at or after the end of all slices placed
  // there before, whatever order the I/Os finish in.
  std::uint32_t slot = 0;
  if (!p.slots_by_end.empty() && p.slots_by_end.begin()->first <= start) {
    slot = p.slots_by_end.begin()->second;
    p.slots_by_end.erase(p.slots_by_end.begin());
  } else {
    slot = static_cast<std::uint32_t>(p.slots_by_end.size() + 1);
    emit(fmt::format(
        R"({{"name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":"slot {}"}}}})", p.pid,
        slot, slot));
  }
  p.slots_by_end.emplace(end, slot);
  return slot;
}

std::pair<std::string, std::uint32_t> TraceWriter::queue_name(std::uint32_t trace_id) const {
  if (queue_namer_) return queue_namer_(trace_id);
  return {"queues", trace_id};
}

void TraceWriter::io(Side side, const std::string& device, std::string_view whole,
                     Picoseconds start, Picoseconds end, const std::vector<StageSlice>& stages,
                     const IoTag& tag) {
  end = std::max(end, start);
  maybe_sample(end);
  if (truncated_) {
    ++dropped_;
    return;
  }
  if (!window_.overlaps(start, end)) return;
  const char* category = side_name(side);
  const std::string prefix = side == Side::gpu ? "GPU " : side == Side::ssd ? "SSD " : "host ";
  Process& p = process(prefix + device);
  const std::uint32_t slot = slot_for(p, start, end);
  emit(fmt::format(
      R"({{"name":"{}","cat":"{}","ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"args":{{"ssd":{},"queue":{},"cid":{}}}}})",
      whole, category, p.pid, slot, micros(start), micros(end - start),
      nlohmann::json(tag.ssd).dump(), tag.queue, tag.cid));
  Picoseconds cursor = start;
  for (const StageSlice& stage : stages) {
    const Picoseconds from = std::clamp(stage.start, cursor, end);
    const Picoseconds to = std::clamp(stage.end, from, end);
    cursor = to;
    if (to == from || !window_.overlaps(from, to)) continue;
    emit(fmt::format(R"({{"name":"{}","cat":"{}","ph":"X","pid":{},"tid":{},"ts":{},"dur":{}}})",
                     stage.name, category, p.pid, slot, micros(from), micros(to - from)));
  }
}

void TraceWriter::counter(const std::string& device, const std::string& name, Picoseconds at,
                          double value) {
  if (truncated_) {
    ++dropped_;
    return;
  }
  if (!window_.overlaps(at, at)) return;
  const std::uint32_t pid = process(device).pid;
  emit(fmt::format(R"({{"name":{},"ph":"C","pid":{},"ts":{},"args":{{"value":{:.6f}}}}})",
                   nlohmann::json(name).dump(), pid, micros(at), value));
}

void TraceWriter::set_sampler(Picoseconds period,
                              std::function<void(TraceWriter&, Picoseconds)> sampler) {
  sample_period_ = std::max<Picoseconds>(period, 1);
  next_sample_ = sample_period_;
  sampler_ = std::move(sampler);
}

void TraceWriter::maybe_sample(Picoseconds now) {
  if (!sampler_ || sampling_ || now < next_sample_ || truncated_) return;
  sampling_ = true;
  sampler_(*this, now);
  sampling_ = false;
  next_sample_ = (now / sample_period_ + 1) * sample_period_;
}

void TraceWriter::finish(nlohmann::json metadata) {
  if (finished_) return;
  finished_ = true;
  if (!metadata.is_object()) metadata = nlohmann::json::object();
  nlohmann::json window = {
      {"start_us", static_cast<double>(window_.start) / 1e6},
      {"end_us", window_.end == TraceWindow{}.end
                     ? nlohmann::json()
                     : nlohmann::json(static_cast<double>(window_.end) / 1e6)}};
  metadata["window"] = window;
  metadata["truncated"] = truncated_;
  metadata["events"] = events_;
  metadata["dropped_events"] = dropped_;
  metadata["limit_bytes"] = limit_;
  std::string tail = "\n],\"displayTimeUnit\":\"ns\",\"otherData\":" + metadata.dump() + "}\n";
  if (tail.size() > kTailReserve) {
    // Keep the file within its limit whatever the caller passed.
    nlohmann::json notes = {{"window", window},
                            {"truncated", truncated_},
                            {"events", events_},
                            {"dropped_events", dropped_},
                            {"limit_bytes", limit_}};
    tail = "\n],\"displayTimeUnit\":\"ns\",\"otherData\":" + notes.dump() + "}\n";
  }
  std::fwrite(tail.data(), 1, tail.size(), out_);
  bytes_ += tail.size();
  std::fclose(out_);
  out_ = nullptr;
}

}  // namespace gpunvme::trace
