// One kernel suite for every device type: each GPU-capable op runs on CPU and GPU
// and is checked against the reference kernels (kernels/reference), or, for the ops
// the reference does not cover (gradient helpers, optimizers), against the CPU
// kernel (the in-place updates compare the variables too, KernelTestCase::
// variable_inputs). Tolerances are per op and per dtype (OpCase). A device type that this
// process has no device of is reported as skipped, with the reason, never as passed.
//
// The same source builds twice: //kernels:device_kernels_test (no GPU library: the
// GPU cases skip with "this build has no GPU support") and
// //kernels/cuda:device_kernels_test (--config=cuda: they run when a GPU is found,
// and skip with the driver's answer otherwise). Errors found only at run time are
// kernels/device_errors_test.cc's.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "graph/attr_value.h"
#include "graph/tensor.h"
#include "kernels/gpu_runtime.h"
#include "kernels/kernel.h"
#include "kernels/device_test_util.h"
#include "kernels/kernels_test_util.h"

namespace actorflow {
namespace {

using MakeCase = std::function<KernelTestCase(DType dtype, RandomTensors* random)>;

struct OpCase {
  std::string name;  // unique: "Add_broadcast"
  MakeCase make;
  // Off the CPU: float32 and float64 tolerances against the oracle.
  Tolerance f32;
  Tolerance f64;
  // The oracle: the reference kernels, or (false) the CPU kernel, for ops the
  // reference does not cover; such cases run on the other device types only.
  bool reference = true;
};

constexpr Tolerance kElementwise32{1e-5, 1e-6};
constexpr Tolerance kSumming32{1e-4, 1e-5};
constexpr Tolerance kExact64{1e-12, 1e-12};

std::vector<OpCase> AllCases() {
  std::vector<OpCase> cases;
  auto unary = [&](const std::string& op, double lo, double hi) {
    cases.push_back({op, [=](DType t, RandomTensors* r) {
                       return Case(op, {r->Uniform(t, Shape{3, 5}, lo, hi)});
                     },
                     kElementwise32, kExact64});
  };
  unary("Neg", -2, 2);
  unary("Exp", -3, 3);
  unary("Log", 0.1, 4);
  unary("Sqrt", 0.0, 4);
  unary("Square", -2, 2);
  unary("Abs", -2, 2);
  unary("Relu", -2, 2);
  unary("Sigmoid", -4, 4);
  unary("Tanh", -3, 3);

  auto binary = [&](const std::string& op, double lo, double hi, bool away_from_zero) {
    auto draw = [=](DType t, RandomTensors* r, const Shape& s) {
      return away_from_zero ? r->AwayFromZero(t, s, 0.5, hi) : r->Uniform(t, s, lo, hi);
    };
    cases.push_back({op + "_same", [=](DType t, RandomTensors* r) {
                       return Case(op, {r->Uniform(t, Shape{4, 5}, lo, hi), draw(t, r, Shape{4, 5})});
                     },
                     kElementwise32, kExact64});
    cases.push_back({op + "_broadcast", [=](DType t, RandomTensors* r) {
                       return Case(op, {r->Uniform(t, Shape{2, 3, 4}, lo, hi),
                                        draw(t, r, Shape{3, 1})});
                     },
                     kElementwise32, kExact64});
    cases.push_back({op + "_scalar", [=](DType t, RandomTensors* r) {
                       return Case(op, {r->Uniform(t, Shape{}, lo, hi), draw(t, r, Shape{2, 3})});
                     },
                     kElementwise32, kExact64});
  };
  binary("Add", -2, 2, false);
  binary("Sub", -2, 2, false);
  binary("Mul", -2, 2, false);
  binary("Div", -2, 2, true);
  binary("Pow", 0.1, 2, false);
  binary("Maximum", -2, 2, false);
  binary("Minimum", -2, 2, false);

  cases.push_back({"BiasAdd", [](DType t, RandomTensors* r) {
                     return Case("BiasAdd", {r->Uniform(t, Shape{4, 3, 5}), r->Uniform(t, Shape{5})});
                   },
                   kElementwise32, kExact64});
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const std::string name = std::string("MatMul_") + (ta ? "T" : "N") + (tb ? "T" : "N");
      cases.push_back({name, [=](DType t, RandomTensors* r) {
                         Shape a = ta ? Shape{33, 17} : Shape{17, 33};
                         Shape b = tb ? Shape{9, 33} : Shape{33, 9};
                         return Case("MatMul", {r->Uniform(t, a), r->Uniform(t, b)},
                                     {{"transpose_a", AttrValue(ta)}, {"transpose_b", AttrValue(tb)}});
                       },
                       kSumming32, kExact64});
    }
  }
  for (const std::string op : {"Sum", "Mean", "Max", "Min"}) {
    cases.push_back({op + "_all", [=](DType t, RandomTensors* r) {
                       return Case(op, {r->Uniform(t, Shape{3, 4, 5})});
                     },
                     kSumming32, kExact64});
    cases.push_back({op + "_axes_keep_dims", [=](DType t, RandomTensors* r) {
                       return Case(op, {r->Uniform(t, Shape{3, 4, 5})},
                                   {{"axis", AttrValue(std::vector<int64_t>{0, -1})},
                                    {"keep_dims", AttrValue(true)}});
                     },
                     kSumming32, kExact64});
    cases.push_back({op + "_middle_axis", [=](DType t, RandomTensors* r) {
                       return Case(op, {r->Uniform(t, Shape{3, 4, 5})}, {{"axis", AttrValue(int64_t{1})}});
                     },
                     kSumming32, kExact64});
  }
  for (const std::string op : {"Softmax", "LogSoftmax"}) {
    cases.push_back({op, [=](DType t, RandomTensors* r) {
                       return Case(op, {r->Uniform(t, Shape{2, 3, 7}, -5, 5)});
                     },
                     kSumming32, kExact64});
  }
  cases.push_back({"SoftmaxCrossEntropyWithLogits", [](DType t, RandomTensors* r) {
                     return Case("SoftmaxCrossEntropyWithLogits",
                                 {r->Uniform(t, Shape{6, 4}, -3, 3), r->Probabilities(t, 6, 4)});
                   },
                   kSumming32, kExact64});
  for (DType labels : {DType::kInt32, DType::kInt64}) {
    cases.push_back({std::string("SparseSoftmaxCrossEntropyWithLogits_") + DTypeName(labels),
                     [=](DType t, RandomTensors* r) {
                       return Case("SparseSoftmaxCrossEntropyWithLogits",
                                   {r->Uniform(t, Shape{6, 4}, -3, 3), r->Labels(labels, 6, 4)});
                     },
                     kSumming32, kExact64});
  }
  for (DType to : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64, DType::kBool}) {
    cases.push_back({std::string("Cast_to_") + DTypeName(to), [=](DType t, RandomTensors* r) {
                       return Case("Cast", {r->Uniform(t, Shape{3, 4}, -3, 3)},
                                   {{"dtype", AttrValue(to)}});
                     },
                     kElementwise32, kExact64});
  }
  cases.push_back({"Fill", [](DType t, RandomTensors*) {
                     return Case("Fill", {}, {{"shape", AttrValue(Shape{2, 3})},
                                              {"value", AttrValue(MakeTensor(t, Shape{}, {2.5}))}});
                   },
                   kExact64, kExact64});
  for (const std::string op : {"ZerosLike", "OnesLike", "Identity"}) {
    cases.push_back({op, [=](DType t, RandomTensors* r) {
                       return Case(op, {r->Uniform(t, Shape{2, 3})});
                     },
                     kExact64, kExact64});
  }

  // Convolutions and pooling (NHWC, HWIO): a strided SAME window, a VALID one with
  // unequal strides, and a 1x1 window (the gemm-only path); sizes as int32 and int64.
  struct Window {
    std::string name;
    Shape input, filter, out;  // out: the convolution's (or the pooling's) output
    std::vector<int64_t> strides;
    std::string padding;
    DType sizes;
  };
  const std::vector<Window> windows = {
      {"SAME_stride2", Shape{2, 7, 6, 3}, Shape{3, 3, 3, 4}, Shape{2, 4, 3, 4}, {1, 2, 2, 1},
       "SAME", DType::kInt32},
      {"VALID_strides1x2", Shape{2, 6, 5, 2}, Shape{2, 3, 2, 3}, Shape{2, 5, 2, 3},
       {1, 1, 2, 1}, "VALID", DType::kInt64},
      {"pointwise", Shape{2, 4, 3, 3}, Shape{1, 1, 3, 5}, Shape{2, 4, 3, 5}, {1, 1, 1, 1},
       "SAME", DType::kInt32},
  };
  auto sizes_of = [](DType t, const Shape& s) {
    return MakeTensor(t, Shape{4}, {double(s.dim(0)), double(s.dim(1)), double(s.dim(2)),
                                    double(s.dim(3))});
  };
  for (const Window& w : windows) {
    const AttrMap conv = {{"strides", AttrValue(w.strides)}, {"padding", AttrValue(w.padding)}};
    cases.push_back({"Conv2D_" + w.name, [=](DType t, RandomTensors* r) {
                       return Case("Conv2D", {r->Uniform(t, w.input), r->Uniform(t, w.filter)},
                                   conv);
                     },
                     kSumming32, kExact64});
    cases.push_back({"Conv2DBackpropInput_" + w.name, [=](DType t, RandomTensors* r) {
                       return Case("Conv2DBackpropInput",
                                   {sizes_of(w.sizes, w.input), r->Uniform(t, w.filter),
                                    r->Uniform(t, w.out)},
                                   conv);
                     },
                     kSumming32, kExact64});
    cases.push_back({"Conv2DBackpropFilter_" + w.name, [=](DType t, RandomTensors* r) {
                       return Case("Conv2DBackpropFilter",
                                   {r->Uniform(t, w.input), sizes_of(w.sizes, w.filter),
                                    r->Uniform(t, w.out)},
                                   conv);
                     },
                     kSumming32, kExact64});
    // Pooling with the filter's window over the input's channels.
    const Shape pooled{w.out.dim(0), w.out.dim(1), w.out.dim(2), w.input.dim(3)};
    const AttrMap pool = {
        {"ksize", AttrValue(std::vector<int64_t>{1, w.filter.dim(0), w.filter.dim(1), 1})},
        {"strides", AttrValue(w.strides)},
        {"padding", AttrValue(w.padding)}};
    for (const std::string op : {"MaxPool", "AvgPool"}) {
      cases.push_back({op + "_" + w.name, [=](DType t, RandomTensors* r) {
                         return Case(op, {r->Uniform(t, w.input)}, pool);
                       },
                       kSumming32, kExact64});
    }
    cases.push_back({"MaxPoolGrad_" + w.name, [=](DType t, RandomTensors* r) {
                       return Case("MaxPoolGrad", {r->Uniform(t, w.input), r->Uniform(t, pooled),
                                                   r->Uniform(t, pooled)},
                                   pool);
                     },
                     kSumming32, kExact64});
    cases.push_back({"AvgPoolGrad_" + w.name, [=](DType t, RandomTensors* r) {
                       return Case("AvgPoolGrad",
                                   {sizes_of(w.sizes, w.input), r->Uniform(t, pooled)}, pool);
                     },
                     kSumming32, kExact64});
  }

  // Batch normalization ([N,C] and NHWC, training and inference) and dropout: the
  // GPU draws the CPU's mask (kernels/random_bits.h), so the reference covers it too.
  for (const Shape& x : {Shape{33, 7}, Shape{4, 5, 6, 40}}) {
    const std::string layout = x.rank() == 2 ? "NC" : "NHWC";
    const int64_t c = x.dim(x.rank() - 1);
    for (bool training : {true, false}) {
      const std::string mode = training ? "_training_" : "_inference_";
      const AttrMap attrs = {{"epsilon", AttrValue(0.001)}, {"is_training", AttrValue(training)}};
      cases.push_back({"FusedBatchNorm" + mode + layout, [=](DType t, RandomTensors* r) {
                         return Case("FusedBatchNorm",
                                     {r->Uniform(t, x, -2, 3), r->Uniform(t, Shape{c}, 0.5, 2),
                                      r->Uniform(t, Shape{c}), r->Uniform(t, Shape{c}),
                                      r->Uniform(t, Shape{c}, 0.1, 2)},
                                     attrs);
                       },
                       kSumming32, kExact64});
      cases.push_back({"FusedBatchNormGrad" + mode + layout, [=](DType t, RandomTensors* r) {
                         return Case("FusedBatchNormGrad",
                                     {r->Uniform(t, x), r->Uniform(t, x, -2, 3),
                                      r->Uniform(t, Shape{c}, 0.5, 2), r->Uniform(t, Shape{c}),
                                      r->Uniform(t, Shape{c}, 0.1, 2)},
                                     attrs);
                       },
                       kSumming32, kExact64});
    }
  }
  for (double keep_prob : {0.5, 1.0}) {
    cases.push_back({"Dropout_keep_" + std::to_string(static_cast<int>(keep_prob * 100)),
                     [=](DType t, RandomTensors* r) {
                       return Case("Dropout", {r->Uniform(t, Shape{3, 7, 11})},
                                   {{"keep_prob", AttrValue(keep_prob)},
                                    {"seed", AttrValue(int64_t{42})}});
                     },
                     kElementwise32, kExact64});
  }

  // The sequence models' math (graph/math_ops.h). BatchMatMul: batch dims that line
  // up (one strided-batched gemm), y one matrix (x's rows stacked into one gemm), x one
  // matrix (a broadcast operand of stride 0), batch dims broadcasting both ways (runs
  // of gemms), and K = 0 (zeros); each with every adjoint pair.
  struct Batched {
    std::string name;
    std::vector<int64_t> x_batch, y_batch;
    int64_t m, k, n;
  };
  const std::vector<Batched> batched = {
      {"lined_up", {2, 3}, {2, 3}, 5, 17, 6},  {"y_one_matrix", {4}, {}, 7, 9, 5},
      {"x_one_matrix", {}, {3}, 4, 6, 8},     {"broadcast", {2, 1, 3}, {4, 1}, 3, 5, 2},
      {"empty_inner", {2}, {2}, 3, 0, 4},
  };
  auto matrices = [](std::vector<int64_t> batch, int64_t rows, int64_t cols, bool adjoint) {
    batch.push_back(adjoint ? cols : rows);
    batch.push_back(adjoint ? rows : cols);
    return Shape(batch);
  };
  for (const Batched& b : batched) {
    for (bool adj_x : {false, true}) {
      for (bool adj_y : {false, true}) {
        const std::string name = "BatchMatMul_" + b.name + "_" + (adj_x ? "A" : "N") +
                                 (adj_y ? "A" : "N");
        cases.push_back({name, [=](DType t, RandomTensors* r) {
                           return Case("BatchMatMul",
                                       {r->Uniform(t, matrices(b.x_batch, b.m, b.k, adj_x)),
                                        r->Uniform(t, matrices(b.y_batch, b.k, b.n, adj_y))},
                                       {{"adj_x", AttrValue(adj_x)}, {"adj_y", AttrValue(adj_y)}});
                         },
                         kSumming32, kExact64});
      }
    }
  }
  // LayerNorm: rows narrower than a warp, wider than one thread block's 256 threads,
  // and rows far from 0 (the variance must not cancel); no rows at all.
  struct Normed {
    std::string name;
    Shape x;
    double offset, epsilon;
  };
  const std::vector<Normed> normed = {
      {"narrow", Shape{4, 8}, 0, 1e-5},        {"rank3", Shape{2, 3, 65}, 0, 0.5},
      {"wide_offset", Shape{3, 300}, 100, 1e-5}, {"no_rows", Shape{0, 4}, 0, 1e-5},
  };
  for (const Normed& ln : normed) {
    const int64_t d = ln.x.dim(ln.x.rank() - 1);
    const Shape rows(std::vector<int64_t>(ln.x.dims().begin(), ln.x.dims().end() - 1));
    cases.push_back({"LayerNorm_" + ln.name, [=](DType t, RandomTensors* r) {
                       return Case("LayerNorm",
                                   {r->Uniform(t, ln.x, ln.offset - 2, ln.offset + 2),
                                    r->Uniform(t, Shape{d}, 0.5, 2), r->Uniform(t, Shape{d})},
                                   {{"epsilon", AttrValue(ln.epsilon)}});
                     },
                     kSumming32, kExact64});
    cases.push_back({"LayerNormGrad_" + ln.name, [=](DType t, RandomTensors* r) {
                       return Case("LayerNormGrad",
                                   {r->Uniform(t, ln.x), r->Uniform(t, ln.x, -2, 3),
                                    r->Uniform(t, rows), r->Uniform(t, rows, 0.5, 3),
                                    r->Uniform(t, Shape{d}, 0.5, 2)});
                     },
                     kSumming32, kExact64});
  }
  for (bool approximate : {false, true}) {
    const std::string form = approximate ? "_tanh" : "_erf";
    const AttrMap attrs = {{"approximate", AttrValue(approximate)}};
    cases.push_back({"Gelu" + form, [=](DType t, RandomTensors* r) {
                       return Case("Gelu", {r->Uniform(t, Shape{3, 7, 11}, -5, 5)}, attrs);
                     },
                     kElementwise32, kExact64});
    cases.push_back({"GeluGrad" + form, [=](DType t, RandomTensors* r) {
                       return Case("GeluGrad", {r->Uniform(t, Shape{3, 7, 11}),
                                                r->Uniform(t, Shape{3, 7, 11}, -5, 5)},
                                   attrs);
                     },
                     kElementwise32, kExact64});
  }

  // The fused recurrent cells (graph/rnn_ops.h): B, I, H ordinary, H over a warp, no
  // input features and an empty batch; the LSTM with and without a cell clip (cs in
  // [-1, 1] for the backward op, so that the clip holds some).
  struct Cell {
    std::string name;
    int64_t b, i, h;
  };
  const std::vector<Cell> cells = {
      {"small", 3, 5, 4}, {"wide", 4, 9, 33}, {"no_inputs", 2, 0, 3}, {"empty_batch", 0, 3, 2}};
  auto lstm_inputs = [](DType t, RandomTensors* r, const Cell& c) {
    return std::vector<Tensor>{r->Uniform(t, Shape{c.b, c.i}), r->Uniform(t, Shape{c.b, c.h}),
                               r->Uniform(t, Shape{c.b, c.h}),
                               r->Uniform(t, Shape{c.i + c.h, 4 * c.h}),
                               r->Uniform(t, Shape{4 * c.h})};
  };
  auto gru_inputs = [](DType t, RandomTensors* r, const Cell& c) {
    return std::vector<Tensor>{r->Uniform(t, Shape{c.b, c.i}), r->Uniform(t, Shape{c.b, c.h}),
                               r->Uniform(t, Shape{c.i + c.h, 2 * c.h}),
                               r->Uniform(t, Shape{c.i + c.h, c.h}), r->Uniform(t, Shape{2 * c.h}),
                               r->Uniform(t, Shape{c.h})};
  };
  for (const Cell& c : cells) {
    for (double clip : {-1.0, 0.5}) {
      const std::string suffix = c.name + (clip > 0 ? "_clipped" : "");
      cases.push_back({"LSTMBlockCell_" + suffix, [=](DType t, RandomTensors* r) {
                         return Case("LSTMBlockCell", lstm_inputs(t, r, c),
                                     {{"forget_bias", AttrValue(0.7)},
                                      {"cell_clip", AttrValue(clip)}});
                       },
                       kSumming32, kExact64});
      cases.push_back({"LSTMBlockCellGrad_" + suffix, [=](DType t, RandomTensors* r) {
                         std::vector<Tensor> in = lstm_inputs(t, r, c);
                         // i, cs, f, o, ci, co, then cs_grad and h_grad.
                         for (int k = 0; k < 8; ++k) {
                           const bool gate = k == 0 || k == 2 || k == 3;
                           in.push_back(gate ? r->Uniform(t, Shape{c.b, c.h}, 0.05, 0.95)
                                             : r->Uniform(t, Shape{c.b, c.h}));
                         }
                         return Case("LSTMBlockCellGrad", in, {{"cell_clip", AttrValue(clip)}});
                       },
                       kSumming32, kExact64});
    }
    cases.push_back({"GRUBlockCell_" + c.name, [=](DType t, RandomTensors* r) {
                       return Case("GRUBlockCell", gru_inputs(t, r, c));
                     },
                     kSumming32, kExact64});
    for (bool gate_grads : {false, true}) {
      cases.push_back({"GRUBlockCellGrad_" + c.name + (gate_grads ? "_gate_grads" : ""),
                       [=](DType t, RandomTensors* r) {
                         std::vector<Tensor> in = gru_inputs(t, r, c);
                         in.push_back(r->Uniform(t, Shape{c.b, c.h}, 0.05, 0.95));  // r
                         in.push_back(r->Uniform(t, Shape{c.b, c.h}, 0.05, 0.95));  // u
                         // c, d_h, then d_r, d_u, d_c.
                         for (int k = 0; k < (gate_grads ? 5 : 2); ++k) {
                           in.push_back(r->Uniform(t, Shape{c.b, c.h}));
                         }
                         return Case("GRUBlockCellGrad", in);
                       },
                       kSumming32, kExact64});
    }
  }

  // The sparse ops (graph/sparse_ops.h): row ids as int32 and int64, repeated, and
  // (for the segment sum) segments that no id names.
  for (DType ids : kIntDTypes) {
    const std::string suffix = std::string("_ids_") + DTypeName(ids);
    cases.push_back({"Gather" + suffix, [=](DType t, RandomTensors* r) {
                       return Case("Gather", {r->Uniform(t, Shape{6, 2, 3}),
                                              MakeTensor(ids, Shape{2, 3}, {5, 0, 2, 2, 5, 1})});
                     },
                     kExact64, kExact64});
    cases.push_back({"Gather_vector" + suffix, [=](DType t, RandomTensors* r) {
                       return Case("Gather", {r->Uniform(t, Shape{7}),
                                              MakeTensor(ids, Shape{4}, {6, 0, 6, 3})});
                     },
                     kExact64, kExact64});
    cases.push_back({"UnsortedSegmentSum" + suffix, [=](DType t, RandomTensors* r) {
                       KernelTestCase c = Case(
                           "UnsortedSegmentSum",
                           {r->Uniform(t, Shape{2, 3, 4}),
                            MakeTensor(ids, Shape{2, 3}, {4, 0, 4, 1, 4, 0}),
                            MakeTensor(ids, Shape{}, {6})});
                       c.const_inputs = {2};
                       return c;
                     },
                     kSumming32, kExact64});
  }

  // The sparse in-place updates, against the CPU kernel: the variables (and slots)
  // after the update and the output. Ids repeat, in an order that is not sorted, so
  // that a repeated id's rows must be combined in input order.
  for (DType ids : kIntDTypes) {
    const std::string suffix = std::string("_ids_") + DTypeName(ids);
    for (const std::string op : {"ScatterAdd", "ScatterSub", "ScatterUpdate"}) {
      cases.push_back({op + suffix, [=](DType t, RandomTensors* r) {
                         const Tensor rows = MakeTensor(ids, Shape{2, 3}, {3, 0, 3, 4, 3, 1});
                         KernelTestCase c = Case(op, {r->Uniform(t, Shape{5, 3}), rows,
                                                      r->Uniform(t, Shape{2, 3, 3})});
                         c.variable_inputs = {0};
                         return c;
                       },
                       kElementwise32, kExact64, false});
    }
    const Tensor repeated = MakeTensor(ids, Shape{5}, {4, 1, 4, 0, 4});
    auto scalar = [](DType t, double v) { return MakeTensor(t, Shape{}, {v}); };
    cases.push_back({"SparseApplyGradientDescent" + suffix, [=](DType t, RandomTensors* r) {
                       KernelTestCase c = Case("SparseApplyGradientDescent",
                                               {r->Uniform(t, Shape{6, 4}), scalar(t, 0.1),
                                                r->Uniform(t, Shape{5, 4}), repeated});
                       c.variable_inputs = {0};
                       return c;
                     },
                     kSumming32, kExact64, false});
    for (bool distinct : {false, true}) {
      const Tensor rows = distinct ? MakeTensor(ids, Shape{3}, {2, 5, 0}) : repeated;
      cases.push_back({"SparseApplyAdagrad" + std::string(distinct ? "_distinct" : "") + suffix,
                       [=](DType t, RandomTensors* r) {
                         KernelTestCase c = Case(
                             "SparseApplyAdagrad",
                             {r->Uniform(t, Shape{6, 4}), r->Uniform(t, Shape{6, 4}, 0.1, 1),
                              scalar(t, 0.1), r->Uniform(t, Shape{rows.dim(0), 4}), rows});
                         c.variable_inputs = {0, 1};
                         return c;
                       },
                       kSumming32, kExact64, false});
    }
    cases.push_back({"SparseApplyAdam" + suffix, [=](DType t, RandomTensors* r) {
                       KernelTestCase c = Case(
                           "SparseApplyAdam",
                           {r->Uniform(t, Shape{6, 4}), r->Uniform(t, Shape{6, 4}),
                            r->Uniform(t, Shape{6, 4}, 0, 1), scalar(t, 0.729), scalar(t, 0.997),
                            scalar(t, 0.01), scalar(t, 0.9), scalar(t, 0.999), scalar(t, 1e-8),
                            r->Uniform(t, Shape{5, 4}), repeated});
                       c.variable_inputs = {0, 1, 2};
                       return c;
                     },
                     kSumming32, kExact64, false});
    // lr_power -0.5 takes the square root, -0.6 pow.
    for (double lr_power : {-0.5, -0.6}) {
      cases.push_back({"SparseApplyFtrl_power_" + std::to_string(static_cast<int>(-lr_power * 10)) +
                           suffix,
                       [=](DType t, RandomTensors* r) {
                         KernelTestCase c = Case(
                             "SparseApplyFtrl",
                             {r->Uniform(t, Shape{6, 4}), r->Uniform(t, Shape{6, 4}, 0.1, 1),
                              r->Uniform(t, Shape{6, 4}), r->Uniform(t, Shape{5, 4}), repeated,
                              scalar(t, 0.1), scalar(t, 0.01), scalar(t, 0.02),
                              scalar(t, lr_power)});
                         c.variable_inputs = {0, 1, 2};
                         return c;
                       },
                       kSumming32, kExact64, false});
    }
  }

  // Not covered by the reference: compared with the CPU kernel.
  for (const std::string op : {"ReluGrad", "SigmoidGrad", "TanhGrad"}) {
    cases.push_back({op, [=](DType t, RandomTensors* r) {
                       return Case(op, {r->Uniform(t, Shape{4, 5}), r->Uniform(t, Shape{4, 5})});
                     },
                     kElementwise32, kExact64, false});
  }
  cases.push_back({"SumToShapeOf", [](DType t, RandomTensors* r) {
                     return Case("SumToShapeOf",
                                 {r->Uniform(t, Shape{2, 3, 4}), r->Uniform(t, Shape{3, 1})});
                   },
                   kSumming32, kExact64, false});
  cases.push_back({"BroadcastToShapeOf", [](DType t, RandomTensors* r) {
                     return Case("BroadcastToShapeOf",
                                 {r->Uniform(t, Shape{3, 1}), r->Uniform(t, Shape{3, 4})},
                                 {{"axis", AttrValue(int64_t{1})}, {"keep_dims", AttrValue(true)}});
                   },
                   kExact64, kExact64, false});
  return cases;
}

