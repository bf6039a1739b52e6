#include "tools/launch_plan.h"

#include <cstdlib>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/status_testing.h"

namespace actorflow {
namespace cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

ClusterSpec Spec(const std::string& json) {
  StatusOr<ClusterSpec> spec = ClusterSpec::FromJson(json);
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec.ok() ? *spec : ClusterSpec();
}

TEST(LaunchPlanTest, PsTasksRunServersAndWorkersTheCommandWithTheirPlaceInTheCluster) {
  ClusterSpec spec = Spec(R"({"ps": ["127.0.0.1:2222"],
                              "worker": ["127.0.0.1:2223", "localhost:2224"]})");
  LaunchPlanOptions options;
  options.actorflow_commands = {"server", "train"};
  options.command = {"train", "--mode", "sync"};
  ASSERT_OK_AND_ASSIGN(std::vector<LaunchTask> plan, MakeLaunchPlan(spec, "c.json", options));
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].label, "ps:0");
  EXPECT_TRUE(plan[0].server);
  EXPECT_THAT(plan[0].args, ElementsAre("server", "--cluster", "c.json", "--job", "ps", "--task", "0"));
  EXPECT_EQ(plan[2].label, "worker:1");
  EXPECT_FALSE(plan[2].server);
  EXPECT_THAT(plan[2].args, ElementsAre("train", "--mode", "sync", "--cluster", "c.json", "--job",
                                        "worker", "--task", "1"));
}

TEST(LaunchPlanTest, AProgramOfTheUsersOwnRunsUnchangedWithItsPlaceInTfConfig) {
  ClusterSpec spec = Spec(R"({"ps": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223"]})");
  LaunchPlanOptions options;
  options.actorflow_commands = {"server", "train"};
  options.command = {"./my_driver", "--steps", "100", "--task", "mine"};
  ASSERT_OK_AND_ASSIGN(std::vector<LaunchTask> plan, MakeLaunchPlan(spec, "c.json", options));
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_TRUE(plan[0].program.empty());  // the ps task: actorflow server
  EXPECT_THAT(plan[0].args, ElementsAre("server", "--cluster", "c.json", "--job", "ps", "--task", "0"));
  EXPECT_EQ(plan[1].program, "./my_driver");
  // Its own flags (even one named --task) stay its own; nothing is added.
  EXPECT_THAT(plan[1].args, ElementsAre("--steps", "100", "--task", "mine"));
  ASSERT_EQ(plan[1].env.size(), 1u);
  const std::string prefix = "TF_CONFIG=";
  ASSERT_EQ(plan[1].env[0].rfind(prefix, 0), 0u) << plan[1].env[0];
  ASSERT_OK_AND_ASSIGN(ClusterSpec cluster,
                       ClusterSpec::FromJson(R"({"ps": ["127.0.0.1:2222"],
                                                 "worker": ["127.0.0.1:2223"]})"));
  // What the program reads back with TfConfigFromEnv.
  ASSERT_EQ(setenv("LAUNCH_PLAN_TEST_TF_CONFIG", plan[1].env[0].substr(prefix.size()).c_str(), 1),
            0);
  ASSERT_OK_AND_ASSIGN(TfConfig config, TfConfigFromEnv("LAUNCH_PLAN_TEST_TF_CONFIG"));
  EXPECT_TRUE(config.cluster == cluster);
  EXPECT_EQ(config.task.job, "worker");
  EXPECT_EQ(config.task.index, 0);
  // The actorflow children get it too.
  EXPECT_THAT(plan[0].env, ElementsAre(HasSubstr(R"("task": {"type": "ps", "index": 0})")));
}

