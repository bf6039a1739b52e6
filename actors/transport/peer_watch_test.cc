// PeerWatch against plain TCP listeners on 127.0.0.1: a listening peer is recorded
// as reached, a silent port is kept waiting until something listens there, and the
// watch stops promptly while peers are still missing.

#include "actors/transport/peer_watch.h"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>

#include "actors/transport/peer_history.h"

namespace actorflow {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A bound loopback socket; it answers connections once Listen() is called.
class LoopbackPort {
 public:
  LoopbackPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~LoopbackPort() { ::close(fd_); }
  void Listen() { EXPECT_EQ(::listen(fd_, 8), 0); }
  uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

TEST(PeerWatchTest, RecordsEachPeerWhenItAnswersAndReportsWhenAllHave) {
  ForgetReachedPeers();
  LoopbackPort up;
  LoopbackPort later;  // bound, not listening: connections to it are refused
  up.Listen();
  std::promise<void> all;
  PeerWatch watch({{"127.0.0.1", up.port()}, {"127.0.0.1", later.port()}},
                  std::chrono::seconds(30), [&all] { all.set_value(); });
  auto all_reached = all.get_future();

  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (!SincePeerReached(up.address()) && Clock::now() < deadline) {
    all_reached.wait_for(milliseconds(20));
  }
  EXPECT_TRUE(SincePeerReached(up.address()).has_value());
  EXPECT_FALSE(SincePeerReached(later.address()).has_value());
  EXPECT_EQ(watch.waiting(), std::vector<std::string>{later.address()});
  EXPECT_NE(all_reached.wait_for(milliseconds(0)), std::future_status::ready);

  later.Listen();
  ASSERT_EQ(all_reached.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(SincePeerReached(later.address()).has_value());
  EXPECT_TRUE(watch.waiting().empty());
}

TEST(PeerWatchTest, StopsPromptlyWhilePeersAreStillMissing) {
  ForgetReachedPeers();
  LoopbackPort never;
  bool called = false;
  const auto start = Clock::now();
  {
    PeerWatch watch({{"127.0.0.1", never.port()}}, std::chrono::hours(1),
                    [&called] { called = true; });
  }
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  EXPECT_FALSE(called);
  EXPECT_FALSE(SincePeerReached(never.address()).has_value());
}

}  // namespace
}  // namespace actorflow