const std::vector<OpCase>& Cases() {
  static const std::vector<OpCase> cases = AllCases();
  return cases;
}

struct DeviceOpParam {
  std::string device;
  size_t index;  // into Cases()
  DType dtype;
};

std::vector<DeviceOpParam> AllParams() {
  std::vector<DeviceOpParam> params;
  for (const std::string& device : DeviceTypes()) {
    for (size_t i = 0; i < Cases().size(); ++i) {
      if (device == kDeviceCpu && !Cases()[i].reference) continue;  // CPU vs itself
      for (DType dtype : kFloatDTypes) params.push_back({device, i, dtype});
    }
  }
  return params;
}

std::string ParamName(const ::testing::TestParamInfo<DeviceOpParam>& info) {
  return info.param.device + "_" + Cases()[info.param.index].name + "_" +
         DTypeName(info.param.dtype);
}

// The CPU kernel's outputs for `c`, as the oracle of `c` on another device.
::testing::AssertionResult MatchesCpuKernel(const KernelTestCase& c, Tolerance tol) {
  KernelTestCase on_cpu = c;
  on_cpu.device_type = kDeviceCpu;
  auto want = RunKernel(on_cpu);
  auto got = RunKernel(c);
  if (!want.ok() || !want->status.ok()) {
    return ::testing::AssertionFailure()
           << "CPU: " << (want.ok() ? want->status : want.status());
  }
  if (!got.ok() || !got->status.ok()) {
    return ::testing::AssertionFailure() << c.ToString() << ": "
                                         << (got.ok() ? got->status : got.status());
  }
  if (got->outputs.size() != want->outputs.size()) {
    return ::testing::AssertionFailure() << "output counts differ";
  }
  for (size_t i = 0; i < want->outputs.size(); ++i) {
    auto close = TensorsClose(want->outputs[i], got->outputs[i], tol);
    if (!close) return ::testing::AssertionFailure() << c.ToString() << ": output " << i << ": "
                                                     << close.message();
  }
  // Variables updated in place (the slots too): every row, touched or not.
  for (size_t i = 0; i < want->variables.size(); ++i) {
    auto close = TensorsClose(want->variables[i], got->variables[i], tol);
    if (!close) return ::testing::AssertionFailure() << c.ToString() << ": variable input "
                                                     << c.variable_inputs[i] << ": "
                                                     << close.message();
  }
  return ::testing::AssertionSuccess();
}

class DeviceKernelsTest : public ::testing::TestWithParam<DeviceOpParam> {};

TEST_P(DeviceKernelsTest, MatchesTheOracleWithinTheOpsTolerance) {
  const DeviceOpParam& p = GetParam();
  const std::string why = DeviceUnavailable(p.device);
  if (!why.empty()) GTEST_SKIP() << p.device << " case skipped: " << why;
  const OpCase& op = Cases()[p.index];
  RandomTensors random(1000 + p.index);
  KernelTestCase c = op.make(p.dtype, &random);
  c.device_type = p.device;
  const Tolerance tol = p.dtype == DType::kFloat32 ? op.f32 : op.f64;
  if (p.device != kDeviceCpu) c.tolerance = tol;
  if (op.reference) {
    EXPECT_TRUE(MatchesReference(c));
  } else {
    EXPECT_TRUE(MatchesCpuKernel(c, tol));
  }
}

INSTANTIATE_TEST_SUITE_P(AllDevices, DeviceKernelsTest, ::testing::ValuesIn(AllParams()),
                         ParamName);

}  // namespace
}  // namespace actorflow
