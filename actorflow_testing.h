// actorflow's test kit in one include, for the tests of programs built on actorflow
// (and of actorflow itself); link `//:actorflow_testing` (testonly):
//
//   #include "actorflow_testing.h"
//
//   namespace actorflow {
//   class TrainingTest : public LocalClusterTest {};
//   TEST_F(TrainingTest, LearnsOnTwoWorkers) {
//     ASSERT_NE(StartCluster({{"ps", 1}, {"worker", 2}}), nullptr);
//     ASSERT_OK_AND_ASSIGN(auto data, LoadCsv(TestDataFile("iris_training.csv")));
//     ...
//   }
//   }  // namespace actorflow
//
// - graph/status_testing.h: ASSERT_OK, EXPECT_OK, ASSERT_OK_AND_ASSIGN for Status and
//   StatusOr<T>, printing the Status on failure.
// - actors/cluster/local_cluster_fixture.h: LocalClusterTest, a fixture that starts
//   in-process clusters of a given shape, gives their targets and ps clients, and
//   stops them when the test ends.
// - graph/test_files.h: runfiles (TestRunfile, TestDataFile) and scratch
//   directories (NewTestTempDir, ScopedTempDir).
// - actors/sim/simulated_cluster.h: SimulatedCluster, a whole cluster under one
//   deterministic scheduler and a virtual clock, with a fault plan
//   (examples/simulated_cluster shows a test).
// Process-level tests (real `actorflow server` processes) use
// //tests:process_testing (tests/process_cluster.h, tests/subprocess.h).
#ifndef ACTORFLOW_ACTORFLOW_TESTING_H_
#define ACTORFLOW_ACTORFLOW_TESTING_H_

#include "actors/cluster/local_cluster_fixture.h"
#include "actors/sim/simulated_cluster.h"
#include "graph/status_testing.h"
#include "graph/test_files.h"

#endif  // ACTORFLOW_ACTORFLOW_TESTING_H_
