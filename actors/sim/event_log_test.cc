#include "actors/sim/event_log.h"

#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace actorflow {
namespace {

SimEvent Delivered(int64_t us, const std::string& from, const std::string& to, int64_t bytes) {
  SimEvent e;
  e.virtual_us = us;
  e.from = from;
  e.to = to;
  e.message_kind = "push";
  e.bytes = bytes;
  return e;
}

TEST(EventLogTest, EqualLogsHashEquallyAndAnyDifferenceChangesTheHash) {
  EventLog a, b;
  EXPECT_EQ(a.Hash(), "cbf29ce484222325");  // FNV-1a of nothing
  EventLog seeded1, seeded2;
  seeded1.MixSeed(1);
  seeded2.MixSeed(2);
  EXPECT_NE(seeded1.Hash(), seeded2.Hash());
  EXPECT_NE(seeded1.Hash(), a.Hash());
  for (EventLog* log : {&a, &b}) {
    log->Record(Delivered(10, "/job:worker/task:0", "/job:ps/task:0", 64));
    log->Record(Delivered(20, "/job:ps/task:0", "/job:worker/task:0", 64));
  }
  EXPECT_EQ(a.Hash(), b.Hash());
  EXPECT_EQ(a.Hash().size(), 16u);

  const std::string base = a.Hash();
  auto with = [&](SimEvent last) {
    EventLog log;
    log.Record(Delivered(10, "/job:worker/task:0", "/job:ps/task:0", 64));
    log.Record(std::move(last));
    return log.Hash();
  };
  EXPECT_EQ(with(Delivered(20, "/job:ps/task:0", "/job:worker/task:0", 64)), base);
  EXPECT_NE(with(Delivered(21, "/job:ps/task:0", "/job:worker/task:0", 64)), base);
  EXPECT_NE(with(Delivered(20, "/job:ps/task:0", "/job:worker/task:1", 64)), base);
  EXPECT_NE(with(Delivered(20, "/job:ps/task:0", "/job:worker/task:0", 65)), base);
  SimEvent dropped = Delivered(20, "/job:ps/task:0", "/job:worker/task:0", 64);
  dropped.kind = SimEvent::Kind::kDropped;
  EXPECT_NE(with(dropped), base);
  // Strings are length-prefixed: moving a character between fields changes the hash.
  EXPECT_NE(with(Delivered(20, "/job:ps/task:0/", "job:worker/task:0", 64)), base);
}

TEST(EventLogTest, CountsByKindKeepsABoundedPrefixAndWritesJsonLines) {
  EventLog log(/*max_kept=*/2);
  for (int i = 0; i < 3; ++i) log.Record(Delivered(i, "a", "b", i));
  SimEvent kill;
  kill.kind = SimEvent::Kind::kKilled;
  kill.from = "/job:worker/task:3";
  kill.virtual_us = 7;
  log.Record(kill);
  EXPECT_EQ(log.count(), 4u);
  EXPECT_EQ(log.Count(SimEvent::Kind::kDelivered), 3u);
  EXPECT_EQ(log.Count(SimEvent::Kind::kKilled), 1u);
  EXPECT_EQ(log.events().size(), 2u);
  std::ostringstream out;
  log.WriteJsonLines(out);
  EXPECT_EQ(out.str(),
            "{\"us\":0,\"event\":\"delivered\",\"from\":\"a\",\"to\":\"b\",\"kind\":\"push\","
            "\"bytes\":0,\"reason\":\"\"}\n"
            "{\"us\":1,\"event\":\"delivered\",\"from\":\"a\",\"to\":\"b\",\"kind\":\"push\","
            "\"bytes\":1,\"reason\":\"\"}\n");
}

}  // namespace
}  // namespace actorflow
