// Steps an in-process session sends straight to its device (actors/runtime/direct_steps.h):
// the same answers, errors and deadlines as through the master, and the master
// still for what needs it.
#include "actors/runtime/direct_steps.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

#include "actors/runtime/device_actor.h"
#include "actors/runtime/local_session.h"
#include "actors/protocol/messages.h"
#include "graph/ops.h"
#include "graph/scope.h"

namespace actorflow {
namespace {

std::unique_ptr<ActorSession> MakeSession(const Graph* graph, int cpus) {
  SessionOptions options;
  options.device_count["CPU"] = cpus;
  auto session = NewActorSession(graph, options);
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? std::move(session).value() : nullptr;
}

// ratio = n / d (int32, both fed), on CPU:0.
struct RatioGraph {
  Scope root = Scope::NewRootScope();
  RatioGraph() {
    Scope cpu = root.WithDevice("/cpu:0");
    auto n = Placeholder(cpu.WithOpName("n"), DType::kInt32, Shape{});
    auto d = Placeholder(cpu.WithOpName("d"), DType::kInt32, Shape{});
    Div(cpu.WithOpName("ratio"), n, d);
  }
  static FeedList Feeds(int n, int d) {
    return {{"n", Tensor::Scalar<int32_t>(n)}, {"d", Tensor::Scalar<int32_t>(d)}};
  }
};

TEST(DirectStepsTest, LaterStepsOfAOnePartitionPlanSkipTheMasterWithTheSameAnswers) {
  RatioGraph g;
  ASSERT_TRUE(g.root.ok()) << g.root.status();
  for (int cpus : {1, 2}) {  // with two devices the run is a plain send
    auto session = MakeSession(g.root.graph(), cpus);
    ASSERT_NE(session, nullptr);
    std::vector<Tensor> out;
    for (int n = 10; n < 15; ++n) {
      // A fetch twice and a fed fetch: placed as the master places them.
      ASSERT_TRUE(session->Run(RatioGraph::Feeds(n, 2), {"ratio", "d", "ratio"}, {}, &out).ok());
      ASSERT_EQ(out.size(), 3u);
      EXPECT_EQ(out[0].data<int32_t>()[0], n / 2);
      EXPECT_EQ(out[1].data<int32_t>()[0], 2);
      EXPECT_EQ(out[2].data<int32_t>()[0], n / 2);
    }
    EXPECT_EQ(session->DirectStepCount(), 4) << cpus << " devices";  // the first planned it
  }
}

TEST(DirectStepsTest, AStepThatWantsRunMetadataStillGoesThroughTheMaster) {
  RatioGraph g;
  auto session = MakeSession(g.root.graph(), 1);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run(RatioGraph::Feeds(8, 4), {"ratio"}, {}, &out).ok());
  ASSERT_TRUE(session->Run(RatioGraph::Feeds(8, 4), {"ratio"}, {}, &out).ok());
  ASSERT_EQ(session->DirectStepCount(), 1);
  RunMetadata metadata;
  ASSERT_TRUE(session->Run({}, RatioGraph::Feeds(9, 3), {"ratio"}, {}, &out, &metadata).ok());
  EXPECT_EQ(out[0].data<int32_t>()[0], 3);
  EXPECT_THAT(metadata.executed_nodes, ::testing::Contains("ratio"));
  EXPECT_EQ(session->DirectStepCount(), 1);
}

// The same bad input gives the same Status on the first step (through the master)
// and on a later one (straight to the device).
TEST(DirectStepsTest, KernelErrorsAndBadFeedsReadAsTheMastersDo) {
  RatioGraph g;
  auto first = MakeSession(g.root.graph(), 1);
  auto warm = MakeSession(g.root.graph(), 1);
  std::vector<Tensor> out;
  ASSERT_TRUE(warm->Run(RatioGraph::Feeds(4, 2), {"ratio"}, {}, &out).ok());

  const Status by_master = first->Run(RatioGraph::Feeds(4, 0), {"ratio"}, {}, &out);
  const Status direct = warm->Run(RatioGraph::Feeds(4, 0), {"ratio"}, {}, &out);
  EXPECT_EQ(by_master.code(), Code::kInvalidArgument) << by_master;
  EXPECT_THAT(direct.message(), ::testing::HasSubstr("ratio")) << direct;
  EXPECT_EQ(direct.ToString(), by_master.ToString());

  FeedList wrong_dtype = {{"n", Tensor::Scalar<float>(4)}, {"d", Tensor::Scalar<int32_t>(2)}};
  auto fresh = MakeSession(g.root.graph(), 1);
  const Status bad_by_master = fresh->Run(wrong_dtype, {"ratio"}, {}, &out);
  const Status bad_direct = warm->Run(wrong_dtype, {"ratio"}, {}, &out);
  EXPECT_EQ(bad_by_master.code(), Code::kInvalidArgument) << bad_by_master;
  EXPECT_EQ(bad_direct.ToString(), bad_by_master.ToString());
  EXPECT_EQ(warm->DirectStepCount(), 2);  // both answered without the master

  // The session is still usable after both.
  ASSERT_TRUE(warm->Run(RatioGraph::Feeds(9, 3), {"ratio"}, {}, &out).ok());
  EXPECT_EQ(out[0].data<int32_t>()[0], 3);
}

TEST(DirectStepsTest, AMissedDeadlineAbortsTheStepOnItsDeviceAndTheNextStepRuns) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root.WithOpName("x"), DType::kFloat32, Shape{});
  const Node* slow = root.WithOpName("slow").AddNode(
      "TestDelay", {x}, {{"delay_ms", AttrValue(int64_t{300})}});
  ASSERT_TRUE(root.ok()) << root.status();
  const FeedList feeds = {{"x", Tensor::Scalar<float>(5)}};
  RunOptions quick;
  quick.timeout_in_ms = 50;

  auto fresh = MakeSession(root.graph(), 1);
  const Status by_master = fresh->Run(quick, feeds, {slow->name()}, {}, nullptr, nullptr);
  EXPECT_EQ(by_master.code(), Code::kDeadlineExceeded) << by_master;

  auto session = MakeSession(root.graph(), 1);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run(feeds, {slow->name()}, {}, &out).ok());
  const Status direct = session->Run(quick, feeds, {slow->name()}, {}, &out, nullptr);
  EXPECT_EQ(direct.ToString(), by_master.ToString());
  EXPECT_EQ(session->DirectStepCount(), 1);

  // The aborted step left nothing running on the device.
  auto statuses = session->DeviceStatuses();
  ASSERT_TRUE(statuses.ok()) << statuses.status();
  EXPECT_EQ(statuses->front().active_steps, 0);
  ASSERT_TRUE(session->Run(feeds, {slow->name()}, {}, &out).ok());
  EXPECT_EQ(out[0].data<float>()[0], 5.0f);
  EXPECT_EQ(session->DirectStepCount(), 2);
}

