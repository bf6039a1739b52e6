// The queue actor hosting a ConditionalAccumulator, driven directly by its protocol
// (actors/protocol/queue_protocol.h): takes that wait, time out, are withdrawn or
// are answered Cancelled when the actor stops; arestore putting an aborted step's
// average back, or counting it lost; the other kind's requests refused.

#include "actors/runtime/queue_actor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

namespace actorflow {
namespace {

using ::testing::HasSubstr;

constexpr std::chrono::seconds kDeadline{10};

QueueSpec AccumulatorSpec() {
  QueueSpec spec;
  spec.kind = QueueSpec::Kind::kConditionalAccumulator;
  spec.name = "acc";
  spec.dtypes = {DType::kFloat32};
  spec.shapes = {Shape{}};
  return spec;
}

QueueOp Apply(int64_t local_step, float value) {
  QueueOp op;
  op.kind = QueueOp::Kind::kApplyGradient;
  op.step = local_step;
  op.gradient = Tensor::Scalar(value);
  return op;
}

QueueOp Take(int64_t num_required, int64_t timeout_ms = 0, uint64_t client_id = 0) {
  QueueOp op;
  op.kind = QueueOp::Kind::kTakeGradient;
  op.num_required = num_required;
  op.timeout_ms = timeout_ms;
  op.client_id = client_id;
  return op;
}

QueueOp CountsOp() {
  QueueOp op;
  op.kind = QueueOp::Kind::kAccumulatorCounts;
  return op;
}

class AccumulatorActorTest : public ::testing::Test {
 protected:
  AccumulatorActorTest() : system_(cfg_) {}

  // The reply to `op`, or one with Internal when none came before the deadline.
  QueueReply Ask(caf::scoped_actor& self, const QueueActor& actor, QueueOp op) {
    QueueReply out;
    out.status = Internal("no reply");
    self->request(actor, kDeadline, qop_atom::value, std::move(op))
        .receive([&](QueueReply& r) { out = std::move(r); },
                 [&](caf::error& e) { out.status = Internal(caf::to_string(e)); });
    return out;
  }

