// The session lifecycle of a long-lived Server: every session a client opens gets a
// master and registers partitions on the devices of every task it uses; closing the
// session must free all of it, or a server that serves many sessions grows without
// bound. Observed from outside, as an operator would: through the front actors'
// stats and the device actors' stats of a real LocalCluster on loopback.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <vector>

#include <caf/io/all.hpp>

#include "actors/transport/connect.h"
#include "actors/cluster/local_cluster.h"
#include "actors/protocol/messages.h"
#include "actors/cluster/session_factory.h"
#include "graph/ops.h"
#include "graph/scope.h"

namespace actorflow {
namespace {


// A client actor system that asks the tasks' front and device actors for stats.
class Observer {
 public:
  Observer() {
    cfg_.load<caf::io::middleman>();
    cfg_.set("scheduler.policy", caf::atom("sharing"));
    cfg_.set("logger.console", caf::atom("none"));
    RegisterMessageTypes(cfg_);
    system_ = std::make_unique<caf::actor_system>(cfg_);
  }

  StatusOr<FrontActor> Connect(const std::string& target) {
    std::string host;
    uint16_t port = 0;
    AF_RETURN_IF_ERROR(ParseTarget(target, &host, &port));
    return ConnectToServer(*system_, host, port, std::chrono::seconds(10), target);
  }

  StatusOr<FrontStats> Stats(const FrontActor& front) {
    caf::scoped_actor self{*system_};
    StatusOr<FrontStats> out = Internal("no answer");
    self->request(front, std::chrono::seconds(10), front_stats_atom::value)
        .receive([&](FrontStats& s) { out = s; },
                 [&](caf::error& e) { out = Unavailable(caf::to_string(e)); });
    return out;
  }

  StatusOr<std::vector<DevicePeer>> Devices(const FrontActor& front) {
    caf::scoped_actor self{*system_};
    StatusOr<std::vector<DevicePeer>> out = Internal("no answer");
    self->request(front, std::chrono::seconds(10), devices_atom::value)
        .receive([&](std::vector<DevicePeer>& d) { out = d; },
                 [&](caf::error& e) { out = Unavailable(caf::to_string(e)); });
    return out;
  }

  // Partitions held by the devices, summed.
  int64_t Partitions(const std::vector<DevicePeer>& devices) {
    caf::scoped_actor self{*system_};
    int64_t total = 0;
    for (const DevicePeer& d : devices) {
      self->request(d.actor, std::chrono::seconds(10), device_stats_atom::value)
          .receive([&](DeviceStats& s) { total += s.partitions; },
                   [&](caf::error&) { total += 1000000; });  // unreachable: never "freed"
    }
    return total;
  }

 private:
  caf::actor_system_config cfg_;
  std::unique_ptr<caf::actor_system> system_;
};

TEST(ServerLifecycleTest, ClosedSessionsLeaveNoPartitionsOrMastersBehind) {
  auto cluster = LocalCluster::Start({{"ps", 1}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto worker_target = (*cluster)->Target("worker", 0);
  auto ps_target = (*cluster)->Target("ps", 0);
  ASSERT_TRUE(worker_target.ok() && ps_target.ok());

  // w lives on the ps task; the step runs on the worker: each session registers
  // partitions on both tasks.
  Scope root = Scope::NewRootScope();
  Scope ps = root.WithDevice("/job:ps/task:0");
  Scope worker = root.WithDevice("/job:worker/task:0");
  auto w = Variable(ps.WithOpName("w"), Shape{2}, DType::kFloat32);
  Assign(ps.WithOpName("w_init"), w, Const(ps.WithOpName("w0"), Tensor::FromVector<float>({1, 2})));
  Neg(worker.WithOpName("y"), w);
  ASSERT_TRUE(root.ok()) << root.status();

  Observer observer;
  auto worker_front = observer.Connect(*worker_target);
  auto ps_front = observer.Connect(*ps_target);
  ASSERT_TRUE(worker_front.ok()) << worker_front.status();
  ASSERT_TRUE(ps_front.ok()) << ps_front.status();
  auto worker_devices = observer.Devices(*worker_front);
  auto ps_devices = observer.Devices(*ps_front);
  ASSERT_TRUE(worker_devices.ok() && ps_devices.ok());
  std::vector<DevicePeer> all = *worker_devices;
  all.insert(all.end(), ps_devices->begin(), ps_devices->end());

  constexpr int kSessions = 5;
  std::vector<std::unique_ptr<Session>> sessions;
  SessionOptions options;
  options.target = *worker_target;
  for (int i = 0; i < kSessions; ++i) {
    auto s = NewSession(root.graph(), options);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_TRUE((*s)->Run({}, {}, {"w_init"}, nullptr).ok());
    std::vector<Tensor> out;
    Status ran = (*s)->Run({}, {"y"}, {}, &out);
    ASSERT_TRUE(ran.ok()) << ran;
    EXPECT_EQ(out[0].data<float>()[1], -2.0f);
    sessions.push_back(std::move(s).value());
  }
  // Every session's partitions are there while it is open (two plans each, on the
  // ps and the worker).
  auto open = observer.Stats(*worker_front);
  ASSERT_TRUE(open.ok()) << open.status();
  EXPECT_EQ(open->sessions, kSessions);
  EXPECT_GE(observer.Partitions(all), 2 * kSessions);

  // Close returns once the server has freed the session everywhere.
  for (auto& s : sessions) {
    Status closed = s->Close();
    ASSERT_TRUE(closed.ok()) << closed;
  }
  auto after = observer.Stats(*worker_front);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->sessions, 0) << "the worker still holds masters of closed sessions";
  EXPECT_EQ(observer.Partitions(all), 0) << "devices still hold partitions of closed sessions";

  // The server keeps serving: a new session works and holds only its own.
  auto again = NewSession(root.graph(), options);
  ASSERT_TRUE(again.ok()) << again.status();
  std::vector<Tensor> out;
  ASSERT_TRUE((*again)->Run({}, {"y"}, {}, &out).ok());
  EXPECT_THAT(observer.Partitions(all), ::testing::AllOf(::testing::Gt(0), ::testing::Lt(10)));
}

}  // namespace
}  // namespace actorflow
