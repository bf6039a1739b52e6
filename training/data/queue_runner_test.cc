// Queue runners under a coordinator, on the actor runtime: a stop ends every thread
// within the grace period (even threads waiting on a full queue), the first error is
// reported with the runner that raised it, and OutOfRange ends a pipeline cleanly.

#include "training/data/queue_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

#include "actors/cluster/session_factory.h"
#include "graph/ops.h"
#include "training/data/coordinator.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<Session> Open(const Graph* graph) {
  auto s = NewSession(graph, SessionOptions());
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(s).value() : nullptr;
}

TEST(CoordinatorTest, FirstErrorWinsAndOutOfRangeIsACleanStop) {
  Coordinator coord;
  EXPECT_FALSE(coord.ShouldStop());
  coord.RequestStop(OutOfRange("end of input"), "reader");
  EXPECT_TRUE(coord.ShouldStop());
  coord.RequestStop(Internal("boom"), "runner a");
  coord.RequestStop(Internal("later"), "runner b");
  Status joined = coord.Join(100);
  EXPECT_EQ(joined.code(), Code::kInternal);
  EXPECT_THAT(joined.message(), HasSubstr("runner a")) << joined;
  EXPECT_THAT(joined.message(), HasSubstr("boom")) << joined;
  EXPECT_EQ(coord.error_source(), "runner a");
}

TEST(CoordinatorTest, StopCallbacksRunOnceAndJoinReportsStragglers) {
  Coordinator coord;
  int calls = 0;
  coord.AddStopCallback([&] { ++calls; });
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  coord.StartThread("stubborn", [&] {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return release; });  // ignores the stop until released
  });
  coord.RequestStop();
  coord.RequestStop();
  EXPECT_EQ(calls, 1);
  Status joined = coord.Join(50);
  EXPECT_EQ(joined.code(), Code::kDeadlineExceeded) << joined;
  EXPECT_THAT(joined.message(), HasSubstr("stubborn")) << joined;
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  EXPECT_TRUE(coord.Join(5000).ok());
  EXPECT_EQ(coord.running_threads(), 0);
}

// A producer of 1.0f into a capacity-2 queue: with no consumer its threads end up
// waiting on the full queue.
struct ProducerGraph {
  Scope root = Scope::NewRootScope();
  Queue queue;
  ProducerGraph() {
    queue = FIFOQueue(root.WithOpName("q"), {DType::kFloat32}, {Shape{}}, 2);
    QueueEnqueue(root.WithOpName("enqueue"), queue, {Const(root, 1.f)});
    QueueEnqueue(root.WithOpName("bad_enqueue"), queue, {Const(root, 1)});  // int32
    auto d = QueueDequeue(root.WithOpName("dequeue"), queue);
    QueueClose(root.WithOpName("close"), queue);
    QueueClose(root.WithOpName("cancel"), queue, true);
    EXPECT_TRUE(root.ok()) << root.status();
  }
};

TEST(QueueRunnerTest, CoordinatorStopEndsEveryThreadWithinTheGracePeriod) {
  ProducerGraph g;
  auto session = Open(g.root.graph());
  ASSERT_NE(session, nullptr);
  Coordinator coord;
  QueueRunner runner(QueueRunnerDef{"producer", {"enqueue", "enqueue", "enqueue"}, "close",
                                    "cancel"});
  ASSERT_TRUE(runner.Start(session.get(), &coord).ok());
  // The threads run: an element arrives. Then, unconsumed, they fill the queue and wait.
  ASSERT_TRUE(session->Run({}, {"dequeue"}, {}, nullptr).ok());
  EXPECT_EQ(coord.running_threads(), 4);  // 3 enqueue threads + the closer
  const auto start = std::chrono::steady_clock::now();
  coord.RequestStop();
  constexpr int64_t kGraceMs = 3000;
  Status joined = coord.Join(kGraceMs);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(joined.ok()) << joined;
  EXPECT_EQ(coord.running_threads(), 0);
  EXPECT_LT(elapsed, std::chrono::milliseconds(kGraceMs));
}

TEST(QueueRunnerTest, JoinReportsTheFirstErrorAndTheRunnerThatRaisedIt) {
  ProducerGraph g;
  auto session = Open(g.root.graph());
  ASSERT_NE(session, nullptr);
  Coordinator coord;
  QueueRunner runner(QueueRunnerDef{"typo", {"bad_enqueue"}, "close", "cancel"});
  ASSERT_TRUE(runner.Start(session.get(), &coord).ok());
  Status joined = coord.Join(3000);
  EXPECT_EQ(joined.code(), Code::kInvalidArgument) << joined;
  EXPECT_THAT(joined.message(), HasSubstr("queue runner typo (op bad_enqueue)")) << joined;
  EXPECT_THAT(joined.message(), HasSubstr("component 0")) << joined;
}

TEST(QueueRunnerTest, MaxRunsEndsCleanlyAndClosesTheQueueForItsConsumers) {
  ProducerGraph g;
  auto session = Open(g.root.graph());
  ASSERT_NE(session, nullptr);
  Coordinator coord;
  QueueRunnerDef def{"three", {"enqueue"}, "close", "cancel"};
  def.max_runs = 3;
  ASSERT_TRUE(QueueRunner(def).Start(session.get(), &coord).ok());
  int dequeued = 0;
  Status s;
  while ((s = session->Run({}, {"dequeue"}, {}, nullptr)).ok()) ++dequeued;
  EXPECT_EQ(s.code(), Code::kOutOfRange) << s;
  EXPECT_EQ(dequeued, 3);
  coord.RequestStop(s, "consumer");
  EXPECT_TRUE(coord.Join(3000).ok());
}

TEST(QueueRunnerTest, RunnerWithoutEnqueueOpsIsRejected) {
  Coordinator coord;
  EXPECT_EQ(QueueRunner(QueueRunnerDef{"empty", {}, "", ""}).Start(nullptr, &coord).code(),
            Code::kInvalidArgument);
}

}  // namespace
}  // namespace actorflow
