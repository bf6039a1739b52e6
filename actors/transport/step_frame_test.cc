// The step channel's frame reading: a frame taken in the poll's one read, in pieces,
// frames back to back, and the ends a reader must name (closed, malformed).
#include "actors/transport/step_frame.h"

#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace actorflow {
namespace step_internal {
namespace {

// A connected Unix socket pair, closed at the end of the test.
struct SocketPair {
  int writer = -1;
  int reader = -1;
  SocketPair() {
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    writer = fds[0];
    reader = fds[1];
  }
  ~SocketPair() {
    if (writer >= 0) close(writer);
    if (reader >= 0) close(reader);
  }
  void Write(const std::vector<char>& bytes) {
    ASSERT_EQ(write(writer, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
};

std::vector<char> Frame(uint32_t kind, const std::string& payload) {
  std::vector<char> frame(kStepPrefixBytes);
  PutPrefix(kind, payload.size(), frame.data());
  frame.insert(frame.end(), payload.begin(), payload.end());
  return frame;
}

Clock::time_point Soon() { return Clock::now() + std::chrono::seconds(5); }

std::string Text(const std::vector<char>& bytes) { return std::string(bytes.begin(), bytes.end()); }

TEST(FrameReaderTest, NothingThereIsNotReadyAndAWholeFrameIsReadInThePoll) {
  SocketPair pair;
  FrameReader reader(FrameReader::kMaxPrefetch);
  EXPECT_FALSE(reader.Poll(pair.reader));
  pair.Write(Frame(kAnswerFrame, "the answer"));
  ASSERT_TRUE(reader.Poll(pair.reader));
  // The poll took it all: nothing is left in the socket for Finish to wait for.
  char left;
  EXPECT_EQ(recv(pair.reader, &left, 1, MSG_PEEK | MSG_DONTWAIT), -1);
  std::vector<char> payload;
  ASSERT_EQ(reader.Finish(pair.reader, kAnswerFrame, 1024, Soon(), &payload), FrameRead::kOk);
  EXPECT_EQ(Text(payload), "the answer");
}

TEST(FrameReaderTest, APrefixOnlyReaderLeavesTheNextFrameInTheSocket) {
  SocketPair pair;
  std::vector<char> two = Frame(kStepFrame, "first");
  const std::vector<char> second = Frame(kStepFrame, "second step");
  two.insert(two.end(), second.begin(), second.end());
  pair.Write(two);
  for (const std::string expected : {"first", "second step"}) {
    FrameReader reader(kStepPrefixBytes);
    ASSERT_TRUE(reader.Poll(pair.reader));
    std::vector<char> payload;
    ASSERT_EQ(reader.Finish(pair.reader, kStepFrame, 1024, Soon(), &payload), FrameRead::kOk);
    EXPECT_EQ(Text(payload), expected);
  }
}

TEST(FrameReaderTest, AFrameInPiecesIsReadWhole) {
  SocketPair pair;
  const std::vector<char> frame = Frame(kAnswerFrame, std::string(1000, 'x'));
  pair.Write(std::vector<char>(frame.begin(), frame.begin() + 5));  // part of the prefix
  FrameReader reader(FrameReader::kMaxPrefetch);
  ASSERT_TRUE(reader.Poll(pair.reader));
  pair.Write(std::vector<char>(frame.begin() + 5, frame.end()));
  std::vector<char> payload;
  ASSERT_EQ(reader.Finish(pair.reader, kAnswerFrame, 4096, Soon(), &payload), FrameRead::kOk);
  EXPECT_EQ(Text(payload), std::string(1000, 'x'));
}

TEST(FrameReaderTest, BytesBeyondTheFrameInThePollAreMalformed) {
  // A client's server sends nothing after an answer; more in the same read means the
  // stream is not what the client thinks it is.
  SocketPair pair;
  std::vector<char> two = Frame(kAnswerFrame, "a");
  const std::vector<char> extra = Frame(kAnswerFrame, "b");
  two.insert(two.end(), extra.begin(), extra.end());
  pair.Write(two);
  FrameReader reader(FrameReader::kMaxPrefetch);
  ASSERT_TRUE(reader.Poll(pair.reader));
  std::vector<char> payload;
  EXPECT_EQ(reader.Finish(pair.reader, kAnswerFrame, 1024, Soon(), &payload),
            FrameRead::kMalformed);
}

TEST(FrameReaderTest, WrongKindOrTooLargeIsMalformed) {
  SocketPair pair;
  pair.Write(Frame(kStepFrame, "step"));
  pair.Write(Frame(kAnswerFrame, "0123456789"));
  std::vector<char> payload;
  FrameReader wrong_kind(kStepPrefixBytes);
  ASSERT_TRUE(wrong_kind.Poll(pair.reader));
  EXPECT_EQ(wrong_kind.Finish(pair.reader, kAnswerFrame, 1024, Soon(), &payload),
            FrameRead::kMalformed);
  SocketPair other;
  other.Write(Frame(kAnswerFrame, "0123456789"));
  FrameReader too_large(kStepPrefixBytes);
  ASSERT_TRUE(too_large.Poll(other.reader));
  EXPECT_EQ(too_large.Finish(other.reader, kAnswerFrame, 9, Soon(), &payload),
            FrameRead::kMalformed);
}

TEST(FrameReaderTest, APeerGoneBeforeOrDuringTheFrameIsClosed) {
  {
    SocketPair pair;
    close(pair.writer);
    pair.writer = -1;
    FrameReader reader(FrameReader::kMaxPrefetch);
    ASSERT_TRUE(reader.Poll(pair.reader)) << "a closed socket must end the poll";
    std::vector<char> payload;
    EXPECT_EQ(reader.Finish(pair.reader, kAnswerFrame, 1024, Soon(), &payload),
              FrameRead::kClosed);
  }
  {
    SocketPair pair;
    const std::vector<char> frame = Frame(kAnswerFrame, "cut short");
    pair.Write(std::vector<char>(frame.begin(), frame.end() - 3));
    close(pair.writer);
    pair.writer = -1;
    FrameReader reader(FrameReader::kMaxPrefetch);
    ASSERT_TRUE(reader.Poll(pair.reader));
    std::vector<char> payload;
    EXPECT_EQ(reader.Finish(pair.reader, kAnswerFrame, 1024, Soon(), &payload),
              FrameRead::kClosed);
  }
}

TEST(FrameReaderTest, AFrameThatNeverCompletesEndsAtTheDeadline) {
  SocketPair pair;
  const std::vector<char> frame = Frame(kAnswerFrame, "never whole");
  pair.Write(std::vector<char>(frame.begin(), frame.begin() + 10));
  FrameReader reader(FrameReader::kMaxPrefetch);
  ASSERT_TRUE(reader.Poll(pair.reader));
  std::vector<char> payload;
  const auto start = Clock::now();
  EXPECT_EQ(reader.Finish(pair.reader, kAnswerFrame, 1024,
                          Clock::now() + std::chrono::milliseconds(100), &payload),
            FrameRead::kClosed);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace step_internal
}  // namespace actorflow
