// Queues in the actor runtime: in one process (ActorSession) and across processes
// (LocalCluster: servers over loopback, the queue on the ps task, used from a
// worker's master). The central property: a timed-out request is answered alone and
// the queue stays usable (unlike TensorFlow #5115).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>

#include "actors/cluster/local_cluster.h"
#include "actors/runtime/local_session.h"
#include "actors/cluster/session_factory.h"
#include "graph/ops.h"
#include "graph/scope.h"

namespace actorflow {
namespace {


// A float32 [] queue "q" of capacity 2, with enqueue of a fed value and dequeues with
// and without a 100 ms timeout, on `device` ("" = default); the session's own queue
// unless `shared_name` is given.
struct QueueGraph {
  Scope root = Scope::NewRootScope();
  Queue queue;
  explicit QueueGraph(const std::string& device = "", int64_t capacity = 2,
                      const std::string& shared_name = "") {
    Scope on = device.empty() ? root : root.WithDevice(device);
    queue = FIFOQueue(on.WithOpName("q"), {DType::kFloat32}, {Shape{}}, capacity, shared_name);
    Scope client = device.empty() ? root : root.WithDevice("/job:worker/task:0");
    auto x = Placeholder(client.WithOpName("x"), DType::kFloat32, Shape{});
    QueueEnqueue(root.WithOpName("enqueue"), queue, {x});
    QueueEnqueue(root.WithOpName("enqueue_100ms"), queue, {x}, /*timeout_ms=*/100);
    auto d = QueueDequeue(root.WithOpName("dequeue"), queue);
    auto d100 = QueueDequeue(root.WithOpName("dequeue_100ms"), queue, /*timeout_ms=*/100);
    Identity(client.WithOpName("value"), d[0]);
    Identity(client.WithOpName("value_100ms"), d100[0]);
    QueueSize(root.WithOpName("size"), queue);
    QueueClose(root.WithOpName("close"), queue);
    EXPECT_TRUE(root.ok()) << root.status();
  }
  const Graph* graph() const { return root.graph(); }
};

Status Enqueue(Session* s, float v, const std::string& op = "enqueue") {
  return s->Run({{"x", Tensor::Scalar(v)}}, {}, {op}, nullptr);
}

StatusOr<float> Dequeue(Session* s, const std::string& fetch = "value", RunOptions options = {}) {
  std::vector<Tensor> out;
  AF_RETURN_IF_ERROR(s->Run(options, {}, {fetch}, {}, &out, nullptr));
  return out[0].data<float>()[0];
}

int32_t Size(Session* s) {
  std::vector<Tensor> out;
  Status st = s->Run({}, {"size"}, {}, &out);
  EXPECT_TRUE(st.ok()) << st;
  return st.ok() ? out[0].data<int32_t>()[0] : -1;
}

std::unique_ptr<Session> Local(const Graph* g, int64_t operation_timeout_ms = 0) {
  SessionOptions options;
  options.operation_timeout_in_ms = operation_timeout_ms;
  auto s = NewSession(g, options);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(s).value() : nullptr;
}

// The Done-when check, for a session on any target.
void ExpectTimedOutDequeueLeavesQueueUsable(Session* s) {
  StatusOr<float> timed_out = Dequeue(s, "value_100ms");
  ASSERT_EQ(timed_out.status().code(), Code::kDeadlineExceeded) << timed_out.status();
  EXPECT_THAT(timed_out.status().message(), ::testing::HasSubstr("100 ms")) << timed_out.status();
  ASSERT_TRUE(Enqueue(s, 4.f).ok());
  StatusOr<float> v = Dequeue(s, "value_100ms");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, 4.f);
  EXPECT_EQ(Size(s), 0);
}

TEST(QueueActorTest, DequeueTimeoutOnEmptyQueueLeavesItUsableInProcess) {
  QueueGraph g;
  auto s = Local(g.graph());
  ASSERT_NE(s, nullptr);
  ExpectTimedOutDequeueLeavesQueueUsable(s.get());
}

TEST(QueueActorTest, SessionOperationTimeoutAppliesToQueueOps) {
  QueueGraph g;
  auto s = Local(g.graph(), /*operation_timeout_ms=*/100);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(Dequeue(s.get()).status().code(), Code::kDeadlineExceeded);
  ASSERT_TRUE(Enqueue(s.get(), 1.f).ok());
  EXPECT_EQ(*Dequeue(s.get()), 1.f);
}

TEST(QueueActorTest, RunDeadlineWithdrawsTheWaitingDequeueAndKeepsTheQueue) {
  QueueGraph g;
  auto s = Local(g.graph());
  ASSERT_NE(s, nullptr);
  RunOptions deadline;
  deadline.timeout_in_ms = 100;
  EXPECT_EQ(Dequeue(s.get(), "value", deadline).status().code(), Code::kDeadlineExceeded);
  // The withdrawn request took nothing: the next element goes to the next dequeue.
  ASSERT_TRUE(Enqueue(s.get(), 2.f).ok());
  EXPECT_EQ(Size(s.get()), 1);
  EXPECT_EQ(*Dequeue(s.get(), "value", deadline), 2.f);
}

TEST(QueueActorTest, RunDeadlineWithdrawsTheWaitingEnqueueSoItsElementNeverGoesIn) {
  QueueGraph g("", /*capacity=*/1);
  auto s = Local(g.graph());
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(Enqueue(s.get(), 1.f).ok());
  RunOptions deadline;
  deadline.timeout_in_ms = 100;
  Status aborted = s->Run(deadline, {{"x", Tensor::Scalar(2.f)}}, {}, {"enqueue"}, nullptr,
                          nullptr);
  EXPECT_EQ(aborted.code(), Code::kDeadlineExceeded) << aborted;
  EXPECT_EQ(*Dequeue(s.get()), 1.f);
  // Had the aborted enqueue stayed in line, the space just freed would take its 2.
  EXPECT_EQ(Size(s.get()), 0);
}

TEST(QueueActorTest, EnqueueTimeoutOnFullQueueLeavesItUsable) {
  QueueGraph g("", /*capacity=*/1);
  auto s = Local(g.graph());
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(Enqueue(s.get(), 1.f).ok());
  EXPECT_EQ(Enqueue(s.get(), 2.f, "enqueue_100ms").code(), Code::kDeadlineExceeded);
  EXPECT_EQ(*Dequeue(s.get()), 1.f);
  ASSERT_TRUE(Enqueue(s.get(), 3.f, "enqueue_100ms").ok());
  EXPECT_EQ(*Dequeue(s.get()), 3.f);
}

TEST(QueueActorTest, WaitingDequeueIsServedByALaterEnqueue) {
  QueueGraph g;
  auto s = Local(g.graph());
  ASSERT_NE(s, nullptr);
  auto consumer = std::async(std::launch::async, [&] { return Dequeue(s.get()); });
  ASSERT_TRUE(Enqueue(s.get(), 5.f).ok());
  StatusOr<float> v = consumer.get();
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, 5.f);
}

