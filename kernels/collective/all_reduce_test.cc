// All-reduce against a reference sum in double, over group sizes, element counts
// (including fewer elements than members), dtypes, both algorithms and kAuto, and
// several delivery orders; every member's result must be bit-identical.
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/status_testing.h"
#include "kernels/collective/collective_algorithms.h"
#include "kernels/collective/collective_test_util.h"
#include "kernels/collective/in_memory_network.h"

namespace actorflow {
namespace {

using ::testing::IsEmpty;

// How the network orders deliveries in one run.
struct DeliveryOrder {
  const char* name;
  std::optional<uint32_t> shuffle_seed;
  bool synchronous;
};
const DeliveryOrder kDeliveryOrders[] = {
    {"in order", std::nullopt, false},
    {"synchronous", std::nullopt, true},
    {"shuffled (seed 1)", 1u, false},
    {"shuffled (seed 2), synchronous", 2u, true},
};

// Shapes of several ranks for each element count: the algorithms flatten them.
Shape ShapeWithElements(int64_t elements) {
  switch (elements) {
    case 0: return Shape{3, 0};
    case 1: return Shape{};
    case 7: return Shape{7, 1};
    case 100: return Shape{4, 25};
    case 1001: return Shape{7, 11, 13};
    default: return Shape{elements};
  }
}

// Runs an all-reduce of `inputs` (one per member) and checks every member's outcome
// against the reference, bit-identity across members, the inputs left as they were,
// results of their own and a network with nothing left over.
void ExpectAllReduce(const std::vector<Tensor>& inputs, ReduceOp op,
                     CollectiveAlgorithm algorithm, const DeliveryOrder& order) {
  SCOPED_TRACE(std::string(order.name) + ", " + ReduceOpName(op));
  const int n = static_cast<int>(inputs.size());
  std::vector<Tensor> snapshots;
  for (const Tensor& input : inputs) snapshots.push_back(input.DeepCopy());
  InMemoryNetwork network({n, order.shuffle_seed, order.synchronous});
  auto outcomes = StartGroup(network, [&](CollectiveTransport* transport, CollectiveMember member,
                                          CollectiveDone done) {
    StartAllReduce(transport, member, inputs[member.rank], op, algorithm, std::move(done));
  });
  const std::vector<double> expected = ReferenceResult(inputs, op);
  for (int rank = 0; rank < n; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const MemberOutcome& outcome = (*outcomes)[rank];
    ASSERT_EQ(outcome.calls, 1);
    ASSERT_OK(outcome.status);
    EXPECT_TRUE(MatchesReference(outcome.result, inputs[0].dtype(), inputs[0].shape(), expected,
                                 inputs));
    EXPECT_TRUE(BitIdentical(outcome.result, (*outcomes)[0].result));
    EXPECT_TRUE(BitIdentical(inputs[rank], snapshots[rank])) << "the input changed";
    // A ring result may still be read by a peer it was sent to (the network's log
    // keeps what was sent), never shared with an input or another member's result.
    for (int other = 0; other < n; ++other) {
      EXPECT_FALSE(outcome.result.SharesBufferWith(inputs[other])) << "input " << other;
      if (other != rank) {
        EXPECT_FALSE(outcome.result.SharesBufferWith((*outcomes)[other].result))
            << "rank " << other << "'s result";
      }
    }
  }
  EXPECT_EQ(network.undelivered_messages(), 0u);
  EXPECT_EQ(network.waiting_receives(), 0u);
  EXPECT_THAT(network.ChangedAfterSend(), IsEmpty());
}

using MatrixParam = std::tuple<int, int64_t, DType, CollectiveAlgorithm>;

class AllReduceMatrixTest : public ::testing::TestWithParam<MatrixParam> {};

TEST_P(AllReduceMatrixTest, EveryMemberGetsTheReferenceSumAndMeanBitIdentically) {
  const auto [group_size, elements, dtype, algorithm] = GetParam();
  const std::vector<Tensor> inputs =
      GroupInputs(dtype, ShapeWithElements(elements), group_size, /*seed=*/17);
  for (const DeliveryOrder& order : kDeliveryOrders) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
      ExpectAllReduce(inputs, op, algorithm, order);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    GroupsSizesDTypesAlgorithms, AllReduceMatrixTest,
    ::testing::Combine(::testing::Values(1, 2, 3, 4, 5, 8),
                       ::testing::Values(int64_t{0}, int64_t{1}, int64_t{2}, int64_t{7},
                                         int64_t{100}, int64_t{1001}),
                       ::testing::Values(DType::kFloat32, DType::kFloat64, DType::kInt32,
                                         DType::kInt64),
                       ::testing::Values(CollectiveAlgorithm::kAuto, CollectiveAlgorithm::kRing,
                                         CollectiveAlgorithm::kRecursiveDoubling)),
    [](const ::testing::TestParamInfo<MatrixParam>& param_info) {
      return "n" + std::to_string(std::get<0>(param_info.param)) + "_elements" +
             std::to_string(std::get<1>(param_info.param)) + "_" + DTypeName(std::get<2>(param_info.param)) +
             "_" + CollectiveAlgorithmName(std::get<3>(param_info.param));
    });

TEST(AllReduceTest, TestInputsMakeTheSumDependOnTheOrderOfAdditions) {
  // Bit-identity across members means something only when a member that added in
  // another order would get other bits: summing these inputs in rank order and in
  // reverse order differs somewhere.
  const std::vector<Tensor> inputs = GroupInputs(DType::kFloat32, Shape{1001}, 5, /*seed=*/17);
  int differing = 0;
  for (int64_t i = 0; i < 1001; ++i) {
    float forward = 0.f, backward = 0.f;
    for (int r = 0; r < 5; ++r) forward += inputs[r].data<float>()[i];
    for (int r = 4; r >= 0; --r) backward += inputs[r].data<float>()[i];
    if (forward != backward) ++differing;
  }
  EXPECT_GT(differing, 10);
}

TEST(AllReduceTest, LargeTensorRunsTheRingUnderAuto) {
  // 20000 float32 = 80000 bytes, above kSmallCollectiveBytes.
  const std::vector<Tensor> inputs = GroupInputs(DType::kFloat32, Shape{100, 200}, 4, 3);
  ASSERT_EQ(ChooseAllReduceAlgorithm(CollectiveAlgorithm::kAuto, inputs[0], 4),
            CollectiveAlgorithm::kRing);
  ExpectAllReduce(inputs, ReduceOp::kSum, CollectiveAlgorithm::kAuto, kDeliveryOrders[2]);
  ExpectAllReduce(inputs, ReduceOp::kMean, CollectiveAlgorithm::kAuto, kDeliveryOrders[3]);
}

// The messages each algorithm sends, counted: one description per member plus the
// algorithm's own.
int MessagesSent(int group_size, CollectiveAlgorithm algorithm) {
  InMemoryNetwork network({group_size});
  const std::vector<Tensor> inputs = GroupInputs(DType::kInt32, Shape{10}, group_size, 5);
  auto outcomes = StartGroup(network, [&](CollectiveTransport* t, CollectiveMember m,
                                          CollectiveDone done) {
    StartAllReduce(t, m, inputs[m.rank], ReduceOp::kSum, algorithm, std::move(done));
  });
  for (const MemberOutcome& outcome : *outcomes) EXPECT_OK(outcome.status);
  return network.messages_sent();
}

TEST(AllReduceTest, RingSendsTwoTimesNMinusOneChunksPerMember) {
  EXPECT_EQ(MessagesSent(5, CollectiveAlgorithm::kRing), 5 * (1 + 2 * 4));
  EXPECT_EQ(MessagesSent(2, CollectiveAlgorithm::kRing), 2 * (1 + 2 * 1));
}

TEST(AllReduceTest, RecursiveDoublingSendsLogNPartialsPerMemberAndFoldsTheRest) {
  EXPECT_EQ(MessagesSent(8, CollectiveAlgorithm::kRecursiveDoubling), 8 * (1 + 3));
  // 5 = core of 4 (2 rounds each) + one extra: its fold and its result.
  EXPECT_EQ(MessagesSent(5, CollectiveAlgorithm::kRecursiveDoubling), 5 + 4 * 2 + 2);
}

TEST(AllReduceTest, ScalarAllReduceKeepsTheScalarShape) {
  const std::vector<Tensor> inputs = {Tensor::Scalar(1.5), Tensor::Scalar(2.0),
                                      Tensor::Scalar(-0.25)};
  InMemoryNetwork network({3});
  auto outcomes = StartGroup(network, [&](CollectiveTransport* t, CollectiveMember m,
                                          CollectiveDone done) {
    StartAllReduce(t, m, inputs[m.rank], ReduceOp::kSum, CollectiveAlgorithm::kRing,
                   std::move(done));
  });
  for (const MemberOutcome& outcome : *outcomes) {
    ASSERT_OK(outcome.status);
    EXPECT_EQ(outcome.result.shape(), Shape{});
    EXPECT_EQ(*outcome.result.scalar<double>(), 3.25);
  }
}

TEST(AllReduceTest, IntegerMeanTruncatesTowardZero) {
  // Sum -7 over 2 members: -3.5 truncates to -3; sum 7 to 3.
  const std::vector<Tensor> inputs = {Tensor::FromVector<int32_t>({-4, 4}),
                                      Tensor::FromVector<int32_t>({-3, 3})};
  for (CollectiveAlgorithm algorithm :
       {CollectiveAlgorithm::kRing, CollectiveAlgorithm::kRecursiveDoubling}) {
    InMemoryNetwork network({2});
    auto outcomes = StartGroup(network, [&](CollectiveTransport* t, CollectiveMember m,
                                            CollectiveDone done) {
      StartAllReduce(t, m, inputs[m.rank], ReduceOp::kMean, algorithm, std::move(done));
    });
    for (const MemberOutcome& outcome : *outcomes) {
      ASSERT_OK(outcome.status);
      EXPECT_THAT(Values(outcome.result), ::testing::ElementsAre(-3.0, 3.0));
    }
  }
}

TEST(AllReduceTest, IntegerSumWrapsAroundInsteadOfOverflowing) {
  const int32_t max = std::numeric_limits<int32_t>::max();
  const std::vector<Tensor> inputs = {Tensor::FromVector<int32_t>({max}),
                                      Tensor::FromVector<int32_t>({1})};
  InMemoryNetwork network({2});
  auto outcomes = StartGroup(network, [&](CollectiveTransport* t, CollectiveMember m,
                                          CollectiveDone done) {
    StartAllReduce(t, m, inputs[m.rank], ReduceOp::kSum, CollectiveAlgorithm::kRing,
                   std::move(done));
  });
  for (const MemberOutcome& outcome : *outcomes) {
    ASSERT_OK(outcome.status);
    EXPECT_EQ(outcome.result.data<int32_t>()[0], std::numeric_limits<int32_t>::min());
  }
}

}  // namespace
}  // namespace actorflow
