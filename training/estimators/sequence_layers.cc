#include "training/estimators/sequence_layers.h"

#include <cmath>
#include <functional>
#include <utility>

#include "graph/ops.h"
#include "graph/rnn_ops.h"
#include "graph/shape_ops.h"
#include "graph/sparse_ops.h"
#include "training/estimators/sequence_layers_internal.h"
#include "training/optimizers/variables.h"

namespace actorflow {

Status ValidateSequenceLengths(const Tensor& lengths, int64_t steps) {
  const DType dtype = lengths.dtype();
  if ((dtype != DType::kInt32 && dtype != DType::kInt64) || lengths.shape().unknown_rank() ||
      lengths.shape().rank() != 1) {
    return InvalidArgument("sequence_length is " + std::string(DTypeName(dtype)) + " " +
                           lengths.shape().ToString() + ", expected an int32 or int64 vector [B]");
  }
  for (int64_t b = 0; b < lengths.NumElements(); ++b) {
    const int64_t value =
        dtype == DType::kInt32 ? lengths.data<int32_t>()[b] : lengths.data<int64_t>()[b];
    if (value < 0 || value > steps) {
      return InvalidArgument("sequence_length row " + std::to_string(b) + " is " +
                             std::to_string(value) + ", outside [0, " + std::to_string(steps) +
                             "] (the number of steps)");
    }
  }
  return Status::OK();
}

namespace layers {
namespace sequence_internal {

StatusOr<Output> LayerVariable(const Scope& scope, const std::string& name, const Shape& shape,
                               double stddev, int64_t seed, std::vector<Output>* variables,
                               float fill) {
  const Scope init = scope.NewSubScope(name + "_init");
  Output initial;
  if (stddev > 0.0) {
    initial = TruncatedNormal(init, shape, DType::kFloat32, seed, 0.0, stddev);
  } else {
    Tensor value(DType::kFloat32, shape);
    for (int64_t i = 0; i < value.NumElements(); ++i) value.data<float>()[i] = fill;
    initial = Const(init, value);
  }
  AF_ASSIGN_OR_RETURN(Output v, CreateVariable(scope, name, initial));
  variables->push_back(v);
  return v;
}

std::string Describe(const Output& x) {
  if (!x.valid()) return "an invalid Output";
  return "'" + x.name() + "' (" + std::string(DTypeName(x.dtype())) + " " + x.shape().ToString() +
         ")";
}

Status CheckSameInput(const std::string& layer, int64_t built_for, int64_t given) {
  if (built_for == given) return Status::OK();
  return InvalidArgument(layer + ": built for inputs with " + std::to_string(built_for) +
                         " in the last dim, now given " + std::to_string(given));
}

}  // namespace sequence_internal

namespace {

using sequence_internal::CheckSameInput;
using sequence_internal::Describe;
using sequence_internal::LayerVariable;

// One step of a cell: the new state from the step's input and the previous state. The
// step's output is the new state's last tensor (h, for LSTM and GRU alike).
using CellFn = std::function<std::vector<Output>(const Scope& scope, const Output& x,
                                                 const std::vector<Output>& state)>;

// I, the steps' common inner dim: every step float32 [B, I] with I known, all of one
// shape (B may be unknown, but the same unknown).
StatusOr<int64_t> CheckSteps(const std::string& layer, const std::vector<Output>& steps) {
  if (steps.empty()) return InvalidArgument(layer + ": steps is empty, expected T >= 1 inputs");
  for (size_t t = 0; t < steps.size(); ++t) {
    const Output& x = steps[t];
    if (!x.valid() || x.dtype() != DType::kFloat32 || x.shape().unknown_rank() ||
        x.shape().rank() != 2 || x.shape().dim(1) < 1) {
      return InvalidArgument(layer + ": step " + std::to_string(t) + " is " + Describe(x) +
                             ", expected float32 [B, I] with I known");
    }
    if (x.shape().dims() != steps[0].shape().dims()) {
      return InvalidArgument(layer + ": step " + std::to_string(t) + " is " + Describe(x) +
                             " but step 0 is " + Describe(steps[0]) +
                             "; every step must have one shape");
    }
  }
  return steps[0].shape().dim(1);
}

// OK when `given` is empty (zeros) or `count` tensors float32 [B, units] with the
// steps' B where both are known.
Status CheckInitialState(const std::string& layer, const std::vector<Output>& given, size_t count,
                         int64_t units, const Output& first_step) {
  if (given.empty()) return Status::OK();
  if (given.size() != count) {
    return InvalidArgument(layer + ": initial_state has " + std::to_string(given.size()) +
                           " tensors, expected " + std::to_string(count) + " of [B, " +
                           std::to_string(units) + "]");
  }
  const int64_t batch = first_step.shape().dim(0);
  for (size_t k = 0; k < count; ++k) {
    const Output& s = given[k];
    const bool ok = s.valid() && s.dtype() == DType::kFloat32 && !s.shape().unknown_rank() &&
                    s.shape().rank() == 2 && s.shape().dim(1) == units &&
                    (batch < 0 || s.shape().dim(0) < 0 || s.shape().dim(0) == batch);
    if (!ok) {
      return InvalidArgument(layer + ": initial_state[" + std::to_string(k) + "] is " +
                             Describe(s) + ", expected float32 [B, " + std::to_string(units) +
                             "] with the steps' B (steps are " + first_step.shape().ToString() +
                             ")");
    }
  }
  return Status::OK();
}

// `given`, or `count` zeros [B, units] with B read from the first step at run time (so
// an unknown B works). ZerosLike of a [B, 1] slice has no gradient rule: nothing is
// computed backwards through the zeros.
StatusOr<std::vector<Output>> InitialState(const Scope& call, const std::vector<Output>& given,
                                           size_t count, int64_t units, const Output& first_step) {
  if (!given.empty()) return given;
  const Scope s = call.NewSubScope("zero_state");
  Output zeros = Tile(s, ZerosLike(s, Slice(s, first_step, {0, 0}, {-1, 1})), {1, units});
  if (!s.ok()) return s.status();
  return std::vector<Output>(count, zeros);
}

Status CheckSequenceLength(const std::string& layer, const Output& lengths, int64_t batch) {
  if (!lengths.valid()) return Status::OK();
  const Shape& shape = lengths.shape();
  const bool ok = (lengths.dtype() == DType::kInt32 || lengths.dtype() == DType::kInt64) &&
                  (shape.unknown_rank() ||
                   (shape.rank() == 1 && (batch < 0 || shape.dim(0) < 0 || shape.dim(0) == batch)));
  if (ok) return Status::OK();
  return InvalidArgument(layer + ": sequence_length is " + Describe(lengths) +
                         ", expected an int32 vector [B] with B " + std::to_string(batch));
}

// Static unrolling: T cells in sub-scopes "step_<t>". With `lengths`, row b's state
// stops changing once t >= lengths[b] (Select on a [B] mask picks whole rows) and its
// outputs there are zeros, as tf.nn.static_rnn's sequence_length.
StatusOr<RecurrentOutputs> Unroll(const Scope& call, const std::vector<Output>& steps,
                                  std::vector<Output> state, const Output& lengths,
                                  const CellFn& cell) {
  RecurrentOutputs result;
  for (size_t t = 0; t < steps.size(); ++t) {
    const Scope s = call.NewSubScope("step_" + std::to_string(t));
    std::vector<Output> next = cell(s, steps[t], state);
    Output output = next.back();
    if (lengths.valid()) {
      const Input now = lengths.dtype() == DType::kInt64 ? Input(static_cast<int64_t>(t))
                                                         : Input(static_cast<int32_t>(t));
      const Output running = Less(s, now, lengths);  // [B]: row b still runs at t
      for (size_t k = 0; k < next.size(); ++k) next[k] = Select(s, running, next[k], state[k]);
      output = Select(s, running, output, ZerosLike(s, output));
    }
    if (!s.ok()) return s.status();
    state = std::move(next);
    result.outputs.push_back(output);
  }
  result.final_state = std::move(state);
  return result;
}

// The variables read once for a call, on the call's device (TensorFlow's RNN
// caching_device): every step uses these reads, so the steps' gradients are summed
// beside them and a variable on another device (a ps task) receives one gradient per
// call, not one per step.
std::vector<Output> ReadOncePerCall(const Scope& call, const std::vector<Output>& variables) {
  const Scope s = call.NewSubScope("read");
  std::vector<Output> read;
  for (const Output& v : variables) read.push_back(Identity(s, v));
  return read;
}

Status CheckUnits(const std::string& layer, int64_t units) {
  if (units >= 1) return Status::OK();
  return InvalidArgument(layer + ": units must be >= 1, got " + std::to_string(units));
}

}  // namespace

StatusOr<Output> Embedding::operator()(const Scope& scope, const Output& ids) {
  if (!ids.valid() || (ids.dtype() != DType::kInt32 && ids.dtype() != DType::kInt64)) {
    return InvalidArgument(name_ + ": ids are " + Describe(ids) + ", expected int32 or int64");
  }
  if (options_.vocab < 1 || options_.dim < 1 || !(options_.stddev > 0.0)) {
    return InvalidArgument(name_ + ": vocab and dim must be >= 1 and stddev > 0");
  }
  const Scope call = CallScope(scope);
  if (!built()) {
    AF_RETURN_IF_ERROR(LayerVariable(call, "embeddings", Shape{options_.vocab, options_.dim},
                                     options_.stddev, options_.seed, &variables_)
                           .status());
  }
  Output rows = Gather(call.WithOpName("Gather"), variables_[0], ids);
  if (!call.ok()) return call.status();
  return rows;
}

StatusOr<RecurrentOutputs> LSTM::operator()(const Scope& scope, const std::vector<Output>& steps,
                                            const std::vector<Output>& initial_state,
                                            const Output& sequence_length) {
  AF_ASSIGN_OR_RETURN(const int64_t in, CheckSteps(name_, steps));
  const int64_t units = options_.units;
  AF_RETURN_IF_ERROR(CheckUnits(name_, units));
  if (built()) AF_RETURN_IF_ERROR(CheckSameInput(name_, in_features_, in));
  AF_RETURN_IF_ERROR(CheckSequenceLength(name_, sequence_length, steps[0].shape().dim(0)));
  AF_RETURN_IF_ERROR(CheckInitialState(name_, initial_state, 2, units, steps[0]));
  const Scope call = CallScope(scope);
  AF_ASSIGN_OR_RETURN(std::vector<Output> state,
                      InitialState(call, initial_state, 2, units, steps[0]));
  if (!built()) {
    in_features_ = in;
    const double stddev = std::sqrt(2.0 / static_cast<double>(in + units + 4 * units));
    AF_RETURN_IF_ERROR(LayerVariable(call, "kernel", Shape{in + units, 4 * units}, stddev,
                                     options_.seed, &variables_)
                           .status());
    AF_RETURN_IF_ERROR(LayerVariable(call, "bias", Shape{4 * units}, 0.0, 0, &variables_).status());
  }
  const std::vector<Output> read = ReadOncePerCall(call, variables_);
  const Output w = read[0], b = read[1];
  const float forget_bias = options_.forget_bias;
  return Unroll(call, steps, std::move(state), sequence_length,
                [&](const Scope& s, const Output& x, const std::vector<Output>& prev) {
                  LstmCellOutputs cell = LSTMBlockCell(s, x, prev[0], prev[1], w, b, forget_bias);
                  return std::vector<Output>{cell.cs, cell.h};
                });
}

StatusOr<RecurrentOutputs> GRU::operator()(const Scope& scope, const std::vector<Output>& steps,
                                           const std::vector<Output>& initial_state,
                                           const Output& sequence_length) {
  AF_ASSIGN_OR_RETURN(const int64_t in, CheckSteps(name_, steps));
  const int64_t units = options_.units;
  AF_RETURN_IF_ERROR(CheckUnits(name_, units));
  if (built()) AF_RETURN_IF_ERROR(CheckSameInput(name_, in_features_, in));
  AF_RETURN_IF_ERROR(CheckSequenceLength(name_, sequence_length, steps[0].shape().dim(0)));
  AF_RETURN_IF_ERROR(CheckInitialState(name_, initial_state, 1, units, steps[0]));
  const Scope call = CallScope(scope);
  AF_ASSIGN_OR_RETURN(std::vector<Output> state,
                      InitialState(call, initial_state, 1, units, steps[0]));
  if (!built()) {
    in_features_ = in;
    // Variables in TF's GRUCell order: gates kernel and bias, then the candidate's.
    const double gates_stddev = std::sqrt(2.0 / static_cast<double>(in + 3 * units));
    const double candidate_stddev = std::sqrt(2.0 / static_cast<double>(in + 2 * units));
    AF_RETURN_IF_ERROR(LayerVariable(call, "gates_kernel", Shape{in + units, 2 * units},
                                     gates_stddev, options_.seed, &variables_)
                           .status());
    AF_RETURN_IF_ERROR(
        LayerVariable(call, "gates_bias", Shape{2 * units}, 0.0, 0, &variables_).status());
    AF_RETURN_IF_ERROR(LayerVariable(call, "candidate_kernel", Shape{in + units, units},
                                     candidate_stddev, options_.seed + 1, &variables_)
                           .status());
    AF_RETURN_IF_ERROR(
        LayerVariable(call, "candidate_bias", Shape{units}, 0.0, 0, &variables_).status());
  }
  const std::vector<Output> read = ReadOncePerCall(call, variables_);
  const Output w_ru = read[0], b_ru = read[1];
  const Output w_c = read[2], b_c = read[3];
  return Unroll(call, steps, std::move(state), sequence_length,
                [&](const Scope& s, const Output& x, const std::vector<Output>& prev) {
                  return std::vector<Output>{GRUBlockCell(s, x, prev[0], w_ru, w_c, b_ru, b_c).h};
                });
}

}  // namespace layers
}  // namespace actorflow