TEST(QueueActorTest, ClosedQueueDrainsThenAnswersOutOfRange) {
  QueueGraph g;
  auto s = Local(g.graph());
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(Enqueue(s.get(), 1.f).ok());
  ASSERT_TRUE(s->Run({}, {}, {"close"}, nullptr).ok());
  EXPECT_EQ(Enqueue(s.get(), 2.f).code(), Code::kCancelled);
  EXPECT_EQ(*Dequeue(s.get()), 1.f);
  Status empty = Dequeue(s.get()).status();
  EXPECT_EQ(empty.code(), Code::kOutOfRange) << empty;
  EXPECT_THAT(empty.message(), ::testing::HasSubstr("closed")) << empty;
}

TEST(QueueActorTest, CloseAnswersAWaitingDequeueWithOutOfRange) {
  QueueGraph g;
  auto s = Local(g.graph());
  ASSERT_NE(s, nullptr);
  auto consumer = std::async(std::launch::async, [&] { return Dequeue(s.get()).status(); });
  // The close may come before the dequeue reaches the queue; both end OutOfRange.
  ASSERT_TRUE(s->Run({}, {}, {"close"}, nullptr).ok());
  EXPECT_EQ(consumer.get().code(), Code::kOutOfRange);
}

TEST(QueueActorTest, EnqueueOfTheWrongDtypeNamesTheComponent) {
  Scope root = Scope::NewRootScope();
  Queue q = FIFOQueue(root.WithOpName("q"), {DType::kFloat32, DType::kInt32}, {Shape{}, Shape{}}, 4);
  QueueEnqueue(root.WithOpName("bad"), q, {Const(root, 1.f), Const(root, 2.f)});
  ASSERT_TRUE(root.ok()) << root.status();
  auto s = Local(root.graph());
  ASSERT_NE(s, nullptr);
  Status bad = s->Run({}, {}, {"bad"}, nullptr);
  EXPECT_EQ(bad.code(), Code::kInvalidArgument) << bad;
  EXPECT_THAT(bad.message(), ::testing::HasSubstr("component 1")) << bad;
  EXPECT_THAT(bad.message(), ::testing::HasSubstr("'bad'")) << bad;
}

