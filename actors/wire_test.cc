// The wire form of a tensor (actors/wire_core.h): what a receiving process decodes
// from a frame, including frames a hostile or broken peer sends. A tensor header
// whose byte count overflows, disagrees with its shape or exceeds the message is
// refused before anything is allocated.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include <caf/all.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include "actors/wire_core.h"

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
