// The numeric gradient check shared by the tests of the backward rules
// (gradient_rule_check_test.cc, graph/gradient_rules.cc) and of Gradients() itself
// (gradients_test.cc, graph/gradients.h).
//
// GradientsMatch() builds f(x_0, ..., x_{n-1}) from float64 Placeholders, reduces it
// to the scalar L = Sum(f * W) with fixed random weights W (so every element of f
// matters), computes dL/dx_i with Gradients() and runs it through a DirectSession,
// then compares each element with the central difference (L(x + h) - L(x - h)) / 2h,
// h = 1e-6 * max(1, |x|). The error metric is scale-safe:
//     err = |symbolic - numeric| / max(1, |symbolic|, |numeric|)
// (absolute below magnitude 1, relative above) and must be <= kMaxError. Every check
// runs twice: with the Placeholders' shapes known at build time and with unknown
// shapes, so the rules' runtime-shape paths (SumToShapeOf, Size, ...) are exercised
// too. Callers keep inputs away from kinks (Rng's AwayFromZero, Grid, Distinct).
//
// Stateful random ops (Dropout) draw anew on every run of one session, but the same
// values in every new session: with CheckOptions::fresh_session_per_run each
// evaluation runs in a session of its own, so every evaluation sees the same draw.
//
// Every checked element goes through Record(); a test binary that links this library
// prints the worst error over all of them when its tests end.
//
// Thread safety: none; for the single-threaded test body only (Record and
// GradientsMatch keep process-wide state).
#ifndef ACTORFLOW_KERNELS_GRADIENT_CHECK_UTIL_H_
#define ACTORFLOW_KERNELS_GRADIENT_CHECK_UTIL_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "graph/scope.h"
#include "graph/shape.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"

namespace actorflow {
namespace gradient_check {

inline constexpr double kMaxError = 1e-6;

// Seeded float64 test inputs: a given seed always draws the same tensors.
class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}

  double Uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(gen_);
  }
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen_); }

  Tensor Fill(const Shape& shape, const std::function<double()>& draw) {
    std::vector<double> v(shape.num_elements());
    for (double& e : v) e = draw();
    return Tensor::FromVector(v, shape);
  }
  Tensor Uniform(const Shape& shape, double lo = -2, double hi = 2) {
    return Fill(shape, [&] { return Uniform(lo, hi); });
  }
  // |v| in [min_abs, max_abs] with a random sign.
  Tensor AwayFromZero(const Shape& shape, double min_abs = 0.1, double max_abs = 2) {
    return Fill(shape, [&] { return (Int(0, 1) ? 1 : -1) * Uniform(min_abs, max_abs); });
  }
  // Values on the grid 0.1 * k + offset, k in [-10, 10]: two grids with offsets 0.025
  // and 0.075 never come closer than 0.05, so Maximum/Minimum have no ties.
  Tensor Grid(const Shape& shape, double offset) {
    return Fill(shape, [&] { return 0.1 * Int(-10, 10) + offset; });
  }
  // Distinct values at least 0.3 apart in random order: no ties in Max/Min.
  Tensor Distinct(const Shape& shape) {
    std::vector<double> v(shape.num_elements());
    for (size_t i = 0; i < v.size(); ++i) v[i] = 0.37 * (static_cast<double>(i) - v.size() / 2.0);
    std::shuffle(v.begin(), v.end(), gen_);
    return Tensor::FromVector(v, shape);
  }
  // Rank 0..3, dims 1..4.
  Shape RandomShape(int min_rank = 0) {
    std::vector<int64_t> dims(Int(min_rank, 3));
    for (int64_t& d : dims) d = Int(1, 4);
    return Shape(dims);
  }
  // A shape that broadcasts to `shape`: a random suffix with some dims set to 1.
  Shape BroadcastPartner(const Shape& shape) {
    std::vector<int64_t> dims(shape.dims().begin() + Int(0, shape.rank()), shape.dims().end());
    for (int64_t& d : dims) d = Int(0, 2) == 0 ? 1 : d;
    return Shape(dims);
  }
  std::mt19937_64& gen() { return gen_; }

 private:
  std::mt19937_64 gen_;
};

// f(scope, xs): the function under test; the xs are float64 Placeholders.
using Fn = std::function<Output(const Scope&, const std::vector<Output>&)>;

// The scale-safe error of the file comment.
double ErrorOf(double symbolic, double numeric);

// Counts one checked element and remembers the worst error and what it came from.
void Record(double error, const std::string& what);

// The check of the file comment, with the inputs' shapes known and then unknown.
// Use as EXPECT_TRUE(GradientsMatch(...)); a failure starts with `what` and the shape
// form, and names the step that failed or the first elements whose error exceeds
// kMaxError (input, element, symbolic and numeric value). Each call draws its weights
// W from the next seed of a process-wide sequence, so a binary's checks are
// reproducible in their order.
struct CheckOptions {
  // Each run (f, the gradients, every moved loss) in a new DirectSession.
  bool fresh_session_per_run = false;
};
[[nodiscard]] ::testing::AssertionResult GradientsMatch(const std::string& what,
                                                        const std::vector<Tensor>& inputs,
                                                        const Fn& f,
                                                        const CheckOptions& options = {});

// "[2,3], [3]": the inputs' shapes, for the `what` of a check.
std::string ShapesOf(const std::vector<Tensor>& inputs);

}  // namespace gradient_check
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_GRADIENT_CHECK_UTIL_H_
