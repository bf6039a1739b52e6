// RandomStream: the deterministic source behind the random kernels. A 64-bit
// Mersenne Twister seeded with the op's `seed` attr; uniform values come from the top
// 24 (float) or 53 (double) bits of each draw and normal values from a Box-Muller
// transform written out here, so a seed gives the same numbers with every standard
// library (std::*_distribution algorithms are implementation-defined).
//
// Thread safety: none; a kernel that shares one stream across concurrent Compute
// calls guards it with a mutex.
#ifndef ACTORFLOW_KERNELS_CPU_RANDOM_H_
#define ACTORFLOW_KERNELS_CPU_RANDOM_H_

#include <cmath>
#include <cstdint>
#include <random>

namespace actorflow {
namespace cpu {

class RandomStream {
 public:
  explicit RandomStream(uint64_t seed) : engine_(seed) {}

  // Uniform in [0, 1) with 24 random bits.
  float UniformFloat() { return static_cast<float>(engine_() >> 40) * 0x1p-24f; }
  // Uniform in [0, 1) with 53 random bits.
  double UniformDouble() { return static_cast<double>(engine_() >> 11) * 0x1p-53; }

  // Two independent standard normal values from two uniform draws (Box-Muller).
  void NormalPair(double* z0, double* z1) {
    const double u1 = 1.0 - UniformDouble();  // in (0, 1]: log(u1) is finite
    const double u2 = UniformDouble();
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double theta = 2.0 * kPi * u2;
    *z0 = r * std::cos(theta);
    *z1 = r * std::sin(theta);
  }

 private:
  static constexpr double kPi = 3.14159265358979323846;
  std::mt19937_64 engine_;
};

}  // namespace cpu
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CPU_RANDOM_H_
