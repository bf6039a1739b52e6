// Device supervision of a Server (actors/runtime/device_supervisor.h), in this process and
// driven through its port as a remote client would: a kernel that throws fails only
// its step, a device actor that is killed is restarted (keeping its variables) and
// later steps run, and a device that keeps dying fails the server so that its process
// can exit. The throwing kernel is TestThrow (tests/throwing_op.cc).
//
// Every wait is bounded; no sleeps.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <caf/io/all.hpp>

#include "actors/transport/connect.h"
#include "actors/cluster/server.h"
#include "actors/cluster/session_factory.h"
#include "actors/protocol/wire.h"
#include "graph/ops.h"
#include "graph/scope.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;
using std::chrono::milliseconds;

// A one-task Server on a free loopback port, whose log lines and failure the test
// can wait for.
class SupervisedServer {
 public:
  explicit SupervisedServer(int max_device_restarts) {
    auto spec = ClusterSpec::FromJson(R"({"worker": ["127.0.0.1:1"]})");
    EXPECT_TRUE(spec.ok()) << spec.status();
    ServerOptions options;
    options.cluster = *spec;
    options.task = TaskId{"worker", 0};
    options.port_override = 0;
    options.max_device_restarts = max_device_restarts;
    options.log = [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.push_back(line);
      cv_.notify_all();
    };
    options.on_failure = [this](const Status& failure) {
      std::lock_guard<std::mutex> lock(mu_);
      failure_ = failure;
      cv_.notify_all();
    };
    auto started = Server::Start(options);
    EXPECT_TRUE(started.ok()) << started.status();
    if (started.ok()) server_ = std::move(started).value();
  }
  ~SupervisedServer() {
    if (server_) server_->Stop();
  }

  Server* server() { return server_.get(); }

  // Waits until `count` log lines contain `text`.
  bool WaitForLog(const std::string& text, size_t count, milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] {
      size_t n = 0;
      for (const std::string& line : lines_) n += line.find(text) != std::string::npos;
      return n >= count;
    });
  }
  std::vector<std::string> lines() {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }
  std::optional<Status> WaitForFailure(milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return failure_.has_value(); });
    return failure_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> lines_;
  std::optional<Status> failure_;
  std::unique_ptr<Server> server_;  // last: its callbacks use the members above
};

// A client actor system that lists a task's devices and kills one, as a crash of
// the device actor would end it.
class DeviceKiller {
 public:
  DeviceKiller() {
    cfg_.load<caf::io::middleman>();
    cfg_.set("scheduler.policy", caf::atom("sharing"));
    cfg_.set("logger.console", caf::atom("none"));
    RegisterMessageTypes(cfg_);
    system_ = std::make_unique<caf::actor_system>(cfg_);
  }
  ~DeviceKiller() { ShutDownClusterSystem(system_); }

  StatusOr<std::vector<DevicePeer>> Devices(const std::string& target) {
    std::string host;
    uint16_t port = 0;
    AF_RETURN_IF_ERROR(ParseTarget(target, &host, &port));
    AF_ASSIGN_OR_RETURN(FrontActor front,
                        ConnectToServer(*system_, host, port, std::chrono::seconds(10), target));
    caf::scoped_actor self{*system_};
    StatusOr<std::vector<DevicePeer>> out = Internal("no answer");
    self->request(front, std::chrono::seconds(10), devices_atom::value)
        .receive([&](std::vector<DevicePeer>& d) { out = d; },
                 [&](caf::error& e) { out = Unavailable(caf::to_string(e)); });
    return out;
  }

  void Kill(const DevicePeer& device) {
    caf::anon_send_exit(device.actor, caf::exit_reason::kill);
  }

 private:
  caf::actor_system_config cfg_;
  std::unique_ptr<caf::actor_system> system_;
};

// v = 5 on the task's device; "fine" = -v; "starved" and "broken" throw.
struct SupervisedGraph {
  Scope root = Scope::NewRootScope();
  SupervisedGraph() {
    auto v = Variable(root.WithOpName("v"), Shape{}, DType::kFloat32);
    Assign(root.WithOpName("init"), v, Const(root.WithOpName("five"), 5.0f));
    Neg(root.WithOpName("fine"), v);
    auto one = Const(root.WithOpName("one"), 1.0f);
    root.WithOpName("starved").AddNode("TestThrow", {one}, {{"what", AttrValue("bad_alloc")}});
    root.WithOpName("broken").AddNode("TestThrow", {one}, {{"what", AttrValue("runtime_error")}});
    EXPECT_TRUE(root.ok()) << root.status();
  }
};

std::unique_ptr<Session> Open(const Graph* graph, const std::string& target) {
  SessionOptions options;
  options.target = target;
  auto session = NewSession(graph, options);
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? std::move(session).value() : nullptr;
}

