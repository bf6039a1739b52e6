// The C++ builder API: one function per op of the op set (graph/ops_*.cc), in
// TensorFlow's C++ style.
//
//   Scope root = Scope::NewRootScope();
//   auto x = Placeholder(root.WithOpName("x"), DType::kFloat32, Shape{-1, 784});
//   auto w = Variable(root.WithOpName("w"), Shape{784, 10}, DType::kFloat32);
//   auto logits = MatMul(root, x, w);                          // [?,10]
//   auto loss = Mean(root, SparseSoftmaxCrossEntropyWithLogits(root, logits, labels).loss);
//
// Contract shared by every function: arguments are Inputs (an Output, or a literal
// that becomes a Const node: float literals float32, integer literals int32). The
// node is named by the scope (WithOpName, else the op name made unique: "Add",
// "Add_1", ...) and gets the scope's device, control dependencies and colocation.
// Functions never fail loudly: on an error (including one recorded earlier in the
// scope) they return an invalid Output (node == nullptr) and scope.status() names
// the node and says what is wrong. Shapes below are what inference produces; "?" is
// an unknown dim.
//
// Thread safety: as Scope (one building thread per graph).
#ifndef ACTORFLOW_GRAPH_OPS_H_
#define ACTORFLOW_GRAPH_OPS_H_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "graph/scope.h"
#include "graph/shape.h"
#include "graph/tensor.h"
#include "graph/types.h"

