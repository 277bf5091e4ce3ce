// fio's iodepth loop for one thread, as a state machine that takes no
// simulated time: the thread keeps `iodepth` I/Os in flight; once they are
// all in flight (or it has none left to issue) it waits until
// iodepth_batch_complete_min of them have completed (at most as many as it
// holds, at least one), reaps up to iodepth_batch_complete_max of the
// completed ones, and refills the slots they free. Queuing takes no time, so
// every I/O of one refill is handed over at the same instant
// (iodepth_batch_submit groups them; fio hands a partial group over before
// it waits). Each I/O holds a slot (0..iodepth-1) from its issue to its
// reaping: its buffer and, for CID schemes that derive the CID from it, its
// pool index. Refills take the lowest free slots first.
//
// iodepth_batch_submit = iodepth_batch_complete_min = iodepth is the loop
// that submits iodepth I/Os and waits for all of them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <set>
#include <vector>

namespace gpunvme {

// The scenario's batching fields, resolved as fio resolves them: 0 for
// iodepth_batch_submit means iodepth, 0 for iodepth_batch_complete_max means
// iodepth_batch_complete_min, 0 for iodepth_batch_complete_min polls (which a
// thread that takes no time sees as waiting for one completion); every
// figure is capped at iodepth.
struct FioBatching {
  std::uint32_t iodepth = 1;
  std::uint32_t submit = 1;
  std::uint32_t complete_min = 1;
  std::uint32_t complete_max = 1;

  static FioBatching resolve(std::int64_t iodepth, std::int64_t submit, std::int64_t complete_min,
                             std::int64_t complete_max) {
    FioBatching b;
    b.iodepth = static_cast<std::uint32_t>(std::max<std::int64_t>(1, iodepth));
    auto capped = [&](std::int64_t v) {
      return static_cast<std::uint32_t>(std::clamp<std::int64_t>(v, 1, b.iodepth));
    };
    b.submit = capped(submit == 0 ? iodepth : submit);
    b.complete_min = capped(complete_min);
    b.complete_max =
        std::max(b.complete_min, capped(complete_max == 0 ? complete_min : complete_max));
    return b;
  }
  // Whether the thread waits for every I/O in flight before it refills.
  bool waits_for_all() const { return complete_min == iodepth; }
};

class FioDepth {
 public:
  FioDepth(FioBatching batching, std::uint64_t to_issue)
      : batching_(batching), remaining_(to_issue) {
    for (std::uint32_t s = 0; s < batching_.iodepth; ++s) free_.insert(s);
  }

  // The thread issues nothing more (fio's runtime passed).
  void stop_issuing() { remaining_ = 0; }
  // The I/O in `slot` completed.
  void completed(std::uint32_t slot) {
    --in_flight_;
    done_.push_back(slot);
  }
  // What the thread does now, at the start and after each completion: the
  // slots of the I/Os it issues, in issue order (empty while it waits).
  std::vector<std::uint32_t> step() {
    std::vector<std::uint32_t> issue;
    for (;;) {
      if (waiting_) {
        const std::uint32_t held = in_flight_ + static_cast<std::uint32_t>(done_.size());
        const std::uint32_t need =
            std::max<std::uint32_t>(1, std::min(batching_.complete_min, held));
        if (done_.size() < need) return issue;
        const std::size_t reap = std::min<std::size_t>(done_.size(), batching_.complete_max);
        for (std::size_t i = 0; i < reap; ++i) {
          free_.insert(done_.front());
          done_.pop_front();
        }
        ++reaps_;
        waiting_ = false;
      }
      while (!free_.empty() && remaining_ > 0) {
        issue.push_back(*free_.begin());
        free_.erase(free_.begin());
        --remaining_;
        ++in_flight_;
      }
      // Full, or nothing left to issue: wait (if anything is held).
      if (in_flight_ + done_.size() == 0) return issue;
      waiting_ = true;
    }
  }
  // Nothing left to issue and nothing held.
  bool finished() const { return remaining_ == 0 && in_flight_ == 0 && done_.empty(); }
  std::uint32_t in_flight() const { return in_flight_; }
  std::uint64_t reaps() const { return reaps_; }
  const FioBatching& batching() const { return batching_; }

 private:
  FioBatching batching_;
  std::uint64_t remaining_;
  std::uint32_t in_flight_ = 0;
  std::deque<std::uint32_t> done_;  // completed, not yet reaped, in completion order
  std::set<std::uint32_t> free_;
  bool waiting_ = false;
  std::uint64_t reaps_ = 0;
};

}  // namespace gpunvme
