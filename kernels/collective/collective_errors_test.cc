// Failures: transport errors reported once and naming the peer, mismatched members
// never getting a result, invalid arguments refused before anything is sent, and
// callbacks after the end doing nothing.
#include <functional>
#include <map>
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

const CollectiveAlgorithm kAlgorithms[] = {CollectiveAlgorithm::kRing,
                                           CollectiveAlgorithm::kRecursiveDoubling};

StartMember AllReduceOf(const std::vector<Tensor>& inputs, CollectiveAlgorithm algorithm) {
  return [&inputs, algorithm](CollectiveTransport* t, CollectiveMember m, CollectiveDone done) {
    StartAllReduce(t, m, inputs[m.rank], ReduceOp::kSum, algorithm, std::move(done));
  };
}

// Aborts what still waits, as the caller's runtime would, and checks that every
// member's done ran exactly once and none of them succeeded. Returns the members'
// statuses.
std::vector<Status> AbortAndExpectEveryMemberFailedOnce(InMemoryNetwork& network,
                                                        const std::vector<MemberOutcome>& outcomes) {
  network.AbortWaitingReceives(Aborted("the execution was aborted"));
  network.Run();
  std::vector<Status> statuses;
  for (size_t rank = 0; rank < outcomes.size(); ++rank) {
    EXPECT_EQ(outcomes[rank].calls, 1) << "rank " << rank;
    EXPECT_FALSE(outcomes[rank].status.ok()) << "rank " << rank << " succeeded";
    statuses.push_back(outcomes[rank].status);
  }
  return statuses;
}

TEST(TransportErrorTest, FailedReceiveIsReportedOnceWithTheCollectiveMemberAndPeer) {
  const std::vector<Tensor> inputs = GroupInputs(DType::kFloat32, Shape{10}, 3, 1);
  InMemoryNetwork network({3});
  network.FailReceives(/*to_rank=*/1, /*from_rank=*/0, Unavailable("peer 0 is gone"));
  auto outcomes = StartGroup(network, AllReduceOf(inputs, CollectiveAlgorithm::kRing));
  const MemberOutcome& failed = (*outcomes)[1];
  ASSERT_EQ(failed.calls, 1);
  EXPECT_EQ(failed.status,
            Unavailable("all-reduce (ring) rank 1 of 3: receiving from rank 0: peer 0 is gone"));
  AbortAndExpectEveryMemberFailedOnce(network, *outcomes);
  EXPECT_EQ((*outcomes)[1].status.code(), Code::kUnavailable);  // the first error stays
}

TEST(TransportErrorTest, FailedSendIsReportedOnceWithTheCollectiveMemberAndPeer) {
  for (CollectiveAlgorithm algorithm : kAlgorithms) {
    const std::vector<Tensor> inputs = GroupInputs(DType::kInt64, Shape{10}, 4, 1);
    InMemoryNetwork network({4});
    network.FailSends(/*from_rank=*/2, /*to_rank=*/3, Unavailable("link 2->3 is down"));
    auto outcomes = StartGroup(network, AllReduceOf(inputs, algorithm));
    const MemberOutcome& failed = (*outcomes)[2];
    ASSERT_EQ(failed.calls, 1);
    EXPECT_EQ(failed.status.code(), Code::kUnavailable);
    EXPECT_THAT(failed.status.message(),
                AllOf(HasSubstr("all-reduce ("), HasSubstr("rank 2 of 4: sending to rank 3: "
                                                           "link 2->3 is down")));
    AbortAndExpectEveryMemberFailedOnce(network, *outcomes);
  }
}

TEST(TransportErrorTest, AbortedPeersNameTheRankTheyWaitedFor) {
  const std::vector<Tensor> inputs = GroupInputs(DType::kFloat64, Shape{8}, 2, 1);
  InMemoryNetwork network({2});
  network.FailSends(0, 1, Unavailable("down"));
  auto outcomes = StartGroup(network, AllReduceOf(inputs, CollectiveAlgorithm::kRecursiveDoubling));
  std::vector<Status> statuses = AbortAndExpectEveryMemberFailedOnce(network, *outcomes);
  EXPECT_EQ(statuses[1], Aborted("all-reduce (recursive doubling) rank 1 of 2: receiving from "
                                 "rank 0: the execution was aborted"));
}

