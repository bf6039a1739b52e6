#include "actors/sim/fault_injector.h"

#include <algorithm>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "actors/sim/sim_cluster_spec.h"
#include "graph/status_testing.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

const TaskId kPs{"ps", 0};
const TaskId kWorker0{"worker", 0};
const TaskId kWorker1{"worker", 1};

FaultPlan Plan(const std::string& json) {
  StatusOr<SimClusterShape> shape = ParseSimClusterSpec("sim:ps=1,worker=4");
  EXPECT_OK(shape);
  StatusOr<ClusterSpec> cluster = shape->ToClusterSpec();
  EXPECT_OK(cluster);
  StatusOr<FaultPlan> plan = ParseFaultPlan(json, *cluster);
  EXPECT_OK(plan);
  return plan.ok() ? *plan : FaultPlan();
}

LinkModel Link(double latency_us, double gbps, double jitter_us = 0) {
  LinkModel link;
  link.latency_us = latency_us;
  link.bandwidth_gbps = gbps;
  link.jitter_us = jitter_us;
  return link;
}

TEST(SimRandomTest, IsTheSameSequenceForASeedAndUniformInItsRange) {
  SimRandom a(42), b(42), c(43);
  bool differs = false;
  for (int i = 0; i < 1000; ++i) {
    const double x = a.Uniform();
    EXPECT_EQ(x, b.Uniform());
    differs = differs || x != c.Uniform();
    EXPECT_GE(x, 0.0);
    EXPECT_LT(x, 1.0);
  }
  EXPECT_TRUE(differs);
  // SplitMix64's first output for seed 0 (its reference value).
  EXPECT_EQ(SimRandom(0).Next(), 0xe220a8397b1dcdafULL);
}

TEST(LinkModelTest, TakesLatencyPlusBytesOverBandwidth) {
  const LinkModel link = Link(50, 8);  // 8 Gbit/s = 1 byte per ns
  EXPECT_DOUBLE_EQ(link.TransferMicros(0), 50);
  EXPECT_DOUBLE_EQ(link.TransferMicros(1000000), 50 + 1000);
  EXPECT_OK(link.Validate());
  EXPECT_THAT(Link(-1, 1).Validate().message(), HasSubstr("latency"));
  EXPECT_THAT(Link(1, 0).Validate().message(), HasSubstr("bandwidth"));
  EXPECT_THAT(Link(1, 1, -2).Validate().message(), HasSubstr("jitter"));
}

TEST(FaultInjectorTest, DeliversUntouchedWithoutFaultsAndInstantlyWithinATask) {
  FaultInjector injector(FaultPlan(), Link(50, 8), 1);
  DeliveryDecision d = injector.Decide({kWorker0, kPs, "push", 8000}, 0.0);
  EXPECT_FALSE(d.dropped);
  EXPECT_EQ(d.copies, 1);
  EXPECT_DOUBLE_EQ(d.delay_us, 58);
  EXPECT_TRUE(d.reason.empty());
  EXPECT_DOUBLE_EQ(injector.Decide({kPs, kPs, "tensor", 1 << 20}, 0.0).delay_us, 0);
}

TEST(FaultInjectorTest, DropsEveryKthMatchingMessageOnly) {
  FaultInjector injector(Plan(R"({"faults": [{"drop": {"kind": "push"}, "every": 10}]})"),
                         Link(1, 10), 7);
  int dropped = 0;
  for (int i = 1; i <= 100; ++i) {
    // Pulls between the pushes neither count nor get dropped.
    EXPECT_FALSE(injector.Decide({kPs, kWorker0, "pull", 4}, 0.0).dropped);
    const DeliveryDecision d = injector.Decide({kWorker0, kPs, "push", 4}, 0.0);
    EXPECT_EQ(d.dropped, i % 10 == 0) << i;
    if (d.dropped) EXPECT_EQ(d.reason, "drop faults[0]");
    dropped += d.dropped;
  }
  EXPECT_EQ(dropped, 10);
}

TEST(FaultInjectorTest, ProbabilitiesAreDrawnFromTheSeedReproducibly) {
  const FaultPlan plan = Plan(R"({"faults": [{"drop": {}, "probability": 0.3}]})");
  auto run = [&](uint64_t seed) {
    FaultInjector injector(plan, Link(1, 10), seed);
    std::vector<bool> dropped;
    for (int i = 0; i < 10000; ++i) dropped.push_back(injector.Decide({kWorker0, kPs, "push", 4}, 0).dropped);
    return dropped;
  };
  const std::vector<bool> first = run(5);
  EXPECT_EQ(first, run(5));
  EXPECT_NE(first, run(6));
  const long count = std::count(first.begin(), first.end(), true);
  EXPECT_NEAR(count / 10000.0, 0.3, 0.03);
}

