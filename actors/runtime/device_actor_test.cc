// Device actor protocol, driven directly: a Send whose receiving device is gone is
// an error (Unavailable naming it), not a hang; a tensor that arrives before its
// Recv waits in the inbox; an abort releases a parked Recv; a step records its nodes
// only when asked to.

#include "actors/runtime/device_actor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "actors/protocol/messages.h"
#include "graph/graph.h"

namespace actorflow {
namespace {

const char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
const char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";

std::shared_ptr<const DevicePartition> SendPartition() {
  auto p = std::make_shared<DevicePartition>();
  p->device = kCpu0;
  p->graph = std::make_unique<Graph>();
  EXPECT_TRUE(p->graph->AddNode(NodeDef{"x", "Const", {}, {{"value", Tensor::Scalar(2.0f)}}, kCpu0}).ok());
  EXPECT_TRUE(p->graph
                  ->AddNode(NodeDef{"_send/x_0/to_cpu1",
                                    "_Send",
                                    {"x"},
                                    {{"tensor_name", AttrValue("x:0")},
                                     {"send_device", AttrValue(kCpu0)},
                                     {"recv_device", AttrValue(kCpu1)}},
                                    kCpu0})
                  .ok());
  p->targets = {"_send/x_0/to_cpu1"};
  return p;
}

std::shared_ptr<const DevicePartition> RecvPartition() {
  auto p = std::make_shared<DevicePartition>();
  p->device = kCpu1;
  p->graph = std::make_unique<Graph>();
  EXPECT_TRUE(p->graph
                  ->AddNode(NodeDef{"_recv/x_0/to_cpu1",
                                    "_Recv",
                                    {},
                                    {{"tensor_name", AttrValue("x:0")},
                                     {"send_device", AttrValue(kCpu0)},
                                     {"recv_device", AttrValue(kCpu1)},
                                     {"dtype", AttrValue(DType::kFloat32)}},
                                    kCpu1})
                  .ok());
  EXPECT_TRUE(p->graph->AddNode(NodeDef{"y", "Neg", {"_recv/x_0/to_cpu1"}, {}, kCpu1}).ok());
  p->fetches = {"y"};
  return p;
}

// x = 2 (Const) and y = Neg(x), fetched: one device, no Send/Recv.
std::shared_ptr<const DevicePartition> LocalPartition() {
  auto p = std::make_shared<DevicePartition>();
  p->device = kCpu0;
  p->graph = std::make_unique<Graph>();
  EXPECT_TRUE(p->graph->AddNode(NodeDef{"x", "Const", {}, {{"value", Tensor::Scalar(2.0f)}}, kCpu0}).ok());
  EXPECT_TRUE(p->graph->AddNode(NodeDef{"y", "Neg", {"x"}, {}, kCpu0}).ok());
  p->fetches = {"y"};
  return p;
}

class DeviceActorTest : public ::testing::Test {
 protected:
  DeviceActorTest() : system_(cfg_) {}

  DeviceActor Spawn(const std::string& name) {
    DeviceConfig c;
    c.name = name;
    c.type = "CPU";
    c.resources = std::make_shared<ResourceManager>();
    return SpawnDeviceActor(system_, c);
  }

  Status Register(caf::scoped_actor& self, const DeviceActor& dev, uint64_t id,
                  std::shared_ptr<const DevicePartition> p) {
    Status out = Internal("no answer");
    self->request(dev, std::chrono::seconds(10), register_atom::value,
                  PartitionRegistration{id, std::move(p), {}})
        .receive([&](Status& s) { out = s; },
                 [&](caf::error& e) { out = Unavailable(caf::to_string(e)); });
    return out;
  }

  RunPartitionResult Run(caf::scoped_actor& self, const DeviceActor& dev, int64_t step,
                         uint64_t id) {
    RunPartitionResult out;
    out.status = Internal("no answer");
    self->request(dev, std::chrono::seconds(10), run_atom::value,
                  RunPartitionRequest{step, id, {}, false})
        .receive([&](RunPartitionResult& r) { out = std::move(r); },
                 [&](caf::error& e) { out.status = Unavailable(caf::to_string(e)); });
    return out;
  }