  caf::actor_system_config cfg_;
  caf::actor_system system_;
};

TEST_F(AccumulatorActorTest, AnAbortedTakesAverageGoesBackWhileNothingChanged) {
  caf::scoped_actor self{system_};
  QueueActor acc = SpawnQueueActor(system_, AccumulatorSpec(), nullptr);
  ASSERT_TRUE(Ask(self, acc, Apply(0, 1.f)).status.ok());
  ASSERT_TRUE(Ask(self, acc, Apply(0, 5.f)).status.ok());
  QueueReply taken = Ask(self, acc, Take(2));
  ASSERT_TRUE(taken.status.ok()) << taken.status;
  EXPECT_EQ(taken.average.data<float>()[0], 3.f);
  EXPECT_EQ(taken.counts.global_step, 1);
  ASSERT_NE(taken.take_id, 0u);
  // What DeviceQueueClient sends when the answer came after its step was aborted.
  self->send(acc, arestore_atom::value, taken.take_id);
  QueueReply after = Ask(self, acc, CountsOp());
  EXPECT_EQ(after.counts.num_accumulated, 2);
  EXPECT_EQ(after.counts.global_step, 0);
  EXPECT_EQ(after.counts.num_lost, 0);
  QueueReply again = Ask(self, acc, Take(2));
  ASSERT_TRUE(again.status.ok()) << again.status;
  EXPECT_EQ(again.average.data<float>()[0], 3.f);
}

TEST_F(AccumulatorActorTest, AnAbortedTakesAverageIsLostOnceAGradientCameAfterIt) {
  caf::scoped_actor self{system_};
  QueueActor acc = SpawnQueueActor(system_, AccumulatorSpec(), nullptr);
  ASSERT_TRUE(Ask(self, acc, Apply(0, 1.f)).status.ok());
  QueueReply taken = Ask(self, acc, Take(1));
  ASSERT_TRUE(taken.status.ok()) << taken.status;
  ASSERT_TRUE(Ask(self, acc, Apply(1, 2.f)).status.ok());
  self->send(acc, arestore_atom::value, taken.take_id);
  QueueReply after = Ask(self, acc, CountsOp());
  EXPECT_EQ(after.counts.num_lost, 1);
  EXPECT_EQ(after.counts.num_accumulated, 1);
  EXPECT_EQ(after.counts.global_step, 1);
}

TEST_F(AccumulatorActorTest, WaitingTakeTimesOutAloneAndLeavesTheAccumulatorUnchanged) {
  caf::scoped_actor self{system_};
  QueueActor acc = SpawnQueueActor(system_, AccumulatorSpec(), nullptr);
  ASSERT_TRUE(Ask(self, acc, Apply(0, 1.f)).status.ok());
  QueueReply timed_out = Ask(self, acc, Take(2, /*timeout_ms=*/50));
  EXPECT_EQ(timed_out.status.code(), Code::kDeadlineExceeded) << timed_out.status;
  EXPECT_THAT(timed_out.status.message(), HasSubstr("accumulator '/acc'"));
  EXPECT_EQ(timed_out.counts.num_accumulated, 1);
  EXPECT_EQ(timed_out.counts.global_step, 0);
}

TEST_F(AccumulatorActorTest, QcancelWithdrawsTheSendersWaitingTake) {
  caf::scoped_actor self{system_};
  QueueActor acc = SpawnQueueActor(system_, AccumulatorSpec(), nullptr);
  auto pending = self->request(acc, kDeadline, qop_atom::value, Take(1, 0, /*client_id=*/7));
  self->send(acc, qcancel_atom::value, uint64_t{7}, Aborted("step 3 aborted"));
  Status status = Internal("no reply");
  pending.receive([&](QueueReply& r) { status = r.status; },
                  [&](caf::error& e) { status = Internal(caf::to_string(e)); });
  EXPECT_EQ(status.code(), Code::kAborted) << status;
  // The withdrawn take is out of line: the next gradient goes to the next take.
  ASSERT_TRUE(Ask(self, acc, Apply(0, 4.f)).status.ok());
  EXPECT_EQ(Ask(self, acc, CountsOp()).counts.num_accumulated, 1);
}

TEST_F(AccumulatorActorTest, StoppingTheActorAnswersWaitingTakesCancelled) {
  caf::scoped_actor self{system_};
  QueueActor acc = SpawnQueueActor(system_, AccumulatorSpec(), nullptr);
  auto pending = self->request(acc, kDeadline, qop_atom::value, Take(1));
  // A request from the same sender is handled first: the take waits by then.
  EXPECT_EQ(Ask(self, acc, CountsOp()).counts.num_accumulated, 0);
  self->send_exit(acc, caf::exit_reason::user_shutdown);
  Status status = Internal("no reply");
  pending.receive([&](QueueReply& r) { status = r.status; },
                  [&](caf::error& e) { status = Internal(caf::to_string(e)); });
  EXPECT_EQ(status.code(), Code::kCancelled) << status;
  EXPECT_THAT(status.message(), HasSubstr("accumulator '/acc' was stopped"));
}

TEST_F(AccumulatorActorTest, QueueAndAccumulatorRefuseEachOthersRequests) {
  caf::scoped_actor self{system_};
  QueueActor acc = SpawnQueueActor(system_, AccumulatorSpec(), nullptr);
  QueueOp dequeue;
  dequeue.kind = QueueOp::Kind::kDequeue;
  QueueReply refused = Ask(self, acc, dequeue);
  EXPECT_EQ(refused.status.code(), Code::kInvalidArgument);
  EXPECT_THAT(refused.status.message(), HasSubstr("not a queue"));

  QueueSpec fifo;
  fifo.name = "q";
  fifo.dtypes = {DType::kFloat32};
  QueueActor queue = SpawnQueueActor(system_, fifo, nullptr);
  QueueReply also_refused = Ask(self, queue, Take(1));
  EXPECT_EQ(also_refused.status.code(), Code::kInvalidArgument);
  EXPECT_THAT(also_refused.status.message(), HasSubstr("not a ConditionalAccumulator"));
  // Its kCheck names the kind that differs.
  QueueOp check;
  check.kind = QueueOp::Kind::kCheck;
  check.spec = AccumulatorSpec();
  check.spec.name = "q";
  EXPECT_THAT(Ask(self, queue, check).status.message(), HasSubstr("its kind"));
}

}  // namespace
}  // namespace actorflow
