// In-graph replication (TensorFlow 1.x's multi-tower training): one client builds one
// graph in which the DNN classifier's model is replicated into towers, one per worker
// device or task, that share one set of variables on the parameter-server device(s).
// Each step feeds every tower its slice of the batch; each tower computes its loss
// and gradients; the towers' gradients are averaged in the graph, beside the
// variables; one optimizer update applies the average. A single Session::Run of
// "train" runs the whole step; the runtime's placement and partitioning do the rest
// (Send/Recv between the ps and the towers).
//
//   InGraphReplication replication;
//   replication.ps_devices = {"/job:ps/task:0"};
//   replication.tower_devices = {"/job:worker/task:0", "/job:worker/task:1"};
//   AF_ASSIGN_OR_RETURN(auto adam, MakeOptimizer("adam", 0.01));
//   AF_ASSIGN_OR_RETURN(InGraphModel model,
//                       BuildInGraphModel(root, spec, /*seed=*/1, replication, adam.get()));
//   AF_ASSIGN_OR_RETURN(FeedList feeds, SplitBatchOverTowers(model, features, labels));
//   session->Run(feeds, {"loss"}, {"train"}, &out);   // one replicated step
//
// The model is DNNClassifier's (training/estimators/dnn_model.h): the same variable names
// ("dnn/hiddenlayer_<i>/kernel", ...), the same seeded initial values, the same
// optimizer slots and global step, so checkpoints are interchangeable with it.
//
// Nodes, besides the variables:
//   "tower_<i>/features"  Placeholder float32 [?, F]   on tower_devices[i]
//   "tower_<i>/labels"    Placeholder int32 [?]
//   "tower_<i>/weight"    Placeholder float32 []: N * rows_i / rows (1 for an even split)
//   "tower_<i>/example_loss" float32 [?], "tower_<i>/class_ids" int64 [?],
//   "tower_<i>/probabilities" float32 [?, C], "tower_<i>/loss" float32 [] (its mean)
//   "average_gradients/..." per variable: (sum_i weight_i * grad_i) * (1/N), colocated
//                         with the variable
//   "loss"   float32 []: the whole batch's mean loss, sum_i weight_i * loss_i / N
//   "train"  the step: one ApplyGradients of the averaged gradients, global_step += 1
//   "init"   initializes every variable
// With the weights, the averaged gradient is the gradient of the whole batch's mean
// loss even when the batch does not split evenly: a replicated step computes what a
// single-device step of DNNClassifier computes (up to float rounding).
//
// Thread safety: as Scope (one building thread per graph); SplitBatchOverTowers is
// pure.
#ifndef ACTORFLOW_TRAINING_DISTRIBUTED_IN_GRAPH_REPLICATION_H_
#define ACTORFLOW_TRAINING_DISTRIBUTED_IN_GRAPH_REPLICATION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "graph/scope.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "kernels/session.h"
#include "training/estimators/model_spec.h"
#include "training/optimizers/optimizer.h"

namespace actorflow {

inline constexpr char kInGraphLoss[] = "loss";
inline constexpr char kInGraphTrain[] = "train";
inline constexpr char kInGraphInit[] = "init";

struct InGraphReplication {
  // Where the variables live (device specs: "/job:ps/task:0", "/cpu:0"). Each
  // variable goes to one of them, largest first to the one holding the fewest bytes
  // (placement/ps_strategy.h's greedy strategy); the global step to the first. At
  // least one.
  std::vector<std::string> ps_devices;
  // One tower per entry ("/job:worker/task:1", "/cpu:1"). At least one.
  std::vector<std::string> tower_devices;
};

struct InGraphTower {
  std::string device;
  Output features;       // float32 [?, F]
  Output labels;         // int32 [?]
  Output weight;         // float32 []
  Output probabilities;  // float32 [?, C]
  Output class_ids;      // int64 [?]
  Output example_loss;   // float32 [?]
  Output loss;           // float32 []
};

struct InGraphModel {
  std::vector<InGraphTower> towers;
  // The trainable Variables, as DNNModel::variables, and where each lives.
  std::vector<Output> variables;
  std::vector<std::string> variable_devices;
  // Per variable: the averaged gradient [variable shape].
  std::vector<Output> averaged_gradients;
  Output global_step;  // int64 [] Variable
  Output loss;         // float32 [], "loss"
  Output train;        // "train"
  Output init;         // "init"
};

// Builds the replicated model of `spec` (weights seeded from `seed`) and its training
// step with `optimizer` into the scope's graph (see the top of this file). Errors:
// ValidateModelSpec's; InvalidArgument for no ps or tower device or an optimizer that
// is null; Gradients', the optimizer's and builder errors naming the node.
StatusOr<InGraphModel> BuildInGraphModel(const Scope& root, const DNNModelSpec& spec,
                                         uint64_t seed, const InGraphReplication& replication,
                                         Optimizer* optimizer);

// The feeds of one step: features float32 [n, F] and labels int32 [n] split into
// consecutive slices, one per tower, as even as possible (the first towers one row
// larger), with each tower's weight. When n is smaller than the number of towers, a
// tower without rows gets a copy of row 0 with weight 0 (it changes nothing).
// InvalidArgument for n == 0, or features and labels of other dtypes or shapes.
StatusOr<FeedList> SplitBatchOverTowers(const InGraphModel& model, const Tensor& features,
                                        const Tensor& labels);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DISTRIBUTED_IN_GRAPH_REPLICATION_H_
