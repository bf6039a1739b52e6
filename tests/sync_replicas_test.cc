// SyncReplicasOptimizer with MonitoredTrainingSession on a LocalCluster (1 ps task,
// 2 worker tasks, each a Server on 127.0.0.1), between-graph: every worker builds its
// own graph with ReplicaDeviceSetter and its own monitored session.
//
// The model makes the arithmetic exact: one scalar variable w, loss = w * c with c
// fed by the worker, so a worker's gradient is its c and plain gradient descent with
// learning rate 1 moves w by minus the average of the aggregated c's each step.
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "actorflow.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

struct WorkerGraph {
  Scope root = Scope::NewRootScope();
  Output c, w, step, train;
  // Takes a token from the token queue and puts it back (NextToken).
  Output token;
  const Node* put_back = nullptr;
  GradientDescentOptimizer sgd{1.0};
  std::unique_ptr<SyncReplicasOptimizer> sync;
};

Status BuildWorker(const ClusterSpec& spec, int task, int replicas, int total, WorkerGraph* g) {
  AF_ASSIGN_OR_RETURN(auto setter, ReplicaDeviceSetter(spec, "/job:worker/task:" + std::to_string(task)));
  const Scope s = g->root.WithDeviceFunction(setter);
  AF_ASSIGN_OR_RETURN(g->w, CreateVariable(s, "w", Tensor::Scalar(0.0f)));
  AF_ASSIGN_OR_RETURN(g->step, CreateGlobalStep(s));
  g->c = Placeholder(s, DType::kFloat32, {});
  g->sync = std::make_unique<SyncReplicasOptimizer>(&g->sgd, replicas, total);
  AF_ASSIGN_OR_RETURN(g->train, g->sync->Minimize(s, Mul(s, g->w, g->c), g->step));
  // Built before any session opens the graph: a graph that grows while the chief's
  // thread runs the sync op would make the session plan its steps again.
  const Queue& tokens = g->sync->token_queue();
  const Scope at_queue = g->root.WithDevice(tokens.node->requested_device());
  g->token = QueueDequeue(at_queue, tokens).at(0);
  g->put_back = QueueEnqueue(at_queue, tokens, {g->token});
  return g->root.status();
}

MonitoredTrainingSessionOptions Options(WorkerGraph* g, bool is_chief,
                                        std::vector<std::shared_ptr<SessionRunHook>> more = {}) {
  MonitoredTrainingSessionOptions o;
  o.is_chief = is_chief;
  o.log_step_count_steps = 0;
  o.step_timeout_ms = 20000;
  o.wait_for_model_ms = 20000;
  o.hooks = {g->sync->MakeSessionRunHook(is_chief)};
  for (auto& h : more) o.hooks.push_back(h);
  return o;
}

// Waits until the token queue holds a token (the chief's thread applied a step and
// handed out its tokens, or starting tokens are left) and returns its step; the token
// goes back into the queue. The wait is bounded by the monitored session's step
// deadline.
int64_t NextToken(MonitoredTrainingSession* session, const WorkerGraph& g) {
  std::vector<Tensor> out;
  RunOptions options;
  options.timeout_in_ms = 20000;
  Status s = session->raw_session()->Run(options, {}, {g.token.name()}, {g.put_back->name()}, &out,
                                         nullptr);
  EXPECT_TRUE(s.ok()) << s;
  return s.ok() ? out[0].data<int64_t>()[0] : -1;
}

float ReadFloat(MonitoredTrainingSession* session, const Output& out) {
  std::vector<Tensor> values;
  Status s = session->raw_session()->Run({}, {out.name()}, {}, &values);
  EXPECT_TRUE(s.ok()) << s;
  return s.ok() ? values[0].data<float>()[0] : -1e9f;
}

class SyncReplicasTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto cluster = LocalCluster::Start({{"ps", 1}, {"worker", 2}});
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = std::move(cluster).value();
  }
  std::string Target(int task) { return *cluster_->Target("worker", task); }
  std::unique_ptr<LocalCluster> cluster_;
};