TEST(LaunchPlanTest, OnlyTasksOfThisHostStartUnlessTasksAreNamed) {
  ClusterSpec spec = Spec(R"({"ps": ["10.0.0.5:2222"], "worker": ["127.0.0.1:2223", "me:2224"]})");
  LaunchPlanOptions options;
  options.actorflow_commands = {"server", "train"};
  options.command = {"train"};
  options.local_hosts = {"me"};
  ASSERT_OK_AND_ASSIGN(std::vector<LaunchTask> local, MakeLaunchPlan(spec, "c.json", options));
  ASSERT_EQ(local.size(), 2u);
  EXPECT_EQ(local[0].label, "worker:0");
  EXPECT_EQ(local[1].label, "worker:1");

  options.tasks = {"ps:0"};
  ASSERT_OK_AND_ASSIGN(std::vector<LaunchTask> named, MakeLaunchPlan(spec, "c.json", options));
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].label, "ps:0");
}

TEST(LaunchPlanTest, BadSelectionsAndReservedFlagsAreNamed) {
  ClusterSpec spec = Spec(R"({"ps": ["10.0.0.5:2222"], "worker": ["10.0.0.6:2223"]})");
  LaunchPlanOptions options;
  options.actorflow_commands = {"server", "train"};
  options.command = {"train"};
  Status none = MakeLaunchPlan(spec, "c.json", options).status();
  EXPECT_EQ(none.code(), Code::kInvalidArgument);
  EXPECT_THAT(none.message(), HasSubstr("10.0.0.5, 10.0.0.6"));

  options.tasks = {"worker:3"};
  Status unknown = MakeLaunchPlan(spec, "c.json", options).status();
  EXPECT_THAT(unknown.message(), HasSubstr("'worker:3' is no task of the cluster (ps:0, worker:0)"));
  options.tasks = {"worker"};
  EXPECT_THAT(MakeLaunchPlan(spec, "c.json", options).status().message(),
              HasSubstr("is not job:index"));
  options.tasks = {"worker:0"};
  options.actorflow_commands = {"server", "train"};
  options.command = {"train", "--task", "1"};
  EXPECT_THAT(MakeLaunchPlan(spec, "c.json", options).status().message(),
              HasSubstr("must not carry --task"));
}

TEST(LaunchPlanTest, SlurmHostlistsAndTasksPerNodeExpand) {
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> hosts, ExpandSlurmHostlist("n[01-03,7],gpu"));
  EXPECT_THAT(hosts, ElementsAre("n01", "n02", "n03", "n7", "gpu"));
  ASSERT_OK_AND_ASSIGN(std::vector<int> per_node, ExpandSlurmTasksPerNode("2(x3),1"));
  EXPECT_THAT(per_node, ElementsAre(2, 2, 2, 1));
  EXPECT_EQ(ExpandSlurmHostlist("n[1-").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ExpandSlurmHostlist("n[3-1]").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ExpandSlurmTasksPerNode("2(x").status().code(), Code::kInvalidArgument);
}

TEST(LaunchPlanTest, SlurmTasksFillTheNodesInOrderWithPortsFromTheBase) {
  ASSERT_OK_AND_ASSIGN(ClusterSpec spec,
                       SlurmClusterSpec("n[1-2]", "2,1", "ps=1,worker=2", 8888));
  ASSERT_OK_AND_ASSIGN(TaskAddress ps, spec.Address({"ps", 0}));
  ASSERT_OK_AND_ASSIGN(TaskAddress w0, spec.Address({"worker", 0}));
  ASSERT_OK_AND_ASSIGN(TaskAddress w1, spec.Address({"worker", 1}));
  EXPECT_EQ(ps.ToString(), "n1:8888");
  EXPECT_EQ(w0.ToString(), "n1:8889");
  EXPECT_EQ(w1.ToString(), "n2:8888");
  Status short_allocation = SlurmClusterSpec("n1", "", "ps=1,worker=2", 8888).status();
  EXPECT_THAT(short_allocation.message(), HasSubstr("more tasks than the allocation's 1"));
  EXPECT_THAT(SlurmClusterSpec("", "", "ps=1", 8888).status().message(),
              HasSubstr("SLURM_JOB_NODELIST is not set"));
}

}  // namespace
}  // namespace cli
}  // namespace actorflow
