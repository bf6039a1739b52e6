// The wire form of a tensor (actors/protocol/wire_core.h): what a receiving process decodes
// from a frame, including frames a hostile or broken peer sends. A tensor header
// whose byte count overflows, disagrees with its shape or exceeds the message is
// refused before anything is allocated.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <caf/all.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include "actors/protocol/shard_messages.h"
#include "actors/protocol/wire_core.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

// A frame holding a tensor header (dtype, dims, byte count) and `payload` raw bytes,
// as the sending side's inspect writes it.
std::vector<char> Frame(int32_t dtype, std::vector<int64_t> dims, uint64_t bytes,
                        const std::vector<char>& payload) {
  std::vector<char> buffer;
  caf::binary_serializer sink{nullptr, buffer};
  EXPECT_FALSE(sink(dtype, dims, bytes));
  if (!payload.empty()) EXPECT_FALSE(sink.apply_raw(payload.size(), const_cast<char*>(payload.data())));
  return buffer;
}

TEST(WireTest, ATensorRoundTripsAsOneRawBlock) {
  Tensor sent(DType::kFloat32, Shape({2, 3}));
  for (int i = 0; i < 6; ++i) sent.data<float>()[i] = 0.5f * i;
  std::vector<char> buffer;
  caf::binary_serializer sink{nullptr, buffer};
  ASSERT_FALSE(sink(sent));
  Tensor received;
  caf::binary_deserializer source{nullptr, buffer};
  ASSERT_FALSE(source(received));
  ASSERT_EQ(received.shape(), Shape({2, 3}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(received.data<float>()[i], 0.5f * i);
}

TEST(WireTest, HostileHeadersAreRefusedBeforeAllocating) {
  const int32_t f32 = static_cast<int32_t>(DType::kFloat32);
  const int64_t huge = int64_t{1} << 40;
  struct Case {
    const char* what;
    std::vector<char> frame;
  } cases[] = {
      {"element count overflows", Frame(f32, {huge, huge}, 16, std::vector<char>(16))},
      {"4 GiB announced, 16 bytes sent", Frame(f32, {int64_t{1} << 30}, uint64_t{1} << 32,
                                               std::vector<char>(16))},
      {"byte count disagrees with the shape", Frame(f32, {2}, 4, std::vector<char>(4))},
      {"negative dim", Frame(f32, {-4}, 0, {})},
      {"unknown dtype", Frame(99, {1}, 4, std::vector<char>(4))},
  };
  for (Case& c : cases) {
    Tensor received;
    caf::binary_deserializer source{nullptr, c.frame};
    EXPECT_TRUE(source(received)) << c.what << ": decoded";
  }
}

// Found by tools/fuzz/wire_fuzzer: inside a list (or a message, as every received
// tensor is) the decoder sees CAF's deserializer base class, and the check against
// the bytes left was skipped: a header announcing 2^60 bytes was allocated.
TEST(WireTest, HostileHeadersInsideAListAreRefusedBeforeAllocating) {
  const int32_t f32 = static_cast<int32_t>(DType::kFloat32);
  const int64_t count = int64_t{1} << 58;  // 2^60 bytes: no allocator can serve it
  std::vector<char> buffer;
  caf::binary_serializer sink{nullptr, buffer};
  size_t tensors = 2;
  ASSERT_FALSE(sink.begin_sequence(tensors));
  std::vector<char> first = Frame(f32, {2}, 8, std::vector<char>(8));
  buffer.insert(buffer.end(), first.begin(), first.end());
  std::vector<char> second = Frame(f32, {count}, uint64_t{1} << 60, std::vector<char>(16));
  buffer.insert(buffer.end(), second.begin(), second.end());

  std::vector<Tensor> received;
  caf::binary_deserializer source{nullptr, buffer};
  EXPECT_TRUE(source(received));
}

// Found by tools/fuzz/wire_fuzzer: a bool tensor whose bytes are "rep" decoded, and
// reading its elements loaded bytes that are not bools (undefined behavior).
TEST(WireTest, ABoolTensorWithAByteOtherThanZeroOrOneIsRefused) {
  const int32_t b = static_cast<int32_t>(DType::kBool);
  std::vector<char> frame = Frame(b, {3}, 3, {'r', 'e', 'p'});
  Tensor received;
  caf::binary_deserializer source{nullptr, frame};
  caf::error err = source(received);
  ASSERT_TRUE(err);
  EXPECT_FALSE(received.IsInitialized());

  std::vector<char> valid = Frame(b, {3}, 3, {1, 0, 1});
  caf::binary_deserializer good{nullptr, valid};
  ASSERT_FALSE(good(received));
  EXPECT_TRUE(TensorsEqual(received, Tensor::FromVector<bool>({true, false, true})));

  Tensor bad = Tensor::FromVector<bool>({true, false});
  static_cast<unsigned char*>(bad.raw_data())[1] = 7;
  EXPECT_THAT(CheckReceivedBools(bad).message(), HasSubstr("element 1 is byte 7, not 0 or 1"));
  EXPECT_TRUE(CheckReceivedBools(Tensor::FromVector<float>({2.0f})).ok());
}

// Found by tools/fuzz/wire_fuzzer: a ShardConfig whose learning rate decoded as an
// infinity hung when serialized again (CAF 0.17's double encoding loops forever on
// one). The rate now travels as its bits: every value, non-finite ones included,
// round-trips exactly and at once (the shard refuses non-finite rates itself).
TEST(WireTest, AShardConfigsLearningRateRoundTripsBitForBit) {
  const double inf = std::numeric_limits<double>::infinity();
  for (double rate : {0.1, -0.0, 5e-324, inf, -inf, std::numeric_limits<double>::quiet_NaN()}) {
    ShardConfig sent;
    sent.mode = UpdateMode::kSync;
    sent.total_replicas = 3;
    sent.replicas_to_aggregate = 2;
    sent.optimizer = "adam";
    sent.learning_rate = rate;
    sent.lr_decay = {600, rate};
    std::vector<char> buffer;
    caf::binary_serializer sink{nullptr, buffer};
    ASSERT_FALSE(sink(sent)) << rate;
    ShardConfig received;
    caf::binary_deserializer source{nullptr, buffer};
    ASSERT_FALSE(source(received)) << rate;
    EXPECT_EQ(received.mode, UpdateMode::kSync);
    EXPECT_EQ(received.replicas_to_aggregate, 2);
    EXPECT_EQ(received.optimizer, "adam");
    EXPECT_EQ(std::memcmp(&received.learning_rate, &rate, sizeof(rate)), 0) << rate;
    EXPECT_EQ(received.lr_decay.decay_steps, 600);
    EXPECT_EQ(std::memcmp(&received.lr_decay.decay_rate, &rate, sizeof(rate)), 0) << rate;
  }
}

TEST(WireTest, CheckReceivedTensorNamesWhatIsWrong) {
  const int32_t f32 = static_cast<int32_t>(DType::kFloat32);
  EXPECT_TRUE(CheckReceivedTensor(f32, {2, 3}, 24, 24).ok());
  EXPECT_TRUE(CheckReceivedTensor(f32, {0, int64_t{1} << 62}, 0, 0).ok());
  EXPECT_THAT(CheckReceivedTensor(99, {1}, 4, -1).message(), HasSubstr("unknown dtype code 99"));
  EXPECT_THAT(CheckReceivedTensor(f32, {2}, 4, -1).message(),
              HasSubstr("needs 8 bytes but the message says 4"));
  EXPECT_THAT(CheckReceivedTensor(f32, {2}, 8, 3).message(),
              HasSubstr("the message has only 3 left"));
  EXPECT_EQ(CheckReceivedTensor(f32, {int64_t{1} << 40, int64_t{1} << 40}, 16, -1).code(),
            Code::kInvalidArgument);
  EXPECT_EQ(CheckReceivedTensor(f32, {-1}, 0, -1).code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace actorflow
