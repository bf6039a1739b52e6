// Collective ops (graph/collective_ops.h) across the tasks of a LocalCluster (real
// servers over loopback): between-graph members, each on its own master, and
// in-graph members of one step; results against a reference and bit-identical on
// every member; a lost member named; bad groups refused.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <future>
#include <string>
#include <vector>

#include "actors/cluster/local_cluster.h"
#include "actors/cluster/session_factory.h"
#include "graph/collective_ops.h"
#include "graph/ops.h"
#include "graph/scope.h"
#include "kernels/test_ops.h"

namespace actorflow {
namespace {

std::string Cpu(int task, int cpu = 0) {
  return "/job:worker/replica:0/task:" + std::to_string(task) + "/device:CPU:" + std::to_string(cpu);
}

std::unique_ptr<Session> Open(const Graph* graph, const std::string& target) {
  SessionOptions options;
  options.target = target;
  auto session = NewSession(graph, options);
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? std::move(session).value() : nullptr;
}

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
}

// Member r's input: n values that differ per member and per element.
Tensor MemberInput(int rank, int64_t n) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = 0.25f * static_cast<float>(rank + 1) + 0.001f * i;
  return Tensor::FromVector<float>(v, Shape{n});
}

// One between-graph member: its own graph on its own device, fed x, fetching "out".
struct Member {
  Scope root = Scope::NewRootScope();
  std::unique_ptr<Session> session;
};

// Runs `build(scope)` -> output named "out" on each of `n` members concurrently, each
// through its own task's master, and returns every member's output.
std::vector<Tensor> RunBetweenGraph(LocalCluster& cluster, int n, int64_t elements,
                                    const std::function<Output(const Scope&, const Output&)>& build) {
  std::vector<Member> members(n);
  for (int r = 0; r < n; ++r) {
    Scope on = members[r].root.WithDevice(Cpu(r));
    auto x = Placeholder(on.WithOpName("x"), DType::kFloat32, Shape{elements});
    Identity(on.WithOpName("out"), build(on, x));
    EXPECT_TRUE(members[r].root.ok()) << members[r].root.status();
    members[r].session = Open(members[r].root.graph(), *cluster.Target("worker", r));
  }
  std::vector<std::future<StatusOr<Tensor>>> steps;
  for (int r = 0; r < n; ++r) {
    steps.push_back(std::async(std::launch::async, [&, r]() -> StatusOr<Tensor> {
      if (members[r].session == nullptr) return Internal("no session");
      RunOptions options;
      options.timeout_in_ms = 20000;
      std::vector<Tensor> out;
      AF_RETURN_IF_ERROR(members[r].session->Run(options, {{"x", MemberInput(r, elements)}},
                                                 {"out"}, {}, &out, nullptr));
      return out[0];
    }));
  }
  std::vector<Tensor> results;
  for (auto& step : steps) {
    StatusOr<Tensor> r = step.get();
    EXPECT_TRUE(r.ok()) << r.status();
    results.push_back(r.ok() ? *r : Tensor());
  }
  return results;
}

class CollectiveClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto started = LocalCluster::Start({{"worker", 3}});
    ASSERT_TRUE(started.ok()) << started.status();
    cluster_ = std::move(started).value();
  }
  CollectiveGroup Group(int n) const {
    CollectiveGroup group{"g", {}};
    for (int r = 0; r < n; ++r) group.devices.push_back(Cpu(r));
    return group;
  }
  std::unique_ptr<LocalCluster> cluster_;
};

TEST_F(CollectiveClusterTest, BetweenGraphAllReduceSumsEveryMembersInputIdenticallyStepAfterStep) {
  // 3 elements take recursive doubling; 40 000 take the ring (and chunks of ~53 KB).
  for (int64_t elements : {3, 40000}) {
    for (int round = 0; round < 2; ++round) {
      const CollectiveGroup group = Group(3);
      std::vector<Tensor> got = RunBetweenGraph(
          *cluster_, 3, elements,
          [&](const Scope& s, const Output& x) { return CollectiveAllReduce(s, x, group, 1, "mean"); });
      ASSERT_EQ(got.size(), 3u);
      ASSERT_TRUE(got[0].IsInitialized());
      for (int64_t i = 0; i < elements; i += std::max<int64_t>(1, elements / 7)) {
        double expected = 0;
        for (int r = 0; r < 3; ++r) expected += MemberInput(r, elements).data<float>()[i];
        EXPECT_NEAR(got[0].data<float>()[i], expected / 3, 1e-5) << "element " << i;
      }
      EXPECT_TRUE(SameBits(got[0], got[1]));
      EXPECT_TRUE(SameBits(got[0], got[2]));
    }
  }
}

