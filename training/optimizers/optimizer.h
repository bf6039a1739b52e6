// Optimizers as graph ops (TensorFlow 1.x's tf.train.*Optimizer): Minimize() adds the
// gradients of a loss and one in-place Apply* update per variable, and returns a train
// op that runs a whole training step when run as a target.
//
//   Scope root = Scope::NewRootScope();
//   auto w = CreateVariable(root, "w", Tensor::FromVector<float>({0, 0}));
//   auto step = CreateGlobalStep(root);
//   auto loss = ...;                                       // float scalar
//   AdamOptimizer adam(0.01);
//   auto train = adam.Minimize(root.WithOpName("train"), loss, *step);
//   auto init = GlobalVariablesInitializer(root.WithOpName("init"));
//   session->Run({}, {}, {"init"}, nullptr);
//   for (...) session->Run(feeds, {loss.name()}, {"train"}, &out);
//
// The train op is a NoOp named by the caller's scope (WithOpName; otherwise a unique
// "NoOp..." name). Every other node goes under the sub-scope "<optimizer name>/" (the
// updates: "<name>/update_<var>/Apply..."); gradients go under "gradients/".
//
// Devices, as in TensorFlow 1.x: each update (the Apply op, its hyper-parameter
// constants, Adam's beta power updates) is built beside its variable, with the
// variable's requested device and colocated with it, whatever the caller's device
// scope; so is the global step's increment. The gradients, the gate and the train op
// follow the caller's scope. So with variables on "/job:ps/task:0",
//   opt.Minimize(root.WithDevice("/job:worker/task:0"), loss, step)
// computes the gradients on the worker and applies them on the ps task.
//
// What one run of the train op does, in order:
// 1. Every gradient (and the loss, for Minimize) is computed; every update waits for
//    all of them (through the NoOp "<name>/gate/NoOp"), so every read of a variable in
//    the step happens before any variable changes: fetching the loss beside the train
//    op returns the loss before the step. Gradients may be fed.
// 2. One Apply* op per variable updates it and its slots in place.
// 3. After all updates: Adam's beta powers are multiplied by beta1/beta2, and
//    global_step (when given) is incremented by 1.
//
// Slot variables (per-variable state: "<var>/Momentum", "<var>/Adam_m", "<var>/Adam_v",
// "<var>/Adagrad") and Adam's "beta1_power"/"beta2_power" are made with CreateVariable
// (non-trainable), colocated with their variable, so GlobalVariablesInitializer built
// afterwards initializes them. An optimizer object creates each slot once per graph
// and reuses it when it builds another train op for the same variable.
//
// Thread safety: as Scope (one building thread per graph); an Optimizer object must
// not be used from two threads at once.
#ifndef ACTORFLOW_TRAINING_OPTIMIZERS_OPTIMIZER_H_
#define ACTORFLOW_TRAINING_OPTIMIZERS_OPTIMIZER_H_

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "graph/gradients.h"
#include "graph/graph.h"
#include "graph/scope.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "kernels/optimizer_rules.h"

namespace actorflow {

class Optimizer {
 public:
  // (gradient, variable): the gradient has the variable's dtype and shape.
  using GradsAndVars = std::vector<std::pair<Output, Output>>;
  // (gradient, variable) with gradients dense or sparse (GradientsWithSlices).
  using GradientsAndVars = std::vector<std::pair<Gradient, Output>>;

  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // "GradientDescent", "Momentum", "Adam", "Adagrad": the name scope of its nodes.
  const std::string& name() const { return name_; }

  // Builds the updates of the given variables and returns the train op (see the top
  // of this file). `global_step` may be invalid (no step counting); when valid it
  // must be an integer Variable's Output. Errors: InvalidArgument for no pairs, an
  // invalid gradient, a variable that is not a float Variable node or appears twice,
  // a gradient of another dtype; builder errors naming the node.
  StatusOr<Output> ApplyGradients(const Scope& scope, const GradsAndVars& grads_and_vars,
                                  Output global_step);
  // The same with gradients that may be IndexedSlices: a variable with a sparse
  // gradient gets a sparse update that touches only its gradient's rows and their
  // slots (SparseApply*; Momentum, without one, applies the slices made dense).
  StatusOr<Output> ApplyGradientsWithSlices(const Scope& scope,
                                            const GradientsAndVars& grads_and_vars,
                                            Output global_step);