TEST_F(SyncReplicasTest, EachStepAppliesTheAverageOfOneGradientPerWorker) {
  WorkerGraph chief, other;
  ASSERT_TRUE(BuildWorker(cluster_->spec(), 0, 2, 2, &chief).ok()) << chief.root.status();
  ASSERT_TRUE(BuildWorker(cluster_->spec(), 1, 2, 2, &other).ok()) << other.root.status();
  auto s0 = NewMonitoredTrainingSession(chief.root.graph(), Target(0), Options(&chief, true));
  ASSERT_TRUE(s0.ok()) << s0.status();
  auto s1 = NewMonitoredTrainingSession(other.root.graph(), Target(1), Options(&other, false));
  ASSERT_TRUE(s1.ok()) << s1.status();

  // One step each: gradients 1 and 3 make one global step that moves w by -2. Each
  // run returns at once (it takes one of the starting tokens, which hold step 0);
  // the chief's thread applies the step once both gradients are in.
  std::vector<Tensor> out;
  ASSERT_TRUE((*s0)->Run({{chief.c, Tensor::Scalar(1.0f)}}, {chief.train}, &out).ok());
  EXPECT_EQ(*(*s0)->global_step(), 0) << "a step came from one gradient";
  ASSERT_TRUE((*s1)->Run({{other.c, Tensor::Scalar(3.0f)}}, {other.train}, &out).ok());
  EXPECT_EQ(NextToken(s0->get(), chief), 1);
  EXPECT_EQ(*(*s0)->global_step(), 1);
  EXPECT_FLOAT_EQ(ReadFloat(s0->get(), chief.w), -2.0f);

  // As in TensorFlow, each worker's second gradient still carries the starting
  // token's step 0: both are stale now, dropped, and the workers take the tokens of
  // step 1 that the chief handed out.
  ASSERT_TRUE((*s0)->Run({{chief.c, Tensor::Scalar(50.0f)}}, {chief.train}, &out).ok());
  ASSERT_TRUE((*s1)->Run({{other.c, Tensor::Scalar(70.0f)}}, {other.train}, &out).ok());
  ASSERT_TRUE((*s0)->raw_session()->Run({}, {chief.sync->dropped_gradients()}, {}, &out).ok());
  EXPECT_EQ(out[0].data<int64_t>()[0], 2);
  EXPECT_FLOAT_EQ(ReadFloat(s0->get(), chief.w), -2.0f);

  // Step 1's gradients: each worker then waits for step 2's token, so they run
  // side by side.
  Status other_run;
  std::thread other_worker([&] {
    std::vector<Tensor> values;
    other_run = (*s1)->Run({{other.c, Tensor::Scalar(7.0f)}}, {other.train}, &values);
  });
  ASSERT_TRUE((*s0)->Run({{chief.c, Tensor::Scalar(5.0f)}}, {chief.train}, &out).ok());
  other_worker.join();
  ASSERT_TRUE(other_run.ok()) << other_run;
  EXPECT_EQ(*(*s0)->global_step(), 2);
  EXPECT_FLOAT_EQ(ReadFloat(s0->get(), chief.w), -8.0f);
  EXPECT_TRUE((*s1)->Close().ok());
  EXPECT_TRUE((*s0)->Close().ok());
}

TEST_F(SyncReplicasTest, ABackupWorkersStaleGradientIsDroppedAndCounted) {
  // One gradient per step out of two workers: the slower one is a backup.
  WorkerGraph chief, backup;
  ASSERT_TRUE(BuildWorker(cluster_->spec(), 0, 1, 2, &chief).ok()) << chief.root.status();
  ASSERT_TRUE(BuildWorker(cluster_->spec(), 1, 1, 2, &backup).ok()) << backup.root.status();
  auto s0 = NewMonitoredTrainingSession(chief.root.graph(), Target(0), Options(&chief, true));
  ASSERT_TRUE(s0.ok()) << s0.status();
  auto s1 = NewMonitoredTrainingSession(backup.root.graph(), Target(1), Options(&backup, false));
  ASSERT_TRUE(s1.ok()) << s1.status();

  std::vector<Tensor> out;
  ASSERT_TRUE((*s0)->Run({{chief.c, Tensor::Scalar(1.0f)}}, {chief.train}, &out).ok());
  EXPECT_EQ(NextToken(s0->get(), chief), 1);
  // The backup's gradient still carries step 0: it is dropped, w stays at -1.
  ASSERT_TRUE((*s1)->Run({{backup.c, Tensor::Scalar(100.0f)}}, {backup.train}, &out).ok());
  ASSERT_TRUE(s0.value()->raw_session()->Run({}, {chief.sync->dropped_gradients()}, {}, &out).ok());
  EXPECT_EQ(out[0].data<int64_t>()[0], 1);
  EXPECT_FLOAT_EQ(ReadFloat(s0->get(), chief.w), -1.0f);
  EXPECT_EQ(*(*s0)->global_step(), 1);
}

