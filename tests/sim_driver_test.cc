// A user's driver program, unchanged, on a simulated cluster (SimulatedCluster::
// RunDrivers): examples/sync_replicas's SyncReplicasOptimizer + MonitoredTrainingSession
// driver trains Iris on sim:ps=1,worker=2; with worker 1 killed mid-training and
// restarted, its driver runs again and training ends at the last step; the same run
// gives the same event log twice; a between-graph all-reduce driver keeps its
// replicas bit-identical; bad input is named.
#include <iostream>
#include <regex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "actorflow.h"
#include "actorflow_testing.h"
#include "examples/sync_replicas/iris_sync_driver.h"

namespace actorflow {
namespace {

constexpr int64_t kLastStep = 60;

std::unique_ptr<SimulatedCluster> StartCluster(const std::string& faults_json) {
  SimulatedCluster::Options options;
  options.shape = *ParseSimClusterSpec("sim:ps=1,worker=2");
  options.seed = 11;
  if (!faults_json.empty()) {
    StatusOr<ClusterSpec> spec = options.shape.ToClusterSpec();
    EXPECT_OK(spec.status());
    StatusOr<FaultPlan> plan = ParseFaultPlan(faults_json, *spec);
    EXPECT_OK(plan.status());
    options.faults = *plan;
  }
  StatusOr<std::unique_ptr<SimulatedCluster>> cluster = SimulatedCluster::Start(options);
  EXPECT_OK(cluster.status());
  return std::move(*cluster);
}

struct DriverOutput {
  SimulatedCluster::DriversReport report;
  std::string hash;
  std::vector<int64_t> final_steps;  // "Global step N" of every run that finished
  std::vector<double> accuracies;
};

DriverOutput RunIrisSync(const std::string& faults_json) {
  auto cluster = StartCluster(faults_json);
  DriverOutput out;
  if (cluster == nullptr) return out;
  testing::internal::CaptureStdout();
  StatusOr<SimulatedCluster::DriversReport> report =
      cluster->RunDrivers([] { return TrainIrisSync("", kLastStep); });
  const std::string printed = testing::internal::GetCapturedStdout();
  EXPECT_OK(report.status());
  if (!report.ok()) return out;
  out.report = *report;
  out.hash = cluster->EventLogHash();
  for (const auto& r : report->runs) {
    std::cerr << "run of " << r.task.ToString() << ": virtual " << r.started_s << " to "
              << r.ended_s << " s: " << r.status << "\n";
  }
  const std::regex line(R"(Global step (\d+), test set accuracy: ([0-9.]+))");
  for (std::sregex_iterator it(printed.begin(), printed.end(), line), end; it != end; ++it) {
    out.final_steps.push_back(std::stoll((*it)[1]));
    out.accuracies.push_back(std::stod((*it)[2]));
  }
  return out;
}

// A plan that kills `task` at virtual second `at_s` and brings it back 1 ms later.
std::string KillAndRestart(const std::string& task, double at_s) {
  return R"({"faults": [{"kill": ")" + task + R"(", "at_s": )" + std::to_string(at_s) +
         R"(}, {"restart": ")" + task + R"(", "at_s": )" + std::to_string(at_s + 0.001) + "}]}";
}

TEST(SimDriverTest, TheSyncReplicasDriverTrainsUnchangedOnASimulatedCluster) {
  DriverOutput run = RunIrisSync("");
  ASSERT_EQ(run.report.runs.size(), 2u);
  for (const auto& r : run.report.runs) EXPECT_OK(r.status) << r.task.ToString();
  ASSERT_EQ(run.final_steps.size(), 2u);
  for (size_t i = 0; i < run.final_steps.size(); ++i) {
    EXPECT_GE(run.final_steps[i], kLastStep);
    EXPECT_GE(run.accuracies[i], 0.6);
  }
  EXPECT_GT(run.report.virtual_seconds, 0);
  // The drivers' steps kept their deadlines and never saw the global step go back.
  EXPECT_GT(run.report.global_step_reads, 0);
  EXPECT_GT(run.report.steps, run.report.global_step_reads);
  ASSERT_EQ(run.report.invariants.size(), 2u);
  EXPECT_EQ(run.report.invariant_violations(), 0);
}

TEST(SimDriverTest, AWorkerKilledMidTrainingRunsAgainAndTrainingReachesTheLastStep) {
  // Mid-training: at 80% of an undisturbed run's virtual time (worker 1 spends the
  // first part waiting for the chief to make the model ready); back 1 ms later.
  DriverOutput calm = RunIrisSync("");
  ASSERT_GT(calm.report.virtual_seconds, 0);
  const double kill_at = calm.report.virtual_seconds * 0.8;
  const std::string faults = KillAndRestart("/job:worker/task:1", kill_at);
  DriverOutput run = RunIrisSync(faults);
  ASSERT_EQ(run.report.runs.size(), 3u);
  int worker1_runs = 0;
  bool worker1_failed_first = false;
  for (const auto& r : run.report.runs) {
    if (r.task.index == 1) {
      if (++worker1_runs == 1) {
        // Its calls fail from the kill on, as its process died; it was training then.
        worker1_failed_first = r.status.code() == Code::kCancelled;
        EXPECT_THAT(r.status.message(), testing::HasSubstr("was killed")) << r.status;
        EXPECT_THAT(r.status.message(), testing::Not(testing::HasSubstr("model is ready")))
            << r.status;
        EXPECT_GE(r.ended_s, kill_at);
      }
      if (worker1_runs == 2) EXPECT_OK(r.status) << "worker 1's second run";
    } else {
      EXPECT_OK(r.status) << "the chief";
    }
  }
  EXPECT_EQ(worker1_runs, 2);
  EXPECT_TRUE(worker1_failed_first) << "worker 1's first run should end with its task's death";
  ASSERT_EQ(run.final_steps.size(), 2u);  // the chief and worker 1's second run
  for (int64_t step : run.final_steps) EXPECT_GE(step, kLastStep);
  EXPECT_EQ(run.report.invariant_violations(), 0);

  // The same plan and seed give the same run.
  DriverOutput again = RunIrisSync(faults);
  EXPECT_EQ(again.hash, run.hash);
  ASSERT_EQ(again.report.runs.size(), run.report.runs.size());
  for (size_t i = 0; i < run.report.runs.size(); ++i) {
    EXPECT_EQ(again.report.runs[i].ended_s, run.report.runs[i].ended_s) << i;
    EXPECT_EQ(again.report.runs[i].status.ToString(), run.report.runs[i].status.ToString()) << i;
  }
}

// The chief killed mid-training and restarted against the live ps task: its driver
// runs again, restores nothing and re-initializes nothing (the model is ready on the
// ps), and no driver ever reads the global step go back.
TEST(SimDriverTest, ARestartedChiefNeverResetsTheGlobalStep) {
  DriverOutput calm = RunIrisSync("");
  ASSERT_GT(calm.report.virtual_seconds, 0);
  const double kill_at = calm.report.virtual_seconds * 0.6;
  const std::string faults = KillAndRestart("/job:worker/task:0", kill_at);
  DriverOutput run = RunIrisSync(faults);
  int chief_runs = 0;
  for (const auto& r : run.report.runs) {
    if (r.task.index != 0) continue;
    if (++chief_runs == 1) EXPECT_THAT(r.status.message(), testing::HasSubstr("was killed"));
    if (chief_runs == 2) EXPECT_OK(r.status) << "the chief's second run";
  }
  EXPECT_EQ(chief_runs, 2);
  for (int64_t step : run.final_steps) EXPECT_GE(step, kLastStep);
  EXPECT_GT(run.report.global_step_reads, 0);
  for (const SimInvariantResult& r : run.report.invariants) {
    EXPECT_TRUE(r.violations.empty()) << r.name << ": " << r.violations.front();
  }
}

// A between-graph all-reduce driver (no ps): each worker's Run waits in the
// collective until every member's step joins it, so only the turns let it run on
// one simulated cluster. The replicas start from different seeds, the broadcast makes
// them equal, and after training they are still bit-identical; the same run twice
// gives the same event log.
struct AllReduceRun {
  std::vector<std::vector<float>> synced;   // per worker, after the broadcast
  std::vector<std::vector<float>> weights;  // per worker, after training
  std::string hash;
};

AllReduceRun RunAllReduceDrivers() {
  SimulatedCluster::Options options;
  options.shape = *ParseSimClusterSpec("sim:worker=3");
  options.seed = 5;
  auto cluster = SimulatedCluster::Start(options);
  EXPECT_OK(cluster.status());
  AllReduceRun run;
  if (!cluster.ok()) return run;
  run.synced.resize(3);
  run.weights.resize(3);
  auto report = (*cluster)->RunDrivers([&run]() -> Status {
    AF_ASSIGN_OR_RETURN(TfConfig config, TfConfigFromEnv());
    AF_ASSIGN_OR_RETURN(auto server, Server::Start(config));
    const int r = config.task.index;
    CollectiveGroup group{"gradients", {}};
    for (int t = 0; t < config.cluster.num_tasks("worker"); ++t) {
      group.devices.push_back("/job:worker/replica:0/task:" + std::to_string(t) + "/device:CPU:0");
    }
    Scope root = Scope::NewRootScope();
    Scope s = root.WithDevice(group.devices[r]);
    auto x = Placeholder(s.WithOpName("x"), DType::kFloat32, Shape{-1, 3});
    auto y = Placeholder(s.WithOpName("y"), DType::kFloat32, Shape{-1, 1});
    AF_ASSIGN_OR_RETURN(Output w, CreateVariable(s, "w", RandomNormal(s, Shape{3, 1}, DType::kFloat32, 7 + r, 0, 1)));
    Output diff = Sub(s, MatMul(s, x, w), y);
    Output loss = Mean(s, Mul(s, diff, diff), {0, 1});
    AF_ASSIGN_OR_RETURN(Output step, CreateGlobalStep(s));
    AllReduceOptions reduce;
    reduce.group = group;
    AllReduceOptimizer sgd(std::make_unique<GradientDescentOptimizer>(0.1), reduce);
    AF_ASSIGN_OR_RETURN(Output train, sgd.Minimize(s, loss, step));
    AF_ASSIGN_OR_RETURN(Output sync, BroadcastGlobalVariables(s, group));
    GlobalVariablesInitializer(root.WithOpName("init"));
    AF_RETURN_IF_ERROR(root.status());
    SessionOptions session_options;
    session_options.target = server->target();
    AF_ASSIGN_OR_RETURN(auto session, NewSession(root.graph(), session_options));
    AF_RETURN_IF_ERROR(session->Run({}, {}, {"init"}, nullptr));
    AF_RETURN_IF_ERROR(session->Run({}, {}, {sync.node->name()}, nullptr));
    std::vector<Tensor> out;
    AF_RETURN_IF_ERROR(session->Run({}, {w.name()}, {}, &out));
    run.synced[r].assign(out[0].data<float>(), out[0].data<float>() + 3);
    for (int t = 0; t < 4; ++t) {
      // Each worker's own rows.
      Tensor features = Tensor::FromVector<float>({1.0f * (r + 1), 0.5f, -1.0f, 0.2f, 1.0f * t, 0.3f}, Shape{2, 3});
      Tensor targets = Tensor::FromVector<float>({0.5f, -0.25f * r}, Shape{2, 1});
      AF_RETURN_IF_ERROR(session->Run({{x.name(), features}, {y.name(), targets}}, {}, {train.node->name()}, nullptr));
    }
    AF_RETURN_IF_ERROR(session->Run({}, {w.name()}, {}, &out));
    run.weights[r].assign(out[0].data<float>(), out[0].data<float>() + 3);
    return session->Close();
  });
  EXPECT_OK(report.status());
  if (report.ok()) {
    for (const auto& r : report->runs) EXPECT_OK(r.status) << r.task.ToString();
  }
  run.hash = (*cluster)->EventLogHash();
  return run;
}

TEST(SimDriverTest, AnAllReduceDriverKeepsItsReplicasIdenticalOnASimulatedCluster) {
  AllReduceRun run = RunAllReduceDrivers();
  ASSERT_EQ(run.weights.size(), 3u);
  ASSERT_EQ(run.weights[0].size(), 3u);
  EXPECT_EQ(run.synced[1], run.synced[0]);  // the broadcast made the replicas equal
  EXPECT_EQ(run.synced[2], run.synced[0]);
  EXPECT_NE(run.weights[0], run.synced[0]);  // training moved them
  EXPECT_EQ(run.weights[1], run.weights[0]);  // bit-identical
  EXPECT_EQ(run.weights[2], run.weights[0]);
  EXPECT_EQ(RunAllReduceDrivers().hash, run.hash);
}

// Each worker dequeues from a queue nobody fills, its session's steps bounded by
// `default_step_timeout_ms` (0: none).
StatusOr<SimulatedCluster::DriversReport> DequeueFromAnEmptyQueue(SimulatedCluster& cluster,
                                                                  int64_t default_step_timeout_ms) {
  return cluster.RunDrivers([default_step_timeout_ms]() -> Status {
    AF_ASSIGN_OR_RETURN(TfConfig config, TfConfigFromEnv());
    AF_ASSIGN_OR_RETURN(auto server, Server::Start(config));
    Scope root = Scope::NewRootScope();
    Queue queue = FIFOQueue(root.WithDevice("/job:ps/task:0"), {DType::kFloat32}, {Shape{}}, 4,
                            "never_filled");
    std::vector<Output> element = QueueDequeue(root, queue);
    SessionOptions options;
    options.target = server->target();
    options.default_step_timeout_in_ms = default_step_timeout_ms;
    AF_ASSIGN_OR_RETURN(auto session, NewSession(root.graph(), options));
    std::vector<Tensor> out;
    return session->Run({}, {element[0].name()}, {}, &out);
  });
}

TEST(SimDriverTest, ADriverThatWaitsForeverIsToldTheClusterWentQuiet) {
  auto cluster = StartCluster("");
  ASSERT_NE(cluster, nullptr);
  StatusOr<SimulatedCluster::DriversReport> report = DequeueFromAnEmptyQueue(*cluster, 0);
  ASSERT_OK(report.status());
  ASSERT_EQ(report->runs.size(), 2u);
  for (const auto& r : report->runs) {
    EXPECT_FALSE(r.status.ok());
    EXPECT_THAT(r.status.message(), testing::HasSubstr("went quiet")) << r.status;
  }
}

// The session's default step deadline bounds a step whose RunOptions give none, in
// virtual time, as on a real cluster.
TEST(SimDriverTest, TheSessionsDefaultStepDeadlineEndsABlockedStep) {
  auto cluster = StartCluster("");
  ASSERT_NE(cluster, nullptr);
  StatusOr<SimulatedCluster::DriversReport> report = DequeueFromAnEmptyQueue(*cluster, 500);
  ASSERT_OK(report.status());
  ASSERT_EQ(report->runs.size(), 2u);
  for (const auto& r : report->runs) {
    EXPECT_EQ(r.status.code(), Code::kDeadlineExceeded) << r.status;
    EXPECT_NEAR(r.ended_s - r.started_s, 0.5, 0.05) << r.status;
  }
  EXPECT_EQ(report->invariant_violations(), 0);
  for (const SimInvariantResult& r : report->invariants) {
    for (const std::string& v : r.violations) ADD_FAILURE() << r.name << ": " << v;
  }
}

TEST(SimDriverTest, BadInputIsNamed) {
  auto cluster = StartCluster(R"({"faults": [{"kill": "/job:worker/task:1", "at_step": 5}]})");
  ASSERT_NE(cluster, nullptr);
  auto driver = [] { return Status::OK(); };
  StatusOr<SimulatedCluster::DriversReport> report = cluster->RunDrivers(driver);
  EXPECT_EQ(report.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(report.status().message(), testing::HasSubstr("at_step"));

  auto calm = StartCluster("");
  ASSERT_NE(calm, nullptr);
  report = calm->RunDrivers(driver, {TaskId{"worker", 7}});
  EXPECT_EQ(report.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(report.status().message(), testing::HasSubstr("/job:worker/task:7"));
  report = calm->RunDrivers(driver, {TaskId{"worker", 0}, TaskId{"worker", 0}});
  EXPECT_EQ(report.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(report.status().message(), testing::HasSubstr("twice"));

  // A thread the driver starts on its own (not through a Coordinator) is refused.
  report = calm->RunDrivers([]() -> Status {
    AF_ASSIGN_OR_RETURN(TfConfig config, TfConfigFromEnv());
    AF_ASSIGN_OR_RETURN(auto server, Server::Start(config));
    Scope root = Scope::NewRootScope();
    auto one = Const(root.WithOpName("one"), 1.0f);
    SessionOptions options;
    options.target = server->target();
    AF_ASSIGN_OR_RETURN(auto session, NewSession(root.graph(), options));
    Status from_thread;
    std::thread own([&] { from_thread = session->Run({}, {one.name()}, {}, nullptr); });
    own.join();
    return from_thread;
  }, {TaskId{"worker", 0}});
  ASSERT_OK(report.status());
  ASSERT_EQ(report->runs.size(), 1u);
  EXPECT_EQ(report->runs[0].status.code(), Code::kFailedPrecondition);
  EXPECT_THAT(report->runs[0].status.message(), testing::HasSubstr("Coordinator"));

  // A driver that throws is a run that failed, named.
  report = calm->RunDrivers([]() -> Status { throw std::runtime_error("boom"); });
  ASSERT_OK(report.status());
  ASSERT_EQ(report->runs.size(), 2u);
  EXPECT_THAT(report->runs[0].status.message(), testing::HasSubstr("boom"));
}

}  // namespace
}  // namespace actorflow
