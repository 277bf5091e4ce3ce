// A tenant's rate limits in front of its I/O path: each I/O waits, in the
// order submitted, until the tenant's token buckets (I/Os per second, bytes
// per second; TenantQos) admit it, then goes to the path. The wait is the
// tenant's throttling, as fio's rate_iops and Linux's blk-throttle hold I/O
// back before it is issued; it is reported on its own (throttle), not in the
// path's latencies.
#pragma once

#include <deque>
#include <memory>
#include <vector>

#include "sim/kernel/component.h"
#include "sim/system/workload/io_path.h"
#include "sim/system/workload/token_bucket.h"

namespace gpunvme {

class RateLimitedPath : public Component, public IoPath {
 public:
  // `lba_bytes`: the LBA size of each of the scenario's SSDs, by index.
  RateLimitedPath(const sc_core::sc_module_name& name, const TenantQos& qos,
                  std::vector<std::uint32_t> lba_bytes, std::unique_ptr<IoPath> path);

  void start(std::function<void()> ready) override { path_->start(std::move(ready)); }
  void submit(const BlockIo& io, IoDone done) override;
  void close() override { path_->close(); }

  std::string name() const override { return path_->name(); }
  std::string strategy() const override { return path_->strategy(); }
  std::uint64_t submitted() const override { return path_->submitted() + held_.size(); }
  std::uint64_t completed() const override { return path_->completed(); }
  std::uint64_t errors() const override { return path_->errors(); }
  std::uint64_t bytes() const override { return path_->bytes(); }
  std::uint64_t timeouts() const override { return path_->timeouts(); }
  std::uint64_t reset_aborted() const override { return path_->reset_aborted(); }
  const LatencyHistogram& end_to_end() const override { return path_->end_to_end(); }
  nlohmann::json stages() const override { return path_->stages(); }
  std::vector<std::string> stage_order() const override { return path_->stage_order(); }
  FioLatency& fio_latency() override { return path_->fio_latency(); }
  const FioLatency& fio_latency() const override { return path_->fio_latency(); }
  const platform::WarpCounters& counters() const override { return path_->counters(); }
  // The path's sections and "throttle": I/Os held, and how long they waited.
  nlohmann::json sections(Picoseconds elapsed) const override;
  IoPath& inner() { return *path_; }

 private:
  struct Held {
    BlockIo io;
    IoDone done;
    Picoseconds since;
  };
  // Hands every I/O the buckets admit now to the path; wakes again when the
  // first one still held will be admitted.
  void release();

  std::unique_ptr<IoPath> path_;
  std::vector<std::uint32_t> lba_bytes_;
  bool limit_ios_;
  bool limit_bytes_;
  TokenBucket ios_;
  TokenBucket bytes_;
  std::deque<Held> held_;
  bool wake_pending_ = false;
  LatencyHistogram wait_;  // every I/O's wait, zero for those admitted at once
  std::uint64_t delayed_ = 0;
};

}  // namespace gpunvme
