// Layers (TensorFlow 1.x's tf.layers): one call adds a layer's variables and ops.
//
//   Scope worker = root.WithDevice("/job:worker/task:0");
//   AF_ASSIGN_OR_RETURN(auto h, Dense(worker.NewSubScope("hidden"), x, 10, Activation::kRelu));
//   AF_ASSIGN_OR_RETURN(auto logits, Dense(worker.NewSubScope("logits"), h, 3));
//
// Dense(scope, x [N, F], units) = activation(x kernel + bias) [N, units], with the
// trainable variables "<scope>/kernel" [F, units] (a truncated normal with Glorot's
// stddev sqrt(2 / (F + units)), seeded) and "<scope>/bias" [units] (zeros), created
// with CreateVariable so GlobalVariablesInitializer and the optimizers find them. The
// variables take the scope's device (or its device function, e.g.
// ReplicaDeviceSetter's, which puts them on ps tasks). Two layers need two scope
// names: a second "hidden" is a builder error naming "hidden/kernel".
//
// Thread safety: as Scope (one building thread per graph).
#ifndef ACTORFLOW_TRAINING_ESTIMATORS_LAYERS_H_
#define ACTORFLOW_TRAINING_ESTIMATORS_LAYERS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "graph/scope.h"
#include "graph/status.h"

namespace actorflow {

enum class Activation { kNone, kRelu, kTanh, kSigmoid };

// "relu", "tanh" or "sigmoid" (the DNN model's names); InvalidArgument listing them.
StatusOr<Activation> ParseActivation(const std::string& name);

// `activation` applied to x (kNone: x itself).
Output Activate(const Scope& scope, Activation activation, const Output& x);

// The dense layer described above; `x` is float32 with a known last dimension.
// Appends the kernel and the bias to *variables when it is not null. Errors:
// InvalidArgument naming x for an input that is not float32 [?, F] with F known, or
// units < 1; builder errors naming the node (e.g. a duplicate layer name).
StatusOr<Output> Dense(const Scope& scope, const Output& x, int64_t units,
                       Activation activation = Activation::kNone, int64_t seed = 1,
                       std::vector<Output>* variables = nullptr);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_ESTIMATORS_LAYERS_H_