TEST(QueueActorTest, OpOnAnUnknownQueueNameIsNotFound) {
  // A dequeue whose queue node never ran in this task (a hand-written graph).
  NodeDef dequeue;
  dequeue.name = "orphan";
  dequeue.op = "QueueDequeue";
  dequeue.attrs["shared_name"] = std::string("nowhere");
  dequeue.attrs["component_types"] = std::vector<std::string>{"float32"};
  auto graph = Graph::FromNodeDefs({dequeue});
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto s = Local(graph->get());
  ASSERT_NE(s, nullptr);
  Status missing = s->Run({}, {"orphan"}, {}, nullptr);
  EXPECT_EQ(missing.code(), Code::kNotFound) << missing;
  EXPECT_THAT(missing.message(), ::testing::HasSubstr("nowhere")) << missing;
}

TEST(QueueActorTest, SharedNameReusedWithOtherParametersIsRejected) {
  Scope root = Scope::NewRootScope();
  Queue a = FIFOQueue(root.WithOpName("a"), {DType::kFloat32}, {}, 4, "shared");
  Queue b = FIFOQueue(root.WithOpName("b"), {DType::kFloat32}, {}, 8, "shared");
  QueueSize(root.WithOpName("size_a"), a);
  QueueSize(root.WithOpName("size_b"), b);
  auto s = Local(root.graph());
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(s->Run({}, {"size_a"}, {}, nullptr).ok());
  Status clash = s->Run({}, {"size_b"}, {}, nullptr);
  EXPECT_EQ(clash.code(), Code::kInvalidArgument) << clash;
  EXPECT_THAT(clash.message(), ::testing::HasSubstr("capacity")) << clash;
}

TEST(QueueActorTest, DirectSessionHasNoQueues) {
  QueueGraph g;
  SessionOptions options;
  options.target = "direct";
  auto s = NewSession(g.graph(), options);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->Run({}, {"size"}, {}, nullptr).code(), Code::kFailedPrecondition);
}

