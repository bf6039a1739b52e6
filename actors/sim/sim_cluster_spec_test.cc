#include "actors/sim/sim_cluster_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/status_testing.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

TEST(SimClusterSpecTest, ReadsJobsAndDevices) {
  ASSERT_OK_AND_ASSIGN(SimClusterShape shape, ParseSimClusterSpec("sim:ps=10,worker=495,devices=2"));
  EXPECT_EQ(shape.tasks.at("ps"), 10);
  EXPECT_EQ(shape.tasks.at("worker"), 495);
  EXPECT_EQ(shape.devices_per_task, 2);
  EXPECT_EQ(shape.TotalTasks(), 505);
  EXPECT_EQ(shape.TotalDevices(), 1010);

  ASSERT_OK_AND_ASSIGN(SimClusterShape small, ParseSimClusterSpec("sim:worker=2,ps=1"));
  EXPECT_EQ(small.devices_per_task, 1);
  ASSERT_OK_AND_ASSIGN(ClusterSpec spec, small.ToClusterSpec());
  EXPECT_EQ(spec.jobs(), (std::vector<std::string>{"ps", "worker"}));
  EXPECT_EQ(spec.num_tasks("worker"), 2);
  ASSERT_OK_AND_ASSIGN(TaskAddress address, spec.Address({"worker", 1}));
  EXPECT_EQ(address.ToString(), "worker-1.sim:1");
}

TEST(SimClusterSpecTest, RefusesBadSpecsNamingThePart) {
  struct Case {
    const char* spec;
    const char* error;
  };
  const Case cases[] = {
      {"local:ps=1,worker=2", "must start with \"sim:\""},
      {"sim:ps=1,worker=0", "needs at least one worker"},
      {"sim:ps=1", "needs at least one worker"},
      {"sim:ps=0,worker=3", "ps"},
      {"sim:ps=1,worker=two", "'worker=two' is not key=count"},
      {"sim:ps=1,worker", "'worker' is not key=count"},
      {"sim:ps=1,worker=-1", "is not key=count"},
      {"sim:ps=1,worker=2,worker=3", "job 'worker' given twice"},
      {"sim:ps=1,worker=2,devices=0", "devices must be in 1..64, not 0"},
      {"sim:ps=1,worker=2,devices=1,devices=2", "devices given twice"},
      {"sim:ps=1,worker=100001", "at most 100000"},
      {"sim:ps=1,worker=2,9lives=1", "unknown key '9lives'"},
      {"sim:ps=1,worker=2,evil=3", "unknown key 'evil' (a simulated cluster takes ps=P, worker=W"},
      {"sim:ps=1,workers=2", "unknown key 'workers'"},
      {"sim:", "needs at least one worker"},
  };
  for (const Case& c : cases) {
    StatusOr<SimClusterShape> shape = ParseSimClusterSpec(c.spec);
    ASSERT_FALSE(shape.ok()) << c.spec;
    EXPECT_EQ(shape.status().code(), Code::kInvalidArgument) << c.spec;
    EXPECT_THAT(shape.status().message(), HasSubstr(c.error)) << c.spec;
  }
}

TEST(SimClusterSpecTest, EstimatesMemoryAndRefusesWhatDoesNotFit) {
  ASSERT_OK_AND_ASSIGN(SimClusterShape shape, ParseSimClusterSpec("sim:ps=10,worker=495,devices=2"));
  const int64_t model_bytes = 4 * (4 * 10 + 10 + 10 * 10 + 10 + 10 * 3 + 3);  // Iris 4-10-10-3
  const int64_t estimate = EstimateSimulationBytes(shape, model_bytes);
  EXPECT_EQ(estimate, 1010 * (kSimBytesPerDevice + 3 * model_bytes) + 3 * model_bytes);
  EXPECT_OK(CheckSimulationFits(shape, model_bytes, estimate));
  Status refused = CheckSimulationFits(shape, model_bytes, estimate - 1);
  EXPECT_EQ(refused.code(), Code::kResourceExhausted);
  EXPECT_THAT(refused.message(), AllOf(HasSubstr("505 tasks and 1010 devices"),
                                       HasSubstr("needs an estimated"),
                                       HasSubstr("64 KiB per device")));
  // A model of 1 GiB on 1010 devices needs terabytes: refused on any machine.
  EXPECT_EQ(CheckSimulationFits(shape, int64_t{1} << 30).code(), Code::kResourceExhausted);
}

}  // namespace
}  // namespace actorflow
