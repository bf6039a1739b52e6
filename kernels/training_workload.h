// TrainingWorkload: what a simulated data-parallel worker computes, behind a small
// interface. The simulated cluster (actors/sim/) runs the parameter-server protocol
// between worker drivers and shard actors; the model and its data (training/) only
// answer these calls. Lives beside ParameterClient for the same reason: training/
// implements it, actors/ drives it.
//
// Thread safety: the simulator calls one workload from one thread.
#ifndef ACTORFLOW_KERNELS_TRAINING_WORKLOAD_H_
#define ACTORFLOW_KERNELS_TRAINING_WORKLOAD_H_

#include <cstdint>
#include <map>
#include <string>

#include "graph/status.h"
#include "graph/tensor.h"

namespace actorflow {

struct WorkloadGradients {
  double loss = 0.0;                       // the batch's mean loss at the parameters
  std::map<std::string, Tensor> gradients;  // one per trainable variable, same shapes
};

struct WorkloadEvaluation {
  double accuracy = 0.0;
  double loss = 0.0;
};

class TrainingWorkload {
 public:
  virtual ~TrainingWorkload() = default;

  // The seeded initial value of every trainable variable (the chief initializes the
  // parameter servers with them). The same values on every call.
  virtual StatusOr<std::map<std::string, Tensor>> InitialValues() = 0;
  // Loss and gradients of worker `worker`'s batch number `step` (0-based, the
  // worker's own count: a restarted worker asks for the batch after its last one) at
  // `parameters`. Worker i of W reads a disjoint 1/W of every epoch.
  virtual StatusOr<WorkloadGradients> ComputeGradients(
      int worker, int64_t step, const std::map<std::string, Tensor>& parameters) = 0;
  // Accuracy and loss on held-out data at `parameters`.
  virtual StatusOr<WorkloadEvaluation> Evaluate(const std::map<std::string, Tensor>& parameters) = 0;
  // Floating-point operations of one worker step (forward and backward), for the
  // simulator's compute-time model.
  virtual double FlopsPerStep() const = 0;
};

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_TRAINING_WORKLOAD_H_