TEST(QueueActorTest, QueueOnPsTaskWorksAcrossProcesses) {
  auto cluster = LocalCluster::Start({{"ps", 1}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  QueueGraph g("/job:ps/task:0");
  SessionOptions options;
  options.target = *(*cluster)->Target("worker", 0);
  auto s = NewSession(g.graph(), options);
  ASSERT_TRUE(s.ok()) << s.status();
  ExpectTimedOutDequeueLeavesQueueUsable(s->get());
  // The run deadline across processes: the ps device withdraws the request.
  RunOptions deadline;
  deadline.timeout_in_ms = 100;
  EXPECT_EQ(Dequeue(s->get(), "value", deadline).status().code(), Code::kDeadlineExceeded);
  ASSERT_TRUE(Enqueue(s->get(), 6.f).ok());
  EXPECT_EQ(*Dequeue(s->get()), 6.f);
}

TEST(QueueActorTest, TwoClientsShareAQueueByName) {
  auto cluster = LocalCluster::Start({{"ps", 1}, {"worker", 2}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  QueueGraph producer_graph("/job:ps/task:0", 2, "shared_q");
  QueueGraph consumer_graph("/job:ps/task:0", 2, "shared_q");
  SessionOptions p, c;
  p.target = *(*cluster)->Target("worker", 0);
  c.target = *(*cluster)->Target("worker", 1);
  auto producer = NewSession(producer_graph.graph(), p);
  auto consumer = NewSession(consumer_graph.graph(), c);
  ASSERT_TRUE(producer.ok() && consumer.ok());
  ASSERT_TRUE(Enqueue(producer->get(), 7.f).ok());
  StatusOr<float> v = Dequeue(consumer->get());
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, 7.f);
}

// Without a shared_name each session has its own queue (TensorFlow 1): another
// client's queue node of the same name on the same task neither sees nor takes this
// one's elements, and a session's queue goes when the session does.
TEST(QueueActorTest, QueuesWithoutASharedNameArePrivateToTheirSession) {
  auto cluster = LocalCluster::Start({{"ps", 1}, {"worker", 2}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  QueueGraph first_graph("/job:ps/task:0");
  QueueGraph second_graph("/job:ps/task:0");
  SessionOptions a, b;
  a.target = *(*cluster)->Target("worker", 0);
  b.target = *(*cluster)->Target("worker", 1);
  auto first = NewSession(first_graph.graph(), a);
  auto second = NewSession(second_graph.graph(), b);
  ASSERT_TRUE(first.ok() && second.ok());
  ASSERT_TRUE(Enqueue(first->get(), 7.f).ok());
  EXPECT_EQ(Size(first->get()), 1);
  EXPECT_EQ(Size(second->get()), 0) << "the second client sees the first one's queue";
  StatusOr<float> none = Dequeue(second->get(), "value_100ms");
  EXPECT_EQ(none.status().code(), Code::kDeadlineExceeded) << none.status();
  ASSERT_TRUE(Enqueue(second->get(), 8.f).ok());
  StatusOr<float> mine = Dequeue(first->get());
  ASSERT_TRUE(mine.ok()) << mine.status();
  EXPECT_EQ(*mine, 7.f);
  ASSERT_TRUE(Enqueue(first->get(), 9.f).ok());
  ASSERT_TRUE((*first)->Close().ok());
  first->reset();
  auto again = NewSession(first_graph.graph(), a);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(Size(again->get()), 0) << "a closed session's queue outlived it";
  StatusOr<float> theirs = Dequeue(second->get());
  ASSERT_TRUE(theirs.ok()) << theirs.status();
  EXPECT_EQ(*theirs, 8.f);
}

TEST(QueueActorTest, ClientsWithDifferentGraphsShareThePsDevice) {
  // Each client's master numbers its steps and partitions; on the shared ps device
  // the two clients' step and partition ids must not be taken for one another.
  auto cluster = LocalCluster::Start({{"ps", 1}, {"worker", 2}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto build = [](Scope& root) {
    return FIFOQueue(root.WithDevice("/job:ps/task:0").WithOpName("q"),
                     {DType::kInt32, DType::kInt64}, {Shape{}, Shape{}}, 4, "pairs");
  };
  Scope producer_root = Scope::NewRootScope();
  Queue pq = build(producer_root);
  auto a = Placeholder(producer_root.WithOpName("a"), DType::kInt32, Shape{});
  auto b = Placeholder(producer_root.WithOpName("b"), DType::kInt64, Shape{});
  QueueEnqueue(producer_root.WithOpName("push"), pq, {a, b});
  Scope consumer_root = Scope::NewRootScope();
  Queue cq = build(consumer_root);
  auto pair = QueueDequeue(consumer_root.WithOpName("pop"), cq);
  Add(consumer_root.WithOpName("sum"), Cast(consumer_root, pair[0], DType::kInt64), pair[1]);
  ASSERT_TRUE(producer_root.ok() && consumer_root.ok());
  SessionOptions p, c;
  p.target = *(*cluster)->Target("worker", 0);
  c.target = *(*cluster)->Target("worker", 1);
  auto producer = NewSession(producer_root.graph(), p);
  auto consumer = NewSession(consumer_root.graph(), c);
  ASSERT_TRUE(producer.ok() && consumer.ok());
  auto popped = std::async(std::launch::async, [&] {
    std::vector<Tensor> out;
    Status s = (*consumer)->Run({}, {"sum"}, {}, &out);
    return s.ok() ? out[0].data<int64_t>()[0] : int64_t{-1};
  });
  Status pushed = (*producer)->Run({{"a", Tensor::Scalar(int32_t{1})}, {"b", Tensor::Scalar(int64_t{2})}},
                                   {}, {"push"}, nullptr);
  EXPECT_TRUE(pushed.ok()) << pushed;
  EXPECT_EQ(popped.get(), 3);
}

}  // namespace
}  // namespace actorflow