TEST_F(SyncReplicasTest, MoreReplicasToAggregateThanWorkersIsNamed) {
  WorkerGraph g;
  Status s = BuildWorker(cluster_->spec(), 0, 3, 2, &g);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("replicas_to_aggregate 3 is above total_num_replicas 2"));
  WorkerGraph zero;
  s = BuildWorker(cluster_->spec(), 0, 0, 2, &zero);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("replicas_to_aggregate is 0"));
}

// Trains worker `task` with c = 1 until the global step reaches `last_step` or a run
// fails; returns the run's status.
Status TrainUntil(MonitoredTrainingSession* session, const WorkerGraph& g) {
  std::vector<Tensor> out;
  while (!session->ShouldStop()) {
    AF_RETURN_IF_ERROR(session->Run({{g.c, Tensor::Scalar(1.0f)}}, {g.train}, &out));
  }
  return session->Close();
}

TEST_F(SyncReplicasTest, AChiefRestartedMidTrainingNeverSetsTheGlobalStepBack) {
  constexpr int64_t kLastStep = 40;
  WorkerGraph first_chief, other;
  ASSERT_TRUE(BuildWorker(cluster_->spec(), 0, 2, 2, &first_chief).ok());
  ASSERT_TRUE(BuildWorker(cluster_->spec(), 1, 2, 2, &other).ok());
  // The non-chief waits in its own thread for the chief, made below, to initialize
  // the model, then trains until the last step.
  Status other_status;
  std::thread other_worker([&] {
    auto session = NewMonitoredTrainingSession(
        other.root.graph(), Target(1),
        Options(&other, false, {StopAtStepHook::AtLastStep(kLastStep)}));
    other_status = session.ok() ? TrainUntil(session->get(), other) : session.status();
  });
  auto chief_session = NewMonitoredTrainingSession(first_chief.root.graph(), Target(0),
                                                   Options(&first_chief, true));
  ASSERT_TRUE(chief_session.ok()) << chief_session.status();

  // The first chief trains until step 10, then its task dies.
  std::vector<Tensor> out;
  int64_t before = 0;
  while (before < 10) {
    Status s = (*chief_session)->Run({{first_chief.c, Tensor::Scalar(1.0f)}}, {first_chief.train}, &out);
    ASSERT_TRUE(s.ok()) << s;
    before = *(*chief_session)->global_step();
  }
  ASSERT_TRUE(cluster_->StopTask("worker", 0).ok());
  chief_session->reset();  // its session ends with its task
  ASSERT_TRUE(cluster_->RestartTask("worker", 0).ok());

  // A new chief process: a new graph over the live ps task.
  WorkerGraph chief;
  ASSERT_TRUE(BuildWorker(cluster_->spec(), 0, 2, 2, &chief).ok());
  auto restarted = NewMonitoredTrainingSession(
      chief.root.graph(), Target(0), Options(&chief, true, {StopAtStepHook::AtLastStep(kLastStep)}));
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  const int64_t after = *(*restarted)->global_step();
  EXPECT_GE(after, before) << "the restarted chief re-initialized the live variables";
  int64_t last = after;
  while (!(*restarted)->ShouldStop()) {
    ASSERT_TRUE((*restarted)->Run({{chief.c, Tensor::Scalar(1.0f)}}, {chief.train}, &out).ok());
    const int64_t now = *(*restarted)->global_step();
    EXPECT_GE(now, last);
    last = now;
  }
  other_worker.join();
  EXPECT_TRUE(other_status.ok()) << other_status;
  EXPECT_GE(last, kLastStep);
  // Training has stopped. Every counted step moved w by exactly -1; the killed
  // chief's last step may have updated w on the ps without counting itself (a step
  // cut short is not atomic, as in TensorFlow). Nothing was reset or applied twice.
  const int64_t final_step = *(*restarted)->global_step();
  const float w = ReadFloat(restarted->get(), chief.w);
  EXPECT_LE(w, -static_cast<float>(final_step));
  EXPECT_GE(w, -static_cast<float>(final_step) - 1.0f);
  EXPECT_TRUE((*restarted)->Close().ok());
}

}  // namespace
}  // namespace actorflow
