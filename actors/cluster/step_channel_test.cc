// The step channel (actors/cluster/step_channel.h) against a LocalCluster task on loopback:
// remote steps go on it with the answers, errors, deadlines and run metadata they
// get over CAF (a LocalCluster's task is in this process: its clients run their
// steps in process); malformed frames end only their own connection; a task that
// stops mid-step ends the step Unavailable; a full server turns a client to CAF; a
// client reaches a task of its host by its host-local socket, by TCP when told so,
// and a task of its process without a socket.
#include "actors/cluster/step_channel.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "actors/cluster/client_session.h"
#include "actors/cluster/local_cluster.h"
#include "actors/runtime/task_services.h"
#include "graph/ops.h"
#include "graph/scope.h"
#include "graph/status_testing.h"

namespace actorflow {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

constexpr char kWorker[] = "/job:worker/task:0";

struct Fixture {
  std::unique_ptr<LocalCluster> cluster;
  std::string target;

  Fixture() {
    auto started = LocalCluster::Start({{"worker", 1}});
    EXPECT_TRUE(started.ok()) << started.status();
    if (!started.ok()) return;
    cluster = std::move(started).value();
    target = cluster->Target("worker", 0).value();
  }
  const Server* server() const { return cluster->server("worker", 0); }
  int64_t steps() const { return server()->steps_on_step_channel(); }

  // connect_timeout_ms also bounds closing the session at the end.
  std::unique_ptr<ClientSession> Open(const Scope& root, bool step_channel,
                                      int64_t connect_timeout_ms = 10000) const {
    SessionOptions options;
    options.target = target;
    options.step_channel = step_channel;
    options.connect_timeout_in_ms = connect_timeout_ms;
    auto session = ClientSession::Create(root, options);
    EXPECT_TRUE(session.ok()) << session.status();
    return session.ok() ? std::move(session).value() : nullptr;
  }
};

TEST(StepChannelTest, RemoteStepsGoOnItWithTheAnswersTheyGetOverCaf) {
  Fixture f;
  ASSERT_NE(f.cluster, nullptr);
  ASSERT_NE(f.server()->step_port(), 0);
  Scope root = Scope::NewRootScope().WithDevice(kWorker);
  auto x = Placeholder(root, DType::kFloat32, Shape{3});
  auto y = Mul(root, x, 2.0f);
  auto on_channel = f.Open(root, true);
  auto on_caf = f.Open(root, false);
  ASSERT_NE(on_channel, nullptr);
  ASSERT_NE(on_caf, nullptr);
  const int64_t before = f.steps();
  for (int i = 0; i < 5; ++i) {
    Tensor fed = Tensor::FromVector<float>({1.0f * i, -2.5f, 1e6f}, Shape{3});
    std::vector<Tensor> a, b;
    ASSERT_OK(on_channel->Run({{x, fed}}, {y, x}, &a));
    ASSERT_OK(on_caf->Run({{x, fed}}, {y, x}, &b));
    ASSERT_EQ(a.size(), 2u);
    ASSERT_EQ(b.size(), 2u);
    for (size_t t = 0; t < 2; ++t) {
      ASSERT_EQ(a[t].shape(), b[t].shape());
      EXPECT_EQ(0, std::memcmp(a[t].raw_data(), b[t].raw_data(), a[t].TotalBytes()));
    }
    EXPECT_EQ(a[0].data<float>()[0], 2.0f * i);
  }
  // Only the session that uses the channel counted there, one per step.
  EXPECT_EQ(f.steps() - before, 5);
}

TEST(StepChannelTest, ErrorsDeadlinesAndRunMetadataComeBackAsOverCaf) {
  Fixture f;
  ASSERT_NE(f.cluster, nullptr);
  Scope root = Scope::NewRootScope().WithDevice(kWorker);
  auto x = Placeholder(root, DType::kFloat32, Shape{2});
  auto y = Add(root, x, 1.0f);
  Queue queue = FIFOQueue(root, {DType::kFloat32}, {Shape{}}, 10);
  auto blocked = QueueDequeue(root, queue)[0];
  auto on_channel = f.Open(root, true);
  auto on_caf = f.Open(root, false);
  ASSERT_NE(on_channel, nullptr);
  ASSERT_NE(on_caf, nullptr);
  const int64_t before = f.steps();
  std::vector<Tensor> out;

  // A feed of the wrong shape: the master's error, word for word.
  Status a = on_channel->Run({{x, Tensor::FromVector<float>({1, 2, 3}, Shape{3})}}, {y}, &out);
  Status b = on_caf->Run({{x, Tensor::FromVector<float>({1, 2, 3}, Shape{3})}}, {y}, &out);
  EXPECT_FALSE(a.ok());
  EXPECT_EQ(a.code(), b.code()) << a << " vs " << b;
  EXPECT_EQ(a.message(), b.message());

  // The step's deadline ends a blocked step, and the task stays usable.
  RunOptions options;
  options.timeout_in_ms = 150;
  a = on_channel->Run(options, {}, {blocked}, {}, &out, nullptr);
  EXPECT_EQ(a.code(), Code::kDeadlineExceeded) << a;
  EXPECT_THAT(a.message(), HasSubstr("150 ms"));

  // Run metadata: the same executed nodes either way.
  RunMetadata meta_a, meta_b;
  Tensor fed = Tensor::FromVector<float>({1, 2}, Shape{2});
  ASSERT_OK(on_channel->Run(RunOptions(), {{x, fed}}, {y}, {}, &out, &meta_a));
  EXPECT_EQ(out[0].data<float>()[1], 3.0f);
  ASSERT_OK(on_caf->Run(RunOptions(), {{x, fed}}, {y}, {}, &out, &meta_b));
  EXPECT_FALSE(meta_a.executed_nodes.empty());
  EXPECT_EQ(meta_a.executed_nodes, meta_b.executed_nodes);
  EXPECT_EQ(f.steps() - before, 3);
}

// A raw connection to a step port, past the server's welcome frame (-1: none came).
int ConnectToStepPort(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  char welcome[16];
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      recv(fd, welcome, sizeof(welcome), MSG_WAITALL) != 16) {
    close(fd);
    return -1;
  }
  return fd;
}

