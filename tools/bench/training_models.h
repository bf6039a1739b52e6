// The models and data of training_bench: a fully connected ReLU network trained
// with sparse softmax cross-entropy and plain SGD, built with the project's own API
// (graph/ops.h, training/optimizers/variables.h, GradientDescentOptimizer::Minimize), and the
// batches it is fed, in the same shapes as the external PyTorch peer script
// torch_mlp_bench.py (see training_bench.cc) so that the two do the same work:
//   x [batch, sizes[0]] float32, y [batch] int32 labels in [0, sizes.back()).
//
// Initial weights follow torch.nn.Linear's default (uniform in +-1/sqrt(fan_in) for
// weights and biases), drawn from std::mt19937 with the given seed.
#ifndef ACTORFLOW_TOOLS_BENCH_TRAINING_MODELS_H_
#define ACTORFLOW_TOOLS_BENCH_TRAINING_MODELS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "kernels/session.h"

namespace actorflow {
namespace bench {

// A labelled data set: features [rows, cols] float32, labels [rows] int32.
struct LabelledData {
  Tensor features;
  Tensor labels;
  std::string source;  // where it came from, for the report
};

// rows x cols standard-normal features and uniform labels in [0, classes), from
// std::mt19937(seed).
LabelledData SyntheticData(int64_t rows, int64_t cols, int classes, uint32_t seed);

// Reads a CSV with one header line, numeric feature columns and the integer label in
// the last column (examples/data/iris_training.csv). NotFound when the file is
// missing; InvalidArgument naming file:line for a malformed line.
StatusOr<LabelledData> ReadLabelledCsv(const std::string& path);

// Each feature column shifted to mean 0 and scaled to (population) std 1, in place.
void Standardize(LabelledData* data);

struct TrainingModel {
  std::shared_ptr<Graph> graph;
  std::string loss;   // float32 scalar: mean cross-entropy of the fed batch
  std::string train;  // the train op: one SGD step when run as a target
  std::string init;   // initializes every variable
  // Consecutive batches of the data (a trailing partial batch dropped), each fed as
  // {"x": [batch, in], "y": [batch]}.
  std::vector<FeedList> batches;
  int batch_size = 0;
};

// sizes = {in, hidden..., classes}: Linear layers with ReLU between them.
// Precondition: data.features is [rows, sizes[0]] with rows >= batch.
StatusOr<TrainingModel> BuildMlp(const std::vector<int64_t>& sizes, int batch,
                                 const LabelledData& data, double learning_rate,
                                 uint32_t seed);

}  // namespace bench
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_BENCH_TRAINING_MODELS_H_
