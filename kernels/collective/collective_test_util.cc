#include "kernels/collective/collective_test_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>

namespace actorflow {

Tensor ReductionInput(DType dtype, const Shape& shape, int rank, uint32_t seed) {
  std::mt19937 rng(seed * 7919u + static_cast<uint32_t>(rank) * 104729u + 1u);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-3, 3);
  std::uniform_int_distribution<int> integer(-1000, 1000);
  Tensor t(dtype, shape);
  VisitDType(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* data = t.data<T>();
    for (int64_t i = 0; i < t.NumElements(); ++i) {
      if constexpr (std::is_floating_point_v<T>) {
        data[i] = static_cast<T>(unit(rng) * std::pow(10.0, exponent(rng)));
      } else if constexpr (std::is_same_v<T, bool>) {
        data[i] = integer(rng) > 0;
      } else {
        data[i] = static_cast<T>(integer(rng));
      }
    }
  });
  return t;
}

std::vector<Tensor> GroupInputs(DType dtype, const Shape& shape, int group_size, uint32_t seed) {
  std::vector<Tensor> inputs;
  for (int rank = 0; rank < group_size; ++rank) {
    inputs.push_back(ReductionInput(dtype, shape, rank, seed));
  }
  return inputs;
}

std::vector<double> Values(const Tensor& t) {
  std::vector<double> values;
  for (int64_t i = 0; i < t.NumElements(); ++i) values.push_back(t.ElementAsDouble(i));
  return values;
}

std::vector<double> ReferenceSum(const std::vector<Tensor>& inputs) {
  std::vector<double> sum(static_cast<size_t>(inputs.at(0).NumElements()), 0.0);
  for (const Tensor& input : inputs) {
    for (int64_t i = 0; i < input.NumElements(); ++i) {
      sum[static_cast<size_t>(i)] += input.ElementAsDouble(i);
    }
  }
  return sum;
}

std::vector<double> ReferenceResult(const std::vector<Tensor>& inputs, ReduceOp op) {
  std::vector<double> result = ReferenceSum(inputs);
  if (op == ReduceOp::kSum) return result;
  const bool integer = IsInteger(inputs.at(0).dtype());
  const double n = static_cast<double>(inputs.size());
  for (double& x : result) x = integer ? std::trunc(x / n) : x / n;
  return result;
}

::testing::AssertionResult MatchesReference(const Tensor& actual, DType dtype, const Shape& shape,
                                            const std::vector<double>& expected,
                                            const std::vector<Tensor>& inputs) {
  if (actual.dtype() != dtype || actual.shape() != shape) {
    return ::testing::AssertionFailure() << "got " << actual.DebugString() << ", expected "
                                         << DTypeName(dtype) << shape.ToString();
  }
  // Each of the N-1 roundings of a float sum errs by at most eps * (sum of |terms|).
  double magnitude = 0.0;
  for (const Tensor& input : inputs) {
    for (int64_t i = 0; i < input.NumElements(); ++i) {
      magnitude = std::max(magnitude, std::fabs(input.ElementAsDouble(i)));
    }
  }
  const double eps = dtype == DType::kFloat32 ? 1.2e-7 : dtype == DType::kFloat64 ? 2.3e-16 : 0.0;
  const double n = static_cast<double>(inputs.size());
  const double tolerance = 2.0 * eps * n * n * magnitude;
  for (int64_t i = 0; i < actual.NumElements(); ++i) {
    const double got = actual.ElementAsDouble(i);
    const double want = expected[static_cast<size_t>(i)];
    if (std::fabs(got - want) > tolerance) {
      return ::testing::AssertionFailure() << "element " << i << " is " << got << ", expected "
                                           << want << " (tolerance " << tolerance << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

bool BitIdentical(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  return a.TotalBytes() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
}

}  // namespace actorflow
