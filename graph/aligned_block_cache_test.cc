#include "graph/aligned_block_cache.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "graph/tensor.h"

namespace actorflow {
namespace {

bool Aligned(const void* p, size_t alignment) {
  return reinterpret_cast<uintptr_t>(p) % alignment == 0;
}

TEST(AlignedBlockCacheTest, BlocksAreAlignedAndUsableWhateverTheSize) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{1000},
                       kMaxCachedBlockBytes, kMaxCachedBlockBytes + 1, size_t{1} << 20}) {
    void* block = AllocateAlignedBlock(64, bytes);
    ASSERT_NE(block, nullptr) << bytes;
    EXPECT_TRUE(Aligned(block, 64)) << bytes;
    std::memset(block, 0xab, bytes);
    FreeAlignedBlock(block, 64, bytes);
  }
}

TEST(AlignedBlockCacheTest, AFreedBlockIsHandedOutAgainForTheSameSizeOnly) {
  if (!AlignedBlockCacheEnabled()) GTEST_SKIP() << "sanitized build: no cache";
  const size_t before = CachedAlignedBlocks();
  void* block = AllocateAlignedBlock(64, 1280);
  FreeAlignedBlock(block, 64, 1280);
  EXPECT_EQ(CachedAlignedBlocks(), before + 1);
  void* other_size = AllocateAlignedBlock(64, 4096);
  EXPECT_NE(other_size, block);
  // 1250 bytes round up to the same 1280-byte block.
  void* again = AllocateAlignedBlock(64, 1250);
  EXPECT_EQ(again, block);
  EXPECT_EQ(CachedAlignedBlocks(), before);
  FreeAlignedBlock(again, 64, 1250);
  FreeAlignedBlock(other_size, 64, 4096);
}

TEST(AlignedBlockCacheTest, LargeBlocksAndBlocksBeyondTheBoundAreNotKept) {
  if (!AlignedBlockCacheEnabled()) GTEST_SKIP() << "sanitized build: no cache";
  const size_t before = CachedAlignedBlocks();
  void* large = AllocateAlignedBlock(64, kMaxCachedBlockBytes + 64);
  FreeAlignedBlock(large, 64, kMaxCachedBlockBytes + 64);
  EXPECT_EQ(CachedAlignedBlocks(), before);
  // More blocks of one size than a class keeps: the rest go back to the allocator.
  const size_t kept = kMaxCachedBytesPerClass / 1088;  // a size no other test uses
  std::vector<void*> blocks;
  for (size_t i = 0; i < kept + 100; ++i) blocks.push_back(AllocateAlignedBlock(64, 1088));
  for (void* b : blocks) FreeAlignedBlock(b, 64, 1088);
  EXPECT_EQ(CachedAlignedBlocks(), before + kept);
  // And the cached ones are distinct blocks, handed out once each.
  std::set<void*> handed;
  for (size_t i = 0; i < kept + 100; ++i) {
    EXPECT_TRUE(handed.insert(AllocateAlignedBlock(64, 1088)).second);
  }
  EXPECT_EQ(CachedAlignedBlocks(), before);
  for (void* b : handed) FreeAlignedBlock(b, 64, 1088);
}

TEST(AlignedBlockCacheTest, AWholeBatchOfSmallBlocksIsKeptForTheNextBatch) {
  if (!AlignedBlockCacheEnabled()) GTEST_SKIP() << "sanitized build: no cache";
  // An input pipeline's pattern: a tensor per component of each of 256 examples
  // (both sizes round up to one 64-byte class), dropped together once they are
  // batched; the next batch's tensors must all come from the cache.
  auto make_batch = [] {
    std::vector<void*> batch;
    for (int i = 0; i < 512; ++i) batch.push_back(AllocateAlignedBlock(64, i % 2 ? 4 : 16));
    return batch;
  };
  std::vector<void*> first = make_batch();
  const size_t before = CachedAlignedBlocks();
  for (size_t i = 0; i < first.size(); ++i) FreeAlignedBlock(first[i], 64, i % 2 ? 4 : 16);
  EXPECT_EQ(CachedAlignedBlocks(), before + first.size());
  std::vector<void*> second = make_batch();
  EXPECT_EQ(CachedAlignedBlocks(), before);
  EXPECT_EQ(std::set<void*>(second.begin(), second.end()),
            std::set<void*>(first.begin(), first.end()));
  for (size_t i = 0; i < second.size(); ++i) FreeAlignedBlock(second[i], 64, i % 2 ? 4 : 16);
}