TEST(TransportErrorTest, EveryCollectiveReportsAFailedReceive) {
  const std::vector<Tensor> inputs = GroupInputs(DType::kInt32, Shape{6}, 3, 1);
  const std::map<std::string, StartMember> collectives = {
      {"broadcast (root 0) rank 2 of 3: receiving from rank 0",
       [&](CollectiveTransport* t, CollectiveMember m, CollectiveDone done) {
         StartBroadcast(t, m, 0, inputs[m.rank], std::move(done));
       }},
      {"all-gather rank 2 of 3: receiving from rank 1",
       [&](CollectiveTransport* t, CollectiveMember m, CollectiveDone done) {
         StartAllGather(t, m, inputs[m.rank], std::move(done));
       }},
      {"reduce-scatter rank 2 of 3: receiving from rank 1",
       [&](CollectiveTransport* t, CollectiveMember m, CollectiveDone done) {
         StartReduceScatter(t, m, inputs[m.rank], ReduceOp::kSum, std::move(done));
       }},
  };
  for (const auto& [message, start] : collectives) {
    InMemoryNetwork network({3});
    network.FailReceives(2, 0, DeadlineExceeded("too slow"));
    network.FailReceives(2, 1, DeadlineExceeded("too slow"));
    auto outcomes = StartGroup(network, start);
    ASSERT_EQ((*outcomes)[2].calls, 1) << message;
    EXPECT_EQ((*outcomes)[2].status, DeadlineExceeded(message + ": too slow"));
  }
}

// A transport whose callbacks the test runs by hand, in any number: one that breaks
// the at-most-once contract shows that a finished run ignores whatever comes late.
class ManualTransport : public CollectiveTransport {
 public:
  Status Send(int, const std::string& tag, const Tensor& value) override {
    sent[tag] = value;
    return Status::OK();
  }
  void RecvAsync(int, const std::string& tag, RecvCallback done) override {
    receives.push_back({tag, std::move(done)});
  }
  std::map<std::string, Tensor> sent;
  std::vector<std::pair<std::string, RecvCallback>> receives;
};

TEST(LateCallbackTest, CallbacksAfterAnErrorDoNothing) {
  ManualTransport transport;
  MemberOutcome outcome;
  StartAllReduce(&transport, {1, 2}, Tensor::FromVector<float>({1.f, 2.f}), ReduceOp::kSum,
                 CollectiveAlgorithm::kRing, [&](const Status& s, Tensor t) {
                   ++outcome.calls;
                   outcome.status = s;
                   outcome.result = std::move(t);
                 });
  ASSERT_EQ(transport.receives.size(), 1u);  // rank 0's description
  CollectiveTransport::RecvCallback callback = transport.receives[0].second;
  callback(Cancelled("first"), Tensor());
  ASSERT_EQ(outcome.calls, 1);
  // The same callback again, with an error and then with rank 0's real description.
  callback(Cancelled("second"), Tensor());
  callback(Status::OK(), transport.sent.begin()->second);
  EXPECT_EQ(outcome.calls, 1);
  EXPECT_THAT(outcome.status.message(), HasSubstr("first"));
  EXPECT_EQ(transport.receives.size(), 1u) << "a finished run posted another receive";
}

