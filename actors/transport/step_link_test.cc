// One end of a step connection, the same calls whichever way its frames go (its
// socket, or a mailbox in shared memory): request and answer both ways, a park
// that returns for another thread's frame, a park that times out, and a peer's end.
#include "actors/transport/step_link.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace actorflow {
namespace step_internal {
namespace {

GatheredBytes Frame(uint32_t kind, const std::string& payload) {
  GatheredBytes frame;
  frame.head.assign(kStepPrefixBytes, '\0');
  PutPrefix(kind, payload.size(), frame.head.data());
  frame.head.insert(frame.head.end(), payload.begin(), payload.end());
  return frame;
}

Clock::time_point Soon() { return Clock::now() + std::chrono::seconds(10); }

// A connected Unix socket pair with a link at each end; with `shared_memory`, a
// mailbox between them as a server's welcome sets one up.
class StepLinkTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    int fds[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    client_sock_ = fds[0];
    server_sock_ = fds[1];
    std::unique_ptr<StepMailbox> server_box, client_box;
    if (GetParam()) {
      server_box = StepMailbox::Create();
      ASSERT_NE(server_box, nullptr);
      client_box = StepMailbox::Adopt(fcntl(server_box->fd(), F_DUPFD_CLOEXEC, 0),
                                      StepMailbox::kDefaultSlotBytes);
      ASSERT_NE(client_box, nullptr);
    }
    server_ = std::make_unique<StepLink>(server_sock_, std::move(server_box), kStepPrefixBytes);
    client_ = std::make_unique<StepLink>(client_sock_, std::move(client_box),
                                         FrameReader::kMaxPrefetch);
  }
  void TearDown() override {
    server_.reset();
    client_.reset();
    if (client_sock_ >= 0) close(client_sock_);
    if (server_sock_ >= 0) close(server_sock_);
  }

  int client_sock_ = -1;
  int server_sock_ = -1;
  std::unique_ptr<StepLink> server_;
  std::unique_ptr<StepLink> client_;
};

TEST_P(StepLinkTest, RequestsAndAnswersGoBothWaysAndAreTakenOnce) {
  EXPECT_EQ(server_->shared_memory(), GetParam());
  EXPECT_EQ(server_->poll_cost(), GetParam() ? PollCost::kMemory : PollCost::kSystemCall);
  std::vector<char> payload;
  for (int step = 0; step < 3; ++step) {
    const std::string request = "step " + std::to_string(step);
    EXPECT_FALSE(server_->Poll());
    ASSERT_TRUE(client_->Send(Frame(kStepFrame, request), Soon()));
    ASSERT_TRUE(server_->Park(nullptr));
    ASSERT_EQ(server_->Finish(kStepFrame, 1 << 20, Soon(), &payload), FrameRead::kOk);
    EXPECT_EQ(std::string(payload.begin(), payload.end()), request);
    EXPECT_FALSE(server_->Poll());

    const std::string answer(100 + 1000 * step, 'a' + step);
    ASSERT_TRUE(server_->Send(Frame(kAnswerFrame, answer), Soon()));
    ASSERT_TRUE(client_->Poll());
    ASSERT_EQ(client_->Finish(kAnswerFrame, 1 << 20, Soon(), &payload), FrameRead::kOk);
    EXPECT_EQ(std::string(payload.begin(), payload.end()), answer);
  }
  // Another kind than the one expected is malformed.
  ASSERT_TRUE(client_->Send(Frame(kStepFrame, "x"), Soon()));
  ASSERT_TRUE(server_->Park(nullptr));
  EXPECT_EQ(server_->Finish(kAnswerFrame, 1 << 20, Soon(), &payload), FrameRead::kMalformed);
}

// (That a receiver already parked is rung awake is step_mailbox_test's, with the
// mailbox's parked flag to wait on; here the frame may come before or during the
// park.)
TEST_P(StepLinkTest, AParkReturnsForAnotherThreadsFrameAndTimesOutWithNothing) {
  auto until = Clock::now() + std::chrono::milliseconds(20);
  EXPECT_FALSE(server_->Park(&until));
  // poll(2) waits whole milliseconds, rounded down: it may wake within one of `until`.
  EXPECT_GE(Clock::now(), until - std::chrono::milliseconds(1));

  std::thread sender(
      [this] { EXPECT_TRUE(client_->Send(Frame(kStepFrame, "late"), Soon())); });
  auto bound = Soon();
  EXPECT_TRUE(server_->Park(&bound));
  sender.join();
  std::vector<char> payload;
  ASSERT_EQ(server_->Finish(kStepFrame, 1 << 20, Soon(), &payload), FrameRead::kOk);
  EXPECT_EQ(std::string(payload.begin(), payload.end()), "late");
}

TEST_P(StepLinkTest, APeerThatGoesAwayEndsTheWaitAsClosed) {
  shutdown(client_sock_, SHUT_RDWR);
  auto bound = Soon();
  EXPECT_TRUE(server_->Park(&bound));  // the end, not a frame: Finish says which
  std::vector<char> payload;
  EXPECT_EQ(server_->Finish(kStepFrame, 1 << 20, Soon(), &payload), FrameRead::kClosed);
}

INSTANTIATE_TEST_SUITE_P(SocketAndMailbox, StepLinkTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "Mailbox" : "Socket");
                         });

}  // namespace
}  // namespace step_internal
}  // namespace actorflow
