// Members that disagree on dtype or shape: the member that sees it fails with
// InvalidArgument naming the peer and both descriptions, and no member of an
// all-reduce, reduce-scatter or all-gather gets a result.
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/status_testing.h"
#include "kernels/collective/collective_algorithms.h"
#include "kernels/collective/collective_test_util.h"
#include "kernels/collective/in_memory_network.h"

namespace actorflow {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// Runs `start` on a group whose member r passes inputs[r], aborts what still waits
// and returns every member's status, each reported exactly once.
std::vector<Status> RunMismatched(const std::vector<Tensor>& inputs, const StartMember& start) {
  const int n = static_cast<int>(inputs.size());
  InMemoryNetwork network({n, /*shuffle_seed=*/5u, /*deliver_synchronously=*/false});
  auto outcomes = StartGroup(network, start);
  network.AbortWaitingReceives(Aborted("the execution was aborted"));
  network.Run();
  std::vector<Status> statuses;
  for (int rank = 0; rank < n; ++rank) {
    EXPECT_EQ((*outcomes)[rank].calls, 1) << "rank " << rank;
    statuses.push_back((*outcomes)[rank].status);
  }
  return statuses;
}

// No member succeeded and one failed with InvalidArgument containing every one of
// `parts`.
void ExpectMismatchReported(const std::vector<Status>& statuses,
                            const std::vector<std::string>& parts) {
  bool reported = false;
  for (const Status& s : statuses) {
    EXPECT_FALSE(s.ok()) << "a member succeeded";
    if (s.code() != Code::kInvalidArgument) continue;
    bool all = true;
    for (const std::string& part : parts) all = all && s.message().find(part) != std::string::npos;
    reported = reported || all;
  }
  EXPECT_TRUE(reported) << "no InvalidArgument names all of: " << ::testing::PrintToString(parts)
                        << "; statuses: " << ::testing::PrintToString(statuses);
}

StartMember AllReduceOf(const std::vector<Tensor>& inputs, CollectiveAlgorithm algorithm) {
  return [&inputs, algorithm](CollectiveTransport* t, CollectiveMember m, CollectiveDone done) {
    StartAllReduce(t, m, inputs[m.rank], ReduceOp::kSum, algorithm, std::move(done));
  };
}

const CollectiveAlgorithm kAlgorithms[] = {CollectiveAlgorithm::kRing,
                                           CollectiveAlgorithm::kRecursiveDoubling,
                                           CollectiveAlgorithm::kAuto};

TEST(AllReduceMismatchTest, DifferentElementCountsNeverSum) {
  for (int n : {2, 3, 5}) {
    for (CollectiveAlgorithm algorithm : kAlgorithms) {
      SCOPED_TRACE(std::string(CollectiveAlgorithmName(algorithm)) + " n " + std::to_string(n));
      std::vector<Tensor> inputs = GroupInputs(DType::kFloat32, Shape{7}, n, 2);
      inputs[n - 1] = ReductionInput(DType::kFloat32, Shape{8}, n - 1, 2);
      ExpectMismatchReported(RunMismatched(inputs, AllReduceOf(inputs, algorithm)),
                             {"float32[7]", "float32[8]"});
    }
  }
}

TEST(AllReduceMismatchTest, SameElementCountInAnotherShapeIsRefused) {
  for (CollectiveAlgorithm algorithm : kAlgorithms) {
    std::vector<Tensor> inputs = GroupInputs(DType::kInt32, Shape{2, 3}, 3, 2);
    inputs[1] = ReductionInput(DType::kInt32, Shape{3, 2}, 1, 2);
    ExpectMismatchReported(RunMismatched(inputs, AllReduceOf(inputs, algorithm)),
                           {"int32[2,3]", "int32[3,2]"});
  }
}

TEST(AllReduceMismatchTest, DifferentDTypesAreRefused) {
  for (CollectiveAlgorithm algorithm : kAlgorithms) {
    std::vector<Tensor> inputs = GroupInputs(DType::kFloat32, Shape{4}, 4, 2);
    inputs[2] = ReductionInput(DType::kFloat64, Shape{4}, 2, 2);
    ExpectMismatchReported(RunMismatched(inputs, AllReduceOf(inputs, algorithm)),
                           {"float32[4]", "float64[4]"});
  }
}

TEST(AllReduceMismatchTest, MembersThatPickedDifferentAlgorithmsStillReportIt) {
  // 16383 float32 (65532 bytes) runs recursive doubling under kAuto, 16385 the ring.
  std::vector<Tensor> inputs = GroupInputs(DType::kFloat32, Shape{16383}, 3, 2);
  inputs[1] = ReductionInput(DType::kFloat32, Shape{16385}, 1, 2);
  ExpectMismatchReported(RunMismatched(inputs, AllReduceOf(inputs, CollectiveAlgorithm::kAuto)),
                         {"rank 0", "float32[16383]", "float32[16385]"});
}

TEST(ReduceScatterMismatchTest, BlocksOfEqualSizeAtOtherOffsetsAreNotSummed) {
  // 7 elements split 3,2,2 and 6 split 2,2,2: block 1 has 2 elements either way but
  // starts at element 3 or 2. Summing them would look fine and be wrong.
  std::vector<Tensor> inputs = GroupInputs(DType::kInt64, Shape{6}, 3, 2);
  inputs[0] = ReductionInput(DType::kInt64, Shape{7}, 0, 2);
  ExpectMismatchReported(
      RunMismatched(inputs,
                    [&](CollectiveTransport* t, CollectiveMember m, CollectiveDone done) {
                      StartReduceScatter(t, m, inputs[m.rank], ReduceOp::kSum, std::move(done));
                    }),
      {"reduce-scatter rank 1 of 3", "rank 0", "int64[7]", "int64[6]"});
}

TEST(AllGatherMismatchTest, EveryMemberNamesTheRankWhoseOtherDimsDiffer) {
  std::vector<Tensor> inputs = {Tensor(DType::kFloat32, Shape{1, 3}),
                                Tensor(DType::kFloat32, Shape{2, 3}),
                                Tensor(DType::kFloat32, Shape{2, 4})};
  InMemoryNetwork network({3});
  auto outcomes = StartGroup(network, [&](CollectiveTransport* t, CollectiveMember m,
                                          CollectiveDone done) {
    StartAllGather(t, m, inputs[m.rank], std::move(done));
  });
  for (int rank = 0; rank < 3; ++rank) {
    const MemberOutcome& outcome = (*outcomes)[rank];
    ASSERT_EQ(outcome.calls, 1);
    EXPECT_EQ(outcome.status.code(), Code::kInvalidArgument);
    EXPECT_THAT(outcome.status.message(),
                AllOf(HasSubstr("all-gather rank " + std::to_string(rank) + " of 3"),
                      HasSubstr("rank 2 passed float32[2,4] but rank 0 passed float32[1,3]")));
  }
  EXPECT_EQ(network.waiting_receives(), 0u);  // everyone failed on its own
}

TEST(AllGatherMismatchTest, DifferentDTypesAreRefused) {
  std::vector<Tensor> inputs = {Tensor(DType::kInt32, Shape{1}), Tensor(DType::kInt64, Shape{1})};
  InMemoryNetwork network({2});
  auto outcomes = StartGroup(network, [&](CollectiveTransport* t, CollectiveMember m,
                                          CollectiveDone done) {
    StartAllGather(t, m, inputs[m.rank], std::move(done));
  });
  for (const MemberOutcome& outcome : *outcomes) {
    EXPECT_THAT(outcome.status.message(), HasSubstr("rank 1 passed int64[1] but rank 0 passed "
                                                    "int32[1]"));
  }
}

TEST(BroadcastMismatchTest, MemberWithAnotherShapeFailsNamingItsParent) {
  std::vector<Tensor> inputs = GroupInputs(DType::kFloat64, Shape{4}, 3, 2);
  inputs[2] = ReductionInput(DType::kFloat64, Shape{5}, 2, 2);
  InMemoryNetwork network({3});
  auto outcomes = StartGroup(network, [&](CollectiveTransport* t, CollectiveMember m,
                                          CollectiveDone done) {
    StartBroadcast(t, m, 0, inputs[m.rank], std::move(done));
  });
  EXPECT_OK((*outcomes)[0].status);
  EXPECT_OK((*outcomes)[1].status);
  EXPECT_EQ((*outcomes)[2].status,
            InvalidArgument("broadcast (root 0) rank 2 of 3: rank 0 sent root's value "
                            "float64[4] where this member has float64[5]: every member must "
                            "pass the same dtype and shape"));
}

}  // namespace
}  // namespace actorflow
