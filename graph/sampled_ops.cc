#include "graph/sampled_ops.h"

#include <vector>

#include "graph/ops.h"
#include "graph/sparse_ops.h"

namespace actorflow {

CandidateSample LogUniformCandidateSampler(const Scope& scope, const Input& true_classes,
                                           int64_t num_true, int64_t num_sampled, bool unique,
                                           int64_t range_max, int64_t seed) {
  const Node* node = scope.AddNode("LogUniformCandidateSampler", {true_classes},
                                   {{"num_true", num_true},
                                    {"num_sampled", num_sampled},
                                    {"unique", unique},
                                    {"range_max", range_max},
                                    {"seed", seed}});
  if (node == nullptr) return {};
  return {Output(node, 0), Output(node, 1), Output(node, 2)};
}

Output SigmoidCrossEntropyWithLogits(const Scope& scope, const Input& logits,
                                     const Input& targets) {
  const Output x = Identity(scope, logits);
  const Output z = Identity(scope, targets);
  const Output e = Exp(scope, Neg(scope, Abs(scope, x)));
  const Output softplus_part = Log(scope, Add(scope, OnesLike(scope, e), e));  // x's dtype
  return Add(scope, Sub(scope, Relu(scope, x), Mul(scope, x, z)), softplus_part);
}

NceLossResult NceLoss(const Scope& scope, const std::vector<Output>& weights,
                      const std::vector<Output>& biases, const Input& labels, const Input& inputs,
                      int64_t num_sampled, int64_t num_classes, int64_t seed) {
  if (!scope.ok()) return {};
  const Scope s = scope.NewSubScope("nce_loss");
  const Output true_classes = Identity(s, labels);
  const Output x = Identity(s, inputs);
  const CandidateSample sample =
      LogUniformCandidateSampler(s, true_classes, 1, num_sampled, /*unique=*/true, num_classes, seed);
  const Output true_ids = Reshape(s, true_classes, Tensor::FromVector<int32_t>({-1}));  // [batch]
  // True logits [batch]: each example's own class row.
  const Output true_w = EmbeddingLookup(s, weights, true_ids);  // [batch, d]
  const Output true_b = EmbeddingLookup(s, biases, true_ids);   // [batch]
  const Output true_logits =
      Sub(s, Add(s, Sum(s, Mul(s, x, true_w), 1), true_b),
          Log(s, Reshape(s, sample.true_expected_count, Tensor::FromVector<int32_t>({-1}))));
  // Sampled logits [batch, num_sampled]: every example against the same classes.
  const Output sampled_w = EmbeddingLookup(s, weights, sample.sampled);  // [S, d]
  const Output sampled_b = EmbeddingLookup(s, biases, sample.sampled);   // [S]
  const Output sampled_logits =
      Sub(s, Add(s, MatMul(s, x, sampled_w, false, true), sampled_b),
          Log(s, sample.sampled_expected_count));
  const Output true_loss = SigmoidCrossEntropyWithLogits(s, true_logits, 1.0f);
  const Output sampled_loss =
      Sum(s, SigmoidCrossEntropyWithLogits(s, sampled_logits, 0.0f), 1);
  return {Add(s, true_loss, sampled_loss), sample.sampled};
}

}  // namespace actorflow
