// Counter-based random bits: the draw behind Dropout's mask, written once for the CPU
// kernel (kernels/cpu/dropout_kernels.cc) and the CUDA kernel (kernels/cuda/norm.cu),
// so that a seed gives the same mask on every device and at every thread count.
//
// A stream is (seed, draw): draw d of a kernel seeded with s is the d-th tensor it
// produces. Element i of that draw is SplitMix64's i-th output from the state
// StreamKey(s, d), i.e. Mix(key + (i + 1) * kGolden) (Steele, Lea and Flood, "Fast
// splittable pseudorandom number generators", 2014), computed without a sequential
// dependency so that any thread can compute any element. Two draws overlap only when
// their keys are within n * kGolden of each other: with 64-bit keys, never in practice.
//
// Header-only, no dependency: nvcc compiles it too (AF_HOST_DEVICE). Integer
// arithmetic only, so every device gets the same bits.
//
// Thread safety: pure functions.
#ifndef ACTORFLOW_KERNELS_RANDOM_BITS_H_
#define ACTORFLOW_KERNELS_RANDOM_BITS_H_

#include <cmath>
#include <cstdint>

#include "kernels/cuda/host_device.h"

namespace actorflow {

inline constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;

// SplitMix64's output function: a bijection of 64-bit words that mixes every bit.
AF_HOST_DEVICE inline uint64_t MixBits(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// The state of draw `draw` of the stream seeded with `seed`.
AF_HOST_DEVICE inline uint64_t StreamKey(uint64_t seed, uint64_t draw) {
  return MixBits(MixBits(seed) + (draw + 1) * kGolden);
}

// 64 random bits for element i of the draw whose key is `key`.
AF_HOST_DEVICE inline uint64_t ElementBits(uint64_t key, uint64_t i) {
  return MixBits(key + (i + 1) * kGolden);
}

// Dropout keeps element i when the uniform u = (bits >> 11) * 2^-53 in [0, 1) of its
// bits is below keep_prob: with probability keep_prob. Decided in integers, exactly
// the same way: u < p  <=>  (bits >> 11) < p * 2^53 (a scaling by a power of two, so
// exact)  <=>  (bits >> 11) < ceil(p * 2^53). KeepThreshold is that ceiling, for
// keep_prob in (0, 1]; it is computed once per draw, on the host.
inline uint64_t KeepThreshold(double keep_prob) {
  return static_cast<uint64_t>(std::ceil(keep_prob * 0x1p53));
}

AF_HOST_DEVICE inline bool DropoutKeeps(uint64_t key, uint64_t i, uint64_t threshold) {
  return (ElementBits(key, i) >> 11) < threshold;
}

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_RANDOM_BITS_H_
