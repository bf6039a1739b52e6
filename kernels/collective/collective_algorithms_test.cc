// The public vocabulary of the collectives: names, the kAuto choice, block sizes and
// the group of one.
#include "kernels/collective/collective_algorithms.h"

#include <map>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/status_testing.h"
#include "kernels/collective/collective_test_util.h"
#include "kernels/collective/in_memory_network.h"

namespace actorflow {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(CollectiveNamesTest, ReduceOpNamesRoundTrip) {
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
    ASSERT_OK_AND_ASSIGN(ReduceOp parsed, ReduceOpFromName(ReduceOpName(op)));
    EXPECT_EQ(parsed, op);
  }
}

TEST(CollectiveNamesTest, UnknownReduceOpIsInvalidArgumentNamingIt) {
  StatusOr<ReduceOp> op = ReduceOpFromName("max");
  ASSERT_FALSE(op.ok());
  EXPECT_EQ(op.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(op.status().message(), HasSubstr("'max'"));
}

TEST(CollectiveNamesTest, AlgorithmNamesRoundTrip) {
  for (CollectiveAlgorithm algorithm : {CollectiveAlgorithm::kAuto, CollectiveAlgorithm::kRing,
                                        CollectiveAlgorithm::kRecursiveDoubling}) {
    ASSERT_OK_AND_ASSIGN(CollectiveAlgorithm parsed,
                         CollectiveAlgorithmFromName(CollectiveAlgorithmName(algorithm)));
    EXPECT_EQ(parsed, algorithm);
  }
  ASSERT_OK_AND_ASSIGN(CollectiveAlgorithm doubling,
                       CollectiveAlgorithmFromName("recursive_doubling"));
  EXPECT_EQ(doubling, CollectiveAlgorithm::kRecursiveDoubling);
}

TEST(CollectiveNamesTest, UnknownAlgorithmIsInvalidArgumentNamingIt) {
  StatusOr<CollectiveAlgorithm> algorithm = CollectiveAlgorithmFromName("tree");
  ASSERT_FALSE(algorithm.ok());
  EXPECT_EQ(algorithm.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(algorithm.status().message(), HasSubstr("'tree'"));
}

TEST(ChooseAllReduceAlgorithmTest, AutoPicksRecursiveDoublingBelowSixtyFourKibibytes) {
  const Tensor just_below(DType::kFloat32, Shape{kSmallCollectiveBytes / 4 - 1});
  const Tensor at_limit(DType::kFloat32, Shape{kSmallCollectiveBytes / 4});
  EXPECT_EQ(ChooseAllReduceAlgorithm(CollectiveAlgorithm::kAuto, just_below, 4),
            CollectiveAlgorithm::kRecursiveDoubling);
  EXPECT_EQ(ChooseAllReduceAlgorithm(CollectiveAlgorithm::kAuto, at_limit, 4),
            CollectiveAlgorithm::kRing);
}

TEST(ChooseAllReduceAlgorithmTest, AutoPicksRecursiveDoublingForFewerElementsThanMembers) {
  const Tensor big_elements(DType::kFloat64, Shape{1 << 14});  // 128 KiB
  EXPECT_EQ(ChooseAllReduceAlgorithm(CollectiveAlgorithm::kAuto, big_elements, (1 << 14) + 1),
            CollectiveAlgorithm::kRecursiveDoubling);
  EXPECT_EQ(ChooseAllReduceAlgorithm(CollectiveAlgorithm::kAuto, big_elements, 1 << 14),
            CollectiveAlgorithm::kRing);
}

TEST(ChooseAllReduceAlgorithmTest, ExplicitAlgorithmIsKept) {
  const Tensor tiny(DType::kInt32, Shape{1});
  EXPECT_EQ(ChooseAllReduceAlgorithm(CollectiveAlgorithm::kRing, tiny, 8),
            CollectiveAlgorithm::kRing);
  const Tensor huge(DType::kInt32, Shape{1 << 20});
  EXPECT_EQ(ChooseAllReduceAlgorithm(CollectiveAlgorithm::kRecursiveDoubling, huge, 2),
            CollectiveAlgorithm::kRecursiveDoubling);
}

TEST(EvenSplitSizesTest, FirstBlocksAreOneLargerWhenNotDivisible) {
  EXPECT_THAT(EvenSplitSizes(10, 3), ElementsAre(4, 3, 3));
  EXPECT_THAT(EvenSplitSizes(11, 3), ElementsAre(4, 4, 3));
  EXPECT_THAT(EvenSplitSizes(12, 3), ElementsAre(4, 4, 4));
}

TEST(EvenSplitSizesTest, FewerElementsThanPartsLeavesTrailingBlocksEmpty) {
  EXPECT_THAT(EvenSplitSizes(2, 5), ElementsAre(1, 1, 0, 0, 0));
  EXPECT_THAT(EvenSplitSizes(0, 3), ElementsAre(0, 0, 0));
  EXPECT_THAT(EvenSplitSizes(7, 1), ElementsAre(7));
}

TEST(GroupOfOneTest, EveryCollectiveReturnsACopyOfTheInputWithoutTheTransport) {
  // No transport at all: a group of one must not touch it.
  const Tensor input = Tensor::FromVector<float>({1.f, 2.f, 3.f, 4.f}, Shape{2, 2});
  std::vector<MemberOutcome> outcomes(5);
  auto record = [&](int i) {
    return [&outcomes, i](const Status& s, Tensor t) {
      ++outcomes[i].calls;
      outcomes[i].status = s;
      outcomes[i].result = std::move(t);
    };
  };
  const CollectiveMember alone{0, 1};
  StartAllReduce(nullptr, alone, input, ReduceOp::kSum, CollectiveAlgorithm::kRing, record(0));
  StartAllReduce(nullptr, alone, input, ReduceOp::kMean, CollectiveAlgorithm::kAuto, record(1));
  StartBroadcast(nullptr, alone, 0, input, record(2));
  StartAllGather(nullptr, alone, input, record(3));
  StartReduceScatter(nullptr, alone, input, ReduceOp::kMean, record(4));
  for (int i = 0; i < 5; ++i) {
    SCOPED_TRACE(i);
    ASSERT_EQ(outcomes[i].calls, 1);
    ASSERT_OK(outcomes[i].status);
    EXPECT_THAT(Values(outcomes[i].result), ElementsAre(1.0, 2.0, 3.0, 4.0));
    EXPECT_FALSE(outcomes[i].result.SharesBufferWith(input));
  }
  EXPECT_EQ(outcomes[0].result.shape(), (Shape{2, 2}));
  EXPECT_EQ(outcomes[3].result.shape(), (Shape{2, 2}));
  EXPECT_EQ(outcomes[4].result.shape(), Shape{4});  // reduce-scatter: one 1-D block
}

// Every collective, started on every member of a group of 3 over `inputs`.
std::map<std::string, StartMember> EveryCollective(const std::vector<Tensor>& inputs) {
  return {
      {"all-reduce (ring)",
       [&](CollectiveTransport* t, CollectiveMember m, CollectiveDone done) {
         StartAllReduce(t, m, inputs[m.rank], ReduceOp::kMean, CollectiveAlgorithm::kRing,
                        std::move(done));
       }},
      {"all-reduce (recursive doubling)",
       [&](CollectiveTransport* t, CollectiveMember m, CollectiveDone done) {
         StartAllReduce(t, m, inputs[m.rank], ReduceOp::kSum,
                        CollectiveAlgorithm::kRecursiveDoubling, std::move(done));
       }},
      {"broadcast",
       [&](CollectiveTransport* t, CollectiveMember m, CollectiveDone done) {
         StartBroadcast(t, m, 1, inputs[m.rank], std::move(done));
       }},
      {"all-gather",
       [&](CollectiveTransport* t, CollectiveMember m, CollectiveDone done) {
         StartAllGather(t, m, inputs[m.rank], std::move(done));
       }},
      {"reduce-scatter",
       [&](CollectiveTransport* t, CollectiveMember m, CollectiveDone done) {
         StartReduceScatter(t, m, inputs[m.rank], ReduceOp::kSum, std::move(done));
       }},
  };
}

TEST(InputTest, EveryCollectiveLeavesTheInputsUnchanged) {
  const std::vector<Tensor> inputs = GroupInputs(DType::kFloat32, Shape{5, 3}, 3, /*seed=*/8);
  for (const auto& [name, start] : EveryCollective(inputs)) {
    SCOPED_TRACE(name);
    std::vector<Tensor> snapshots;
    for (const Tensor& input : inputs) snapshots.push_back(input.DeepCopy());
    InMemoryNetwork network({3, /*shuffle_seed=*/3u, /*deliver_synchronously=*/false});
    auto outcomes = StartGroup(network, start);
    for (int rank = 0; rank < 3; ++rank) {
      ASSERT_OK((*outcomes)[rank].status);
      EXPECT_TRUE(BitIdentical(inputs[rank], snapshots[rank])) << "rank " << rank;
      EXPECT_FALSE((*outcomes)[rank].result.SharesBufferWith(inputs[rank]));
    }
  }
}

TEST(InputTest, CallersWritingTheirInputsCopyOnWriteAfterStartDoNotChangeResults) {
  // Nothing is delivered until every member has started and every input has been
  // written the way the runtime writes a tensor in place (copying it first while it is
  // shared): the results must not see the new values.
  std::vector<Tensor> inputs = GroupInputs(DType::kInt32, Shape{4, 2}, 3, /*seed=*/8);
  const std::vector<Tensor> originals = {inputs[0].DeepCopy(), inputs[1].DeepCopy(),
                                         inputs[2].DeepCopy()};
  const std::map<std::string, StartMember> collectives = EveryCollective(inputs);
  const std::map<std::string, StartMember> reference = EveryCollective(originals);
  for (const auto& [name, start] : collectives) {
    SCOPED_TRACE(name);
    for (int rank = 0; rank < 3; ++rank) {
      inputs[rank] = originals[rank].DeepCopy();
    }
    InMemoryNetwork reference_network({3});
    auto expected = StartGroup(reference_network, reference.at(name));
    InMemoryNetwork network({3});
    std::vector<MemberOutcome> outcomes(3);
    for (int rank = 0; rank < 3; ++rank) {
      start(network.transport(rank), {rank, 3}, [&outcomes, rank](const Status& s, Tensor t) {
        ++outcomes[rank].calls;
        outcomes[rank].status = s;
        outcomes[rank].result = std::move(t);
      });
    }
    for (Tensor& input : inputs) {
      if (!input.RefCountIsOne()) input = input.DeepCopy();
      for (int64_t i = 0; i < input.NumElements(); ++i) input.data<int32_t>()[i] = -12345;
    }
    network.Run();
    for (int rank = 0; rank < 3; ++rank) {
      ASSERT_EQ(outcomes[rank].calls, 1);
      ASSERT_OK(outcomes[rank].status);
      EXPECT_TRUE(BitIdentical(outcomes[rank].result, (*expected)[rank].result)) << "rank " << rank;
    }
    EXPECT_THAT(network.ChangedAfterSend(), ::testing::IsEmpty());
  }
}

TEST(InputTest, RingCollectivesSendTheInputsChunksWithoutCopyingThem) {
  // A 64 MiB all-reduce would otherwise copy its input once more than it must: the
  // chunks that go out are views, which keep the input shared (not writable in place).
  const std::vector<Tensor> inputs = GroupInputs(DType::kFloat32, Shape{6, 2}, 3, /*seed=*/4);
  for (const std::string name : {"all-reduce (ring)", "reduce-scatter"}) {
    SCOPED_TRACE(name);
    InMemoryNetwork network({3});
    std::vector<MemberOutcome> outcomes(3);
    const StartMember start = EveryCollective(inputs).at(name);
    for (int rank = 0; rank < 3; ++rank) {
      start(network.transport(rank), {rank, 3}, [&outcomes, rank](const Status& s, Tensor t) {
        outcomes[rank].status = s;
        outcomes[rank].result = std::move(t);
      });
      EXPECT_FALSE(inputs[rank].RefCountIsOne()) << "rank " << rank;
    }
    network.Run();
    for (int rank = 0; rank < 3; ++rank) ASSERT_OK(outcomes[rank].status);
  }
}

}  // namespace
}  // namespace actorflow
