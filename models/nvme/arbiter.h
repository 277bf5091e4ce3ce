// Submission queue arbitration (NVMe base spec 1.4, section 4.13): which SQ
// the fetch engine serves next, and how many commands it may take per turn.
//
// Round robin (CC.AMS = 000b): every SQ with unfetched entries, the admin SQ
// included, takes turns in the order it became ready.
// Weighted round robin with urgent priority class (CC.AMS = 001b): the admin
// SQ has strict priority over everything; the urgent class has strict
// priority over the three weighted classes; high, medium and low share what
// is left in proportion to their weights (HPW + 1, MPW + 1, LPW + 1 turns per
// round); inside each class the SQs take turns round robin. A class with no
// ready SQ is skipped, so arbitration never idles while any SQ has work.
//
// A turn takes at most 2^AB commands from its SQ (the Arbitration feature's
// burst; 111b means no limit). The arbiter holds no queue contents: the fetch
// engine reports which SQs are ready and asks whom to serve.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "sim/core/protocol/nvme_commands.h"

namespace gpunvme::nvme {

enum class ArbitrationMechanism { RoundRobin, WeightedRoundRobinUrgent };

class Arbiter {
 public:
  explicit Arbiter(std::uint8_t burst_log2 = 0);

  void set_mechanism(ArbitrationMechanism mechanism);
  ArbitrationMechanism mechanism() const { return mechanism_; }
  // The Arbitration feature (FID 01h): burst and zero-based weights.
  void set_arbitration(const Arbitration& arbitration);
  const Arbitration& arbitration() const { return arbitration_; }
  // Commands one turn may take: 2^AB, or no limit for AB = 111b.
  std::uint32_t burst() const;

  // An SQ joins with the priority its Create I/O SQ command gave (ignored
  // under round robin); qid 0 is the admin SQ.
  void add_queue(std::uint16_t qid, QueuePriority priority);
  void remove_queue(std::uint16_t qid);
  // The SQ has unfetched entries; it joins the back of its class's turn
  // order unless it is already waiting there.
  void mark_ready(std::uint16_t qid);
  // The SQ to serve now, removed from the turn order (mark it ready again if
  // entries remain after its turn), or nothing when no SQ is ready. With
  // `io_allowed` false (no room for more I/O commands) only the admin SQ is
  // served; the I/O SQs keep their places.
  std::optional<std::uint16_t> next(bool io_allowed = true);
  bool any_ready() const;

 private:
  // Class index: 0 admin, 1 urgent, 2 high, 3 medium, 4 low. Under round
  // robin every SQ sits in class 0.
  static constexpr int kClasses = 5;
  int class_of(std::uint16_t qid) const;
  std::optional<std::uint16_t> pop(int cls);
  void refill_credits();

  ArbitrationMechanism mechanism_ = ArbitrationMechanism::RoundRobin;
  Arbitration arbitration_{};
  std::vector<QueuePriority> priority_;  // by qid
  std::vector<bool> waiting_;            // by qid: in its class's turn order
  std::vector<bool> present_;            // by qid
  std::array<std::deque<std::uint16_t>, kClasses> ready_;
  std::array<std::uint32_t, 3> credits_{};  // high, medium, low: turns left this round
  int weighted_cursor_ = 0;                 // next weighted class to consider
};

}  // namespace gpunvme::nvme
