#include "actors/sim/fault_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "actors/sim/sim_cluster_spec.h"
#include "graph/status_testing.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

ClusterSpec Cluster() {
  StatusOr<SimClusterShape> shape = ParseSimClusterSpec("sim:ps=1,worker=4");
  EXPECT_OK(shape);
  StatusOr<ClusterSpec> spec = shape->ToClusterSpec();
  EXPECT_OK(spec);
  return *spec;
}

std::string ErrorOf(const std::string& json) {
  StatusOr<FaultPlan> plan = ParseFaultPlan(json, Cluster());
  EXPECT_FALSE(plan.ok()) << json;
  EXPECT_EQ(plan.status().code(), Code::kInvalidArgument) << plan.status().ToString();
  return plan.status().message();
}

// The plan of the contract, entry for entry.
TEST(FaultPlanTest, ReadsTheDocumentedExample) {
  const std::string json = R"({"faults": [
    {"kill": "/job:worker/task:3", "at_step": 10},
    {"restart": "/job:worker/task:3", "at_step": 20},
    {"drop": {"from": "/job:worker/*", "to": "/job:ps/*", "kind": "push"}, "probability": 0.1},
    {"delay": {"from": "/job:worker/task:1", "to": "*"}, "ms": 50},
    {"partition": [["/job:ps/task:0"], ["/job:worker/task:0"]], "from_s": 2.0, "until_s": 4.0}]})";
  ASSERT_OK_AND_ASSIGN(FaultPlan plan, ParseFaultPlan(json, Cluster()));
  ASSERT_EQ(plan.faults.size(), 5u);

  const Fault& kill = plan.faults[0];
  EXPECT_EQ(kill.action, Fault::Action::kKill);
  EXPECT_EQ(kill.task, (TaskId{"worker", 3}));
  EXPECT_EQ(kill.at_step, 10);
  EXPECT_LT(kill.at_s, 0);
  EXPECT_EQ(plan.faults[1].action, Fault::Action::kRestart);
  EXPECT_EQ(plan.faults[1].at_step, 20);

  const Fault& drop = plan.faults[2];
  EXPECT_EQ(drop.action, Fault::Action::kDrop);
  EXPECT_DOUBLE_EQ(drop.probability, 0.1);
  EXPECT_TRUE(drop.match.Matches({"worker", 2}, {"ps", 0}, "push"));
  EXPECT_FALSE(drop.match.Matches({"worker", 2}, {"ps", 0}, "pull"));
  EXPECT_FALSE(drop.match.Matches({"ps", 0}, {"worker", 2}, "push"));

  const Fault& delay = plan.faults[3];
  EXPECT_EQ(delay.action, Fault::Action::kDelay);
  EXPECT_DOUBLE_EQ(delay.delay_ms, 50);
  EXPECT_TRUE(delay.match.Matches({"worker", 1}, {"ps", 0}, "tensor"));
  EXPECT_TRUE(delay.match.Matches({"worker", 1}, {"worker", 3}, "step"));
  EXPECT_FALSE(delay.match.Matches({"worker", 0}, {"ps", 0}, "step"));

  const Fault& partition = plan.faults[4];
  EXPECT_EQ(partition.action, Fault::Action::kPartition);
  ASSERT_EQ(partition.sides.size(), 2u);
  EXPECT_TRUE(partition.sides[0][0].Matches({"ps", 0}));
  EXPECT_FALSE(partition.ActiveAt(1.99));
  EXPECT_TRUE(partition.ActiveAt(2.0));
  EXPECT_FALSE(partition.ActiveAt(4.0));
}

TEST(FaultPlanTest, ReadsTheExtensions) {
  ASSERT_OK_AND_ASSIGN(FaultPlan plan, ParseFaultPlan(R"({"faults": [
    {"drop": {"kind": "push"}, "every": 10},
    {"kill": "/job:worker/replica:0/task:1", "at_s": 1.5},
    {"duplicate": {}, "probability": 0.5, "from_s": 1, "until_s": 2},
    {"reorder": {"to": "/job:ps/task:0"}},
    {"delay": {}, "ms": 1, "jitter_ms": 4, "probability": 0.25}]})",
                                                      Cluster()));
  EXPECT_EQ(plan.faults[0].every, 10);
  EXPECT_TRUE(plan.faults[0].match.Matches({"ps", 0}, {"worker", 3}, "push"));
  EXPECT_EQ(plan.faults[1].task, (TaskId{"worker", 1}));
  EXPECT_DOUBLE_EQ(plan.faults[1].at_s, 1.5);
  EXPECT_EQ(plan.faults[1].at_step, -1);
  EXPECT_EQ(plan.faults[2].action, Fault::Action::kDuplicate);
  EXPECT_TRUE(plan.faults[2].ActiveAt(1.5));
  EXPECT_FALSE(plan.faults[2].ActiveAt(2.5));
  EXPECT_EQ(plan.faults[3].action, Fault::Action::kReorder);
  EXPECT_DOUBLE_EQ(plan.faults[3].probability, 1.0);
  EXPECT_DOUBLE_EQ(plan.faults[4].jitter_ms, 4);
  EXPECT_DOUBLE_EQ(plan.faults[4].probability, 0.25);
}

