// The kernel test harness: runs one op's kernel on a device type exactly as the
// executor would (a Graph with the op's node, shape inference, KernelRegistry,
// KernelContext) and checks every output against the reference kernels
// (kernels/reference). Adding a test of an op is one KernelTestCase.
//
// What a passing MatchesReference() establishes for a case:
// - the node builds (inference accepts the inputs) and a kernel exists for its
//   kernel dtype on the device;
// - the kernel succeeds, sets every output with the node's inferred dtype and a shape
//   compatible with the inferred one, and leaves its inputs unchanged;
// - every output has the reference's dtype and shape and values within Tolerance;
// - the same holds when the inputs come from Placeholders of unknown rank (so the
//   kernel takes shapes from its inputs, not from inference);
// - on the CPU, the same holds when the kernel's context holds the only reference to
//   each input, as the executor gives a tensor's last consumer (so that a kernel
//   that writes its output over an input is checked in place too).
//
// Thread safety: none needed; each call builds its own graph.
#ifndef ACTORFLOW_KERNELS_KERNELS_TEST_UTIL_H_
#define ACTORFLOW_KERNELS_KERNELS_TEST_UTIL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "graph/attr_value.h"
#include "graph/graph.h"
#include "graph/shape.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "graph/types.h"
#include "kernels/kernel.h"

namespace actorflow {

// The name of the node under test; kernel errors must mention it.
inline constexpr char kNodeUnderTest[] = "node_under_test";

inline const std::vector<DType> kAllDTypes = {DType::kFloat32, DType::kFloat64, DType::kInt32,
                                              DType::kInt64, DType::kBool};
inline const std::vector<DType> kNumericDTypes = {DType::kFloat32, DType::kFloat64,
                                                  DType::kInt32, DType::kInt64};
inline const std::vector<DType> kFloatDTypes = {DType::kFloat32, DType::kFloat64};
inline const std::vector<DType> kIntDTypes = {DType::kInt32, DType::kInt64};

// An output element `got` matches `want` when |got - want| <= atol + rtol * |want|;
// NaN matches NaN and an infinity matches the same infinity. {0, 0} = exact.
struct Tolerance {
  double rtol = 0.0;
  double atol = 0.0;
};

// Exact for integers and bool. float32: rtol 1e-5 and atol 1e-6, or atol 1e-5 for
// ops that sum many terms (MatMul, reductions, softmax, cross-entropies, BiasAdd);
// float64: rtol and atol 1e-12.
Tolerance DefaultTolerance(const std::string& op, DType dtype);

struct KernelTestCase {
  std::string op;
  AttrMap attrs;  // as written; the graph fills in defaults
  std::vector<Tensor> inputs;
  // Inputs fed through a Const node instead of a Placeholder (a shape that inference
  // must see, like Reshape's). Const inputs keep their shape in the unknown-rank run.
  std::vector<int> const_inputs;
  // Overrides DefaultTolerance for every output.
  std::optional<Tolerance> tolerance;
  std::string device_type = kDeviceCpu;
  // Inputs fed through a Variable node initialized with the input's value (the ref
  // inputs of Scatter* and SparseApply*); KernelRun::variables holds their final values.
  std::vector<int> variable_inputs;

  // "Add(float32[2,3], float32[3]) {attrs}" for failure messages.
  std::string ToString() const;
};

// One computation of the node under test.
struct KernelRun {
  std::unique_ptr<Graph> graph;
  const Node* node = nullptr;  // owned by graph
  Status status;               // the kernel's status after Compute
  std::vector<Tensor> outputs;
  // The values of the case's variable_inputs after Compute, in their order, in host
  // memory.
  std::vector<Tensor> variables;
  // The input tensors the kernel's context held (CPU only), to tell whether an
  // output was written over one (SharesBufferWith).
  std::vector<Tensor> inputs;
};

// Builds a graph of Placeholders (exact shapes, or unknown rank when
// `unknown_input_shapes`) and Consts for the inputs plus the node under test, creates
// its kernel on c.device_type and computes it once. A graph-building or
// kernel-creation error is returned as the Status; a Compute error is in run.status.
// Off the CPU the kernel runs as on device 0 of its type ("...device:GPU:0") with an
// AsyncScheduler whose posted work runs on the calling thread, and its outputs are
// copied to host memory (kernels/gpu_runtime.h) before they are returned.
// `sole_inputs` (CPU only): the context gets copies of the inputs that nothing else
// holds, as the executor hands a tensor to its last consumer, so that a kernel may
// write its output over one (ForwardInputOrAllocateOutput, kernels/cpu/kernel_util.h).
StatusOr<KernelRun> RunKernel(const KernelTestCase& c, bool unknown_input_shapes = false,
                              bool sole_inputs = false);

// Compares dtype, shape and every element; the message lists the first mismatches.
::testing::AssertionResult TensorsClose(const Tensor& want, const Tensor& got, Tolerance tol);

// The check described at the top of this file.
::testing::AssertionResult MatchesReference(const KernelTestCase& c);

// The case is rejected with `code`: the reference rejects it, and either building the
// node fails with `code` or the kernel fails with `code` and a message that names the
// node (Node::Describe()). When `substring` is not empty the error message contains it.
::testing::AssertionResult FailsWith(const KernelTestCase& c, Code code,
                                     const std::string& substring = "");

// The parameter of a test run once per (op, dtype); named "Add_float32".
struct OpDType {
  std::string op;
  DType dtype;
};
// Every op with every dtype.
std::vector<OpDType> Combine(const std::vector<std::string>& ops,
                             const std::vector<DType>& dtypes);
std::string OpDTypeName(const ::testing::TestParamInfo<OpDType>& info);
void PrintTo(const OpDType& p, std::ostream* os);

// A tensor from values given as doubles (converted like a static_cast; bool is v != 0).
// Precondition: values.size() == shape.num_elements().
Tensor MakeTensor(DType dtype, const Shape& shape, const std::vector<double>& values);

// Deterministic random tensors: the same seed gives the same tensors.
class RandomTensors {
 public:
  explicit RandomTensors(uint64_t seed) : rng_(seed) {}

  // Floats uniform in [lo, hi); integers uniform in [ceil(lo), floor(hi)]; bool a fair
  // coin.
  Tensor Uniform(DType dtype, const Shape& shape, double lo = -1.0, double hi = 1.0);
  // Like Uniform(lo = min_abs, hi = max_abs) with a random sign: never in
  // (-min_abs, min_abs), so never 0 when min_abs > 0 (a divisor).
  Tensor AwayFromZero(DType dtype, const Shape& shape, double min_abs, double max_abs);
  // Integer labels in [0, classes) of dtype int32 or int64, shape [n].
  Tensor Labels(DType dtype, int64_t n, int64_t classes);
  // Each row of [n, c] non-negative and summing to 1 (soft labels).
  Tensor Probabilities(DType dtype, int64_t n, int64_t c);

 private:
  double Draw(double lo, double hi);
  std::mt19937_64 rng_;
};

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_KERNELS_TEST_UTIL_H_