TEST(AlignedBlockCacheTest, TensorsMadeOnOneThreadAndDroppedOnAnotherKeepTheirValues) {
  // The runtime's pattern: a device thread makes outputs, the client's thread drops
  // them. Values must never leak from a recycled block into a new zero-filled tensor.
  for (int round = 0; round < 50; ++round) {
    std::vector<Tensor> made(8);
    std::thread maker([&] {
      for (auto& t : made) {
        t = Tensor(DType::kFloat32, Shape({32, 10}));
        for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = 1.0f + round;
      }
    });
    maker.join();
    for (const Tensor& t : made) {
      for (int64_t i = 0; i < t.NumElements(); ++i) ASSERT_EQ(t.data<float>()[i], 1.0f + round);
    }
    made.clear();  // freed here, cached on this thread
    Tensor fresh(DType::kFloat32, Shape({32, 10}));
    for (int64_t i = 0; i < fresh.NumElements(); ++i) ASSERT_EQ(fresh.data<float>()[i], 0.0f);
  }
}

TEST(AlignedBlockCacheTest, ALargeBlockFreedOnOneThreadIsReusedOnAnotherAndZeroedForATensor) {
  if (!AlignedBlockCacheEnabled()) GTEST_SKIP() << "a sanitized build keeps no cache";
  const size_t bytes = 3 * kMinLargeBlockBytes + 64;
  void* block = nullptr;
  std::thread maker([&] { block = AllocateAlignedBlock(64, bytes); });
  maker.join();
  ASSERT_NE(block, nullptr);
  FreeAlignedBlock(block, 64, bytes);
  void* again = nullptr;
  std::thread other([&] { again = AllocateAlignedBlock(64, bytes); });
  other.join();
  EXPECT_EQ(again, block);  // no fresh mapping, no page faults
  FreeAlignedBlock(again, 64, bytes);
  // A zero-filled tensor of a recycled size still starts at zero.
  {
    Tensor dirty(DType::kFloat32, Shape({int64_t{1} << 19}));  // 2 MiB
    for (int64_t i = 0; i < dirty.NumElements(); ++i) dirty.data<float>()[i] = 7.0f;
  }
  Tensor fresh(DType::kFloat32, Shape({int64_t{1} << 19}));
  for (int64_t i = 0; i < fresh.NumElements(); i += 4099) ASSERT_EQ(fresh.data<float>()[i], 0.0f);
}

// A block between the per-thread classes and a megabyte (an MLP's weight gradient,
// 784 x 256 floats) is kept too, up to kMaxCachedLargeBytesPerSize of one size:
// glibc would hand it out from freshly faulted pages on every step.
TEST(AlignedBlockCacheTest, MidSizeBlocksOfOneSizeAreReusedUpToTheirBound) {
  if (!AlignedBlockCacheEnabled()) GTEST_SKIP() << "a sanitized build keeps no cache";
  const size_t bytes = 784 * 256 * sizeof(float) + 128;  // a size no other test uses
  ASSERT_GE(bytes, kMinLargeBlockBytes);
  const size_t kept = kMaxCachedLargeBytesPerSize / bytes;
  ASSERT_GE(kept, kMinCachedLargeBlocksPerSize);
  const size_t before = CachedLargeBlocks();
  std::vector<void*> blocks;
  for (size_t i = 0; i < kept + 3; ++i) blocks.push_back(AllocateAlignedBlock(64, bytes));
  std::set<void*> freed(blocks.begin(), blocks.end());
  ASSERT_EQ(freed.size(), blocks.size());
  std::thread freer([&] {
    for (void* b : blocks) FreeAlignedBlock(b, 64, bytes);
  });
  freer.join();
  EXPECT_EQ(CachedLargeBlocks(), before + kept);
  // This thread takes back `kept` of them; the 3 beyond the bound went to glibc.
  std::vector<void*> again;
  for (size_t i = 0; i < kept; ++i) again.push_back(AllocateAlignedBlock(64, bytes));
  for (void* b : again) EXPECT_EQ(freed.count(b), 1u) << "a kept block is handed out again";
  EXPECT_EQ(std::set<void*>(again.begin(), again.end()).size(), kept);
  EXPECT_EQ(CachedLargeBlocks(), before);
  for (void* b : again) FreeAlignedBlock(b, 64, bytes);
}

}  // namespace
}  // namespace actorflow
