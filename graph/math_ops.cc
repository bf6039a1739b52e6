// Builders of the math ops (graph/math_ops.h); the ops are registered in
// graph/ops_math.cc.
#include "graph/math_ops.h"

#include <string>
#include <vector>

namespace actorflow {

Output BatchMatMul(const Scope& scope, const Input& x, const Input& y, bool adj_x,
                   bool adj_y) {
  const Node* node = scope.AddNode("BatchMatMul", {x, y}, {{"adj_x", adj_x}, {"adj_y", adj_y}});
  return node == nullptr ? Output() : Output(node, 0);
}

LayerNormResult LayerNorm(const Scope& scope, const Input& x, const Input& gamma,
                          const Input& beta, double epsilon) {
  const Node* node = scope.AddNode("LayerNorm", {x, gamma, beta}, {{"epsilon", epsilon}});
  if (node == nullptr) return {};
  return {Output(node, 0), Output(node, 1), Output(node, 2)};
}

LayerNormGradResult LayerNormGrad(const Scope& scope, const Input& dy, const Input& x,
                                  const Input& mean, const Input& inv_std,
                                  const Input& gamma) {
  const Node* node = scope.AddNode("LayerNormGrad", {dy, x, mean, inv_std, gamma}, {});
  if (node == nullptr) return {};
  return {Output(node, 0), Output(node, 1), Output(node, 2)};
}

Output Gelu(const Scope& scope, const Input& x, bool approximate) {
  const Node* node = scope.AddNode("Gelu", {x}, {{"approximate", approximate}});
  return node == nullptr ? Output() : Output(node, 0);
}

Output GeluGrad(const Scope& scope, const Input& dy, const Input& x, bool approximate) {
  const Node* node = scope.AddNode("GeluGrad", {dy, x}, {{"approximate", approximate}});
  return node == nullptr ? Output() : Output(node, 0);
}

Output PackMatMulOperand(const Scope& scope, const Input& b, bool transpose) {
  const Node* node = scope.AddNode("PackMatMulOperand", {b}, {{"transpose", transpose}});
  return node == nullptr ? Output() : Output(node, 0);
}

Output PackedMatMul(const Scope& scope, const Input& a, const Input& packed, int64_t n) {
  const Node* node = scope.AddNode("PackedMatMul", {a, packed}, {{"n", n}});
  return node == nullptr ? Output() : Output(node, 0);
}

}  // namespace actorflow