TEST(FaultInjectorTest, AddingAFaultLeavesTheOthersDrawsAlone) {
  // faults[0] is the same in both plans; its decisions must not change when a fault
  // that matches other messages is added after it.
  const FaultPlan alone = Plan(R"({"faults": [{"drop": {"kind": "push"}, "probability": 0.5}]})");
  const FaultPlan more = Plan(R"({"faults": [{"drop": {"kind": "push"}, "probability": 0.5},
                                             {"duplicate": {"kind": "pull"}, "probability": 0.5}]})");
  FaultInjector a(alone, Link(1, 10), 11), b(more, Link(1, 10), 11);
  for (int i = 0; i < 500; ++i) {
    b.Decide({kPs, kWorker0, "pull", 4}, 0);
    EXPECT_EQ(a.Decide({kWorker0, kPs, "push", 4}, 0).dropped,
              b.Decide({kWorker0, kPs, "push", 4}, 0).dropped);
  }
}

TEST(FaultInjectorTest, DelaysDuplicatesAndHoldsBackMatchingMessages) {
  FaultInjector injector(Plan(R"({"faults": [
      {"delay": {"from": "/job:worker/task:1"}, "ms": 50},
      {"duplicate": {"kind": "step"}},
      {"reorder": {"kind": "tensor"}}]})"),
                         Link(10, 8), 3);
  DeliveryDecision delayed = injector.Decide({kWorker1, kPs, "push", 0}, 0);
  EXPECT_DOUBLE_EQ(delayed.delay_us, 10 + 50000);
  EXPECT_EQ(delayed.reason, "delay faults[0]");
  EXPECT_DOUBLE_EQ(injector.Decide({kWorker0, kPs, "push", 0}, 0).delay_us, 10);
  EXPECT_EQ(injector.Decide({kWorker0, kPs, "step", 0}, 0).copies, 2);
  const DeliveryDecision reordered = injector.Decide({kWorker0, kPs, "tensor", 0}, 0);
  EXPECT_TRUE(reordered.reordered);
  EXPECT_GE(reordered.delay_us, 10);
  EXPECT_LT(reordered.delay_us, 10 + 10 * 10);
  const DeliveryDecision both = injector.Decide({kWorker1, kPs, "step", 0}, 0);
  EXPECT_EQ(both.reason, "delay faults[0], duplicate faults[1]");
}

TEST(FaultInjectorTest, PartitionsCutOnlyBetweenTheirSidesAndOnlyInTheirWindow) {
  FaultInjector injector(Plan(R"({"faults": [{"partition": [["/job:ps/task:0"], ["/job:worker/task:0"]],
                                              "from_s": 2.0, "until_s": 4.0}]})"),
                         Link(1, 10), 3);
  EXPECT_FALSE(injector.Decide({kWorker0, kPs, "push", 4}, 1.0).dropped);
  const DeliveryDecision cut = injector.Decide({kWorker0, kPs, "push", 4}, 2.5);
  EXPECT_TRUE(cut.dropped);
  EXPECT_EQ(cut.reason, "partition faults[0]");
  EXPECT_TRUE(injector.Decide({kPs, kWorker0, "pull", 4}, 3.9).dropped);
  EXPECT_FALSE(injector.Decide({kWorker1, kPs, "push", 4}, 2.5).dropped);  // not on a side
  EXPECT_FALSE(injector.Decide({kWorker0, kPs, "push", 4}, 4.0).dropped);  // healed
  EXPECT_TRUE(injector.Partitioned(kPs, kWorker0, 3.0));
  EXPECT_FALSE(injector.Partitioned(kPs, kWorker1, 3.0));
}

TEST(FaultInjectorTest, ReportsTaskEventsWhenTheyFallDue) {
  FaultInjector injector(Plan(R"({"faults": [
      {"kill": "/job:worker/task:3", "at_step": 10},
      {"restart": "/job:worker/task:3", "at_step": 20},
      {"kill": "/job:worker/task:2", "at_s": 1.5}]})"),
                         Link(1, 10), 3);
  ASSERT_EQ(injector.TaskEventsAtStep(10).size(), 1u);
  EXPECT_EQ(injector.TaskEventsAtStep(10)[0]->action, Fault::Action::kKill);
  EXPECT_EQ(injector.TaskEventsAtStep(20)[0]->action, Fault::Action::kRestart);
  EXPECT_TRUE(injector.TaskEventsAtStep(11).empty());
  EXPECT_TRUE(injector.TaskEventsBetween(0, 1.4).empty());
  ASSERT_EQ(injector.TaskEventsBetween(1.4, 1.5).size(), 1u);
  EXPECT_EQ(injector.TaskEventsBetween(1.4, 1.5)[0]->task, (TaskId{"worker", 2}));
  EXPECT_TRUE(injector.TaskEventsBetween(1.5, 9).empty());
}

}  // namespace
}  // namespace actorflow
