#include "graph/aligned_block_cache.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

namespace actorflow {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kCacheBlocks = false;
#else
constexpr bool kCacheBlocks = true;
#endif

constexpr size_t kSizeClasses = 16;  // distinct block sizes a thread keeps

size_t BlocksPerClass(size_t rounded) {
  return std::max(kMinCachedBlocksPerClass, kMaxCachedBytesPerClass / rounded);
}

size_t Rounded(size_t alignment, size_t bytes) {
  // aligned_alloc needs a size that is a multiple of the alignment, and never 0.
  const size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  return rounded == 0 ? alignment : rounded;
}

class BlockCache {
 public:
  ~BlockCache();

  void* Take(size_t alignment, size_t rounded) {
    Class* c = Find(alignment, rounded);
    if (c == nullptr || c->blocks.empty()) return nullptr;
    void* block = c->blocks.back();
    c->blocks.pop_back();
    cached_bytes_ -= rounded;
    return block;
  }

  // False when the block does not fit (the caller frees it).
  bool Keep(void* block, size_t alignment, size_t rounded) {
    if (cached_bytes_ + rounded > kMaxCachedBytesPerThread) return false;
    Class* c = Find(alignment, rounded);
    if (c == nullptr) c = Claim(alignment, rounded);
    if (c == nullptr || c->blocks.size() >= BlocksPerClass(rounded)) return false;
    c->blocks.push_back(block);
    cached_bytes_ += rounded;
    return true;
  }

  size_t blocks() const {
    size_t n = 0;
    for (const Class& c : classes_) n += c.blocks.size();
    return n;
  }

 private:
  struct Class {
    size_t alignment = 0;
    size_t bytes = 0;  // 0: unused
    std::vector<void*> blocks;
  };

  Class* Find(size_t alignment, size_t rounded) {
    for (Class& c : classes_) {
      if (c.bytes == rounded && c.alignment == alignment) return &c;
    }
    return nullptr;
  }
  // An unused class, or one holding no block, takes the new size.
  Class* Claim(size_t alignment, size_t rounded) {
    for (Class& c : classes_) {
      if (c.bytes == 0 || c.blocks.empty()) {
        c.alignment = alignment;
        c.bytes = rounded;
        return &c;
      }
    }
    return nullptr;
  }

  std::array<Class, kSizeClasses> classes_;
  size_t cached_bytes_ = 0;
};

// 0: this thread has no cache yet; 1: it has one; 2: it was destroyed (the thread is
// ending, and a buffer freed from a later destructor goes straight to free()).
// Trivially destructible, so it can still be read then.
thread_local int t_cache_state = 0;

BlockCache::~BlockCache() {
  for (Class& c : classes_) {
    for (void* block : c.blocks) std::free(block);
    c.blocks.clear();
  }
  t_cache_state = 2;
}

BlockCache* ThreadCache() {
  if (!kCacheBlocks || t_cache_state == 2) return nullptr;
  thread_local BlockCache cache;
  t_cache_state = 1;
  return &cache;
}

// Large blocks, shared by all threads: glibc maps every block above its mmap
// threshold (at most 32 MiB) afresh and unmaps it on free, so a step that makes the
// same big tensors again pays a page fault and a page clear per 4 KiB of each, which
// costs more than the copies and sums that fill them (a 64 MiB all-reduce spent
// about half its time so). Blocks below the threshold come from a heap that glibc
// trims after frees, with the same effect: an MLP's 800 KB weight gradient faulted
// its pages in on every step. A freed block of kMinLargeBlockBytes or more waits
// here for the next allocation of its exact size, on any thread.
class LargeBlockCache {
 public:
  void* Take(size_t alignment, size_t rounded) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = blocks_.find({rounded, alignment});
    if (it == blocks_.end() || it->second.empty()) return nullptr;
    void* block = it->second.back();
    it->second.pop_back();
    cached_bytes_ -= rounded;
    return block;
  }
  size_t blocks() {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (const auto& entry : blocks_) n += entry.second.size();
    return n;
  }
  bool Keep(void* block, size_t alignment, size_t rounded) {
    std::lock_guard<std::mutex> lock(mu_);
    if (cached_bytes_ + rounded > kMaxCachedLargeBytes) return false;
    std::vector<void*>& same = blocks_[{rounded, alignment}];
    if (same.size() >= std::max(kMinCachedLargeBlocksPerSize,
                                kMaxCachedLargeBytesPerSize / rounded)) {
      return false;
    }
    same.push_back(block);
    cached_bytes_ += rounded;
    return true;
  }

 private:
  std::mutex mu_;
  std::map<std::pair<size_t, size_t>, std::vector<void*>> blocks_;  // (bytes, alignment)
  size_t cached_bytes_ = 0;
};

// Never destroyed: blocks may be freed by static destructors at exit.
LargeBlockCache* SharedLargeCache() {
  if (!kCacheBlocks) return nullptr;
  static LargeBlockCache* cache = new LargeBlockCache();
  return cache;
}

}  // namespace

void* AllocateAlignedBlock(size_t alignment, size_t bytes) {
  const size_t rounded = Rounded(alignment, bytes);
  if (rounded <= kMaxCachedBlockBytes) {
    if (BlockCache* cache = ThreadCache()) {
      if (void* block = cache->Take(alignment, rounded)) return block;
    }
  } else if (rounded >= kMinLargeBlockBytes) {
    if (LargeBlockCache* cache = SharedLargeCache()) {
      if (void* block = cache->Take(alignment, rounded)) return block;
    }
  }
  return std::aligned_alloc(alignment, rounded);
}

void FreeAlignedBlock(void* block, size_t alignment, size_t bytes) {
  if (block == nullptr) return;
  const size_t rounded = Rounded(alignment, bytes);
  if (rounded <= kMaxCachedBlockBytes) {
    if (BlockCache* cache = ThreadCache()) {
      if (cache->Keep(block, alignment, rounded)) return;
    }
  } else if (rounded >= kMinLargeBlockBytes) {
    if (LargeBlockCache* cache = SharedLargeCache()) {
      if (cache->Keep(block, alignment, rounded)) return;
    }
  }
  std::free(block);
}

bool AlignedBlockCacheEnabled() { return kCacheBlocks; }

size_t CachedAlignedBlocks() {
  BlockCache* cache = ThreadCache();
  return cache == nullptr ? 0 : cache->blocks();
}

size_t CachedLargeBlocks() {
  LargeBlockCache* cache = SharedLargeCache();
  return cache == nullptr ? 0 : cache->blocks();
}

}  // namespace actorflow
