// A remote session whose graph grows (TensorFlow's Session::Extend): the server's
// session takes the new nodes and keeps its id, its private resources (a queue
// without a shared name) and the steps other threads have in flight.
// (A graph that does not extend the session's: actors/sim/simulated_cluster_test.cc.)
#include <chrono>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "actors/cluster/local_cluster.h"
#include "actors/cluster/session_factory.h"
#include "graph/ops.h"
#include "graph/scope.h"
#include "graph/status_testing.h"

namespace actorflow {
namespace {

class SessionExtendTest : public testing::Test {
 protected:
  void SetUp() override {
    auto cluster = LocalCluster::Start({{"worker", 1}});
    ASSERT_OK(cluster.status());
    cluster_ = std::move(*cluster);
    auto target = cluster_->Target("worker", 0);
    ASSERT_OK(target.status());
    options_.target = *target;
    options_.default_step_timeout_in_ms = 20000;
  }

  std::unique_ptr<LocalCluster> cluster_;
  SessionOptions options_;
};

TEST_F(SessionExtendTest, NodesAddedLaterRunInTheSameSessionWithItsPrivateQueue) {
  Scope root = Scope::NewRootScope();
  // The session's own queue (no shared name): a second session would get another.
  Queue queue = FIFOQueue(root.WithOpName("q"), {DType::kFloat32}, {Shape{}}, 10);
  auto value = Const(root.WithOpName("value"), 7.0f);
  const Node* enqueue = QueueEnqueue(root.WithOpName("enqueue"), queue, {value});
  auto session = NewSession(root.graph(), options_);
  ASSERT_OK(session.status());
  ASSERT_OK((*session)->Run({}, {}, {enqueue->name()}, nullptr));
  ASSERT_OK((*session)->Run({}, {}, {enqueue->name()}, nullptr));

  // Built after the first steps: the same session runs them, on the same queue.
  Output size = QueueSize(root.WithOpName("size"), queue);
  std::vector<Output> element = QueueDequeue(root.WithOpName("take"), queue);
  std::vector<Tensor> out;
  ASSERT_OK((*session)->Run({}, {size.name()}, {}, &out));
  EXPECT_EQ(out[0].data<int32_t>()[0], 2);
  ASSERT_OK((*session)->Run({}, {element[0].name()}, {}, &out));
  EXPECT_EQ(out[0].data<float>()[0], 7.0f);
}

TEST_F(SessionExtendTest, AStepInFlightOnAnotherThreadSurvivesTheExtension) {
  Scope root = Scope::NewRootScope();
  Queue queue = FIFOQueue(root.WithOpName("q"), {DType::kFloat32}, {Shape{}}, 10);
  std::vector<Output> element = QueueDequeue(root.WithOpName("take"), queue);
  auto session = NewSession(root.graph(), options_);
  ASSERT_OK(session.status());
  Session* s = session->get();
  // Waits in the queue until something is enqueued.
  auto waiting = std::async(std::launch::async, [s, &element] {
    std::vector<Tensor> got;
    Status status = s->Run({}, {element[0].name()}, {}, &got);
    return status.ok() ? StatusOr<float>(got[0].data<float>()[0]) : StatusOr<float>(status);
  });
  // Give the dequeue time to reach the queue; the assertion does not depend on it.
  EXPECT_EQ(waiting.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);

  auto value = Const(root.WithOpName("value"), 3.0f);
  const Node* enqueue = QueueEnqueue(root.WithOpName("enqueue"), queue, {value});
  ASSERT_OK(s->Run({}, {}, {enqueue->name()}, nullptr));
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  StatusOr<float> got = waiting.get();
  ASSERT_OK(got.status());
  EXPECT_EQ(*got, 3.0f);
}

}  // namespace
}  // namespace actorflow
