// Sampled losses for models with many classes (TensorFlow 1.x's word2vec): the
// log-uniform candidate sampler and the noise-contrastive estimation loss, which
// scores each example's true class against a few sampled classes instead of all of
// them. The class weights are read with EmbeddingLookup, so their gradient is
// IndexedSlices of the true and sampled rows only (graph/sparse_ops.h).
//
//   auto loss = Mean(root, NceLoss(root, nce_weights, nce_biases, labels, embedded,
//                                  /*num_sampled=*/64, vocabulary_size, /*seed=*/1).loss);
//
// Thread safety: as Scope (one building thread per graph).
#ifndef ACTORFLOW_GRAPH_SAMPLED_OPS_H_
#define ACTORFLOW_GRAPH_SAMPLED_OPS_H_

#include <cstdint>

#include "graph/graph.h"
#include "graph/scope.h"

namespace actorflow {

// num_sampled classes of [0, range_max) drawn log-uniformly (P(k) =
// log((k + 2) / (k + 1)) / log(range_max + 1): frequent, low ids first, as in a
// vocabulary sorted by frequency), distinct when `unique`, with the expected count of
// each true and sampled class in such a draw. true_classes: int64 [batch, num_true].
// Stateful: a kernel seeded with `seed` draws the next candidates on every run.
struct CandidateSample {
  Output sampled;                 // int64 [num_sampled]
  Output true_expected_count;     // float32 [batch, num_true]
  Output sampled_expected_count;  // float32 [num_sampled]
};
CandidateSample LogUniformCandidateSampler(const Scope& scope, const Input& true_classes,
                                           int64_t num_true, int64_t num_sampled, bool unique,
                                           int64_t range_max, int64_t seed);

// max(x, 0) - x * z + log(1 + exp(-|x|)): the logistic loss of logits x against
// targets z in [0, 1], without overflow for large |x|.
Output SigmoidCrossEntropyWithLogits(const Scope& scope, const Input& logits,
                                     const Input& targets);

// tf.nn.nce_loss with one true class per example: weights [num_classes, d] and biases
// [num_classes] (float32 Variables, or the parts of partitioned ones, "mod"), labels
// int64 [batch, 1], inputs float32 [batch, d]. The logit of class k for an example is
// inputs . weights[k] + biases[k] - log(expected count of k); the loss is the
// logistic loss of the true class against 1 plus that of each of num_sampled classes
// (LogUniformCandidateSampler, unique, seeded with `seed`) against 0. -> loss
// [batch], and the sampled classes (what a step touched).
struct NceLossResult {
  Output loss;
  Output sampled;
};
NceLossResult NceLoss(const Scope& scope, const std::vector<Output>& weights,
                      const std::vector<Output>& biases, const Input& labels, const Input& inputs,
                      int64_t num_sampled, int64_t num_classes, int64_t seed);

}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_SAMPLED_OPS_H_