// Whether the server closed `fd` within 10 s (reads EOF or a reset).
bool ClosedByPeer(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, 10000) <= 0) return false;
  char c;
  return recv(fd, &c, 1, 0) <= 0;
}

std::string Prefix(uint32_t magic, uint32_t kind, uint64_t bytes) {
  std::string s(16, '\0');
  std::memcpy(&s[0], &magic, 4);
  std::memcpy(&s[4], &kind, 4);
  std::memcpy(&s[8], &bytes, 8);
  return s;
}

TEST(StepChannelTest, AMalformedFrameEndsOnlyItsOwnConnection) {
  Fixture f;
  ASSERT_NE(f.cluster, nullptr);
  const uint16_t port = f.server()->step_port();
  const std::vector<std::string> bad = {
      Prefix(0xdeadbeef, 1, 4) + "abcd",              // bad magic
      Prefix(0x54534641, 2, 4) + "abcd",              // an answer sent to the server
      Prefix(0x54534641, 1, uint64_t{1} << 60),       // over the size limit
      Prefix(0x54534641, 1, 8) + std::string(8, 'z'), // a payload that does not parse
  };
  for (const std::string& frame : bad) {
    int fd = ConnectToStepPort(port);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(send(fd, frame.data(), frame.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(frame.size()));
    EXPECT_TRUE(ClosedByPeer(fd));
    close(fd);
  }
  // The task goes on serving steps on the channel.
  Scope root = Scope::NewRootScope().WithDevice(kWorker);
  auto y = Add(root, Const(root, 4.0f), 3.0f);
  auto session = f.Open(root, true);
  ASSERT_NE(session, nullptr);
  const int64_t before = f.steps();
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({y}, &out));
  EXPECT_EQ(out[0].data<float>()[0], 7.0f);
  EXPECT_EQ(f.steps() - before, 1);
}

TEST(StepChannelTest, ATaskThatStopsMidStepEndsTheStepUnavailable) {
  Fixture f;
  ASSERT_NE(f.cluster, nullptr);
  Scope root = Scope::NewRootScope().WithDevice(kWorker);
  Queue queue = FIFOQueue(root, {DType::kFloat32}, {Shape{}}, 10);
  auto blocked = QueueDequeue(root, queue)[0];
  auto y = Add(root, Const(root, 1.0f), 2.0f);
  auto session = f.Open(root, true, /*connect_timeout_ms=*/2000);
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({y}, &out));  // the channel is connected
  auto step = std::async(std::launch::async, [&] {
    std::vector<Tensor> never;
    return session->Run({blocked}, &never);  // no deadline: only the stop ends it
  });
  // The step is on its way (or already blocked) when the task stops; either way it
  // cannot finish, so the stop is what ends it.
  ASSERT_EQ(step.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  ASSERT_OK(f.cluster->StopTask("worker", 0));
  ASSERT_EQ(step.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  Status s = step.get();
  // Either the stopping device answers the step first (naming itself: task 0 of the
  // worker job) or the connection ends first (naming the target); both name the task.
  EXPECT_EQ(s.code(), Code::kUnavailable) << s;
  EXPECT_THAT(s.message(), AnyOf(HasSubstr(f.target), HasSubstr("/job:worker/replica:0/task:0")));
}

// Runs `step` until the server takes it, for at most 20 s: a closed connection's
// thread ends (and frees its slot) on its own time, and the clients here retry at
// once (retry_after_ms 0).
bool AnsweredWithin20s(StepChannelClient* client, const RemoteStep& step,
                       RemoteStepResult* result) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < give_up) {
    if (client->Run(step, StepChannelClient::Clock::time_point::max(), {}, result) ==
        StepChannelClient::Outcome::kAnswered) {
      return true;
    }
    std::this_thread::yield();
  }
  return false;
}

