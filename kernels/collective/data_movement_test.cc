// Broadcast, all-gather and reduce-scatter: each member's result against one built
// by hand from all members' inputs, over group sizes, dtypes and delivery orders.
#include <optional>
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

using ::testing::IsEmpty;

const DType kAllDTypes[] = {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64,
                            DType::kBool};

// The network options of one run: in order, synchronous, or shuffled by `seed`.
std::vector<InMemoryNetwork::Options> DeliveryOrders(int group_size) {
  return {{group_size, std::nullopt, false},
          {group_size, std::nullopt, true},
          {group_size, 11u, false},
          {group_size, 12u, true}};
}

void ExpectCleanNetwork(const InMemoryNetwork& network) {
  EXPECT_EQ(network.undelivered_messages(), 0u);
  EXPECT_EQ(network.waiting_receives(), 0u);
  EXPECT_THAT(network.ChangedAfterSend(), IsEmpty());
}

TEST(BroadcastTest, EveryMemberGetsRootsValueFromEveryRoot) {
  for (int n : {2, 3, 4, 5, 8}) {
    for (DType dtype : kAllDTypes) {
      const std::vector<Tensor> inputs = GroupInputs(dtype, Shape{3, 5}, n, /*seed=*/4);
      for (int root = 0; root < n; ++root) {
        for (const InMemoryNetwork::Options& options : DeliveryOrders(n)) {
          SCOPED_TRACE("n " + std::to_string(n) + " root " + std::to_string(root) + " " +
                       DTypeName(dtype));
          InMemoryNetwork network(options);
          auto outcomes = StartGroup(network, [&](CollectiveTransport* t, CollectiveMember m,
                                                  CollectiveDone done) {
            StartBroadcast(t, m, root, inputs[m.rank], std::move(done));
          });
          for (int rank = 0; rank < n; ++rank) {
            const MemberOutcome& outcome = (*outcomes)[rank];
            ASSERT_EQ(outcome.calls, 1);
            ASSERT_OK(outcome.status);
            EXPECT_TRUE(BitIdentical(outcome.result, inputs[root])) << "rank " << rank;
            EXPECT_TRUE(outcome.result.RefCountIsOne()) << "rank " << rank;
          }
          ExpectCleanNetwork(network);
        }
      }
    }
  }
}

TEST(BroadcastTest, EmptyTensorIsBroadcast) {
  const std::vector<Tensor> inputs(3, Tensor(DType::kFloat32, Shape{0, 4}));
  InMemoryNetwork network({3});
  auto outcomes = StartGroup(network, [&](CollectiveTransport* t, CollectiveMember m,
                                          CollectiveDone done) {
    StartBroadcast(t, m, 2, inputs[m.rank], std::move(done));
  });
  for (const MemberOutcome& outcome : *outcomes) {
    ASSERT_OK(outcome.status);
    EXPECT_EQ(outcome.result.shape(), (Shape{0, 4}));
  }
}

// Member r's all-gather input: r + 1 rows except that member 1 has none, [rows, 2, 3].
Tensor GatherInput(DType dtype, int rank) {
  const int64_t rows = rank == 1 ? 0 : rank + 1;
  return ReductionInput(dtype, Shape{rows, 2, 3}, rank, /*seed=*/9);
}

TEST(AllGatherTest, ConcatenatesDifferingRowCountsInRankOrder) {
  for (int n : {2, 3, 5, 8}) {
    for (DType dtype : kAllDTypes) {
      std::vector<Tensor> inputs;
      for (int rank = 0; rank < n; ++rank) inputs.push_back(GatherInput(dtype, rank));
      std::vector<double> expected;
      int64_t rows = 0;
      for (const Tensor& input : inputs) {
        for (double v : Values(input)) expected.push_back(v);
        rows += input.dim(0);
      }
      for (const InMemoryNetwork::Options& options : DeliveryOrders(n)) {
        SCOPED_TRACE("n " + std::to_string(n) + " " + DTypeName(dtype));
        std::vector<Tensor> snapshots;
        for (const Tensor& input : inputs) snapshots.push_back(input.DeepCopy());
        InMemoryNetwork network(options);
        auto outcomes = StartGroup(network, [&](CollectiveTransport* t, CollectiveMember m,
                                                CollectiveDone done) {
          StartAllGather(t, m, inputs[m.rank], std::move(done));
        });
        for (int rank = 0; rank < n; ++rank) {
          const MemberOutcome& outcome = (*outcomes)[rank];
          ASSERT_EQ(outcome.calls, 1);
          ASSERT_OK(outcome.status);
          EXPECT_EQ(outcome.result.dtype(), dtype);
          EXPECT_EQ(outcome.result.shape(), (Shape{rows, 2, 3}));
          EXPECT_EQ(Values(outcome.result), expected) << "rank " << rank;
          EXPECT_TRUE(BitIdentical(outcome.result, (*outcomes)[0].result));
          EXPECT_TRUE(BitIdentical(inputs[rank], snapshots[rank])) << "the input changed";
        }
        ExpectCleanNetwork(network);
      }
    }
  }
}

TEST(ReduceScatterTest, MemberRGetsTheReducedBlockR) {
  for (int n : {2, 3, 4, 5, 8}) {
    for (int64_t elements : {0, 1, 2, 7, 100, 1001}) {
      for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64}) {
        const std::vector<Tensor> inputs =
            GroupInputs(dtype, elements == 100 ? Shape{10, 10} : Shape{elements}, n, 21);
        const std::vector<int64_t> blocks = EvenSplitSizes(elements, n);
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
          const std::vector<double> reduced = ReferenceResult(inputs, op);
          for (const InMemoryNetwork::Options& options : DeliveryOrders(n)) {
            SCOPED_TRACE("n " + std::to_string(n) + " elements " + std::to_string(elements) +
                         " " + DTypeName(dtype) + " " + ReduceOpName(op));
            InMemoryNetwork network(options);
            auto outcomes = StartGroup(network, [&](CollectiveTransport* t, CollectiveMember m,
                                                    CollectiveDone done) {
              StartReduceScatter(t, m, inputs[m.rank], op, std::move(done));
            });
            int64_t offset = 0;
            for (int rank = 0; rank < n; ++rank) {
              const MemberOutcome& outcome = (*outcomes)[rank];
              ASSERT_EQ(outcome.calls, 1);
              ASSERT_OK(outcome.status);
              const int64_t size = blocks[rank];
              const std::vector<double> block(reduced.begin() + offset,
                                              reduced.begin() + offset + size);
              EXPECT_TRUE(MatchesReference(outcome.result, dtype, Shape{size}, block, inputs))
                  << "rank " << rank;
              EXPECT_TRUE(outcome.result.RefCountIsOne());
              offset += size;
            }
            ExpectCleanNetwork(network);
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace actorflow