TEST(LateCallbackTest, RingChunkOfTheWrongSizeIsInvalidArgumentNamingThePeer) {
  // A peer whose description matched but whose chunk does not (a broken sender).
  ManualTransport transport;
  MemberOutcome outcome;
  StartAllReduce(&transport, {1, 2}, Tensor::FromVector<float>({1.f, 2.f, 3.f, 4.f}),
                 ReduceOp::kSum, CollectiveAlgorithm::kRing, [&](const Status& s, Tensor) {
                   ++outcome.calls;
                   outcome.status = s;
                 });
  ASSERT_EQ(transport.receives.size(), 1u);
  // Rank 0's description equals this member's own.
  transport.receives[0].second(Status::OK(), transport.sent.at("all-reduce/description/1->0"));
  ASSERT_EQ(transport.receives.size(), 2u);
  EXPECT_EQ(transport.receives[1].first, "all-reduce/ring/reduce-scatter/0/0->1");
  transport.receives[1].second(Status::OK(), Tensor::FromVector<float>({1.f, 1.f, 1.f}));
  ASSERT_EQ(outcome.calls, 1);
  EXPECT_EQ(outcome.status,
            InvalidArgument("all-reduce (ring) rank 1 of 2: rank 0 sent chunk 0 float32[3] where "
                            "this member has float32[2]: every member must pass the same dtype "
                            "and shape"));
}

TEST(ValidationTest, BoolReductionIsInvalidArgumentNamingTheDType) {
  const Tensor flags = Tensor::FromVector<bool>({true, false});
  int calls = 0;
  Status status;
  auto record = [&](const Status& s, Tensor) { ++calls, status = s; };
  InMemoryNetwork network({2});
  StartAllReduce(network.transport(0), {0, 2}, flags, ReduceOp::kSum, CollectiveAlgorithm::kAuto,
                 record);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("bool"));
  StartReduceScatter(network.transport(0), {0, 2}, flags, ReduceOp::kMean, record);
  EXPECT_EQ(calls, 2);
  EXPECT_THAT(status.message(), AllOf(HasSubstr("reduce-scatter"), HasSubstr("bool")));
  EXPECT_EQ(network.messages_sent(), 0);
}

TEST(ValidationTest, RankGroupSizeAndRootOutOfRangeAreInvalidArgumentsNamingTheValue) {
  const Tensor input = Tensor::FromVector<float>({1.f});
  std::vector<Status> statuses;
  auto record = [&](const Status& s, Tensor) { statuses.push_back(s); };
  InMemoryNetwork network({3});
  CollectiveTransport* t = network.transport(0);
  StartAllReduce(t, {3, 3}, input, ReduceOp::kSum, CollectiveAlgorithm::kRing, record);
  StartAllReduce(t, {-1, 3}, input, ReduceOp::kSum, CollectiveAlgorithm::kRing, record);
  StartAllGather(t, {0, 0}, input, record);
  StartBroadcast(t, {0, 3}, 3, input, record);
  StartBroadcast(t, {0, 3}, -2, input, record);
  StartReduceScatter(t, {7, 3}, input, ReduceOp::kSum, record);
  ASSERT_EQ(statuses.size(), 6u);
  for (const Status& s : statuses) EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(statuses[0].message(), HasSubstr("rank 3 is outside the group of 3"));
  EXPECT_THAT(statuses[1].message(), HasSubstr("rank -1"));
  EXPECT_THAT(statuses[2].message(), HasSubstr("group_size 0"));
  EXPECT_THAT(statuses[3].message(), HasSubstr("root_rank 3"));
  EXPECT_THAT(statuses[4].message(), HasSubstr("root_rank -2"));
  EXPECT_THAT(statuses[5].message(), AllOf(HasSubstr("reduce-scatter"), HasSubstr("rank 7")));
  EXPECT_EQ(network.messages_sent(), 0);
}

TEST(ValidationTest, UninitializedInputAndScalarAllGatherAreRefused) {
  std::vector<Status> statuses;
  auto record = [&](const Status& s, Tensor) { statuses.push_back(s); };
  StartBroadcast(nullptr, {0, 2}, 0, Tensor(), record);
  StartAllGather(nullptr, {0, 2}, Tensor::Scalar(1.f), record);
  ASSERT_EQ(statuses.size(), 2u);
  EXPECT_THAT(statuses[0].message(), HasSubstr("not a tensor in host memory"));
  EXPECT_THAT(statuses[1].message(), HasSubstr("scalar"));
}

}  // namespace
}  // namespace actorflow
