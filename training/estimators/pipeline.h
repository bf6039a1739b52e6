// Pipeline parallelism (GPipe, PipeDream-flush "1F1B") for the mlp of
// model_parallel.h on the `layer` split: a batch x [B, F] is cut into M micro-batches
// on its first dimension, each flows through K stages (stage s = the consecutive
// layers that SpreadDevice puts on devices[s]; its activations cross devices through
// the runtime's Send/Recv), and the optimizer applies once per batch.
//
//   x [B, F] -> EvenSplitPart -> x_m [B_m, F] -> stage 0 .. K-1 -> logits_m [B_m, C]
//   loss = sum_m sum(cross_entropy(logits_m, labels_m)) / B   (the batch mean,
//          also when the micro-batches differ in size)
//
// The variables "dnn/hiddenlayer_<i>/{kernel,bias}", "dnn/logits/{kernel,bias}" are
// made once, with the names and seeds of the unpipelined mlp, and shared by every
// micro-batch. The backward is built explicitly per micro-batch and per stage, layer
// by layer from the stage's output (the last stage: its micro-batch loss), seeded
// with the gradient that the next stage computed for that activation: each layer's
// pre-activation gradient dz (Gradients() through the activation) and its input's
// gradient dz kernel^T, down to the stage's input. The weight gradients are split off
// (as zero-bubble schedules split the backward into input and weight gradients):
// after its last backward, each stage computes them once per batch, a kernel's as one
// product of the micro-batches' inputs and dz's concatenated, so they equal the
// unpipelined gradients up to float summation order and cost one batch-sized product
// instead of M kernel-sized micro-batch gradients and their sum. With several
// micro-batches on a CPU device, the micro-batches' products x_m kernel and
// dz_m kernel^T share the kernel packed once per step for each (PackMatMulOperand,
// graph/math_ops.h, at the step's start; stage 0's transposed packing waits for its
// first backward, where it would wait for stage 1 anyway): a GEMM with a
// few dozen rows would otherwise spend as long copying the kernel into its panels as
// multiplying.
//
// Schedules: the order of the 2M work groups (F_m: the forward of micro-batch m on a
// stage, B_m: its backward) on each device, enforced by a NoOp "barrier" per group
// that waits for every node of the group; every node of the next group on that
// device has the barrier as a control input (Consts made from literals carry no
// control inputs: they are free to run early and are not part of a group).
//   gpipe  F0 .. F(M-1), then B0 .. B(M-1).
//   1f1b   min(K-1-s, M) warm-up forwards, then one forward and one backward in
//          turn, then the remaining backwards (PipeDream-flush).
// Under both, a stage's weight-gradient group W follows its last backward.
//
// Thread safety: as Scope (one building thread per graph); the other functions are
// pure.
#ifndef ACTORFLOW_TRAINING_ESTIMATORS_PIPELINE_H_
#define ACTORFLOW_TRAINING_ESTIMATORS_PIPELINE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "graph/scope.h"
#include "graph/status.h"
#include "kernels/session.h"
#include "training/estimators/model_parallel.h"
#include "training/optimizers/optimizer.h"

namespace actorflow {

enum class PipelineSchedule { kGPipe, k1F1B };

// "gpipe", "1f1b"; InvalidArgument quoting `name` and listing them.
StatusOr<PipelineSchedule> ParsePipelineSchedule(const std::string& name);
const char* PipelineScheduleName(PipelineSchedule schedule);

// OK when a full batch of `batch` rows cuts into `micro_batches` equal micro-batches;
// otherwise InvalidArgument naming both numbers (micro_batches < 1, more
// micro-batches than rows, or a batch not divisible by them).
Status CheckPipelineBatch(int64_t batch, int64_t micro_batches);

// The rows of each micro-batch when `rows` (>= micro_batches >= 1) are cut as evenly
// as possible, the larger ones first: 10 rows into 4 -> {3, 3, 2, 2}.
std::vector<int64_t> MicroBatchSizes(int64_t rows, int64_t micro_batches);

// One work group of a stage: the forward or the backward of one micro-batch.
struct PipelineWork {
  int micro_batch = 0;
  bool backward = false;
  bool operator==(const PipelineWork& o) const {
    return micro_batch == o.micro_batch && backward == o.backward;
  }
};

// The order in which stage `stage` of `stages` runs its 2 * micro_batches groups.
std::vector<PipelineWork> PipelineOrder(PipelineSchedule schedule, int stage, int stages,
                                        int micro_batches);

struct PipelineParams {
  ModelParallelParams model;  // the mlp's hidden units, classes, activation, seed
  // The rows of a full batch (x may say ?). Only checked against micro_batches: the
  // micro-batches are cut from the fed batch's rows at run time.
  int64_t batch_rows = 0;
  int micro_batches = 1;
  PipelineSchedule schedule = PipelineSchedule::k1F1B;
  // Stage devices, in order (the layer split's devices); distinct, at least one.
  std::vector<std::string> devices;
  // When not empty, the mlp's existing Variables to train (each layer's kernel then
  // bias, input side first, as BuildMlp makes them: a classifier's model), used
  // instead of new ones; 2 per layer.
  std::vector<Output> variables;
};

struct PipelinedMlp {
  Output loss;  // float32 [], the row-weighted mean over the micro-batches; "<scope>/loss"
  // Each variable with the sum of its micro-batches' gradients: ApplyGradients' input.
  Optimizer::GradsAndVars grads_and_vars;
  std::vector<Output> variables;  // input side first
  // The devices that got a stage, in stage order (fewer than `devices` when the mlp
  // has fewer layers than devices).
  std::vector<std::string> stage_devices;
  // nodes[s][m][0]: the forward nodes of micro-batch m on stage s, nodes[s][m][1]
  // its backward nodes (names; Consts without inputs left out).
  std::vector<std::vector<std::vector<std::vector<std::string>>>> nodes;
  // weight_gradient_nodes[s]: stage s's weight-gradient group, after its last backward.
  std::vector<std::vector<std::string>> weight_gradient_nodes;
};

// Builds the pipelined mlp under `scope` ("<scope>/dnn/...", "<scope>/loss"): x
// float32 [B or ?, F], labels int32 [B or ?]. A fed batch of n rows is cut at run
// time into micro-batches of MicroBatchSizes(n, micro_batches) rows (EvenSplitPart),
// so a short last batch of an epoch runs through the same graph; the loss divides by
// n. Errors: InvalidArgument naming both numbers for micro_batches
// < 1 or > batch_rows (divisibility is the caller's to check, CheckPipelineBatch);
// for no or repeated devices, for `variables` not 2 per layer, or for the mlp
// parameters BuildMlp rejects; builder errors naming the node.
StatusOr<PipelinedMlp> BuildPipelinedMlp(const Scope& scope, const Output& x,
                                         const Output& labels, const PipelineParams& params);

// (K - 1) / (M + K - 1): the idle share of each device under GPipe or 1F1B when every
// stage's forward and backward take equal time and transfers are free.
double TheoreticalBubbleFraction(int stages, int micro_batches);

// From a traced step: for each of `devices`, the time within the step's span (the
// first start to the last end over all of them) when none of its nodes ran, divided
// by the span; the mean over the devices. InvalidArgument when step_stats has no
// node on one of the devices or the span is empty.
StatusOr<double> MeasureBubbleFraction(const std::vector<NodeExecStats>& step_stats,
                                       const std::vector<std::string>& devices);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_ESTIMATORS_PIPELINE_H_