namespace actorflow {

// --- Sources and variables -----------------------------------------------------

// A Const holding `value` (a literal or Tensor; an Output is an error).
Output Const(const Scope& scope, const Input& value);
// The literal reshaped: Const(s, {1.f, 2.f, 3.f, 4.f}, {2, 2}) is float32 [2,2].
Output Const(const Scope& scope, const Input& value, const Shape& shape);
// A value fed at run time. Unknown rank (the default) omits the "shape" attr.
Output Placeholder(const Scope& scope, DType dtype, const Shape& shape = Shape::UnknownRank());
// A variable's current value; `shape` must be fully defined. Stateful.
Output Variable(const Scope& scope, const Shape& shape, DType dtype);
// ref := value; returns the new value. `ref` must be a Variable's Output. With
// validate_shape, value's shape must be compatible with the variable's.
Output Assign(const Scope& scope, const Input& ref, const Input& value,
              bool validate_shape = true);
// ref += value / ref -= value (same dtype, compatible shape); returns the new value.
Output AssignAdd(const Scope& scope, const Input& ref, const Input& value);
Output AssignSub(const Scope& scope, const Input& ref, const Input& value);
// bool []: whether the variable `ref` (a Variable's Output) has been assigned a value
// on its device; false, never an error, for one that has not (or does not exist
// there yet). Colocated with the variable (a ref input: it reads no value, so a
// variable on a ps task costs one bool over the network). Stateful. TensorFlow's
// tf.is_variable_initialized.
Output IsVariableInitialized(const Scope& scope, const Input& ref);
// int64 [rank]: the shape of the value the variable `ref` holds on its device, which
// is the graph's declared shape unless another graph (another task's, on a shared ps
// task) created the variable with another one. Colocated with the variable and
// reading only the value's shape (a variable on a ps task or a GPU: a few int64s
// move). Errors at run time: FailedPrecondition for an uninitialized variable,
// InvalidArgument when it holds another dtype there. Stateful.
Output VariableShape(const Scope& scope, const Input& ref);
Output Identity(const Scope& scope, const Input& x);
// Does nothing; with control dependencies it groups them (a training step).
const Node* NoOp(const Scope& scope);

// --- Element-wise --------------------------------------------------------------
// Binary ops broadcast like NumPy ([2,1,3] x [4,1] -> [2,4,3]); x and y must have
// the same dtype.

Output Add(const Scope& scope, const Input& x, const Input& y);
Output Sub(const Scope& scope, const Input& x, const Input& y);
Output Mul(const Scope& scope, const Input& x, const Input& y);
// Integer division truncates toward zero.
Output Div(const Scope& scope, const Input& x, const Input& y);
Output Pow(const Scope& scope, const Input& x, const Input& y);
Output Maximum(const Scope& scope, const Input& x, const Input& y);
Output Minimum(const Scope& scope, const Input& x, const Input& y);
// Comparisons: bool, broadcast shape. Less/Greater take numeric dtypes only.
Output Equal(const Scope& scope, const Input& x, const Input& y);
Output Less(const Scope& scope, const Input& x, const Input& y);
Output Greater(const Scope& scope, const Input& x, const Input& y);

// Unary ops keep dtype and shape. Exp, Log, Sqrt, Relu, Sigmoid, Tanh: floats only.
Output Neg(const Scope& scope, const Input& x);
Output Exp(const Scope& scope, const Input& x);
Output Log(const Scope& scope, const Input& x);
Output Sqrt(const Scope& scope, const Input& x);
Output Square(const Scope& scope, const Input& x);
Output Abs(const Scope& scope, const Input& x);
Output Relu(const Scope& scope, const Input& x);
Output Sigmoid(const Scope& scope, const Input& x);
Output Tanh(const Scope& scope, const Input& x);
Output ZerosLike(const Scope& scope, const Input& x);
Output OnesLike(const Scope& scope, const Input& x);
// Same shape, new dtype: float->int truncates, bool<->number is 0/1 / x != 0.
Output Cast(const Scope& scope, const Input& x, DType dtype);

// --- Neural-network ops ----------------------------------------------------------

// Along the last axis of logits [..., C].
Output Softmax(const Scope& scope, const Input& logits);
Output LogSoftmax(const Scope& scope, const Input& logits);
// a [M,K] (or [K,M] if transpose_a) x b [K,N] (or [N,K] if transpose_b) -> [M,N].
Output MatMul(const Scope& scope, const Input& a, const Input& b, bool transpose_a = false,
              bool transpose_b = false);
// value [..., C] + bias [C] -> value's shape.
Output BiasAdd(const Scope& scope, const Input& value, const Input& bias);

struct SoftmaxCrossEntropyResult {
  Output loss;      // [N]
  Output backprop;  // [N,C]: the gradient of loss with respect to logits
};
// logits [N,C], labels [N,C] (probabilities), same float dtype.
SoftmaxCrossEntropyResult SoftmaxCrossEntropyWithLogits(const Scope& scope,
                                                        const Input& logits,
                                                        const Input& labels);
// logits [N,C] float, labels [N] int32/int64 class indices in [0, C).
SoftmaxCrossEntropyResult SparseSoftmaxCrossEntropyWithLogits(const Scope& scope,
                                                              const Input& logits,
                                                              const Input& labels);

// --- Convolution and pooling (NHWC; graph/ops_nn_conv.cc) ------------------------
// strides and ksize are [1, h, w, 1]; padding is "SAME" or "VALID" (TensorFlow's
// geometry; SAME average pooling divides by the number of unpadded elements).
// input [N,H,W,C] * filter [KH,KW,C,O] -> [N,OH,OW,O].
Output Conv2D(const Scope& scope, const Input& input, const Input& filter,
              const std::vector<int64_t>& strides, const std::string& padding);
// The gradient of Conv2D's input: input_sizes [4] (int32/int64), filter [KH,KW,C,O],
// out_backprop [N,OH,OW,O] -> input_sizes.
Output Conv2DBackpropInput(const Scope& scope, const Input& input_sizes, const Input& filter,
                           const Input& out_backprop, const std::vector<int64_t>& strides,
                           const std::string& padding);
// The gradient of Conv2D's filter: input [N,H,W,C], filter_sizes [4],
// out_backprop [N,OH,OW,O] -> filter_sizes.
Output Conv2DBackpropFilter(const Scope& scope, const Input& input, const Input& filter_sizes,
                            const Input& out_backprop, const std::vector<int64_t>& strides,
                            const std::string& padding);
// value [N,H,W,C] -> [N,OH,OW,C]: the maximum / mean of each window.
Output MaxPool(const Scope& scope, const Input& value, const std::vector<int64_t>& ksize,
               const std::vector<int64_t>& strides, const std::string& padding);
Output AvgPool(const Scope& scope, const Input& value, const std::vector<int64_t>& ksize,
               const std::vector<int64_t>& strides, const std::string& padding);
// grad [N,OH,OW,C] routed to the first maximum of each window -> orig_input's shape.
Output MaxPoolGrad(const Scope& scope, const Input& orig_input, const Input& orig_output,
                   const Input& grad, const std::vector<int64_t>& ksize,
                   const std::vector<int64_t>& strides, const std::string& padding);
// grad [N,OH,OW,C] spread evenly over each window -> orig_input_shape [4].
Output AvgPoolGrad(const Scope& scope, const Input& orig_input_shape, const Input& grad,
                   const std::vector<int64_t>& ksize, const std::vector<int64_t>& strides,
                   const std::string& padding);

// --- Normalization and regularization (graph/ops_nn_norm.cc) --------------------
// x is [N,H,W,C] (or [N,C]); statistics are per channel C, over the other axes
// (M = N*H*W elements each). Float32 and float64.

struct FusedBatchNormResult {
  Output y;               // x's shape: scale * (x - mean) / sqrt(variance + epsilon) + offset
  Output batch_mean;      // [C]
  Output batch_variance;  // [C]
};
// TF1's FusedBatchNorm (tf.layers.batch_normalization's fused path).
// Training (is_training): normalizes with the batch's mean and biased variance, and
// returns the mean and the unbiased variance (var * M / (M - 1); the biased one when
// M = 1), the Bessel-corrected estimate that TF1 feeds its moving variance so that it
// tracks the population's variance; mean and variance are not read (pass the moving
// averages, or empty [0] tensors). An empty batch (M = 0) gives NaN statistics.
// Inference: normalizes with the given mean and variance [C] (the moving averages) and
// returns them. scale, offset [C]; epsilon >= 0 (tf.layers' default 0.001).
FusedBatchNormResult FusedBatchNorm(const Scope& scope, const Input& x, const Input& scale,
                                    const Input& offset, const Input& mean,
                                    const Input& variance, double epsilon = 0.001,
                                    bool is_training = true);
struct FusedBatchNormGradResult {
  Output x_backprop;       // x's shape
  Output scale_backprop;   // [C]
  Output offset_backprop;  // [C]
};
// The gradients of FusedBatchNorm's y with respect to x, scale and offset, for
// y_backprop (x's shape). In training mode mean and variance are the forward op's
// batch_mean and batch_variance outputs (the latter Bessel-corrected, as it returns
// it) and x_backprop includes the statistics' dependence on x; in inference mode they
// are the statistics the forward op was given.
FusedBatchNormGradResult FusedBatchNormGrad(const Scope& scope, const Input& y_backprop,
                                            const Input& x, const Input& scale,
                                            const Input& mean, const Input& variance,
                                            double epsilon, bool is_training);
// variable = variable * momentum + value * (1 - momentum), as TF's
// assign_moving_average (an AssignSub of (variable - value) * (1 - momentum)); returns
// the new value. momentum in [0, 1] (tf.layers' batch normalization: 0.99).
Output AssignMovingAverage(const Scope& scope, const Input& variable, const Input& value,
                           double momentum);

struct DropoutResult {
  Output output;  // x's shape: x * mask
  Output mask;    // x's shape: 1 / keep_prob where x is kept, 0 where it is dropped
};
// Training: keeps each element with probability keep_prob (tf.layers' rate is
// 1 - keep_prob) and scales the kept ones by 1 / keep_prob. Stateful: the node draws a
// new mask per run, the same sequence of masks for the same seed on every device;
// the gradient is dy * mask. Inference (!is_training): output = Identity(x) and mask =
// OnesLike(x) (no random op). keep_prob in (0, 1], else InvalidArgument.
DropoutResult Dropout(const Scope& scope, const Input& x, double keep_prob, int64_t seed,
                      bool is_training = true);

// x [N,H,W,C] -> [N,C]: the mean over H and W (a Mean node over axes {1, 2}, whose
// gradient spreads dy evenly over each image). A known rank other than 4 is an error.
Output GlobalAvgPool(const Scope& scope, const Input& x);
// x [N, d1, d2, ...] -> [N, d1 * d2 * ...] (a Reshape; [N] -> [N,1]). With every inner
// dim known the shape is [-1, d1 * d2 * ...]; otherwise N is read at run time (then an
// empty batch is an error: the -1 cannot be resolved from 0 elements).
Output Flatten(const Scope& scope, const Input& x);

// --- Reductions ----------------------------------------------------------------
// x [2,3,4] reduced over axis {1} -> [2,4], or [2,1,4] with keep_dims. Negative axes
// count from the end; an explicit empty list reduces nothing; no axis argument
// reduces every axis (-> a scalar []). Duplicate axes are an error.

Output Sum(const Scope& scope, const Input& x, const std::vector<int64_t>& axis,
           bool keep_dims = false);
Output Sum(const Scope& scope, const Input& x, std::initializer_list<int64_t> axis,
           bool keep_dims = false);
Output Sum(const Scope& scope, const Input& x, int64_t axis, bool keep_dims = false);
Output Sum(const Scope& scope, const Input& x);
Output Mean(const Scope& scope, const Input& x, const std::vector<int64_t>& axis,
            bool keep_dims = false);
Output Mean(const Scope& scope, const Input& x, std::initializer_list<int64_t> axis,
            bool keep_dims = false);
Output Mean(const Scope& scope, const Input& x, int64_t axis, bool keep_dims = false);
Output Mean(const Scope& scope, const Input& x);
Output Max(const Scope& scope, const Input& x, const std::vector<int64_t>& axis,
           bool keep_dims = false);
Output Max(const Scope& scope, const Input& x, std::initializer_list<int64_t> axis,
           bool keep_dims = false);
Output Max(const Scope& scope, const Input& x, int64_t axis, bool keep_dims = false);
Output Max(const Scope& scope, const Input& x);
Output Min(const Scope& scope, const Input& x, const std::vector<int64_t>& axis,
           bool keep_dims = false);
Output Min(const Scope& scope, const Input& x, std::initializer_list<int64_t> axis,
           bool keep_dims = false);
Output Min(const Scope& scope, const Input& x, int64_t axis, bool keep_dims = false);
Output Min(const Scope& scope, const Input& x);
// int64 index of the first maximum along `axis`: [2,3] with axis 1 -> [2].
Output ArgMax(const Scope& scope, const Input& x, int64_t axis = 0);

// --- Shape manipulation ----------------------------------------------------------

// `shape` is int32/int64 [n] with at most one -1: Reshape(s, x, {-1, 2}). When it is
// a literal or Const the output shape is inferred (the -1 resolved if x's element
// count is known).
Output Reshape(const Scope& scope, const Input& x, const Input& shape);
// Reverses the axes: [2,3,4] -> [4,3,2].
Output Transpose(const Scope& scope, const Input& x);
// out dim i = x dim perm[i]: [2,3,4] with perm {0,2,1} -> [2,4,3].
Output Transpose(const Scope& scope, const Input& x, const std::vector<int64_t>& perm);
// Joins along `axis`: [2,3] and [2,5] with axis 1 -> [2,8].
Output ConcatV2(const Scope& scope, const std::vector<Input>& values, int64_t axis);
// x[begin[i] : begin[i] + size[i]] per dim; size -1 = to the end.
Output Slice(const Scope& scope, const Input& x, const std::vector<int64_t>& begin,
             const std::vector<int64_t>& size);
// Part `index` of `parts` when x [n, ...] is cut along its first dimension as evenly
// as possible, the larger parts first: rows [index * (n / parts) + min(index, n %
// parts), + n / parts + (index < n % parts)). n is read at run time, so one graph
// cuts batches of any size (10 rows in 4 parts: 3, 3, 2, 2; fewer rows than parts
// leaves the last parts empty). Not differentiable.
Output EvenSplitPart(const Scope& scope, const Input& x, int64_t index, int64_t parts);
// `shape` (fully defined) filled with the scalar `value` (a literal, Tensor or Const
// output: it becomes the "value" attr): Fill(s, {2, 3}, 1.0f) is float32 [2,3].
Output Fill(const Scope& scope, const Shape& shape, const Input& value);
// x's shape as a 1-D tensor [rank(x)] of out_type (int32 or int64). Named ShapeOf
// because Shape is the class.
Output ShapeOf(const Scope& scope, const Input& x, DType out_type = DType::kInt32);

// --- Random numbers ---------------------------------------------------------------
// Stateful; deterministic given `seed`: each kernel instance draws the next values
// of a generator seeded with it. dtype must be float32 or float64.

Output RandomUniform(const Scope& scope, const Shape& shape, DType dtype, int64_t seed,
                     double minval = 0.0, double maxval = 1.0);
Output RandomNormal(const Scope& scope, const Shape& shape, DType dtype, int64_t seed,
                    double mean = 0.0, double stddev = 1.0);
// Normal, with values more than 2 stddev from the mean re-drawn.
Output TruncatedNormal(const Scope& scope, const Shape& shape, DType dtype, int64_t seed,
                       double mean = 0.0, double stddev = 1.0);

// --- Training ops ------------------------------------------------------------------
// In-place optimizer updates (TensorFlow's Apply* ops). `var` and the slots (accum,
// m, v) must be Variable outputs of one float dtype; every other input has that
// dtype too (a float literal is float32: pass a double for a float64 variable).
// Hyper-parameters are scalars []; grad/delta has var's shape. Each returns var's new
// value [var shape]. Stateful: the kernel fails with FailedPrecondition naming a
// variable that is not initialized.

// var -= alpha * delta.
Output ApplyGradientDescent(const Scope& scope, const Input& var, const Input& alpha,
                            const Input& delta);
// accum = accum * momentum + grad; var -= lr * accum, or with use_nesterov
// var -= lr * grad + lr * momentum * accum.
Output ApplyMomentum(const Scope& scope, const Input& var, const Input& accum, const Input& lr,
                     const Input& grad, const Input& momentum, bool use_nesterov = false);
// lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power);
// m = beta1 * m + (1 - beta1) * grad; v = beta2 * v + (1 - beta2) * grad^2;
// var -= lr_t * m / (sqrt(v) + epsilon).
Output ApplyAdam(const Scope& scope, const Input& var, const Input& m, const Input& v,
                 const Input& beta1_power, const Input& beta2_power, const Input& lr,
                 const Input& beta1, const Input& beta2, const Input& epsilon,
                 const Input& grad);
// accum += grad^2; var -= lr * grad / sqrt(accum).
Output ApplyAdagrad(const Scope& scope, const Input& var, const Input& accum, const Input& lr,
                    const Input& grad);
// FTRL-proximal (TensorFlow's ApplyFtrl; FtrlUpdate in kernels/optimizer_rules.h):
// accum' = accum + grad^2; linear += grad - (accum'^-p - accum^-p) / lr * var;
// var = |linear| > l1 ? (sign(linear) l1 - linear) / (accum'^-p / lr + 2 l2) : 0.
Output ApplyFtrl(const Scope& scope, const Input& var, const Input& accum, const Input& linear,
                 const Input& grad, const Input& lr, const Input& l1, const Input& l2,
                 const Input& lr_power);

// --- Gradient helper ops -----------------------------------------------------------
// What the backward rules (graph/gradient_rules.cc) build; see graph/gradients.h.
// Float dtypes only (Size: any). Shapes that depend on `like` are taken from like's
// runtime shape, so they work when shapes are unknown at build time.

// dy * (x > 0): Relu's gradient.
Output ReluGrad(const Scope& scope, const Input& dy, const Input& x);
// dy * y * (1 - y), with y = Sigmoid(x): Sigmoid's gradient.
Output SigmoidGrad(const Scope& scope, const Input& y, const Input& dy);
// dy * (1 - y * y), with y = Tanh(x): Tanh's gradient.
Output TanhGrad(const Scope& scope, const Input& y, const Input& dy);
// grad summed over the dimensions along which like was broadcast, so the result has
// like's shape: grad [2,3] and like [3] -> [3]; like [2,1] -> [2,1]; like [] -> [].
Output SumToShapeOf(const Scope& scope, const Input& grad, const Input& like);
// The inverse of a reduction's shape change: x has the shape of a reduction of like
// over `axis` (nullopt = every axis) with `keep_dims`; the result has like's shape
// with x's values repeated along the reduced axes. x [2] and like [2,3] with axis {1}
// -> [2,3].
Output BroadcastToShapeOf(const Scope& scope, const Input& x, const Input& like,
                          const std::optional<std::vector<int64_t>>& axis, bool keep_dims);
// Zeros of like's shape with grad written at `begin`: Slice's gradient.
Output PadToShapeOf(const Scope& scope, const Input& grad, const Input& like,
                    const std::vector<int64_t>& begin);
// The part of grad (shaped like ConcatV2(parts, axis)) that belongs to parts[index]:
// ConcatV2's gradient for that input. Only the parts' shapes are read.
Output SliceConcatPart(const Scope& scope, const Input& grad, const std::vector<Input>& parts,
                       int64_t axis, int64_t index);
// The number of elements of x, a scalar of out_type (int32 or int64).
Output Size(const Scope& scope, const Input& x, DType out_type = DType::kInt32);

// --- Queues and readers ---------------------------------------------------------------
// TensorFlow's queues (implemented in graph/queue_ops.cc). A queue lives in the task
// that runs its node. With a shared_name it is shared there by (container,
// shared_name) among every session that names it; without one it is the session's
// own, as in TensorFlow 1 (another client's queue node of the same name makes another
// queue, and the queue goes when the session does). The functions below place every
// op on the queue node's device (its requested device, colocated), so a queue pinned
// to /job:ps/task:0 with a shared_name is used from any worker's graph. Running any of them
// runs the queue node first (a control dependency), which creates the queue on first
// use. Waiting (full queue, empty queue) happens inside the queue actor, never in a
// thread; timeout_ms > 0 bounds one op's wait (DeadlineExceeded, the queue stays
// usable), 0 = SessionOptions::operation_timeout_in_ms.
//
//   Queue q = FIFOQueue(root.WithDevice("/job:ps/task:0"), {DType::kFloat32}, {Shape{4}}, 100);
//   const Node* enqueue = QueueEnqueue(root, q, {x});          // x float32 [4]
//   std::vector<Output> batch = QueueDequeueMany(root, q, 32);  // {float32 [32,4]}

struct Queue {
  const Node* node = nullptr;  // the FIFOQueue / RandomShuffleQueue node
  std::string container;
  std::string shared_name;
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;  // empty = unknown
  bool valid() const { return node != nullptr; }
};

// capacity -1 = unbounded; shared_name "" = the session's own queue, named by the
// node's name within the session. `shapes`: empty, or one
// per component (fully defined ones let DequeueMany stack any elements).
Queue FIFOQueue(const Scope& scope, const std::vector<DType>& dtypes,
                const std::vector<Shape>& shapes, int64_t capacity,
                const std::string& shared_name = "", const std::string& container = "");
// Hands out uniformly chosen elements, keeping min_after_dequeue behind until closed.
Queue RandomShuffleQueue(const Scope& scope, const std::vector<DType>& dtypes,
                         const std::vector<Shape>& shapes, int64_t capacity,
                         int64_t min_after_dequeue, int64_t seed = 0,
                         const std::string& shared_name = "", const std::string& container = "");
// One element: one input per component.
const Node* QueueEnqueue(const Scope& scope, const Queue& queue,
                         const std::vector<Input>& components, int64_t timeout_ms = 0);
// n elements: each component [n, ...].
const Node* QueueEnqueueMany(const Scope& scope, const Queue& queue,
                             const std::vector<Input>& components, int64_t timeout_ms = 0);
// One element: one output per component.
std::vector<Output> QueueDequeue(const Scope& scope, const Queue& queue, int64_t timeout_ms = 0);
// n elements stacked: component i is [n, shapes[i]...].
std::vector<Output> QueueDequeueMany(const Scope& scope, const Queue& queue, int64_t n,
                                     int64_t timeout_ms = 0);
const Node* QueueClose(const Scope& scope, const Queue& queue,
                       bool cancel_pending_enqueues = false);
// int32 []: the number of elements now.
Output QueueSize(const Scope& scope, const Queue& queue);
// The next line of the files that `filename_queue` (elements int32 [] indexing
// `filenames`) hands out, decoded as CSV into one scalar per record_types entry
// (float32, float64, int32, int64): TensorFlow's TextLineReader + decode_csv. The
// reader runs on the filename queue's device; its position is kept there, private to
// the session, or under `shared_name` for every session that names it (TensorFlow
// 1's resource semantics). OutOfRange once the filename queue is closed and exhausted.
std::vector<Output> CsvReaderRead(const Scope& scope, const std::vector<std::string>& filenames,
                                  const Queue& filename_queue,
                                  const std::vector<DType>& record_types,
                                  int64_t skip_header_lines = 0,
                                  const std::string& shared_name = "");

namespace ops_internal {
// The op builders' shorthand (graph/ops*.cc): output 0 of a new node, or an invalid
// Output when the scope failed.
Output Single(const Scope& scope, const std::string& op, const std::vector<Input>& inputs,
              AttrMap attrs = {});
}  // namespace ops_internal

}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_OPS_H_
