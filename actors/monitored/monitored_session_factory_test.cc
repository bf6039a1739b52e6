// MonitoredTrainingSession across tasks (LocalCluster: ps + 2 workers on loopback,
// each worker's graph built with ReplicaDeviceSetter): a non-chief waits for the
// chief's initialization then trains; without a chief it fails within its wait,
// naming what is uninitialized; a restarted chief keeps the live model; a worker
// whose graph differs is told so; a step blocked on a queue ends at the deadline.
#include "actors/monitored/monitored_session_factory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>

#include "actors/cluster/local_cluster.h"
#include "actors/cluster/session_factory.h"
#include "graph/ops.h"
#include "graph/status_testing.h"
#include "graph/test_files.h"
#include "placement/replica_device_setter.h"
#include "training/monitored/hooks.h"
#include "training/optimizers/optimizer.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

// Worker `task`'s graph of one model: w [w_dim] and the global step on the ps task,
// loss = sum((w - 4)^2) and "train" (gradient descent, 0.25) on the worker, a local
// variable "seen" on the worker, and "blocked": a dequeue from an empty shared queue
// on the ps task.
class WorkerGraph {
 public:
  WorkerGraph(const ClusterSpec& spec, int task, int64_t w_dim = 1) {
    const std::string worker = "/job:worker/task:" + std::to_string(task);
    auto setter = ReplicaDeviceSetter(spec, worker);
    EXPECT_OK(setter.status());
    if (!setter.ok()) return;
    Scope model = root_.WithDeviceFunction(*setter);
    auto w = CreateVariable(model, "w", Tensor::FromVector<float>(std::vector<float>(w_dim, 0)));
    auto step = CreateGlobalStep(model);
    EXPECT_TRUE(w.ok() && step.ok()) << model.status();
    if (!w.ok() || !step.ok()) return;
    auto loss = Sum(model.WithOpName("loss"), Square(model, Sub(model, *w, 4.0f)));
    GradientDescentOptimizer sgd(0.25);
    EXPECT_OK(sgd.Minimize(model.WithOpName("train"), loss, *step).status());
    EXPECT_OK(CreateLocalVariable(model.WithDevice(worker), "seen", 3.0f).status());
    Queue q = FIFOQueue(root_.WithDevice("/job:ps/task:0").WithOpName("q"), {DType::kFloat32},
                        {Shape{}}, 2, /*shared_name=*/"monitored_test_queue");
    Identity(root_.WithDevice(worker).WithOpName("blocked"), QueueDequeue(root_, q)[0]);
    EXPECT_OK(root_.status());
  }
  Graph* graph() const { return root_.graph(); }

 private:
  Scope root_ = Scope::NewRootScope();
};

MonitoredTrainingSessionOptions Options(bool is_chief) {
  MonitoredTrainingSessionOptions options;
  options.is_chief = is_chief;
  options.log_step_count_steps = 0;
  options.save_summaries_steps = 0;
  options.save_checkpoint_secs = 0;
  return options;
}

std::unique_ptr<LocalCluster> StartCluster() {
  auto cluster = LocalCluster::Start({{"ps", 1}, {"worker", 2}});
  EXPECT_OK(cluster.status());
  return cluster.ok() ? std::move(cluster).value() : nullptr;
}

std::string Target(const LocalCluster& cluster, int task) {
  auto target = cluster.Target("worker", task);
  EXPECT_OK(target.status());
  return target.ok() ? *target : "";
}

void Train(MonitoredTrainingSession* mts, int steps) {
  for (int i = 0; i < steps; ++i) ASSERT_OK(mts->Run({}, {}, {"train"}, nullptr));
}

float ReadW(MonitoredTrainingSession* mts) {
  std::vector<Tensor> out;
  Status s = mts->raw_session()->Run({}, {"w"}, {}, &out);
  EXPECT_OK(s);
  return s.ok() ? out[0].data<float>()[0] : -1.0f;
}

