#include "kernels/accumulator_state.h"

#include <optional>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace actorflow {
namespace {

using ::testing::HasSubstr;

QueueSpec Spec(const Shape& shape, DType dtype = DType::kFloat32, const std::string& name = "acc") {
  QueueSpec spec;
  spec.kind = QueueSpec::Kind::kConditionalAccumulator;
  spec.name = name;
  spec.dtypes = {dtype};
  spec.shapes = {shape};
  return spec;
}

Tensor Grad(std::vector<float> values) { return Tensor::FromVector(values); }

// What a take's callback saw, once it ran.
struct Take {
  std::optional<Status> status;
  Tensor average;
  uint64_t take_id = 0;
  AccumulatorState::TakeDone Done() {
    return [this](const Status& s, Tensor a, uint64_t id) {
      status = s;
      average = std::move(a);
      take_id = id;
    };
  }
  bool answered() const { return status.has_value(); }
  std::vector<float> Values() const {
    return std::vector<float>(average.data<float>(), average.data<float>() + average.NumElements());
  }
};

TEST(AccumulatorStateTest, TakeReturnsTheAverageResetsTheSumAndAdvancesTheGlobalStep) {
  AccumulatorState acc(Spec(Shape{2}));
  ASSERT_TRUE(acc.ApplyGradient(0, Grad({1.f, 2.f})).ok());
  ASSERT_TRUE(acc.ApplyGradient(0, Grad({3.f, 6.f})).ok());
  EXPECT_EQ(acc.num_accumulated(), 2);
  Take t;
  EXPECT_FALSE(acc.TakeGradient(1, 2, t.Done()));
  ASSERT_TRUE(t.answered());
  ASSERT_TRUE(t.status->ok()) << *t.status;
  EXPECT_EQ(t.average.dtype(), DType::kFloat32);
  EXPECT_EQ(t.average.shape(), Shape{2});
  EXPECT_THAT(t.Values(), ::testing::ElementsAre(2.f, 4.f));
  EXPECT_EQ(acc.num_accumulated(), 0);
  EXPECT_EQ(acc.global_step(), 1);
  // The next round starts from zero: one gradient is its own average.
  ASSERT_TRUE(acc.ApplyGradient(1, Grad({5.f, 5.f})).ok());
  Take next;
  acc.TakeGradient(2, 1, next.Done());
  EXPECT_THAT(next.Values(), ::testing::ElementsAre(5.f, 5.f));
  EXPECT_EQ(acc.global_step(), 2);
}

TEST(AccumulatorStateTest, TakeMayAskForFewerThanAccumulatedAndAveragesAllOfThem) {
  AccumulatorState acc(Spec(Shape{}));
  for (float v : {1.f, 2.f, 6.f}) ASSERT_TRUE(acc.ApplyGradient(0, Tensor::Scalar(v)).ok());
  Take t;
  acc.TakeGradient(1, 2, t.Done());
  EXPECT_EQ(t.average.data<float>()[0], 3.f);
  EXPECT_EQ(acc.num_accumulated(), 0);
}

TEST(AccumulatorStateTest, StaleGradientIsDroppedAndCountedNotAnError) {
  AccumulatorState acc(Spec(Shape{2}));
  acc.SetGlobalStep(3);
  bool dropped = false;
  Status s = acc.ApplyGradient(2, Grad({1.f, 1.f}), &dropped);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_TRUE(dropped);
  EXPECT_EQ(acc.num_dropped(), 1);
  EXPECT_EQ(acc.num_accumulated(), 0);
  // local_step == global_step is current; so is a later one.
  ASSERT_TRUE(acc.ApplyGradient(3, Grad({2.f, 2.f}), &dropped).ok());
  EXPECT_FALSE(dropped);
  ASSERT_TRUE(acc.ApplyGradient(7, Grad({4.f, 4.f}), &dropped).ok());
  EXPECT_FALSE(dropped);
  EXPECT_EQ(acc.num_accumulated(), 2);
  EXPECT_EQ(acc.num_dropped(), 1);
}

TEST(AccumulatorStateTest, AGradientOfTheStepBeforeATakeIsStaleAfterIt) {
  AccumulatorState acc(Spec(Shape{}));
  ASSERT_TRUE(acc.ApplyGradient(0, Tensor::Scalar(1.f)).ok());
  Take t;
  acc.TakeGradient(1, 1, t.Done());
  ASSERT_TRUE(t.status->ok());
  bool dropped = false;
  ASSERT_TRUE(acc.ApplyGradient(0, Tensor::Scalar(100.f), &dropped).ok());
  EXPECT_TRUE(dropped);
  EXPECT_EQ(acc.num_dropped(), 1);
  EXPECT_EQ(acc.num_accumulated(), 0);
}

TEST(AccumulatorStateTest, WaitingTakeIsServedWhenEnoughGradientsArrive) {
  AccumulatorState acc(Spec(Shape{1}));
  Take t;
  EXPECT_TRUE(acc.TakeGradient(1, 2, t.Done()));
  EXPECT_EQ(acc.waiting_takes(), 1);
  ASSERT_TRUE(acc.ApplyGradient(0, Grad({1.f})).ok());
  EXPECT_FALSE(t.answered()) << "served with 1 of the 2 gradients required";
  ASSERT_TRUE(acc.ApplyGradient(0, Grad({3.f})).ok());
  ASSERT_TRUE(t.answered());
  ASSERT_TRUE(t.status->ok()) << *t.status;
  EXPECT_THAT(t.Values(), ::testing::ElementsAre(2.f));
  EXPECT_EQ(acc.waiting_takes(), 0);
  EXPECT_EQ(acc.global_step(), 1);
}

TEST(AccumulatorStateTest, WaitingTakesAreServedInArrivalOrder) {
  AccumulatorState acc(Spec(Shape{}));
  Take first, second;
  EXPECT_TRUE(acc.TakeGradient(1, 2, first.Done()));
  EXPECT_TRUE(acc.TakeGradient(2, 1, second.Done()));
  ASSERT_TRUE(acc.ApplyGradient(0, Tensor::Scalar(1.f)).ok());
  // One gradient would do for the second, but the first is in line before it.
  EXPECT_FALSE(first.answered());
  EXPECT_FALSE(second.answered());
  ASSERT_TRUE(acc.ApplyGradient(0, Tensor::Scalar(3.f)).ok());
  ASSERT_TRUE(first.answered());
  EXPECT_EQ(first.average.data<float>()[0], 2.f);
  EXPECT_FALSE(second.answered());
  EXPECT_EQ(acc.global_step(), 1);
  ASSERT_TRUE(acc.ApplyGradient(1, Tensor::Scalar(8.f)).ok());
  ASSERT_TRUE(second.answered());
  EXPECT_EQ(second.average.data<float>()[0], 8.f);
  EXPECT_EQ(acc.global_step(), 2);
}

TEST(AccumulatorStateTest, CancelAnswersTheTakeAndLeavesTheAccumulatorUnchanged) {
  AccumulatorState acc(Spec(Shape{}));
  ASSERT_TRUE(acc.ApplyGradient(0, Tensor::Scalar(1.f)).ok());
  Take t;
  EXPECT_TRUE(acc.TakeGradient(7, 2, t.Done()));
  EXPECT_TRUE(acc.Cancel(7, DeadlineExceeded("timed out")));
  ASSERT_TRUE(t.answered());
  EXPECT_EQ(t.status->code(), Code::kDeadlineExceeded);
  EXPECT_FALSE(t.average.IsInitialized());
  EXPECT_EQ(acc.num_accumulated(), 1);
  EXPECT_EQ(acc.global_step(), 0);
  EXPECT_EQ(acc.waiting_takes(), 0);
  EXPECT_FALSE(acc.Cancel(7, Cancelled("again"))) << "an answered take is not waiting";
  // Nothing was lost: the next take sees the gradient applied before.
  ASSERT_TRUE(acc.ApplyGradient(0, Tensor::Scalar(3.f)).ok());
  Take next;
  acc.TakeGradient(8, 2, next.Done());
  EXPECT_EQ(next.average.data<float>()[0], 2.f);
}

TEST(AccumulatorStateTest, CancellingTheFirstTakeLetsTheNextOneBeServed) {
  AccumulatorState acc(Spec(Shape{}));
  Take first, second;
  acc.TakeGradient(1, 3, first.Done());
  acc.TakeGradient(2, 1, second.Done());
  ASSERT_TRUE(acc.ApplyGradient(0, Tensor::Scalar(4.f)).ok());
  EXPECT_FALSE(second.answered());
  acc.Cancel(1, Aborted("step aborted"));
  EXPECT_EQ(first.status->code(), Code::kAborted);
  ASSERT_TRUE(second.answered());
  EXPECT_EQ(second.average.data<float>()[0], 4.f);
}

TEST(AccumulatorStateTest, CancelAllAnswersEveryWaitingTake) {
  AccumulatorState acc(Spec(Shape{}));
  Take a, b;
  acc.TakeGradient(1, 1, a.Done());
  acc.TakeGradient(2, 5, b.Done());
  acc.CancelAll(Cancelled("accumulator stopped"));
  ASSERT_TRUE(a.answered() && b.answered());
  EXPECT_EQ(a.status->code(), Code::kCancelled);
  EXPECT_EQ(b.status->code(), Code::kCancelled);
  EXPECT_EQ(acc.waiting_takes(), 0);
}

TEST(AccumulatorStateTest, GradientOfAnotherDtypeIsInvalidArgumentNamingTheAccumulator) {
  AccumulatorState acc(Spec(Shape{2}, DType::kFloat32, "grads"));
  Status s = acc.ApplyGradient(0, Tensor::FromVector(std::vector<double>{1, 2}));
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("accumulator '/grads'"));
  EXPECT_THAT(s.message(), HasSubstr("float64"));
  EXPECT_EQ(acc.num_accumulated(), 0);
}

