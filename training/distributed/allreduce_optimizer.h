// Collective data parallelism without parameter servers (Horovod's
// DistributedOptimizer, TF's MultiWorkerMirroredStrategy): every worker holds a
// replica of the variables on its own device, computes its batch's gradients, and
// averages them with every other worker's by all-reduce (graph/collective_ops.h)
// before its wrapped optimizer applies them. Replicas that start equal (see
// BroadcastGlobalVariables) stay bit-identical, since every member gets the same
// averaged bits and runs the same update.
//
// Gradients travel in buckets (PyTorch DDP's): gradients are taken in reverse
// variable order (the last layer's come first out of backprop), flattened and
// concatenated until a bucket holds `bucket_bytes`; each bucket is one all-reduce,
// which starts as soon as its own gradients exist, while the backward pass goes on
// for the earlier layers. The updates still wait for every averaged gradient (the
// wrapped optimizer's gate: every read of a variable in the step comes before any
// update), so the step ends when its last bucket does.
//
//   AllReduceOptions options;
//   options.group = {"gradients", {"/job:worker/replica:0/task:0/device:CPU:0",
//                                  "/job:worker/replica:0/task:1/device:CPU:0"}};
//   AllReduceOptimizer opt(std::make_unique<GradientDescentOptimizer>(0.1), options);
//   AF_ASSIGN_OR_RETURN(Output train, opt.Minimize(scope, loss, global_step));
//   AF_ASSIGN_OR_RETURN(Output sync,
//                       BroadcastGlobalVariables(scope.WithOpName("sync"), options.group));
//   // every worker: run "init", then "sync" (all take the chief's values), then train
//
// Every worker builds the same model in the same order (the buckets and their
// instance keys follow the variable order), each on its own member device.
#ifndef ACTORFLOW_TRAINING_DISTRIBUTED_ALLREDUCE_OPTIMIZER_H_
#define ACTORFLOW_TRAINING_DISTRIBUTED_ALLREDUCE_OPTIMIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/collective_ops.h"
#include "graph/scope.h"
#include "graph/status.h"
#include "training/optimizers/optimizer.h"

namespace actorflow {

struct AllReduceOptions {
  CollectiveGroup group;
  // A bucket closes once it holds at least this many bytes (PyTorch DDP's 25 MiB);
  // 0 = one bucket per gradient.
  int64_t bucket_bytes = int64_t{25} << 20;
  std::string algorithm = "auto";  // CollectiveAllReduce's
  // Bucket k's all-reduce has instance key first_instance_key + k.
  int64_t first_instance_key = 1000;
};

class AllReduceOptimizer {
 public:
  AllReduceOptimizer(std::unique_ptr<Optimizer> optimizer, AllReduceOptions options);

  // The wrapped optimizer's gradients of `loss`, each replaced by its mean over the
  // group. Sparse gradients are made dense first. InvalidArgument for an empty group
  // or a negative bucket size; ComputeGradients' errors.
  StatusOr<Optimizer::GradientsAndVars> ComputeGradients(const Scope& scope, Output loss,
                                                         std::vector<Output> var_list = {});
  // ComputeGradients, then the wrapped optimizer's ApplyGradients: the train op.
  StatusOr<Output> Minimize(const Scope& scope, Output loss, Output global_step,
                            std::vector<Output> var_list = {});

  // The variables of each bucket of the last ComputeGradients, in bucket order.
  const std::vector<std::vector<std::string>>& buckets() const { return buckets_; }
  Optimizer& optimizer() { return *optimizer_; }

 private:
  std::unique_ptr<Optimizer> optimizer_;
  AllReduceOptions options_;
  std::vector<std::vector<std::string>> buckets_;
};

// One op (named by `scope`, e.g. WithOpName("sync")) that sets every global variable of the scope's graph (trainable or not, the
// global step and optimizer slots included) to its value on the member of rank
// `root_rank` (Horovod's broadcast_global_variables). Run it once on every worker,
// after the initializers: replicas then start bit-identical. Instance keys
// first_instance_key, +1, ... follow the variables' order in the graph.
StatusOr<Output> BroadcastGlobalVariables(const Scope& scope, const CollectiveGroup& group,
                                          int64_t root_rank = 0, int64_t first_instance_key = 1);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DISTRIBUTED_ALLREDUCE_OPTIMIZER_H_
