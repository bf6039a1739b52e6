// Which kernels exist: every stateless op has a CPU kernel, every (op, dtype) that the
// op set contract requires is registered on the CPU, and the reference kernels cover
// every op that the kernel tests compare.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "graph/op_registry.h"
#include "kernels/kernel.h"
#include "kernels/kernels_test_util.h"
#include "kernels/reference/reference.h"

namespace actorflow {
namespace {

// Ops without a value the reference can compute: sources, state, randomness.
const std::set<std::string> kWithoutReference = {
    "Const",     "Placeholder", "Variable",      "Assign",       "AssignAdd",
    "AssignSub", "NoOp",        "RandomUniform", "RandomNormal", "TruncatedNormal",
    "IsVariableInitialized", "VariableShape"};

// The required CPU dtypes per op (the contract's list of dtypes each kernel must have).
std::map<std::string, std::set<DType>> RequiredCpuKernels() {
  std::map<std::string, std::set<DType>> required;
  // float32 and float64: every op with values (NoOp has no dtype: its kernel dtype is
  // float32 because it has neither inputs nor outputs).
  for (const char* op :
       {"Const", "Placeholder", "Variable", "Assign", "AssignAdd", "AssignSub", "Identity",
        "Add", "Sub", "Mul", "Div", "Pow", "Maximum", "Minimum", "Neg", "Exp", "Log", "Sqrt",
        "Square", "Abs", "Relu", "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "MatMul",
        "BiasAdd", "Sum", "Mean", "Max", "Min", "ArgMax", "Equal", "Less", "Greater", "Cast",
        "Reshape", "Transpose", "ConcatV2", "Slice", "Fill", "ZerosLike", "OnesLike", "Shape",
        "SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits",
        "RandomUniform", "RandomNormal", "TruncatedNormal"}) {
    required[op].insert({DType::kFloat32, DType::kFloat64});
  }
  required["NoOp"].insert(DType::kFloat32);
  // One kernel each for variables of every dtype: its kernel dtype is its output's.
  required["IsVariableInitialized"].insert(DType::kBool);
  required["VariableShape"].insert(DType::kInt64);
  // The CNN layers' ops (graph/ops_nn_norm.cc): floats only, with reference kernels.
  for (const char* op : {"FusedBatchNorm", "FusedBatchNormGrad", "Dropout"}) {
    required[op].insert({DType::kFloat32, DType::kFloat64});
  }
  for (const char* op :
       {"Add", "Sub", "Mul", "Div", "Pow", "Neg", "Abs", "Maximum", "Minimum", "Square", "Sum",
        "Max", "Min", "Mean", "Equal", "Less", "Greater", "Cast", "Reshape", "Transpose",
        "ConcatV2", "Slice", "Fill", "ZerosLike", "OnesLike", "Shape", "ArgMax", "Identity",
        "Const", "Placeholder", "Variable", "Assign", "AssignAdd", "AssignSub"}) {
    required[op].insert({DType::kInt32, DType::kInt64});
  }
  for (const char* op : {"Cast", "Equal", "Identity", "Const", "Placeholder", "Variable",
                         "Assign", "Reshape", "Transpose", "ConcatV2", "Slice", "Fill",
                         "ZerosLike", "Shape"}) {
    required[op].insert(DType::kBool);
  }
  // All five dtypes: Shape (it only reads the shape) and the data-movement ops.
  for (const char* op : {"Shape", "Fill", "ZerosLike", "OnesLike", "Identity", "Reshape",
                         "Transpose", "ConcatV2", "Slice"}) {
    required[op].insert(kAllDTypes.begin(), kAllDTypes.end());
  }
  // The sequence models' ops (graph/shape_ops.h, math_ops.h, rnn_ops.h).
  for (const char* op : {"ExpandDims", "Squeeze", "Pack", "Unpack", "Split", "Tile",
                         "StridedSlice", "StridedSliceGrad", "MatrixBandPart"}) {
    required[op].insert(kAllDTypes.begin(), kAllDTypes.end());
  }
  required["Select"].insert(DType::kBool);  // registered by cond's dtype
  required["OneHot"].insert({DType::kInt32, DType::kInt64});
  for (const char* op : {"BatchMatMul", "LayerNorm", "LayerNormGrad", "Gelu", "GeluGrad",
                         "LSTMBlockCell", "LSTMBlockCellGrad", "GRUBlockCell",
                         "GRUBlockCellGrad"}) {
    required[op].insert({DType::kFloat32, DType::kFloat64});
  }
  return required;
}

TEST(KernelCoverageTest, EveryRequiredOpIsRegistered) {
  for (const auto& [op, dtypes] : RequiredCpuKernels()) {
    EXPECT_NE(OpRegistry::Global().Find(op), nullptr) << "op " << op << " is not registered";
  }
}

TEST(KernelCoverageTest, EveryStatelessOpHasACpuKernel) {
  for (const std::string& op : OpRegistry::Global().OpNames()) {
    if (OpRegistry::Global().Find(op)->stateful) continue;
    EXPECT_FALSE(KernelRegistry::Global().RegisteredDTypes(op, kDeviceCpu).empty())
        << "op " << op << " has no CPU kernel";
  }
}

TEST(KernelCoverageTest, EveryRequiredOpAndDTypeHasACpuKernel) {
  for (const auto& [op, dtypes] : RequiredCpuKernels()) {
    for (DType dtype : dtypes) {
      EXPECT_TRUE(KernelRegistry::Global().HasKernel(op, kDeviceCpu, dtype))
          << "no CPU kernel for " << op << " with dtype " << DTypeName(dtype);
    }
  }
}

// The contract's op set (training and gradient ops lie outside it and are tested elsewhere).
TEST(KernelCoverageTest, TheReferenceCoversEveryContractOpWithAValue) {
  for (const auto& [op, dtypes] : RequiredCpuKernels()) {
    if (kWithoutReference.count(op)) continue;
    EXPECT_TRUE(HasReference(op)) << "op " << op << " has no reference kernel";
  }
}

}  // namespace
}  // namespace actorflow
