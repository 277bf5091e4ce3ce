// IntervalServer: bookings out of time order take the earliest gap that
// holds them, worked by hand.
#include "sim/kernel/interval_server.h"

#include <gtest/gtest.h>

namespace gpunvme {
namespace {

TEST(IntervalServer, InOrderBookingsQueueAsFirstComeFirstServed) {
  IntervalServer server;
  // 10 ps of service each, all ready at 0: 0-10, 10-20, 20-30.
  EXPECT_EQ(server.book(0, 10, 0).start, 0u);
  EXPECT_EQ(server.book(0, 10, 0).start, 10u);
  const auto third = server.book(0, 10, 0);
  EXPECT_EQ(third.start, 20u);
  EXPECT_EQ(third.end, 30u);
  EXPECT_EQ(third.queued(), 20u);
  EXPECT_EQ(server.intervals(), 1u);  // merged: 0-30
  EXPECT_EQ(server.busy_ps(), 30u);
  EXPECT_EQ(server.bookings(), 3u);
}

TEST(IntervalServer, AnEarlierBookingFillsTheGapBeforeALaterOne) {
  IntervalServer server;
  EXPECT_EQ(server.book(100, 10, 0).start, 100u);  // 100-110
  // Booked after it but ready earlier: it does not queue behind it.
  EXPECT_EQ(server.book(50, 10, 0).start, 50u);  // 50-60
  // Ready at 95, 10 ps: 95-105 overlaps 100-110, so it goes after: 110-120.
  EXPECT_EQ(server.book(95, 10, 0).start, 110u);
  // A gap of exactly its length: 60-100 holds 60-100.
  EXPECT_EQ(server.book(55, 40, 0).start, 60u);
  // Now 50-120 is one interval.
  EXPECT_EQ(server.intervals(), 1u);
  EXPECT_EQ(server.book(0, 60, 0).start, 120u);  // 0-50 is too short for 60
  EXPECT_EQ(server.book(0, 50, 0).start, 0u);    // but holds 50
}

TEST(IntervalServer, ForgetsIntervalsThatEndBeforeTheHorizon) {
  IntervalServer server;
  server.book(0, 10, 0);   // 0-10
  server.book(20, 10, 0);  // 20-30
  server.book(40, 10, 0);  // 40-50
  EXPECT_EQ(server.intervals(), 3u);
  server.book(60, 10, 30);            // 0-10 and 20-30 end by 30: forgotten
  EXPECT_EQ(server.intervals(), 2u);  // 40-50, 60-70
  // A zero-length booking takes no interval, but waits out a busy one.
  EXPECT_EQ(server.book(45, 0, 30).start, 50u);
  EXPECT_EQ(server.intervals(), 2u);
}

}  // namespace
}  // namespace gpunvme