  // Gradients of `loss` (a float tensor; a non-scalar loss is summed) with respect
  // to `var_list` (default: every variable in the graph's
  // kTrainableVariablesCollection), sparse (IndexedSlices) for a variable read only
  // through Gather (an embedding table): TF1's compute_gradients. Variables the loss
  // does not depend on are left out. Errors: InvalidArgument for an invalid or
  // non-float loss, no variable to optimize, or none with a gradient; Gradients'
  // errors.
  StatusOr<GradientsAndVars> ComputeGradients(const Scope& scope, Output loss,
                                              std::vector<Output> var_list = {}) const;
  // ComputeGradients, then ApplyGradientsWithSlices (each update also waits for the
  // loss): a variable read only through Gather gets a sparse update of the rows the
  // step read.
  StatusOr<Output> Minimize(const Scope& scope, Output loss, Output global_step,
                            std::vector<Output> var_list = {});
  // Minimize without a global step.
  StatusOr<Output> Minimize(const Scope& scope, Output loss);

  // Decays the learning rate of the train ops built afterwards by the global step
  // (tf.train.exponential_decay, see LearningRateDecay in kernels/optimizer_rules.h):
  // each update reads the step it is made at, so ApplyGradients then needs a valid
  // global_step. InvalidArgument for decay_steps < 0 or a rate that is not a positive
  // number; a decay with decay_steps 0 turns decay off.
  Status SetLearningRateDecay(const LearningRateDecay& decay);
  const LearningRateDecay& learning_rate_decay() const { return decay_; }

  // The slot variable `slot` ("Momentum", "Adam_m", ...) this optimizer made for
  // `var` in `graph`; NotFound if it made none.
  StatusOr<Output> GetSlot(const Graph& graph, const Output& var, const std::string& slot) const;

 protected:
  explicit Optimizer(std::string name) : name_(std::move(name)) {}

  // Creates per-step state shared by the variables (Adam's beta powers) before any
  // update is built. `vars` are the checked variables, in order.
  virtual Status Prepare(const Scope& scope, const std::vector<Output>& vars);
  // Builds the update of one variable in `scope` (its "update_<var>" scope, carrying
  // the gating control dependencies); returns the Apply op's output.
  virtual StatusOr<Output> ApplyDense(const Scope& scope, const Output& grad,
                                      const Output& var) = 0;
  // The same for a sparse gradient; by default ApplyDense of the slices made dense.
  virtual StatusOr<Output> ApplySparse(const Scope& scope, const IndexedSlices& grad,
                                       const Output& var);
  // Ops to run after every update (scope carries control dependencies on all of
  // them); returns the ops the train op waits for besides the updates.
  virtual StatusOr<std::vector<Output>> Finish(const Scope& scope);

  // The slot `slot` of `var`: a non-trainable variable "<var>/<slot>" of var's dtype
  // and shape filled with `initial_value`, created on first use in var's graph.
  StatusOr<Output> GetOrCreateSlot(Graph* graph, const Output& var, const std::string& slot,
                                   double initial_value);
  // A non-slot, non-trainable scalar variable (Adam's beta powers) named `base` (made
  // unique), colocated with `colocate_with`, created on first use per (graph, key).
  StatusOr<Output> GetOrCreateNonSlot(Graph* graph, const std::string& key, const std::string& base,
                                      const Output& colocate_with, double initial_value);
  // The learning rate of an update built in `scope` (beside its variable): `base` as
  // a constant, or with a decay base * decay_rate^(global_step / decay_steps) computed
  // from the global step of the train op being built.
  Input LearningRate(const Scope& scope, DType dtype, double base) const;
  // A scalar tensor of `dtype` holding `value` (a hyper-parameter literal).
  static Tensor ScalarOf(DType dtype, double value);
  // `scope` on `var`'s requested device (instead of the scope's), colocated with it:
  // where the ops that update `var` are built.
  static Scope BesideVariable(const Scope& scope, const Output& var);

 private:
  // ApplyGradients, with every update also waiting for `gates` (Minimize's loss).
  StatusOr<Output> ApplyGradientsGated(const Scope& scope, const GradientsAndVars& grads_and_vars,
                                       Output global_step, const std::vector<Output>& gates);
  // A variable this optimizer created: a node name in a graph.
  StatusOr<Output> FindCreated(const Graph& graph, const std::string& key) const;

  std::string name_;
  LearningRateDecay decay_;
  // The global step of the train op being built (LearningRate reads it).
  Output building_step_;
  // (graph, key) -> node name of a slot or non-slot variable made by this optimizer.
  std::map<std::pair<const Graph*, std::string>, std::string> created_;
};

// var -= lr * grad.
class GradientDescentOptimizer : public Optimizer {
 public:
  explicit GradientDescentOptimizer(double learning_rate);