TEST(AccumulatorStateTest, GradientOfAnIncompatibleShapeIsInvalidArgument) {
  AccumulatorState acc(Spec(Shape{2}, DType::kFloat32, "grads"));
  Status s = acc.ApplyGradient(0, Grad({1.f, 2.f, 3.f}));
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("accumulator '/grads'"));
  EXPECT_THAT(s.message(), HasSubstr("[3]"));
  // A rejected gradient is neither applied nor counted as dropped, even a stale one.
  acc.SetGlobalStep(5);
  EXPECT_EQ(acc.ApplyGradient(0, Grad({1.f, 2.f, 3.f})).code(), Code::kInvalidArgument);
  EXPECT_EQ(acc.num_dropped(), 0);
  EXPECT_EQ(acc.num_accumulated(), 0);
}

TEST(AccumulatorStateTest, TheFirstGradientFixesUnknownDims) {
  AccumulatorState acc(Spec(Shape{-1, 2}));
  ASSERT_TRUE(acc.ApplyGradient(0, Tensor(DType::kFloat32, Shape{3, 2})).ok());
  EXPECT_EQ(acc.shape(), (Shape{3, 2}));
  Status s = acc.ApplyGradient(0, Tensor(DType::kFloat32, Shape{4, 2}));
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("[3,2]"));
  // Still fixed after a take: every round's gradients have one shape.
  Take t;
  acc.TakeGradient(1, 1, t.Done());
  EXPECT_EQ(t.average.shape(), (Shape{3, 2}));
  EXPECT_EQ(acc.ApplyGradient(1, Tensor(DType::kFloat32, Shape{4, 2})).code(),
            Code::kInvalidArgument);
}

