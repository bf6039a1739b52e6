// A gathered frame's bytes are CAF's binary serializer's, with large tensors' bytes
// referenced in place; it is written whole over a socket and decodes unchanged.
#include "actors/transport/gather_serializer.h"

#include <sys/socket.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include <caf/all.hpp>
#include <gtest/gtest.h>

#include "actors/protocol/wire.h"
#include "actors/transport/step_frame.h"

namespace actorflow {
namespace {

Tensor Filled(int64_t n, float first) {
  Tensor t(DType::kFloat32, Shape({n}));
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = first + static_cast<float>(i);
  return t;
}

// Small feeds, two large ones and an uninitialized one, between other fields.
RemoteStep AStep() {
  RemoteStep step;
  step.session_id = 42;
  step.feed_names = {"small", "large", "empty", "larger"};
  step.feed_values = {Filled(3, 1), Filled(40000, 2), Tensor(), Filled(70000, -5)};
  step.fetches = {"loss:0"};
  step.targets = {"train"};
  step.timeout_in_ms = 1234;
  return step;
}

std::vector<char> BinaryBytes(caf::actor_system& system, const RemoteStep& step) {
  std::vector<char> bytes;
  caf::binary_serializer sink{system, bytes};
  EXPECT_FALSE(sink(const_cast<RemoteStep&>(step)));
  return bytes;
}

// The gathered bytes in order, in one buffer.
std::vector<char> Flatten(const GatheredBytes& gathered) {
  std::vector<char> bytes;
  for (const iovec& piece : gathered.Pieces()) {
    const char* p = static_cast<const char*>(piece.iov_base);
    bytes.insert(bytes.end(), p, p + piece.iov_len);
  }
  EXPECT_EQ(bytes.size(), gathered.size());
  return bytes;
}

class GatherSerializerTest : public ::testing::Test {
 protected:
  caf::actor_system_config config_;
  caf::actor_system system_{config_};
};

TEST_F(GatherSerializerTest, BytesInOrderAreTheBinarySerializersAndLargeBlocksAreReferenced) {
  const RemoteStep step = AStep();
  GatheredBytes gathered;
  GatherSerializer sink{system_, &gathered};
  ASSERT_FALSE(sink(const_cast<RemoteStep&>(step)));
  // The two tensors of at least 64 KiB (160 000 and 280 000 bytes) stay in place.
  ASSERT_EQ(gathered.blocks.size(), 2u);
  EXPECT_EQ(gathered.blocks[0].data, step.feed_values[1].raw_data());
  EXPECT_EQ(gathered.blocks[1].data, step.feed_values[3].raw_data());
  EXPECT_EQ(gathered.blocks[1].size, 280000u);
  EXPECT_LT(gathered.head.size(), 1024u);
  EXPECT_EQ(Flatten(gathered), BinaryBytes(system_, step));
}

TEST_F(GatherSerializerTest, BelowTheBlockSizeEverythingIsCopied) {
  const RemoteStep step = AStep();
  GatheredBytes gathered;
  GatherSerializer sink{system_, &gathered, size_t{1} << 30};
  ASSERT_FALSE(sink(const_cast<RemoteStep&>(step)));
  EXPECT_TRUE(gathered.blocks.empty());
  EXPECT_EQ(gathered.head, BinaryBytes(system_, step));
}

TEST_F(GatherSerializerTest, AFrameWrittenFromPiecesIsReadAndDecodedWhole) {
  const RemoteStep step = AStep();
  GatheredBytes frame;
  ASSERT_TRUE(step_internal::EncodeFrame(system_, step_internal::kStepFrame, step, &frame));
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  const auto deadline = step_internal::Clock::now() + std::chrono::seconds(10);
  // More than a socket buffer holds: the writer waits for the reader.
  bool written = false;
  std::thread writer([&] { written = step_internal::WriteFrame(fds[0], frame, deadline); });
  step_internal::FrameReader reader(step_internal::kStepPrefixBytes);
  std::vector<char> payload;
  const auto read = reader.Finish(fds[1], step_internal::kStepFrame, uint64_t{1} << 20, deadline,
                                  &payload);
  writer.join();
  close(fds[0]);
  close(fds[1]);
  ASSERT_TRUE(written);
  ASSERT_EQ(read, step_internal::FrameRead::kOk);
  RemoteStep got;
  ASSERT_TRUE(step_internal::DecodePayload(system_, payload, &got));
  EXPECT_EQ(got.session_id, 42u);
  EXPECT_EQ(got.feed_names, step.feed_names);
  ASSERT_EQ(got.feed_values.size(), 4u);
  EXPECT_FALSE(got.feed_values[2].IsInitialized());
  for (int i : {0, 1, 3}) {
    const Tensor& want = step.feed_values[i];
    ASSERT_EQ(got.feed_values[i].NumElements(), want.NumElements()) << i;
    EXPECT_EQ(0, std::memcmp(got.feed_values[i].raw_data(), want.raw_data(), want.TotalBytes()))
        << i;
  }
  EXPECT_EQ(got.fetches, step.fetches);
  EXPECT_EQ(got.timeout_in_ms, 1234);
}

}  // namespace
}  // namespace actorflow