 protected:
  StatusOr<Output> ApplyDense(const Scope& scope, const Output& grad, const Output& var) override;
  StatusOr<Output> ApplySparse(const Scope& scope, const IndexedSlices& grad,
                               const Output& var) override;

 private:
  double learning_rate_;
};

// accum = momentum * accum + grad; var -= lr * accum (Nesterov: var -= lr * grad +
// lr * momentum * accum). Slot "Momentum", initially 0.
class MomentumOptimizer : public Optimizer {
 public:
  MomentumOptimizer(double learning_rate, double momentum, bool use_nesterov = false);

 protected:
  StatusOr<Output> ApplyDense(const Scope& scope, const Output& grad, const Output& var) override;

 private:
  double learning_rate_;
  double momentum_;
  bool use_nesterov_;
};

// Adam (Kingma & Ba) with TensorFlow's bias correction through beta1_power and
// beta2_power (one pair per variable dtype, starting at beta1/beta2, multiplied by
// beta1/beta2 after each step). Slots "Adam_m" and "Adam_v", initially 0.
class AdamOptimizer : public Optimizer {
 public:
  explicit AdamOptimizer(double learning_rate = kDefaultAdamLearningRate,
                         double beta1 = kDefaultAdamBeta1, double beta2 = kDefaultAdamBeta2,
                         double epsilon = kDefaultAdamEpsilon);

 protected:
  Status Prepare(const Scope& scope, const std::vector<Output>& vars) override;
  StatusOr<Output> ApplyDense(const Scope& scope, const Output& grad, const Output& var) override;
  // Lazy Adam: only the gradient's rows of var, m and v change.
  StatusOr<Output> ApplySparse(const Scope& scope, const IndexedSlices& grad,
                               const Output& var) override;
  StatusOr<std::vector<Output>> Finish(const Scope& scope) override;

 private:
  struct BetaPowers {
    Output beta1_power;
    Output beta2_power;
  };
  double learning_rate_;
  double beta1_;
  double beta2_;
  double epsilon_;
  // The beta powers of the train op being built, by variable dtype.
  std::map<DType, BetaPowers> powers_;
};

// accum += grad^2; var -= lr * grad / sqrt(accum). Slot "Adagrad", initially
// initial_accumulator_value (> 0, so the first step does not divide by 0).
class AdagradOptimizer : public Optimizer {
 public:
  explicit AdagradOptimizer(double learning_rate,
                            double initial_accumulator_value = kDefaultAdagradInitialAccumulator);

 protected:
  StatusOr<Output> ApplyDense(const Scope& scope, const Output& grad, const Output& var) override;
  StatusOr<Output> ApplySparse(const Scope& scope, const IndexedSlices& grad,
                               const Output& var) override;

 private:
  double learning_rate_;
  double initial_accumulator_value_;
};

// FTRL-proximal (TensorFlow's FtrlOptimizer, ApplyFtrl): per-coordinate rates from
// the accumulated squared gradients, with L1 and L2 shrinkage (l1 > 0 makes weights
// exactly 0). Slots "Ftrl" (the accumulator, initially initial_accumulator_value > 0)
// and "Ftrl_1" (the linear term, initially 0); sparse gradients update only their
// rows (SparseApplyFtrl). Graph training only: the parameter shards do not know it.
class FtrlOptimizer : public Optimizer {
 public:
  explicit FtrlOptimizer(double learning_rate, double learning_rate_power = -0.5,
                         double initial_accumulator_value = 0.1, double l1 = 0.0,
                         double l2 = 0.0);

 protected:
  StatusOr<Output> ApplyDense(const Scope& scope, const Output& grad, const Output& var) override;
  StatusOr<Output> ApplySparse(const Scope& scope, const IndexedSlices& grad,
                               const Output& var) override;

 private:
  struct Slots {
    Output accum;
    Output linear;
  };
  StatusOr<Slots> GetSlots(const Scope& scope, const Output& var);

  double learning_rate_;
  double learning_rate_power_;
  double initial_accumulator_value_;
  double l1_;
  double l2_;
};

// "sgd", "momentum", "adam" or "adagrad" (OptimizerKindName) with the given learning
// rate and the default hyper-parameters of kernels/optimizer_rules.h, the ones the
// parameter shards use. InvalidArgument naming an unknown optimizer (listing the
// valid names) or a learning rate that is not a positive finite number.
StatusOr<std::unique_ptr<Optimizer>> MakeOptimizer(const std::string& name, double learning_rate);
StatusOr<std::unique_ptr<Optimizer>> MakeOptimizer(OptimizerKind kind, double learning_rate);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_OPTIMIZERS_OPTIMIZER_H_