TEST(AccumulatorStateTest, AnAccumulatorOfUnknownRankTakesTheFirstGradientsShape) {
  AccumulatorState acc(Spec(Shape::UnknownRank()));
  ASSERT_TRUE(acc.ApplyGradient(0, Tensor(DType::kFloat32, Shape{2, 2})).ok());
  EXPECT_EQ(acc.ApplyGradient(0, Tensor(DType::kFloat32, Shape{4})).code(),
            Code::kInvalidArgument);
}

TEST(AccumulatorStateTest, NumRequiredBelowOneIsInvalidArgument) {
  AccumulatorState acc(Spec(Shape{}));
  Take t;
  EXPECT_FALSE(acc.TakeGradient(1, 0, t.Done()));
  ASSERT_TRUE(t.answered());
  EXPECT_EQ(t.status->code(), Code::kInvalidArgument);
  EXPECT_THAT(t.status->message(), HasSubstr("num_required"));
  EXPECT_EQ(acc.waiting_takes(), 0);
  EXPECT_EQ(acc.global_step(), 0);
}

TEST(AccumulatorStateTest, SetGlobalStepMayLowerTheStep) {
  AccumulatorState acc(Spec(Shape{}));
  acc.SetGlobalStep(10);
  EXPECT_EQ(acc.global_step(), 10);
  bool dropped = false;
  ASSERT_TRUE(acc.ApplyGradient(5, Tensor::Scalar(1.f), &dropped).ok());
  EXPECT_TRUE(dropped);
  acc.SetGlobalStep(4);
  EXPECT_EQ(acc.global_step(), 4);
  ASSERT_TRUE(acc.ApplyGradient(5, Tensor::Scalar(1.f), &dropped).ok());
  EXPECT_FALSE(dropped);
  EXPECT_EQ(acc.num_accumulated(), 1);
  EXPECT_EQ(acc.counts().num_dropped, 1);
}