TEST_F(CollectiveClusterTest, BroadcastAllGatherAndReduceScatterBetweenGraphs) {
  const CollectiveGroup group = Group(2);
  std::vector<Tensor> from_root = RunBetweenGraph(
      *cluster_, 2, 4, [&](const Scope& s, const Output& x) { return CollectiveBroadcast(s, x, group, 2, 1); });
  EXPECT_TRUE(SameBits(from_root[0], MemberInput(1, 4)));
  EXPECT_TRUE(SameBits(from_root[1], MemberInput(1, 4)));

  std::vector<Tensor> gathered = RunBetweenGraph(
      *cluster_, 2, 3, [&](const Scope& s, const Output& x) { return CollectiveAllGather(s, x, group, 3); });
  ASSERT_EQ(gathered[0].NumElements(), 6);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(gathered[0].data<float>()[i], MemberInput(0, 3).data<float>()[i]);
    EXPECT_EQ(gathered[0].data<float>()[3 + i], MemberInput(1, 3).data<float>()[i]);
  }
  EXPECT_TRUE(SameBits(gathered[0], gathered[1]));

  std::vector<Tensor> blocks = RunBetweenGraph(*cluster_, 2, 5, [&](const Scope& s, const Output& x) {
    return CollectiveReduceScatter(s, x, group, 4);
  });
  ASSERT_EQ(blocks[0].NumElements(), 3);  // 5 elements: blocks of 3 and 2
  ASSERT_EQ(blocks[1].NumElements(), 2);
  for (int i = 0; i < 5; ++i) {
    const float sum = MemberInput(0, 5).data<float>()[i] + MemberInput(1, 5).data<float>()[i];
    EXPECT_FLOAT_EQ(i < 3 ? blocks[0].data<float>()[i] : blocks[1].data<float>()[i - 3], sum);
  }
}

TEST_F(CollectiveClusterTest, InGraphMembersOfOneStepAllReduceAcrossTasks) {
  Scope root = Scope::NewRootScope();
  const CollectiveGroup group = Group(2);
  for (int r = 0; r < 2; ++r) {
    Scope on = root.WithDevice(Cpu(r));
    auto x = Const(on.WithOpName("x" + std::to_string(r)), MemberInput(r, 10));
    CollectiveAllReduce(on.WithOpName("sum" + std::to_string(r)), x, group, 7);
  }
  ASSERT_TRUE(root.ok()) << root.status();
  auto session = Open(root.graph(), *cluster_->Target("worker", 0));
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  Status s = session->Run({}, {"sum0", "sum1"}, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_FLOAT_EQ(out[0].data<float>()[9],
                  MemberInput(0, 10).data<float>()[9] + MemberInput(1, 10).data<float>()[9]);
  EXPECT_TRUE(SameBits(out[0], out[1]));
}

TEST_F(CollectiveClusterTest, AMemberWhoseTaskDiesIsNamedOnThePeerWaitingForIt) {
  Scope root = Scope::NewRootScope();
  Scope on = root.WithDevice(Cpu(0));
  auto x = Const(on.WithOpName("x"), MemberInput(0, 8));
  const Node* started =
      on.WithOpName("started").AddNode("TestNotify", {x}, {{"name", AttrValue("member0_waits")}});
  CollectiveAllReduce(on.WithOpName("sum"), Output(started), Group(2), 1);
  ASSERT_TRUE(root.ok()) << root.status();
  auto session = Open(root.graph(), *cluster_->Target("worker", 0));
  ASSERT_NE(session, nullptr);
  RunOptions options;
  options.timeout_in_ms = 30000;
  auto step = std::async(std::launch::async, [&] {
    return session->Run(options, {}, {"sum"}, {}, nullptr, nullptr);
  });
  ASSERT_TRUE(WaitForNotifications("member0_waits", 1, 10000)) << "member 0 never started";
  ASSERT_TRUE(cluster_->StopTask("worker", 1).ok());
  ASSERT_EQ(step.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "the member waited on past its peer's death";
  Status lost = step.get();
  EXPECT_EQ(lost.code(), Code::kUnavailable) << lost;
  EXPECT_THAT(lost.message(), ::testing::HasSubstr("/job:worker/replica:0/task:1")) << lost;
}

TEST_F(CollectiveClusterTest, AGroupNamingAPartialOrUnknownDeviceIsRefusedNamingIt) {
  Scope root = Scope::NewRootScope();
  Scope on = root.WithDevice(Cpu(0));
  auto x = Const(on.WithOpName("x"), 1.0f);
  CollectiveGroup partial{"g", {Cpu(0), "/job:worker/task:1"}};
  CollectiveAllReduce(on.WithOpName("partial"), x, partial, 1);
  CollectiveGroup without_me{"g", {Cpu(1), Cpu(2)}};
  CollectiveAllReduce(on.WithOpName("not_a_member"), x, without_me, 2);
  ASSERT_TRUE(root.ok()) << root.status();
  auto session = Open(root.graph(), *cluster_->Target("worker", 0));
  ASSERT_NE(session, nullptr);

  Status s = session->Run({}, {"partial"}, {}, nullptr);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), ::testing::HasSubstr("'/job:worker/task:1'"));
  EXPECT_THAT(s.message(), ::testing::HasSubstr(Cpu(1)));  // the full name it meant

  s = session->Run({}, {"not_a_member"}, {}, nullptr);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), ::testing::HasSubstr("not a member of group 'g'"));
}

TEST(CollectiveOpsTest, BuildingRefusesBadGroupsAndMergeOps) {
  Scope root = Scope::NewRootScope();
  auto x = Const(root, 1.0f);
  CollectiveAllReduce(root, x, CollectiveGroup{"g", {Cpu(0), Cpu(0)}}, 1);
  EXPECT_THAT(root.status().message(), ::testing::HasSubstr("twice"));
  Scope other = Scope::NewRootScope();
  CollectiveAllReduce(other, Const(other, 1.0f), CollectiveGroup{"g", {Cpu(0)}}, 1, "max");
  EXPECT_THAT(other.status().message(), ::testing::HasSubstr("'max'"));
  Scope flags = Scope::NewRootScope();
  CollectiveAllReduce(flags, Const(flags, true), CollectiveGroup{"g", {Cpu(0)}}, 1);
  EXPECT_THAT(flags.status().message(), ::testing::HasSubstr("bool"));
}

}  // namespace
}  // namespace actorflow