TEST(StepChannelTest, AClientThatAFullServerTurnsAwaySendsItsStepAnotherWay) {
  caf::actor_system_config cfg;
  caf::actor_system system{cfg};
  StepChannelOptions options;
  options.max_connections = 1;
  options.in_process = false;  // the server is in this process: use its sockets anyway
  options.retry_after_ms = 0;
  ASSERT_OK_AND_ASSIGN(auto server,
                       StepChannelServer::Listen(system, "127.0.0.1", kWorker, options));
  server->Serve(std::make_shared<TaskServices>());  // no session is open
  // A bare connection takes the only slot (its welcome says it was taken).
  int hog = ConnectToStepPort(server->port());
  ASSERT_GE(hog, 0);

  StepChannelClient client(system, "127.0.0.1:" + std::to_string(server->port()),
                           "actorflow://test-target", options, 2000);
  RemoteStep step;
  step.session_id = 7;
  RemoteStepResult result;
  const auto no_deadline = StepChannelClient::Clock::time_point::max();
  EXPECT_EQ(client.Run(step, no_deadline, {}, &result), StepChannelClient::Outcome::kNotSent);
  EXPECT_EQ(server->steps(), 0);

  // With the slot free again (and the client's retry pause over), the step goes on
  // the channel and gets the server's answer.
  close(hog);
  ASSERT_TRUE(AnsweredWithin20s(&client, step, &result));
  EXPECT_EQ(result.status.code(), Code::kFailedPrecondition) << result.status;
  EXPECT_THAT(result.status.message(), HasSubstr("session 7 is not open on " + std::string(kWorker)));
  EXPECT_EQ(server->steps(), 1);
  EXPECT_EQ(client.steps(), 1);
  EXPECT_EQ(server->local_connections(), 1);  // a client of this host: not TCP
  EXPECT_EQ(server->shared_memory_connections(), 1);  // and its frames in memory

  // A client told to use TCP gets the same answer there.
  StepChannelOptions tcp_only = options;
  tcp_only.host_local = false;
  StepChannelClient tcp_client(system, "127.0.0.1:" + std::to_string(server->port()),
                               "actorflow://test-target", tcp_only, 2000);
  client.CloseAll();  // frees the only slot
  RemoteStepResult over_tcp;
  ASSERT_TRUE(AnsweredWithin20s(&tcp_client, step, &over_tcp));
  EXPECT_EQ(over_tcp.status, result.status);
  EXPECT_EQ(server->local_connections(), 1);
  EXPECT_EQ(server->shared_memory_connections(), 1);

  // A client that may, runs the step on its own thread: no connection, same answer.
  StepChannelClient in_process(system, "127.0.0.1:" + std::to_string(server->port()),
                               "actorflow://test-target", StepChannelOptions(), 2000);
  RemoteStepResult here;
  ASSERT_EQ(in_process.Run(step, no_deadline, {}, &here), StepChannelClient::Outcome::kAnswered);
  EXPECT_EQ(here.status, result.status);
  EXPECT_EQ(server->in_process_steps(), 1);
  EXPECT_EQ(server->steps(), 2);  // the two above, on sockets
  // The client keeps the server it found; the next step takes it without a lookup.
  ASSERT_EQ(in_process.Run(step, no_deadline, {}, &here), StepChannelClient::Outcome::kAnswered);
  EXPECT_EQ(server->in_process_steps(), 2);

  // With that server gone, the client finds none in this process and none on its
  // socket: the step is not sent (its session would use CAF), and nothing it kept is used.
  server.reset();
  EXPECT_EQ(in_process.Run(step, no_deadline, {}, &here), StepChannelClient::Outcome::kNotSent);
  EXPECT_EQ(in_process.steps(), 2);
}

// A host-local client's frames go through the mailbox the server offers, step after
// step on one connection; a server with shared memory off keeps them on the socket.
TEST(StepChannelTest, AHostLocalConnectionsFramesGoThroughSharedMemoryUnlessTurnedOff) {
  caf::actor_system_config cfg;
  caf::actor_system system{cfg};
  for (bool shared_memory : {true, false}) {
    StepChannelOptions options;
    options.in_process = false;
    options.shared_memory = shared_memory;
    ASSERT_OK_AND_ASSIGN(auto server,
                         StepChannelServer::Listen(system, "127.0.0.1", kWorker, options));
    server->Serve(std::make_shared<TaskServices>());
    StepChannelClient client(system, "127.0.0.1:" + std::to_string(server->port()),
                             "actorflow://test-target", options, 2000);
    for (uint64_t session = 1; session <= 20; ++session) {
      RemoteStep step;
      step.session_id = session;
      RemoteStepResult result;
      ASSERT_EQ(client.Run(step, StepChannelClient::Clock::time_point::max(), {}, &result),
                StepChannelClient::Outcome::kAnswered);
      EXPECT_THAT(result.status.message(),
                  HasSubstr("session " + std::to_string(session) + " is not open"));
    }
    EXPECT_EQ(server->steps(), 20);
    EXPECT_EQ(server->local_connections(), 1);
    EXPECT_EQ(server->shared_memory_connections(), shared_memory ? 1 : 0);
  }
}

}  // namespace
}  // namespace actorflow