TEST(FaultPlanTest, AnEmptyPlanIsValid) {
  ASSERT_OK_AND_ASSIGN(FaultPlan plan, ParseFaultPlan(R"({"faults": []})", Cluster()));
  EXPECT_TRUE(plan.faults.empty());
}

TEST(FaultPlanTest, RefusesTasksAndJobsTheClusterDoesNotHave) {
  EXPECT_THAT(ErrorOf(R"({"faults": [{"kill": "/job:worker/task:4", "at_step": 1}]})"),
              AllOf(HasSubstr("faults[0].kill"), HasSubstr("task 4 of job 'worker', which has 4 tasks")));
  EXPECT_THAT(ErrorOf(R"({"faults": [{"drop": {"to": "/job:chief/*"}}]})"),
              AllOf(HasSubstr("faults[0].drop.to"), HasSubstr("job 'chief'"),
                    HasSubstr("jobs: ps, worker")));
  EXPECT_THAT(ErrorOf(R"({"faults": [{"kill": "/job:worker/*", "at_step": 1}]})"),
              HasSubstr("must name one task"));
  EXPECT_THAT(ErrorOf(R"({"faults": [{"kill": "worker3", "at_step": 1}]})"),
              HasSubstr("is not a task pattern"));
}

TEST(FaultPlanTest, RefusesMalformedPlans) {
  EXPECT_THAT(ErrorOf(R"({"faults": [)"), HasSubstr("malformed JSON at line 1"));
  EXPECT_THAT(ErrorOf(R"([])"), HasSubstr("expected an object {\"faults\""));
  EXPECT_THAT(ErrorOf(R"({"faults": {}})"), HasSubstr("\"faults\" must be a list"));
  EXPECT_THAT(ErrorOf(R"({"faults": [], "seed": 1})"), HasSubstr("unknown top-level key 'seed'"));
  EXPECT_THAT(ErrorOf(R"({"faults": [{"at_step": 1}]})"), HasSubstr("faults[0] has no action"));
  EXPECT_THAT(ErrorOf(R"({"faults": [{"drop": {}, "delay": {}, "ms": 1}]})"),
              HasSubstr("two actions"));
  EXPECT_THAT(ErrorOf(R"({"faults": [{"drop": {}, "probabilty": 0.5}]})"),
              HasSubstr("faults[0] has an unknown key 'probabilty'"));
  EXPECT_THAT(ErrorOf(R"({"faults": [{"drop": {"kind": "gradient"}}]})"),
              AllOf(HasSubstr("'gradient' is not a message kind"), HasSubstr("push")));
  EXPECT_THAT(ErrorOf(R"({"faults": [{"drop": {"src": "*"}}]})"),
              HasSubstr("faults[0].drop has an unknown key 'src'"));
}

TEST(FaultPlanTest, RefusesValuesOutOfRange) {
  EXPECT_THAT(ErrorOf(R"({"faults": [{"drop": {}, "probability": 1.5}]})"),
              HasSubstr("probability must be in [0, 1], not 1.5"));
  EXPECT_THAT(ErrorOf(R"({"faults": [{"drop": {}, "probability": -0.1}]})"),
              HasSubstr("probability must be in [0, 1]"));
  EXPECT_THAT(ErrorOf(R"({"faults": [{"drop": {}, "every": 0}]})"),
              HasSubstr("every must be at least 1"));
  EXPECT_THAT(ErrorOf(R"({"faults": [{"drop": {}, "every": 2, "probability": 0.5}]})"),
              HasSubstr("pick one"));
  EXPECT_THAT(ErrorOf(R"({"faults": [{"delay": {}}]})"), HasSubstr("needs \"ms\""));
  EXPECT_THAT(ErrorOf(R"({"faults": [{"delay": {}, "ms": -1}]})"),
              HasSubstr("ms must be a number in [0, 1000000000.0] (milliseconds), not -1"));
  EXPECT_THAT(ErrorOf(R"({"faults": [{"delay": {}, "ms": 1e300}]})"),
              HasSubstr("ms must be a number in [0, 1000000000.0] (milliseconds), not 1e+300"));
  EXPECT_THAT(ErrorOf(R"({"faults": [{"drop": {}, "until_s": 1000001}]})"),
              HasSubstr("until_s must be a number in [0, 1000000.0] (seconds)"));
  EXPECT_THAT(ErrorOf(R"({"faults": [{"kill": "/job:ps/task:0", "at_s": 2e6}]})"),
              HasSubstr("at_s must be a number in [0, 1000000.0]"));
  ASSERT_OK(ParseFaultPlan(R"({"faults": [{"delay": {}, "ms": 1e9, "until_s": 1e6}]})", Cluster())
                .status());
  EXPECT_THAT(ErrorOf(R"({"faults": [{"kill": "/job:ps/task:0"}]})"),
              HasSubstr("exactly one of \"at_step\" and \"at_s\""));
  EXPECT_THAT(ErrorOf(R"({"faults": [{"kill": "/job:ps/task:0", "at_step": 1, "at_s": 1}]})"),
              HasSubstr("exactly one of"));
  EXPECT_THAT(ErrorOf(R"({"faults": [{"kill": "/job:ps/task:0", "at_step": -3}]})"),
              HasSubstr("at_step must be an integer >= 0"));
  EXPECT_THAT(ErrorOf(R"({"faults": [{"drop": {}, "from_s": 3, "until_s": 2}]})"),
              HasSubstr("until_s (2.000000) must be after from_s (3.000000)"));
}

TEST(FaultPlanTest, RefusesAPlanOfMoreThanKMaxFaultsEntries) {
  std::string entries;
  for (size_t i = 0; i < kMaxFaults; ++i) entries += std::string(i ? "," : "") + R"({"drop": {}})";
  ASSERT_OK_AND_ASSIGN(FaultPlan plan, ParseFaultPlan("{\"faults\": [" + entries + "]}", Cluster()));
  EXPECT_EQ(plan.faults.size(), kMaxFaults);
  EXPECT_THAT(ErrorOf("{\"faults\": [" + entries + R"(,{"drop": {}}]})"),
              HasSubstr("10001 faults; a plan holds at most 10000"));
}

TEST(FaultPlanTest, RefusesBadPartitions) {
  EXPECT_THAT(ErrorOf(R"({"faults": [{"partition": [["*"]]}]})"),
              HasSubstr("at least two sides"));
  EXPECT_THAT(ErrorOf(R"({"faults": [{"partition": [["/job:ps/task:0"], []]}]})"),
              HasSubstr("partition[1] must be a non-empty list"));
  EXPECT_THAT(ErrorOf(R"({"faults": [{"partition": [["/job:worker/*"], ["/job:worker/task:2"]]}]})"),
              HasSubstr("task /job:worker/task:2 is on side 0 and side 1"));
}

TEST(FaultPlanTest, PatternsMatchWhatTheySay) {
  const ClusterSpec cluster = Cluster();
  ASSERT_OK_AND_ASSIGN(TaskPattern any, ParseTaskPattern("*", cluster, "p"));
  ASSERT_OK_AND_ASSIGN(TaskPattern job, ParseTaskPattern("/job:worker/*", cluster, "p"));
  ASSERT_OK_AND_ASSIGN(TaskPattern one, ParseTaskPattern("/job:worker/task:2", cluster, "p"));
  EXPECT_TRUE(any.Matches({"ps", 0}));
  EXPECT_TRUE(job.Matches({"worker", 0}));
  EXPECT_FALSE(job.Matches({"ps", 0}));
  EXPECT_TRUE(one.Matches({"worker", 2}));
  EXPECT_FALSE(one.Matches({"worker", 1}));
  EXPECT_EQ(any.ToString(), "*");
  EXPECT_EQ(job.ToString(), "/job:worker/*");
  EXPECT_EQ(one.ToString(), "/job:worker/task:2");
}

TEST(FaultPlanTest, LoadsAFileAndNamesAMissingOne) {
  const std::string path = std::string(::testing::TempDir()) + "/plan.json";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(R"({"faults": [{"drop": {}, "probability": 2}]})", f);
    std::fclose(f);
  }
  StatusOr<FaultPlan> plan = LoadFaultPlan(path, Cluster());
  EXPECT_THAT(plan.status().message(), HasSubstr(path + ": faults[0].probability"));
  StatusOr<FaultPlan> missing = LoadFaultPlan(path + ".absent", Cluster());
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("plan.json.absent"));
}

}  // namespace
}  // namespace actorflow
