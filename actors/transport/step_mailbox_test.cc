// The step channel's frames through shared memory: both ways, a frame larger than
// the slot on the socket, a parked receiver's doorbell, the socket's end, files that
// are not a sealed mailbox, and what a sender wrote without publishing it.
#include "actors/transport/step_mailbox.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "actors/transport/step_frame.h"

namespace actorflow {
namespace step_internal {
namespace {

using bulk_internal::Clock;

// A connected Unix socket pair and a mailbox between its ends, as a server's welcome
// sets one up: the server's side made, the client's adopted from its file.
struct Connection {
  int client_sock = -1;
  int server_sock = -1;
  std::unique_ptr<StepMailbox> server;
  std::unique_ptr<StepMailbox> client;
  explicit Connection(size_t slot_bytes = StepMailbox::kDefaultSlotBytes) {
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    client_sock = fds[0];
    server_sock = fds[1];
    server = StepMailbox::Create(slot_bytes);
    EXPECT_NE(server, nullptr);
    client = StepMailbox::Adopt(fcntl(server->fd(), F_DUPFD_CLOEXEC, 0), slot_bytes);
    EXPECT_NE(client, nullptr);
  }
  ~Connection() {
    if (client_sock >= 0) close(client_sock);
    if (server_sock >= 0) close(server_sock);
  }
};

GatheredBytes Frame(uint32_t kind, const std::string& payload) {
  GatheredBytes frame;
  frame.head.assign(kStepPrefixBytes, '\0');
  PutPrefix(kind, payload.size(), frame.head.data());
  frame.head.insert(frame.head.end(), payload.begin(), payload.end());
  return frame;
}

Clock::time_point Soon() { return Clock::now() + std::chrono::seconds(10); }

// Bytes waiting on a socket, read without blocking.
std::string Pending(int sock) {
  char buffer[4096];
  const ssize_t got = recv(sock, buffer, sizeof(buffer), MSG_DONTWAIT);
  return got > 0 ? std::string(buffer, static_cast<size_t>(got)) : std::string();
}

TEST(StepMailboxTest, FramesGoBothWaysThroughMemoryWithNothingOnTheSocket) {
  Connection c;
  std::vector<char> payload;
  for (int step = 0; step < 3; ++step) {
    const std::string request = "step " + std::to_string(step);
    EXPECT_FALSE(c.server->Poll(c.server_sock));
    ASSERT_TRUE(c.client->Send(c.client_sock, Frame(kStepFrame, request), Soon()));
    ASSERT_TRUE(c.server->Poll(c.server_sock));
    ASSERT_EQ(c.server->Finish(c.server_sock, kStepFrame, 1 << 20, Soon(), &payload),
              FrameRead::kOk);
    EXPECT_EQ(std::string(payload.begin(), payload.end()), request);
    EXPECT_FALSE(c.server->Poll(c.server_sock));  // taken once

    const std::string answer(1000 + step, 'a');
    ASSERT_TRUE(c.server->Send(c.server_sock, Frame(kAnswerFrame, answer), Soon()));
    ASSERT_TRUE(c.client->Poll(c.client_sock));
    ASSERT_EQ(c.client->Finish(c.client_sock, kAnswerFrame, 1 << 20, Soon(), &payload),
              FrameRead::kOk);
    EXPECT_EQ(std::string(payload.begin(), payload.end()), answer);
  }
  EXPECT_EQ(Pending(c.server_sock), "");
  EXPECT_EQ(Pending(c.client_sock), "");
}

TEST(StepMailboxTest, AFrameLargerThanTheSlotGoesOnTheSocketAnnouncedInTheSlot) {
  Connection c(/*slot_bytes=*/256);
  const std::string big(100000, 'x');
  // The socket holds far less than 100 KB: the answer is read while it is written.
  std::thread writer([&] {
    EXPECT_TRUE(c.server->Send(c.server_sock, Frame(kAnswerFrame, big), Soon()));
  });
  ASSERT_TRUE(c.client->Park(c.client_sock, nullptr));
  std::vector<char> payload;
  ASSERT_EQ(c.client->Finish(c.client_sock, kAnswerFrame, 1 << 20, Soon(), &payload),
            FrameRead::kOk);
  writer.join();
  EXPECT_EQ(std::string(payload.begin(), payload.end()), big);
  // And a small one after it goes through memory again.
  ASSERT_TRUE(c.server->Send(c.server_sock, Frame(kAnswerFrame, "small"), Soon()));
  ASSERT_TRUE(c.client->Poll(c.client_sock));
  ASSERT_EQ(c.client->Finish(c.client_sock, kAnswerFrame, 1 << 20, Soon(), &payload),
            FrameRead::kOk);
  EXPECT_EQ(std::string(payload.begin(), payload.end()), "small");
}

TEST(StepMailboxTest, AParkedReceiverIsWokenByTheDoorbell) {
  Connection c;
  std::atomic<bool> woke{false};
  std::thread receiver([&] {
    woke = c.server->Park(c.server_sock, nullptr);  // no end: only the doorbell ends it
  });
  // The sender rings only a parked receiver: send once it has parked.
  const auto give_up = Clock::now() + std::chrono::seconds(10);
  while (!c.client->peer_parked() && Clock::now() < give_up) std::this_thread::yield();
  ASSERT_TRUE(c.client->peer_parked());
  ASSERT_TRUE(c.client->Send(c.client_sock, Frame(kStepFrame, "wake"), Soon()));
  receiver.join();
  EXPECT_TRUE(woke);
  std::vector<char> payload;
  ASSERT_EQ(c.server->Finish(c.server_sock, kStepFrame, 1 << 20, Soon(), &payload),
            FrameRead::kOk);
  EXPECT_EQ(std::string(payload.begin(), payload.end()), "wake");
}

TEST(StepMailboxTest, StrayDoorbellsAreSkipped) {
  Connection c;
  const std::string bells(5, StepMailbox::kDoorbell);
  ASSERT_EQ(write(c.client_sock, bells.data(), bells.size()), 5);
  ASSERT_TRUE(c.client->Send(c.client_sock, Frame(kStepFrame, "after bells"), Soon()));
  ASSERT_TRUE(c.server->Park(c.server_sock, nullptr));
  std::vector<char> payload;
  ASSERT_EQ(c.server->Finish(c.server_sock, kStepFrame, 1 << 20, Soon(), &payload),
            FrameRead::kOk);
  EXPECT_EQ(std::string(payload.begin(), payload.end()), "after bells");
  // Nothing new: a wait with an end in the past returns empty-handed.
  const auto past = Clock::now();
  EXPECT_FALSE(c.server->Park(c.server_sock, &past));
}

TEST(StepMailboxTest, TheSocketsEndEndsPollsAndWaits) {
  Connection c;
  close(c.client_sock);
  c.client_sock = -1;
  EXPECT_TRUE(c.server->Park(c.server_sock, nullptr));
  std::vector<char> payload;
  EXPECT_EQ(c.server->Finish(c.server_sock, kStepFrame, 1 << 20, Soon(), &payload),
            FrameRead::kClosed);
  bool ended = false;
  for (unsigned i = 0; i < 2 * StepMailbox::kSocketCheckPolls && !ended; ++i) {
    ended = c.server->Poll(c.server_sock);
  }
  EXPECT_TRUE(ended);
}

TEST(StepMailboxTest, BytesASenderWroteWithoutPublishingThemAreNeverRead) {
  Connection c;
  // A sender that died mid-copy: the frame's bytes and size are in the slot, its
  // sequence number never moved.
  void* raw = mmap(nullptr, 2 * (64 + StepMailbox::kDefaultSlotBytes), PROT_READ | PROT_WRITE,
                   MAP_SHARED, c.server->fd(), 0);
  ASSERT_NE(raw, MAP_FAILED);
  GatheredBytes frame = Frame(kStepFrame, "half");
  std::memcpy(static_cast<char*>(raw) + 64, frame.head.data(), frame.head.size());
  const uint64_t bytes = frame.head.size();
  std::memcpy(static_cast<char*>(raw) + 16, &bytes, sizeof(bytes));
  for (unsigned i = 0; i < 2 * StepMailbox::kSocketCheckPolls; ++i) {
    EXPECT_FALSE(c.server->Poll(c.server_sock));
  }
  close(c.client_sock);  // and then its process ended
  c.client_sock = -1;
  EXPECT_TRUE(c.server->Park(c.server_sock, nullptr));
  std::vector<char> payload;
  EXPECT_EQ(c.server->Finish(c.server_sock, kStepFrame, 1 << 20, Soon(), &payload),
            FrameRead::kClosed);
  munmap(raw, 2 * (64 + StepMailbox::kDefaultSlotBytes));
}

TEST(StepMailboxTest, AFrameOfAnotherKindOrAnImpossibleSizeIsMalformed) {
  Connection c;
  std::vector<char> payload;
  ASSERT_TRUE(c.client->Send(c.client_sock, Frame(kAnswerFrame, "wrong kind"), Soon()));
  ASSERT_TRUE(c.server->Poll(c.server_sock));
  EXPECT_EQ(c.server->Finish(c.server_sock, kStepFrame, 1 << 20, Soon(), &payload),
            FrameRead::kMalformed);
  ASSERT_TRUE(c.client->Send(c.client_sock, Frame(kStepFrame, std::string(100, 'p')), Soon()));
  ASSERT_TRUE(c.server->Poll(c.server_sock));
  EXPECT_EQ(c.server->Finish(c.server_sock, kStepFrame, /*max_bytes=*/99, Soon(), &payload),
            FrameRead::kMalformed);
  // A size the slot cannot hold, written by a peer that does not follow the protocol.
  void* raw = mmap(nullptr, 2 * (64 + StepMailbox::kDefaultSlotBytes), PROT_READ | PROT_WRITE,
                   MAP_SHARED, c.server->fd(), 0);
  ASSERT_NE(raw, MAP_FAILED);
  ASSERT_TRUE(c.client->Send(c.client_sock, Frame(kStepFrame, "ok"), Soon()));
  const uint64_t huge = StepMailbox::kDefaultSlotBytes + 1;
  std::memcpy(static_cast<char*>(raw) + 16, &huge, sizeof(huge));
  ASSERT_TRUE(c.server->Poll(c.server_sock));
  EXPECT_EQ(c.server->Finish(c.server_sock, kStepFrame, 1 << 20, Soon(), &payload),
            FrameRead::kMalformed);
  munmap(raw, 2 * (64 + StepMailbox::kDefaultSlotBytes));
}

TEST(StepMailboxTest, OnlyASealedFileOfTheAnnouncedSizeIsAdopted) {
  auto server = StepMailbox::Create(4096);
  ASSERT_NE(server, nullptr);
  // The wrong size announced.
  EXPECT_EQ(StepMailbox::Adopt(fcntl(server->fd(), F_DUPFD_CLOEXEC, 0), 8192), nullptr);
  EXPECT_EQ(StepMailbox::Adopt(fcntl(server->fd(), F_DUPFD_CLOEXEC, 0), 0), nullptr);
  // A memory file that could still shrink.
  int unsealed = memfd_create("unsealed", MFD_CLOEXEC);
  ASSERT_GE(unsealed, 0);
  ASSERT_EQ(ftruncate(unsealed, 2 * (64 + 4096)), 0);
  EXPECT_EQ(StepMailbox::Adopt(unsealed, 4096), nullptr);
  // Not a file at all.
  int pipe_ends[2];
  ASSERT_EQ(pipe(pipe_ends), 0);
  close(pipe_ends[1]);
  EXPECT_EQ(StepMailbox::Adopt(pipe_ends[0], 4096), nullptr);
  // The right one.
  EXPECT_NE(StepMailbox::Adopt(fcntl(server->fd(), F_DUPFD_CLOEXEC, 0), 4096), nullptr);
}

}  // namespace
}  // namespace step_internal
}  // namespace actorflow
