// Sequence layers in tf.layers' style (training/estimators/layer_classes.h: a layer
// owns its variables, its first call creates them under "<name>/", later calls reuse
// them): Embedding, LSTM and GRU over the fused cells of graph/rnn_ops.h, statically
// unrolled, LayerNormalization, MultiHeadAttention (self-attention) and a pre-norm
// Transformer block.
//
//   layers::Embedding embed("embedding", {.vocab = 96, .dim = 64});
//   layers::LSTM lstm("lstm_0", {.units = 256});
//   std::vector<Output> steps = ...;                    // T tensors [B, 64]
//   AF_ASSIGN_OR_RETURN(layers::RecurrentOutputs out, lstm(scope, steps));
//   out.outputs[t];                                     // [B, 256]
//
// Thread safety: as layer_classes.h.
#ifndef ACTORFLOW_TRAINING_ESTIMATORS_SEQUENCE_LAYERS_H_
#define ACTORFLOW_TRAINING_ESTIMATORS_SEQUENCE_LAYERS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/scope.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "training/estimators/layer_classes.h"

namespace actorflow {

// Checks the values a sequence_length input will be fed before they are: each in
// [0, steps]. InvalidArgument naming the first bad row and its value otherwise (the
// graph itself cannot refuse a value; the trainers call this on every feed).
Status ValidateSequenceLengths(const Tensor& lengths, int64_t steps);

namespace layers {

struct EmbeddingOptions {
  int64_t vocab = 0;
  int64_t dim = 0;
  double stddev = 1.0;  // of the truncated-normal initial rows
  int64_t seed = 1;
};

// ids (int32 or int64, any shape) -> [ids..., dim]: rows of a [vocab, dim] variable
// "<name>/embeddings" read with Gather, so its gradient is IndexedSlices.
class Embedding : public Layer {
 public:
  Embedding(std::string name, EmbeddingOptions options)
      : Layer(std::move(name)), options_(options) {}
  StatusOr<Output> operator()(const Scope& scope, const Output& ids);

 private:
  EmbeddingOptions options_;
};

struct RecurrentOptions {
  int64_t units = 0;
  float forget_bias = 1.0f;  // LSTM only
  int64_t seed = 1;
};

struct RecurrentOutputs {
  std::vector<Output> outputs;      // per step [B, units]; zeros past a row's length
  std::vector<Output> final_state;  // LSTM {c, h}, GRU {h}: each row's state at its length
};

// Statically unrolled recurrent layers: `steps` are the T inputs [B, I] (float32, I
// known; B may be unknown). `initial_state`: empty for zeros, else the layer's state
// tensors [B, units] ({c, h} or {h}). `sequence_length` (int32 or int64 [B], optional):
// row b takes steps 0..length_b - 1; later steps keep its state and output zeros
// (values must lie in [0, T]: ValidateSequenceLengths). Variables: "kernel" [I + units, 4 * units]
// (LSTM; GRU: "gates_kernel" [I + units, 2 * units] and "candidate_kernel"
// [I + units, units]) with Glorot's stddev, and zero biases.
class LSTM : public Layer {
 public:
  LSTM(std::string name, RecurrentOptions options) : Layer(std::move(name)), options_(options) {}
  StatusOr<RecurrentOutputs> operator()(const Scope& scope, const std::vector<Output>& steps,
                                        const std::vector<Output>& initial_state = {},
                                        const Output& sequence_length = Output());

 private:
  RecurrentOptions options_;
  int64_t in_features_ = 0;
};

class GRU : public Layer {
 public:
  GRU(std::string name, RecurrentOptions options) : Layer(std::move(name)), options_(options) {}
  StatusOr<RecurrentOutputs> operator()(const Scope& scope, const std::vector<Output>& steps,
                                        const std::vector<Output>& initial_state = {},
                                        const Output& sequence_length = Output());

 private:
  RecurrentOptions options_;
  int64_t in_features_ = 0;
};

struct LayerNormalizationOptions {
  double epsilon = 1e-5;
};

// Normalizes over the last axis (graph/math_ops.h's LayerNorm) with "gamma" (ones) and
// "beta" (zeros) of the last dim's size: x [..., D] -> [..., D].
class LayerNormalization : public Layer {
 public:
  explicit LayerNormalization(std::string name, LayerNormalizationOptions options = {})
      : Layer(std::move(name)), options_(options) {}
  StatusOr<Output> operator()(const Scope& scope, const Output& x);

 private:
  LayerNormalizationOptions options_;
  int64_t features_ = 0;
};

struct MultiHeadAttentionOptions {
  int64_t num_heads = 1;  // must divide the model width D
  bool causal = false;    // position t attends to positions <= t only
  int64_t seed = 1;
};

// Self-attention: x [B, T, D] (T and D known) -> [B, T, D]. Query, key, value and
// output projections "query", "key", "value", "output" ([D, D] kernels, zero biases);
// heads of width D / num_heads; softmax(q k^T / sqrt(D / num_heads) + mask) v.
class MultiHeadAttention : public Layer {
 public:
  MultiHeadAttention(std::string name, MultiHeadAttentionOptions options)
      : Layer(std::move(name)), options_(options) {}
  StatusOr<Output> operator()(const Scope& scope, const Output& x);

 private:
  MultiHeadAttentionOptions options_;
  int64_t width_ = 0;
};

struct TransformerBlockOptions {
  int64_t num_heads = 1;
  int64_t mlp_units = 0;  // 0: 4 * D
  bool causal = true;
  int64_t seed = 1;
};

// A pre-norm Transformer block (GPT-2's): h = x + attention(norm_1(x)); y = h +
// mlp(norm_2(h)), the MLP D -> mlp_units (GELU) -> D. x [B, T, D] -> [B, T, D].
// Its sub-layers "norm_1", "attention", "norm_2", "mlp_hidden" and "mlp_output" own
// the variables ("<name>/attention/query/kernel", ...); variables() lists them all, in
// that order.
class TransformerBlock : public Layer {
 public:
  TransformerBlock(std::string name, TransformerBlockOptions options)
      : Layer(std::move(name)), options_(options) {}
  StatusOr<Output> operator()(const Scope& scope, const Output& x);

 private:
  TransformerBlockOptions options_;
  // Made by the first call, once D is known (mlp_units 0 means 4 * D).
  std::optional<LayerNormalization> norm_1_;
  std::optional<MultiHeadAttention> attention_;
  std::optional<LayerNormalization> norm_2_;
  std::optional<Dense> mlp_hidden_;
  std::optional<Dense> mlp_output_;
};

}  // namespace layers
}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_ESTIMATORS_SEQUENCE_LAYERS_H_