Status RunFine(Session* session, float* value) {
  std::vector<Tensor> out;
  Status s = session->Run({}, {"fine"}, {}, &out);
  if (s.ok()) *value = out[0].data<float>()[0];
  return s;
}

TEST(DeviceSupervisionTest, AKernelThatThrowsFailsItsStepAndTheDeviceServesTheNext) {
  SupervisedServer task(/*max_device_restarts=*/5);
  ASSERT_NE(task.server(), nullptr);
  SupervisedGraph g;
  auto session = Open(g.root.graph(), task.server()->target());
  ASSERT_NE(session, nullptr);
  ASSERT_TRUE(session->Run({}, {}, {"init"}, nullptr).ok());

  std::vector<Tensor> out;
  Status starved = session->Run({}, {"starved"}, {}, &out);
  EXPECT_EQ(starved.code(), Code::kResourceExhausted) << starved;
  EXPECT_THAT(starved.message(), HasSubstr("node 'starved' (TestThrow)"));
  Status broken = session->Run({}, {"broken"}, {}, &out);
  EXPECT_EQ(broken.code(), Code::kInternal) << broken;
  EXPECT_THAT(broken.message(), HasSubstr("TestThrow was asked to throw"));

  float value = 0;
  Status fine = RunFine(session.get(), &value);
  ASSERT_TRUE(fine.ok()) << fine;
  EXPECT_EQ(value, -5.0f);
  // The device survived on its own: nothing was restarted.
  EXPECT_TRUE(task.lines().empty()) << task.lines().front();
  EXPECT_TRUE(task.server()->failure().ok());
}

TEST(DeviceSupervisionTest, AKilledDeviceIsRestartedWithItsVariablesAndLaterStepsRun) {
  SupervisedServer task(/*max_device_restarts=*/5);
  ASSERT_NE(task.server(), nullptr);
  SupervisedGraph g;
  auto session = Open(g.root.graph(), task.server()->target());
  ASSERT_NE(session, nullptr);
  ASSERT_TRUE(session->Run({}, {}, {"init"}, nullptr).ok());
  float value = 0;
  ASSERT_TRUE(RunFine(session.get(), &value).ok());

  DeviceKiller killer;
  auto before = killer.Devices(task.server()->target());
  ASSERT_TRUE(before.ok()) << before.status();
  killer.Kill(before->front());
  ASSERT_TRUE(task.WaitForLog("restarted it", 1, milliseconds(10000)));
  EXPECT_THAT(task.lines().front(), HasSubstr("device " + before->front().name + " stopped"));

  // Steps may still meet the old actor until the master hears of the restart (the
  // server logs the restart before it tells its masters; under load that notice can
  // come a few steps later): each a clear Unavailable naming the device, then steps
  // run again, well within the bound.
  value = 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  Status step = RunFine(session.get(), &value);
  while (!step.ok() && std::chrono::steady_clock::now() < give_up) {
    EXPECT_EQ(step.code(), Code::kUnavailable) << step;
    EXPECT_THAT(step.message(), HasSubstr(before->front().name));
    std::this_thread::yield();
    step = RunFine(session.get(), &value);
  }
  ASSERT_TRUE(step.ok()) << step;
  EXPECT_EQ(value, -5.0f) << "the variable lives on in the restarted device";

  auto after = killer.Devices(task.server()->target());
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->front().name, before->front().name);
  EXPECT_NE(after->front().actor, before->front().actor);
  // A new session (a new master) uses the new actor from the start.
  auto fresh = Open(g.root.graph(), task.server()->target());
  ASSERT_NE(fresh, nullptr);
  Status s = RunFine(fresh.get(), &value);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_TRUE(task.server()->failure().ok());
}

TEST(DeviceSupervisionTest, ADeviceThatKeepsDyingFailsTheServer) {
  SupervisedServer task(/*max_device_restarts=*/1);
  ASSERT_NE(task.server(), nullptr);
  DeviceKiller killer;
  auto first = killer.Devices(task.server()->target());
  ASSERT_TRUE(first.ok()) << first.status();
  killer.Kill(first->front());
  ASSERT_TRUE(task.WaitForLog("restarted it", 1, milliseconds(10000)));
  auto second = killer.Devices(task.server()->target());
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_NE(second->front().actor, first->front().actor);
  killer.Kill(second->front());

  std::optional<Status> failure = task.WaitForFailure(milliseconds(10000));
  ASSERT_TRUE(failure.has_value()) << "on_failure was not called";
  EXPECT_EQ(failure->code(), Code::kUnavailable) << *failure;
  EXPECT_THAT(failure->message(), HasSubstr(first->front().name));
  EXPECT_THAT(failure->message(), HasSubstr("the server has failed"));
  EXPECT_EQ(task.server()->failure(), *failure);
}

}  // namespace
}  // namespace actorflow
