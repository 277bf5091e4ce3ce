#include "sim/system/workload/rate_limited_path.h"

#include <algorithm>

namespace gpunvme {

RateLimitedPath::RateLimitedPath(const sc_core::sc_module_name& name, const TenantQos& qos,
                                 std::vector<std::uint32_t> lba_bytes, std::unique_ptr<IoPath> path)
    : Component(name, ParamValues{}),
      path_(std::move(path)),
      lba_bytes_(std::move(lba_bytes)),
      limit_ios_(qos.rate_iops > 0.0),
      limit_bytes_(qos.rate_bytes_per_s > 0.0) {
  if (limit_ios_) ios_ = TokenBucket(qos.rate_iops, static_cast<double>(qos.burst_ios));
  if (limit_bytes_) {
    bytes_ = TokenBucket(qos.rate_bytes_per_s, static_cast<double>(qos.burst_bytes));
  }
}

void RateLimitedPath::submit(const BlockIo& io, IoDone done) {
  held_.push_back({io, std::move(done), now()});
  release();
}

void RateLimitedPath::release() {
  while (!held_.empty()) {
    Held& first = held_.front();
    // The resolver keeps burst_bytes at least the largest I/O.
    const double io_bytes =
        static_cast<double>(std::uint64_t{first.io.lbas} * lba_bytes_.at(first.io.ssd));
    Picoseconds when = now();
    if (limit_ios_) when = std::max(when, ios_.ready_at(now(), 1.0));
    if (limit_bytes_) when = std::max(when, bytes_.ready_at(now(), io_bytes));
    if (when > now()) {
      if (!wake_pending_) {
        wake_pending_ = true;
        schedule_at(when, [this] {
          wake_pending_ = false;
          release();
        });
      }
      return;
    }
    if (limit_ios_) ios_.take(now(), 1.0);
    if (limit_bytes_) bytes_.take(now(), io_bytes);
    Held next = std::move(first);
    held_.pop_front();
    if (now() > next.since) ++delayed_;
    wait_.record(now() - next.since);
    path_->submit(next.io, std::move(next.done));
  }
}

nlohmann::json RateLimitedPath::sections(Picoseconds elapsed) const {
  nlohmann::json out = path_->sections(elapsed);
  out["throttle"] = {{"delayed_ios", delayed_}, {"wait_ns", wait_.summary_ns()}};
  return out;
}

}  // namespace gpunvme