TEST(AccumulatorStateTest, Float64AveragesInFloat64) {
  AccumulatorState acc(Spec(Shape{}, DType::kFloat64));
  ASSERT_TRUE(acc.ApplyGradient(0, Tensor::Scalar(1.0)).ok());
  ASSERT_TRUE(acc.ApplyGradient(0, Tensor::Scalar(1e-12)).ok());
  Take t;
  acc.TakeGradient(1, 2, t.Done());
  ASSERT_EQ(t.average.dtype(), DType::kFloat64);
  EXPECT_DOUBLE_EQ(t.average.data<double>()[0], (1.0 + 1e-12) / 2);
}

TEST(AccumulatorStateTest, TheAppliedGradientIsCopiedNotWrittenInto) {
  AccumulatorState acc(Spec(Shape{1}));
  Tensor g = Grad({1.f});
  ASSERT_TRUE(acc.ApplyGradient(0, g).ok());
  ASSERT_TRUE(acc.ApplyGradient(0, Grad({2.f})).ok());
  EXPECT_EQ(g.data<float>()[0], 1.f);
}

TEST(AccumulatorStateTest, RestoredTakeIsAsIfItNeverHappened) {
  AccumulatorState acc(Spec(Shape{}));
  ASSERT_TRUE(acc.ApplyGradient(0, Tensor::Scalar(1.f)).ok());
  ASSERT_TRUE(acc.ApplyGradient(0, Tensor::Scalar(5.f)).ok());
  Take t;
  acc.TakeGradient(1, 2, t.Done());
  ASSERT_NE(t.take_id, 0u);
  EXPECT_TRUE(acc.RestoreTake(t.take_id));
  EXPECT_EQ(acc.num_accumulated(), 2);
  EXPECT_EQ(acc.global_step(), 0);
  EXPECT_EQ(acc.num_lost(), 0);
  Take again;
  acc.TakeGradient(2, 2, again.Done());
  EXPECT_EQ(again.average.data<float>()[0], 3.f);
  EXPECT_EQ(acc.global_step(), 1);
}

TEST(AccumulatorStateTest, RestoredTakeServesATakeWaitingSince) {
  AccumulatorState acc(Spec(Shape{}));
  ASSERT_TRUE(acc.ApplyGradient(0, Tensor::Scalar(2.f)).ok());
  Take aborted, waiting;
  acc.TakeGradient(1, 1, aborted.Done());
  EXPECT_TRUE(acc.TakeGradient(2, 1, waiting.Done()));
  EXPECT_TRUE(acc.RestoreTake(aborted.take_id));
  ASSERT_TRUE(waiting.answered());
  EXPECT_EQ(waiting.average.data<float>()[0], 2.f);
  EXPECT_EQ(acc.global_step(), 1);
}

