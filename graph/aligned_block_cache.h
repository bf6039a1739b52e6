// Aligned host memory for tensor buffers, with a small per-thread cache of freed
// blocks. A training step allocates and frees the same few buffer sizes on every
// step; glibc serves 64-byte-aligned requests through memalign, which splits and
// later consolidates chunks and costs more than a small step's kernels. Freed blocks
// of up to kMaxCachedBlockBytes are kept on the freeing thread (per size, up to
// kMaxCachedBytesPerClass of them and at least kMinCachedBlocksPerClass; a bounded
// total) and handed out again by the next allocation of that size there. Small
// blocks come and go by the batch: an input pipeline makes a tensor for each
// component of each example and drops a whole batch of them at once.
// Larger blocks (below) are kept for every thread instead.
//
// Contract: AllocateAlignedBlock(bytes) returns memory aligned to `alignment` with
// room for `bytes` (rounded up to the alignment, at least one unit) or null when out
// of memory; FreeAlignedBlock must get the same `bytes` and `alignment` back. Blocks
// may be freed on any thread. Sanitized builds bypass the cache, so that a use after
// free is still caught.
#ifndef ACTORFLOW_GRAPH_ALIGNED_BLOCK_CACHE_H_
#define ACTORFLOW_GRAPH_ALIGNED_BLOCK_CACHE_H_

#include <cstddef>

namespace actorflow {

inline constexpr size_t kMaxCachedBlockBytes = 64 * 1024;
inline constexpr size_t kMaxCachedBytesPerThread = 4 * 1024 * 1024;
inline constexpr size_t kMaxCachedBytesPerClass = 256 * 1024;
inline constexpr size_t kMinCachedBlocksPerClass = 16;
// Freed blocks above kMaxCachedBlockBytes go to one cache shared by every thread
// (per size up to kMaxCachedLargeBytesPerSize of them and at least
// kMinCachedLargeBlocksPerSize; kMaxCachedLargeBytes in all): a process that made
// big tensors keeps up to that much memory for the next ones of the same sizes.
inline constexpr size_t kMinLargeBlockBytes = kMaxCachedBlockBytes + 1;
inline constexpr size_t kMaxCachedLargeBytes = size_t{512} * 1024 * 1024;
inline constexpr size_t kMaxCachedLargeBytesPerSize = size_t{16} * 1024 * 1024;
inline constexpr size_t kMinCachedLargeBlocksPerSize = 8;

void* AllocateAlignedBlock(size_t alignment, size_t bytes);
void FreeAlignedBlock(void* block, size_t alignment, size_t bytes);

// Blocks the calling thread's cache holds now, and whether this build caches at all
// (tests).
size_t CachedAlignedBlocks();
// Blocks the cache shared by every thread (the larger sizes) holds now (tests).
size_t CachedLargeBlocks();
bool AlignedBlockCacheEnabled();

}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_ALIGNED_BLOCK_CACHE_H_