TEST(MonitoredClusterTest, ANonChiefWaitsForTheChiefThenBothTrainOneModel) {
  auto cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  WorkerGraph chief_graph(cluster->spec(), 0), worker_graph(cluster->spec(), 1);
  MonitoredTrainingSessionOptions worker_options = Options(/*is_chief=*/false);
  worker_options.wait_for_model_ms = 60000;
  auto worker_future = std::async(std::launch::async, [&] {
    return NewMonitoredTrainingSession(worker_graph.graph(), Target(*cluster, 1), worker_options);
  });
  // No chief yet: the non-chief is still waiting.
  EXPECT_EQ(worker_future.wait_for(milliseconds(300)), std::future_status::timeout);

  ASSERT_OK_AND_ASSIGN(auto chief, NewMonitoredTrainingSession(chief_graph.graph(),
                                                               Target(*cluster, 0), Options(true)));
  ASSERT_EQ(worker_future.wait_for(seconds(60)), std::future_status::ready);
  ASSERT_OK_AND_ASSIGN(auto worker, worker_future.get());

  // The ready check runs beside the variables, on the ps task.
  for (const char* probe : {"scaffold/w/is_initialized", "scaffold/global_step/shape"}) {
    const Node* node = worker_graph.graph()->FindNode(probe);
    ASSERT_NE(node, nullptr) << probe;
    EXPECT_EQ(node->requested_device(), "/job:ps/task:0") << probe;
    RunOptions trace;
    trace.trace_level = RunOptions::TraceLevel::kFullTrace;
    RunMetadata metadata;
    std::vector<Tensor> out;
    ASSERT_OK(worker->raw_session()->Run(trace, {}, {probe}, {}, &out, &metadata));
    bool found = false;
    for (const NodeExecStats& stats : metadata.step_stats) {
      if (stats.node_name != probe) continue;
      found = true;
      EXPECT_THAT(stats.device, HasSubstr("/job:ps/replica:0/task:0/")) << probe;
    }
    EXPECT_TRUE(found) << probe;
  }
  Train(chief.get(), 3);
  Train(worker.get(), 2);
  ASSERT_OK_AND_ASSIGN(int64_t step, worker->global_step());
  EXPECT_EQ(step, 5);
  EXPECT_EQ(ReadW(chief.get()), ReadW(worker.get()));
  // Each worker's local variable, on its own task, was initialized.
  std::vector<Tensor> seen;
  ASSERT_OK(worker->raw_session()->Run({}, {"seen"}, {}, &seen));
  EXPECT_EQ(seen[0].data<float>()[0], 3.0f);
  EXPECT_OK(worker->Close());
  EXPECT_OK(chief->Close());
}

TEST(MonitoredClusterTest, ANonChiefWhoseChiefNeverStartsFailsWithinItsWait) {
  auto cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  WorkerGraph graph(cluster->spec(), 1);
  MonitoredTrainingSessionOptions options = Options(/*is_chief=*/false);
  options.wait_for_model_ms = 500;
  const Clock::time_point start = Clock::now();
  auto mts = NewMonitoredTrainingSession(graph.graph(), Target(*cluster, 1), options);
  const Clock::duration waited = Clock::now() - start;
  ASSERT_FALSE(mts.ok());
  EXPECT_EQ(mts.status().code(), Code::kDeadlineExceeded) << mts.status();
  EXPECT_THAT(mts.status().message(), HasSubstr("'w', 'global_step'"));
  EXPECT_THAT(mts.status().message(),
              HasSubstr("The chief has not initialized the model: is the chief running?"));
  EXPECT_GE(waited, milliseconds(500));
  EXPECT_LT(waited, seconds(15));
}