TEST(AccumulatorStateTest, TakeCannotGoBackOnceSomethingChangedAndIsCountedLost) {
  AccumulatorState acc(Spec(Shape{}));
  ASSERT_TRUE(acc.ApplyGradient(0, Tensor::Scalar(1.f)).ok());
  Take t;
  acc.TakeGradient(1, 1, t.Done());
  ASSERT_TRUE(acc.ApplyGradient(1, Tensor::Scalar(7.f)).ok());
  EXPECT_FALSE(acc.RestoreTake(t.take_id));
  EXPECT_EQ(acc.num_lost(), 1);
  EXPECT_EQ(acc.num_accumulated(), 1) << "only the gradient applied after the take";
  EXPECT_EQ(acc.global_step(), 1);
  // A dropped stale gradient and SetGlobalStep change it too.
  Take t2;
  acc.TakeGradient(2, 1, t2.Done());
  ASSERT_TRUE(acc.ApplyGradient(0, Tensor::Scalar(7.f)).ok());  // stale
  EXPECT_FALSE(acc.RestoreTake(t2.take_id));
  ASSERT_TRUE(acc.ApplyGradient(2, Tensor::Scalar(7.f)).ok());
  Take t3;
  acc.TakeGradient(3, 1, t3.Done());
  acc.SetGlobalStep(9);
  EXPECT_FALSE(acc.RestoreTake(t3.take_id));
  EXPECT_EQ(acc.num_lost(), 3);
  EXPECT_EQ(acc.global_step(), 9);
}

TEST(AccumulatorStateTest, OnlyTheLastTakeCanGoBack) {
  AccumulatorState acc(Spec(Shape{}));
  Take first, second;
  ASSERT_TRUE(acc.ApplyGradient(0, Tensor::Scalar(1.f)).ok());
  acc.TakeGradient(1, 1, first.Done());
  ASSERT_TRUE(acc.ApplyGradient(1, Tensor::Scalar(2.f)).ok());
  acc.TakeGradient(2, 1, second.Done());
  EXPECT_FALSE(acc.RestoreTake(first.take_id));
  EXPECT_EQ(acc.num_lost(), 1);
  EXPECT_EQ(acc.global_step(), 2);
  EXPECT_EQ(acc.num_accumulated(), 0);
}

TEST(AccumulatorStateTest, ValidateSpecRefusesWhatNoAccumulatorCanBe) {
  EXPECT_TRUE(AccumulatorState::ValidateSpec(Spec(Shape{2, 3})).ok());
  EXPECT_TRUE(AccumulatorState::ValidateSpec(Spec(Shape{}, DType::kFloat64)).ok());
  Status int_dtype = AccumulatorState::ValidateSpec(Spec(Shape{}, DType::kInt32));
  EXPECT_EQ(int_dtype.code(), Code::kInvalidArgument);
  EXPECT_THAT(int_dtype.message(), HasSubstr("int32"));
  EXPECT_EQ(AccumulatorState::ValidateSpec(Spec(Shape{}, DType::kFloat32, "")).code(),
            Code::kInvalidArgument);
  QueueSpec two = Spec(Shape{});
  two.dtypes.push_back(DType::kFloat32);
  EXPECT_EQ(AccumulatorState::ValidateSpec(two).code(), Code::kInvalidArgument);
  QueueSpec fifo = Spec(Shape{});
  fifo.kind = QueueSpec::Kind::kFifo;
  EXPECT_EQ(AccumulatorState::ValidateSpec(fifo).code(), Code::kInvalidArgument);
}

TEST(AccumulatorStateTest, SpecDescribesItselfAndNamesWhatDiffers) {
  QueueSpec spec = Spec(Shape{2, 3}, DType::kFloat32, "name");
  EXPECT_EQ(spec.DebugString(), "ConditionalAccumulator 'name' (float32 [2,3])");
  EXPECT_TRUE(spec.CheckSame(Spec(Shape{2, 3}, DType::kFloat32, "name")).ok());
  Status shape = spec.CheckSame(Spec(Shape{3}, DType::kFloat32, "name"));
  EXPECT_EQ(shape.code(), Code::kInvalidArgument);
  EXPECT_THAT(shape.message(), HasSubstr("accumulator '/name'"));
  EXPECT_THAT(shape.message(), HasSubstr("its shape"));
  EXPECT_THAT(spec.CheckSame(Spec(Shape{2, 3}, DType::kFloat64, "name")).message(),
              HasSubstr("its dtype"));
  QueueSpec fifo = spec;
  fifo.kind = QueueSpec::Kind::kFifo;
  EXPECT_THAT(spec.CheckSame(fifo).message(), HasSubstr("its kind"));
}

}  // namespace
}  // namespace actorflow