TEST(DirectStepsTest, APlanOfTwoPartitionsAlwaysGoesThroughTheMaster) {
  Scope root = Scope::NewRootScope();
  auto a = Placeholder(root.WithDevice("/cpu:0").WithOpName("a"), DType::kFloat32, Shape{});
  auto b = Neg(root.WithDevice("/cpu:1").WithOpName("b"), a);
  Neg(root.WithDevice("/cpu:0").WithOpName("c"), b);
  ASSERT_TRUE(root.ok()) << root.status();
  auto session = MakeSession(root.graph(), 2);
  std::vector<Tensor> out;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(session->Run({{"a", Tensor::Scalar<float>(i)}}, {"c"}, {}, &out).ok());
    EXPECT_EQ(out[0].data<float>()[0], static_cast<float>(i));
  }
  EXPECT_EQ(session->DirectStepCount(), 0);
}

// A DirectRun its device never answers (the device is gone) still answers its
// session: Unavailable naming the device, not a wait without end.
TEST(DirectStepsTest, ARunDroppedByAnEndedDeviceAnswersUnavailable) {
  caf::actor_system_config cfg;
  RegisterMessageTypes(cfg);
  caf::actor_system system{cfg};
  DeviceConfig config;
  config.name = "/job:localhost/replica:0/task:0/device:CPU:0";
  config.type = "CPU";
  config.resources = std::make_shared<ResourceManager>();
  config.services = std::make_shared<TaskServices>();
  DeviceActor device = SpawnDeviceActor(system, config);
  {
    caf::scoped_actor self{system};
    self->monitor(device);
    self->send_exit(device, caf::exit_reason::user_shutdown);
    self->receive([](const caf::down_msg&) {});
  }
  auto run = std::make_shared<DirectRun>();
  run->request.step_id = 7;
  run->device = std::make_shared<const std::string>(config.name);
  auto reply = std::make_shared<PartitionReply>();
  run->reply = reply;
  caf::anon_send(device, direct_run_atom::value, std::move(run));
  std::unique_lock<std::mutex> lock(reply->mu);
  ASSERT_TRUE(reply->cv.wait_for(lock, std::chrono::seconds(10), [&] { return reply->done; }));
  EXPECT_EQ(reply->result.status.code(), Code::kUnavailable) << reply->result.status;
  EXPECT_THAT(reply->result.status.message(), ::testing::HasSubstr(config.name));
}

}  // namespace
}  // namespace actorflow