// A chief that comes back (a new graph, a new monitored session) while the ps task
// still holds the model keeps it, with or without a checkpoint directory, even one
// whose latest checkpoint is older than the live model.
TEST(MonitoredClusterTest, ARestartedChiefKeepsTheLiveModel) {
  auto cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  ScopedTempDir dir("mts_chief");
  float live_w = 0;
  {
    WorkerGraph graph(cluster->spec(), 0);
    MonitoredTrainingSessionOptions options = Options(true);
    options.checkpoint_dir = dir.path();
    options.save_checkpoint_secs = 3600;  // at creation (step 0) and at the end (5)
    ASSERT_OK_AND_ASSIGN(auto chief,
                         NewMonitoredTrainingSession(graph.graph(), Target(*cluster, 0), options));
    Train(chief.get(), 5);
    ASSERT_OK(chief->Close());
  }
  {
    WorkerGraph graph(cluster->spec(), 1);
    ASSERT_OK_AND_ASSIGN(auto worker, NewMonitoredTrainingSession(
                                          graph.graph(), Target(*cluster, 1), Options(false)));
    Train(worker.get(), 3);  // live: step 8, past the latest checkpoint's 5
    live_w = ReadW(worker.get());
  }
  for (const std::string& checkpoint_dir : {std::string(), dir.path()}) {
    WorkerGraph graph(cluster->spec(), 0);
    MonitoredTrainingSessionOptions options = Options(true);
    options.checkpoint_dir = checkpoint_dir;
    ASSERT_OK_AND_ASSIGN(auto chief,
                         NewMonitoredTrainingSession(graph.graph(), Target(*cluster, 0), options));
    ASSERT_OK_AND_ASSIGN(int64_t step, chief->global_step());
    EXPECT_EQ(step, 8) << "checkpoint_dir '" << checkpoint_dir << "'";
    EXPECT_EQ(ReadW(chief.get()), live_w);
  }
}

TEST(MonitoredClusterTest, AWorkerWhoseGraphDiffersFromTheLiveModelIsToldSo) {
  auto cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  WorkerGraph chief_graph(cluster->spec(), 0);
  ASSERT_OK_AND_ASSIGN(auto chief, NewMonitoredTrainingSession(chief_graph.graph(),
                                                               Target(*cluster, 0), Options(true)));
  WorkerGraph other(cluster->spec(), 1, /*w_dim=*/3);  // w [3]; the live w is [1]
  MonitoredTrainingSessionOptions options = Options(false);
  options.wait_for_model_ms = 10000;
  auto worker = NewMonitoredTrainingSession(other.graph(), Target(*cluster, 1), options);
  ASSERT_FALSE(worker.ok());
  EXPECT_EQ(worker.status().code(), Code::kFailedPrecondition) << worker.status();
  EXPECT_THAT(worker.status().message(),
              HasSubstr("'w' on /job:ps/task:0 holds shape [1], this graph declares [3]"));

  // Why the check: the runtime alone silently hands such a graph the live value, of
  // the live shape, whatever its Variable node declares.
  SessionOptions session_options;
  session_options.target = Target(*cluster, 1);
  ASSERT_OK_AND_ASSIGN(auto raw, NewSession(other.graph(), session_options));
  std::vector<Tensor> out;
  ASSERT_OK(raw->Run({}, {"w"}, {}, &out));
  EXPECT_EQ(out[0].shape(), Shape{1});
}

TEST(MonitoredClusterTest, AStepBlockedOnAQueueEndsAtTheStepDeadline) {
  auto cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  WorkerGraph graph(cluster->spec(), 0);
  MonitoredTrainingSessionOptions options = Options(true);
  options.step_timeout_ms = 300;
  ASSERT_OK_AND_ASSIGN(auto chief,
                       NewMonitoredTrainingSession(graph.graph(), Target(*cluster, 0), options));
  const Clock::time_point start = Clock::now();
  Status s = chief->Run({}, {"blocked"}, {}, nullptr);
  const Clock::duration took = Clock::now() - start;
  EXPECT_EQ(s.code(), Code::kDeadlineExceeded) << s;
  EXPECT_THAT(s.message(), HasSubstr("step deadline of 300 ms"));
  // The runtime's own account follows: the devices the step was still running on.
  EXPECT_THAT(s.message(), HasSubstr("/job:ps/replica:0/task:0/device:CPU:0"));
  EXPECT_GE(took, milliseconds(300));
  EXPECT_LT(took, seconds(15));
  // The next step runs.
  EXPECT_OK(chief->Run({}, {}, {"train"}, nullptr));
  EXPECT_OK(chief->Close());
}

}  // namespace
}  // namespace actorflow
