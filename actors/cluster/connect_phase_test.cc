// The connection phase, on loopback with real servers: a task that never answered
// is waited for (it may still be starting), with a progress line naming it; one
// that answered this process before and now refuses is named at once, with its
// address and the system's cause, instead of being waited out.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>

#include <caf/io/all.hpp>

#include "actors/cluster/server.h"
#include "actors/transport/cluster_transport.h"
#include "actors/transport/connect.h"
#include "actors/transport/peer_history.h"

namespace actorflow {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

// A port that was free a moment ago (the kernel does not hand it out again soon).
uint16_t FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

StatusOr<std::unique_ptr<Server>> StartWorker(uint16_t port) {
  ServerOptions options;
  auto spec = ClusterSpec::FromJson("{\"worker\": [\"127.0.0.1:" + std::to_string(port) + "\"]}");
  if (!spec.ok()) return spec.status();
  options.cluster = *spec;
  options.task = TaskId{"worker", 0};
  return Server::Start(options);
}

// A client's actor system, as a master's or a parameter client's.
class Client {
 public:
  Client() {
    ConfigureClusterTransport(cfg_);
    cfg_.set("logger.console", caf::atom("none"));
    system_ = std::make_unique<caf::actor_system>(cfg_);
  }
  ~Client() { ShutDownClusterSystem(system_); }

  StatusOr<FrontActor> Connect(uint16_t port, milliseconds budget) {
    return ConnectToServer(*system_, "127.0.0.1", port, budget, "/job:worker/task:0");
  }

 private:
  caf::actor_system_config cfg_;
  std::unique_ptr<caf::actor_system> system_;
};

TEST(ConnectPhaseTest, ATaskThatAnsweredBeforeAndNowRefusesIsNamedAtOnce) {
  const uint16_t port = FreePort();
  auto server = StartWorker(port);
  ASSERT_TRUE(server.ok()) << server.status();
  Client client;
  ASSERT_TRUE(client.Connect(port, milliseconds(10000)).ok());
  (*server)->Stop();

  const auto start = Clock::now();
  auto again = client.Connect(port, milliseconds(30000));
  const auto took = Clock::now() - start;
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), Code::kUnavailable) << again.status();
  const std::string& message = again.status().message();
  EXPECT_THAT(message, HasSubstr("/job:worker/task:0 at 127.0.0.1:" + std::to_string(port)));
  EXPECT_THAT(message, HasSubstr("Connection refused"));
  EXPECT_THAT(message, HasSubstr("down or restarting"));
  EXPECT_LT(took, std::chrono::seconds(3)) << "waited out a task known to be gone: " << message;
}

TEST(ConnectPhaseTest, ATaskNeverSeenIsWaitedForWithAProgressLineUntilTheBudget) {
  const uint16_t port = FreePort();
  Client client;
  ::testing::internal::CaptureStderr();
  const auto start = Clock::now();
  auto never = client.Connect(port, milliseconds(5600));
  const auto took = Clock::now() - start;
  const std::string progress = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(never.ok());
  EXPECT_EQ(never.status().code(), Code::kUnavailable) << never.status();
  EXPECT_THAT(never.status().message(), HasSubstr("within 5600 ms: Connection refused"));
  EXPECT_GE(took, milliseconds(5000)) << "gave up on a task that may still be starting";
  EXPECT_THAT(progress, HasSubstr("still waiting for /job:worker/task:0 at 127.0.0.1:" +
                                  std::to_string(port) + ": Connection refused (5."));
}

TEST(ConnectPhaseTest, ATaskThatStartsDuringTheWaitIsReached) {
  const uint16_t port = FreePort();
  Client client;
  auto waiting =
      std::async(std::launch::async, [&] { return client.Connect(port, milliseconds(20000)); });
  auto server = StartWorker(port);
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(25)), std::future_status::ready);
  auto reached = waiting.get();
  EXPECT_TRUE(reached.ok()) << reached.status();
  EXPECT_TRUE(SincePeerReached("127.0.0.1:" + std::to_string(port)).has_value());
}

TEST(ConnectPhaseTest, TheProbeNamesARefusedPortAndAcceptsAListeningOne) {
  const uint16_t port = FreePort();
  EXPECT_EQ(ProbeTcpConnect("127.0.0.1", port, milliseconds(200)), "Connection refused");
  auto server = StartWorker(port);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(ProbeTcpConnect("127.0.0.1", port, milliseconds(200)), "");
  EXPECT_THAT(ProbeTcpConnect("no-such-host.invalid", port, milliseconds(200)),
              HasSubstr("cannot resolve no-such-host.invalid"));
  EXPECT_EQ(SecondsText(milliseconds(1250)), "1.2 s");
}

}  // namespace
}  // namespace actorflow