  // `record` says whether the step records its nodes (RunPartitionRequest's
  // record_executed).
  RunPartitionResult RunRecording(caf::scoped_actor& self, const DeviceActor& dev, int64_t step,
                                  uint64_t id, bool record, bool collect_stats) {
    RunPartitionResult out;
    out.status = Internal("no answer");
    self->request(dev, std::chrono::seconds(10), run_atom::value,
                  RunPartitionRequest{step, id, {}, collect_stats, record})
        .receive([&](RunPartitionResult& r) { out = std::move(r); },
                 [&](caf::error& e) { out.status = Unavailable(caf::to_string(e)); });
    return out;
  }

  DeviceStats Stats(caf::scoped_actor& self, const DeviceActor& dev) {
    DeviceStats out;
    self->request(dev, std::chrono::seconds(10), device_stats_atom::value)
        .receive([&](DeviceStats& s) { out = s; }, [&](caf::error&) {});
    return out;
  }

  caf::actor_system_config cfg_;
  caf::actor_system system_;
};

TEST_F(DeviceActorTest, ASendWhoseReceiverIsGoneFailsNamingTheDevice) {
  caf::scoped_actor self{system_};
  DeviceActor sender = Spawn(kCpu0);
  DeviceActor receiver = Spawn(kCpu1);
  caf::anon_send(sender, peers_atom::value,
                 std::vector<DevicePeer>{{kCpu0, "CPU", sender}, {kCpu1, "CPU", receiver}});
  ASSERT_TRUE(Register(self, sender, 1, SendPartition()).ok());

  self->monitor(receiver);
  self->send_exit(receiver, caf::exit_reason::user_shutdown);
  self->receive([](const caf::down_msg&) {});
  // The sender learns of the death through its own down message, which may trail
  // ours: run steps until it has (bounded), and never longer.
  RunPartitionResult r;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (int64_t step = 7; std::chrono::steady_clock::now() < deadline; ++step) {
    r = Run(self, sender, step, 1);
    if (!r.status.ok()) break;
  }
  EXPECT_EQ(r.status.code(), Code::kUnavailable) << r.status;
  EXPECT_NE(r.status.message().find("CPU:1"), std::string::npos) << r.status;
  self->send_exit(sender, caf::exit_reason::user_shutdown);
}

TEST_F(DeviceActorTest, ATensorSentBeforeItsRecvWaitsInTheInbox) {
  caf::scoped_actor self{system_};
  DeviceActor sender = Spawn(kCpu0);
  DeviceActor receiver = Spawn(kCpu1);
  std::vector<DevicePeer> peers{{kCpu0, "CPU", sender}, {kCpu1, "CPU", receiver}};
  caf::anon_send(sender, peers_atom::value, peers);
  caf::anon_send(receiver, peers_atom::value, peers);
  ASSERT_TRUE(Register(self, sender, 1, SendPartition()).ok());
  ASSERT_TRUE(Register(self, receiver, 2, RecvPartition()).ok());

  ASSERT_TRUE(Run(self, sender, 5, 1).status.ok());
  // The sender's step is over; its tensor waits at the receiver until step 5 runs.
  EXPECT_EQ(Stats(self, receiver).inbox_tensors, 1);
  RunPartitionResult r = Run(self, receiver, 5, 2);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.fetches[0].data<float>()[0], -2.0f);
  DeviceStats after = Stats(self, receiver);
  EXPECT_EQ(after.inbox_tensors, 0);
  EXPECT_EQ(after.pending_recvs, 0);
  self->send_exit(sender, caf::exit_reason::user_shutdown);
  self->send_exit(receiver, caf::exit_reason::user_shutdown);
}

TEST_F(DeviceActorTest, AnAbortAnswersTheStepAndReleasesItsParkedRecv) {
  caf::scoped_actor self{system_};
  DeviceActor receiver = Spawn(kCpu1);
  ASSERT_TRUE(Register(self, receiver, 2, RecvPartition()).ok());
  auto pending = self->request(receiver, std::chrono::seconds(10), run_atom::value,
                               RunPartitionRequest{9, 2, {}, false});
  EXPECT_EQ(Stats(self, receiver).pending_recvs, 1);
  caf::anon_send(receiver, abort_atom::value, AbortRequest{9, Cancelled("test abort")});
  Status status = Internal("no answer");
  pending.receive([&](RunPartitionResult& r) { status = r.status; },
                  [&](caf::error& e) { status = Unavailable(caf::to_string(e)); });
  EXPECT_EQ(status.code(), Code::kCancelled) << status;
  DeviceStats after = Stats(self, receiver);
  EXPECT_EQ(after.pending_recvs, 0);
  EXPECT_EQ(after.active_steps, 0);
  self->send_exit(receiver, caf::exit_reason::user_shutdown);
}

TEST_F(DeviceActorTest, AStepRecordsItsNodesOnlyWhenAsked) {
  caf::scoped_actor self{system_};
  DeviceActor dev = Spawn(kCpu0);
  ASSERT_TRUE(Register(self, dev, 3, LocalPartition()).ok());
  const std::vector<std::string> both{"x", "y"};

  // No run metadata wanted: the same answer, nothing recorded per node (stats are
  // part of the records, so collect_stats alone asks for nothing).
  RunPartitionResult quiet = RunRecording(self, dev, 1, 3, /*record=*/false, true);
  ASSERT_TRUE(quiet.status.ok()) << quiet.status;
  EXPECT_EQ(quiet.fetches[0].data<float>()[0], -2.0f);
  EXPECT_TRUE(quiet.executed_nodes.empty());
  EXPECT_TRUE(quiet.executed_start_micros.empty());
  EXPECT_TRUE(quiet.step_stats.empty());

  // A traced step: its nodes in start order and their stats.
  RunPartitionResult traced = RunRecording(self, dev, 2, 3, /*record=*/true, true);
  ASSERT_TRUE(traced.status.ok()) << traced.status;
  EXPECT_EQ(traced.executed_nodes, both);
  EXPECT_EQ(traced.executed_start_micros.size(), 2u);
  ASSERT_EQ(traced.step_stats.size(), 2u);
  EXPECT_EQ(traced.step_stats[0].device, kCpu0);

  // Without the flag (a request alone) the step records its nodes, and stats only
  // with collect_stats.
  RunPartitionResult plain = Run(self, dev, 3, 3);
  ASSERT_TRUE(plain.status.ok()) << plain.status;
  EXPECT_EQ(plain.executed_nodes, both);
  EXPECT_TRUE(plain.step_stats.empty());
  self->send_exit(dev, caf::exit_reason::user_shutdown);
}

TEST_F(DeviceActorTest, DeregisteredPartitionsAreForgotten) {
  caf::scoped_actor self{system_};
  DeviceActor dev = Spawn(kCpu0);
  ASSERT_TRUE(Register(self, dev, 3, LocalPartition()).ok());
  ASSERT_TRUE(Register(self, dev, 4, LocalPartition()).ok());
  ASSERT_EQ(Stats(self, dev).partitions, 2);

  Status status = Internal("no answer");
  // Unknown ids (5) are ignored: a master deregisters all it may have registered.
  self->request(dev, std::chrono::seconds(10), deregister_atom::value,
                std::vector<uint64_t>{3, 5})
      .receive([&](Status& s) { status = s; },
               [&](caf::error& e) { status = Unavailable(caf::to_string(e)); });
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(Stats(self, dev).partitions, 1);
  RunPartitionResult gone = Run(self, dev, 1, 3);
  EXPECT_EQ(gone.status.code(), Code::kInternal) << gone.status;
  EXPECT_THAT(gone.status.message(), ::testing::HasSubstr("unknown partition 3"));
  EXPECT_TRUE(Run(self, dev, 2, 4).status.ok());
  self->send_exit(dev, caf::exit_reason::user_shutdown);
}

}  // namespace
}  // namespace actorflow
