#include "sim/system/trace/trace_writer.h"

#include <fmt/format.h>

#include <stdexcept>

namespace gpunvme::trace {

namespace {
TraceWriter* g_active = nullptr;

// Room kept for closing the array and the metadata object.
constexpr std::uint64_t kTailReserve = 16 * 1024;

// Trace timestamps are in microseconds; picosecond precision is kept.
std::string micros(Picoseconds t) { return fmt::format("{:.6f}", static_cast<double>(t) / 1e6); }
}  // namespace

TraceWriter* active() { return g_active; }

ScopedTrace::ScopedTrace(TraceWriter* writer) : previous_(g_active) { g_active = writer; }
ScopedTrace::~ScopedTrace() { g_active = previous_; }

TraceWriter::TraceWriter(const std::string& file, std::uint64_t limit_bytes)
    : file_(file), limit_(std::max<std::uint64_t>(limit_bytes, 4 * kTailReserve)) {
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

std::uint32_t TraceWriter::pid_of(const std::string& device) {
  auto it = pids_.find(device);
  if (it != pids_.end()) return it->second;
  const auto pid = static_cast<std::uint32_t>(pids_.size() + 1);
  pids_[device] = pid;
  emit(fmt::format(R"({{"name":"process_name","ph":"M","pid":{},"tid":0,"args":{{"name":{}}}}})",
                   pid, nlohmann::json(device).dump()));
  return pid;
}

std::pair<std::string, std::uint32_t> TraceWriter::queue_name(std::uint32_t trace_id) const {
  if (queue_namer_) return queue_namer_(trace_id);
  return {"queues", trace_id};
}

void TraceWriter::span(const std::string& device, std::uint32_t lane, const std::string& name,
                       Picoseconds start, Picoseconds duration, std::uint16_t cid) {
  maybe_sample(start + duration);
  if (truncated_) {
    ++dropped_;
    return;
  }
  const std::uint32_t pid = pid_of(device);
  if (!tids_[{pid, lane}]) {
    tids_[{pid, lane}] = true;
    emit(fmt::format(
        R"({{"name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":"queue {}"}}}})", pid,
        lane, lane));
  }
  emit(fmt::format(
      R"({{"name":"{}","cat":"io","ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"args":{{"cid":{}}}}})",
      name, pid, lane, micros(start), micros(duration), cid));
}

void TraceWriter::counter(const std::string& device, const std::string& name, Picoseconds at,
                          double value) {
  if (truncated_) {
    ++dropped_;
    return;
  }
  const std::uint32_t pid = pid_of(device);
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
  metadata["truncated"] = truncated_;
  metadata["events"] = events_;
  metadata["dropped_events"] = dropped_;
  metadata["limit_bytes"] = limit_;
  std::string tail = "\n],\"displayTimeUnit\":\"ns\",\"otherData\":" + metadata.dump() + "}\n";
  if (tail.size() > kTailReserve) {
    // Keep the file within its limit whatever the caller passed.
    nlohmann::json notes = {{"truncated", truncated_},
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
