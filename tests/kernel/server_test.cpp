// NextFreeServer against hand-worked bookings.
#include "sim/kernel/server.h"

#include <gtest/gtest.h>

namespace gpunvme {
namespace {

TEST(NextFreeServer, IdleServerStartsWorkWhenReady) {
  NextFreeServer server;
  const auto b = server.book(100, 50);
  EXPECT_EQ(b.start, 100u);
  EXPECT_EQ(b.end, 150u);
  EXPECT_EQ(b.queued(), 0u);
  EXPECT_EQ(server.free_at(), 150u);
}

TEST(NextFreeServer, WorkReadyWhileBusyQueuesBehindIt) {
  NextFreeServer server;
  server.book(0, 100);                 // busy [0, 100)
  const auto b = server.book(40, 30);  // waits 60, runs [100, 130)
  EXPECT_EQ(b.start, 100u);
  EXPECT_EQ(b.end, 130u);
  EXPECT_EQ(b.queued(), 60u);
  const auto c = server.book(500, 10);  // idle gap [130, 500) is not busy time
  EXPECT_EQ(c.start, 500u);
  EXPECT_EQ(server.busy_ps(), 140u);
  EXPECT_EQ(server.bookings(), 3u);
  EXPECT_TRUE(server.busy_at(505));
  EXPECT_FALSE(server.busy_at(510));
}

TEST(NextFreeServer, HoldDelaysLaterWorkWithoutCountingBusy) {
  NextFreeServer server;
  server.book(0, 10);
  server.hold_until(200);
  server.hold_until(50);  // an earlier hold never moves the free time back
  EXPECT_EQ(server.free_at(), 200u);
  EXPECT_EQ(server.book(20, 5).start, 200u);
  EXPECT_EQ(server.busy_ps(), 15u);
}

}  // namespace
}  // namespace gpunvme
