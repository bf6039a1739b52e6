#include "kernels/queue_state.h"

#include <optional>
#include <set>

#include <gtest/gtest.h>

namespace actorflow {
namespace {

QueueSpec FloatQueue(int64_t capacity, QueueSpec::Kind kind = QueueSpec::Kind::kFifo) {
  QueueSpec spec;
  spec.kind = kind;
  spec.name = "q";
  spec.dtypes = {DType::kFloat32};
  spec.shapes = {Shape{}};
  spec.capacity = capacity;
  return spec;
}

// What a request's callback saw, once it ran.
struct Outcome {
  std::optional<Status> status;
  std::vector<Tensor> components;
  QueueState::EnqueueDone Enqueued() {
    return [this](const Status& s) { status = s; };
  }
  QueueState::DequeueDone Dequeued() {
    return [this](const Status& s, std::vector<Tensor> c) {
      status = s;
      components = std::move(c);
    };
  }
  float Value() const { return components.at(0).data<float>()[0]; }
};

std::vector<Tensor> One(float v) { return {Tensor::Scalar(v)}; }

TEST(QueueStateTest, FifoHandsOutElementsInOrder) {
  QueueState q(FloatQueue(10));
  Outcome e1, e2, d1, d2;
  EXPECT_FALSE(q.Enqueue(1, One(1.f), false, e1.Enqueued()));
  EXPECT_FALSE(q.Enqueue(2, One(2.f), false, e2.Enqueued()));
  EXPECT_TRUE(e1.status->ok());
  EXPECT_EQ(q.size(), 2);
  q.Dequeue(3, -1, d1.Dequeued());
  q.Dequeue(4, -1, d2.Dequeued());
  EXPECT_EQ(d1.Value(), 1.f);
  EXPECT_EQ(d2.Value(), 2.f);
  EXPECT_EQ(q.size(), 0);
}

TEST(QueueStateTest, DequeueOnEmptyQueueWaitsUntilAnEnqueue) {
  QueueState q(FloatQueue(10));
  Outcome d, e;
  EXPECT_TRUE(q.Dequeue(1, -1, d.Dequeued()));
  EXPECT_FALSE(d.status.has_value());
  EXPECT_EQ(q.waiting_dequeues(), 1);
  q.Enqueue(2, One(7.f), false, e.Enqueued());
  ASSERT_TRUE(d.status.has_value());
  EXPECT_TRUE(d.status->ok());
  EXPECT_EQ(d.Value(), 7.f);
  EXPECT_EQ(q.size(), 0);
}

TEST(QueueStateTest, EnqueueOnFullQueueWaitsUntilADequeue) {
  QueueState q(FloatQueue(1));
  Outcome e1, e2, d;
  q.Enqueue(1, One(1.f), false, e1.Enqueued());
  EXPECT_TRUE(q.Enqueue(2, One(2.f), false, e2.Enqueued()));
  EXPECT_FALSE(e2.status.has_value());
  q.Dequeue(3, -1, d.Dequeued());
  EXPECT_EQ(d.Value(), 1.f);
  ASSERT_TRUE(e2.status.has_value());
  EXPECT_TRUE(e2.status->ok());
  EXPECT_EQ(q.size(), 1);
}

TEST(QueueStateTest, CancelledDequeueLeavesTheQueueUsable) {
  // The timeout of one request answers that request only (TensorFlow #5115).
  QueueState q(FloatQueue(4));
  Outcome timed_out, e, d;
  q.Dequeue(1, -1, timed_out.Dequeued());
  EXPECT_TRUE(q.Cancel(1, DeadlineExceeded("100 ms")));
  EXPECT_EQ(timed_out.status->code(), Code::kDeadlineExceeded);
  EXPECT_FALSE(q.Cancel(1, DeadlineExceeded("again")));
  q.Enqueue(2, One(3.f), false, e.Enqueued());
  EXPECT_EQ(q.size(), 1);  // the cancelled request took nothing
  q.Dequeue(3, -1, d.Dequeued());
  EXPECT_TRUE(d.status->ok());
  EXPECT_EQ(d.Value(), 3.f);
}

TEST(QueueStateTest, CancellingTheFirstWaitingDequeueServesTheNext) {
  QueueState q(FloatQueue(4));
  Outcome many, single, e;
  q.Enqueue(1, One(1.f), false, e.Enqueued());
  EXPECT_TRUE(q.Dequeue(2, 3, many.Dequeued()));  // needs 3, holds up the line
  EXPECT_TRUE(q.Dequeue(3, -1, single.Dequeued()));
  q.Cancel(2, Cancelled("step aborted"));
  EXPECT_EQ(many.status->code(), Code::kCancelled);
  ASSERT_TRUE(single.status.has_value());
  EXPECT_EQ(single.Value(), 1.f);
}

TEST(QueueStateTest, CloseFailsLaterEnqueuesAndDrainsThenOutOfRange) {
  QueueState q(FloatQueue(4));
  Outcome e, late, d1, d2;
  q.Enqueue(1, One(1.f), false, e.Enqueued());
  q.Close(false);
  q.Enqueue(2, One(2.f), false, late.Enqueued());
  EXPECT_EQ(late.status->code(), Code::kCancelled);
  q.Dequeue(3, -1, d1.Dequeued());
  EXPECT_EQ(d1.Value(), 1.f);
  q.Dequeue(4, -1, d2.Dequeued());
  EXPECT_EQ(d2.status->code(), Code::kOutOfRange);
}

TEST(QueueStateTest, CloseAnswersWaitingDequeuesWithOutOfRange) {
  QueueState q(FloatQueue(4));
  Outcome d;
  q.Dequeue(1, -1, d.Dequeued());
  q.Close(false);
  ASSERT_TRUE(d.status.has_value());
  EXPECT_EQ(d.status->code(), Code::kOutOfRange);
}

TEST(QueueStateTest, CloseWithCancelPendingEnqueuesCancelsThem) {
  QueueState q(FloatQueue(1));
  Outcome e1, e2;
  q.Enqueue(1, One(1.f), false, e1.Enqueued());
  q.Enqueue(2, One(2.f), false, e2.Enqueued());
  q.Close(true);
  EXPECT_EQ(e2.status->code(), Code::kCancelled);
  EXPECT_EQ(q.size(), 1);
}

TEST(QueueStateTest, CloseWithoutCancelLetsWaitingEnqueuesFinish) {
  QueueState q(FloatQueue(1));
  Outcome e1, e2, d1, d2;
  q.Enqueue(1, One(1.f), false, e1.Enqueued());
  q.Enqueue(2, One(2.f), false, e2.Enqueued());
  q.Close(false);
  EXPECT_FALSE(e2.status.has_value());
  q.Dequeue(3, -1, d1.Dequeued());
  EXPECT_TRUE(e2.status->ok());
  q.Dequeue(4, -1, d2.Dequeued());
  EXPECT_EQ(d2.Value(), 2.f);
}

TEST(QueueStateTest, EnqueueManySplitsAndDequeueManyStacks) {
  QueueState q(FloatQueue(10));
  Outcome e, d;
  q.Enqueue(1, {Tensor::FromVector<float>({1, 2, 3})}, true, e.Enqueued());
  EXPECT_EQ(q.size(), 3);
  q.Dequeue(2, 2, d.Dequeued());
  ASSERT_TRUE(d.status->ok());
  EXPECT_EQ(d.components[0].shape(), (Shape{2}));
  EXPECT_EQ(d.components[0].data<float>()[1], 2.f);
}

TEST(QueueStateTest, EnqueueManyLargerThanCapacityProgressesAsSpaceFrees) {
  QueueState q(FloatQueue(2));
  Outcome e, d1, d2;
  EXPECT_TRUE(q.Enqueue(1, {Tensor::FromVector<float>({1, 2, 3})}, true, e.Enqueued()));
  EXPECT_EQ(q.size(), 2);
  q.Dequeue(2, 2, d1.Dequeued());
  EXPECT_TRUE(e.status->ok());
  q.Dequeue(3, -1, d2.Dequeued());
  EXPECT_EQ(d2.Value(), 3.f);
}

TEST(QueueStateTest, DequeueManyAfterCloseWithTooFewLeftIsOutOfRangeAndKeepsThem) {
  QueueState q(FloatQueue(10));
  Outcome e, d, rest;
  q.Enqueue(1, {Tensor::FromVector<float>({1, 2})}, true, e.Enqueued());
  q.Close(false);
  q.Dequeue(2, 3, d.Dequeued());
  EXPECT_EQ(d.status->code(), Code::kOutOfRange);
  q.Dequeue(3, 2, rest.Dequeued());
  EXPECT_TRUE(rest.status->ok());
}

TEST(QueueStateTest, WrongDtypeOrShapeNamesTheComponent) {
  QueueSpec spec = FloatQueue(4);
  spec.dtypes = {DType::kFloat32, DType::kInt32};
  spec.shapes = {Shape{4}, Shape{}};
  QueueState q(spec);
  Outcome bad_dtype, bad_shape, bad_count;
  q.Enqueue(1, {Tensor(DType::kFloat32, Shape{4}), Tensor::Scalar(1.f)}, false,
            bad_dtype.Enqueued());
  EXPECT_EQ(bad_dtype.status->code(), Code::kInvalidArgument);
  EXPECT_NE(bad_dtype.status->message().find("component 1"), std::string::npos);
  EXPECT_NE(bad_dtype.status->message().find("int32"), std::string::npos);
  q.Enqueue(2, {Tensor(DType::kFloat32, Shape{3}), Tensor::Scalar(1)}, false,
            bad_shape.Enqueued());
  EXPECT_NE(bad_shape.status->message().find("component 0"), std::string::npos);
  EXPECT_NE(bad_shape.status->message().find("[3]"), std::string::npos);
  q.Enqueue(3, {Tensor::Scalar(1)}, false, bad_count.Enqueued());
  EXPECT_EQ(bad_count.status->code(), Code::kInvalidArgument);
  EXPECT_EQ(q.size(), 0);
}

TEST(QueueStateTest, RandomShuffleKeepsMinAfterDequeueUntilClosed) {
  QueueSpec spec = FloatQueue(10, QueueSpec::Kind::kRandomShuffle);
  spec.min_after_dequeue = 2;
  spec.seed = 7;
  QueueState q(spec);
  Outcome e, d, after_close;
  q.Enqueue(1, {Tensor::FromVector<float>({1, 2})}, true, e.Enqueued());
  EXPECT_TRUE(q.Dequeue(2, -1, d.Dequeued()));  // 2 - 1 < min_after_dequeue
  Outcome e2;
  q.Enqueue(3, One(3.f), false, e2.Enqueued());
  ASSERT_TRUE(d.status.has_value());
  EXPECT_EQ(q.size(), 2);
  q.Close(false);
  q.Dequeue(4, 2, after_close.Dequeued());  // closed: min_after_dequeue no longer holds
  EXPECT_TRUE(after_close.status->ok());
}

TEST(QueueStateTest, RandomShuffleHandsOutEveryElementOnceInAMixedOrder) {
  QueueSpec spec = FloatQueue(-1, QueueSpec::Kind::kRandomShuffle);
  spec.seed = 3;
  QueueState q(spec);
  std::vector<float> values(50);
  for (int i = 0; i < 50; ++i) values[i] = static_cast<float>(i);
  Outcome e, d;
  q.Enqueue(1, {Tensor::FromVector(values)}, true, e.Enqueued());
  q.Dequeue(2, 50, d.Dequeued());
  ASSERT_TRUE(d.status->ok());
  std::set<float> seen;
  bool in_order = true;
  for (int i = 0; i < 50; ++i) {
    seen.insert(d.components[0].data<float>()[i]);
    in_order = in_order && d.components[0].data<float>()[i] == static_cast<float>(i);
  }
  EXPECT_EQ(seen.size(), 50u);
  EXPECT_FALSE(in_order);
}

TEST(QueueStateTest, RestorePutsElementsBackAtTheFront) {
  QueueState q(FloatQueue(4));
  Outcome e, waiting;
  q.Enqueue(1, One(2.f), false, e.Enqueued());
  q.Restore(One(1.f), false);
  q.Dequeue(2, -1, waiting.Dequeued());
  EXPECT_EQ(waiting.Value(), 1.f);
  EXPECT_EQ(q.size(), 1);
}

TEST(QueueStateTest, DequeueManyBeyondCapacityIsRejected) {
  QueueState q(FloatQueue(2));
  Outcome d;
  EXPECT_FALSE(q.Dequeue(1, 3, d.Dequeued()));
  EXPECT_EQ(d.status->code(), Code::kInvalidArgument);
}

TEST(QueueStateTest, ValidateSpecNamesTheBadParameter) {
  QueueSpec spec = FloatQueue(0);
  EXPECT_NE(QueueState::ValidateSpec(spec).message().find("capacity 0"), std::string::npos);
  spec = FloatQueue(5, QueueSpec::Kind::kRandomShuffle);
  spec.min_after_dequeue = 5;
  EXPECT_NE(QueueState::ValidateSpec(spec).message().find("min_after_dequeue"),
            std::string::npos);
  spec = FloatQueue(5);
  spec.dtypes.clear();
  EXPECT_FALSE(QueueState::ValidateSpec(spec).ok());
  EXPECT_TRUE(QueueState::ValidateSpec(FloatQueue(-1)).ok());
}

TEST(QueueSpecTest, CheckSameNamesTheDifference) {
  QueueSpec a = FloatQueue(4);
  QueueSpec b = a;
  EXPECT_TRUE(a.CheckSame(b).ok());
  b.capacity = 5;
  EXPECT_NE(a.CheckSame(b).message().find("capacity"), std::string::npos);
}

}  // namespace
}  // namespace actorflow
