#include "tools/bench/training_models.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "graph/ops.h"
#include "graph/scope.h"
#include "training/optimizers/optimizer.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace bench {

LabelledData SyntheticData(int64_t rows, int64_t cols, int classes, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int32_t> label(0, classes - 1);
  LabelledData d;
  d.features = Tensor(DType::kFloat32, Shape{rows, cols});
  d.labels = Tensor(DType::kInt32, Shape{rows});
  float* x = d.features.data<float>();
  for (int64_t i = 0; i < rows * cols; ++i) x[i] = normal(rng);
  int32_t* y = d.labels.data<int32_t>();
  for (int64_t i = 0; i < rows; ++i) y[i] = label(rng);
  d.source = "synthetic " + std::to_string(rows) + "x" + std::to_string(cols) +
             " N(0,1), seed " + std::to_string(seed);
  return d;
}

StatusOr<LabelledData> ReadLabelledCsv(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot open " + path);
  std::string line;
  std::vector<std::vector<float>> rows;
  std::vector<int32_t> labels;
  int line_no = 0;
  size_t cols = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line_no == 1 || line.empty()) continue;  // header
    std::vector<double> values;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) {
      char* end = nullptr;
      const double v = std::strtod(cell.c_str(), &end);
      if (end == cell.c_str()) {
        return InvalidArgument(path + ":" + std::to_string(line_no) + ": '" + cell +
                               "' is not a number");
      }
      values.push_back(v);
    }
    if (values.size() < 2 || (cols != 0 && values.size() - 1 != cols)) {
      return InvalidArgument(path + ":" + std::to_string(line_no) + ": expected " +
                             std::to_string(cols + 1) + " columns, got " +
                             std::to_string(values.size()));
    }
    cols = values.size() - 1;
    rows.emplace_back(values.begin(), values.end() - 1);
    labels.push_back(static_cast<int32_t>(values.back()));
  }
  if (rows.empty()) return InvalidArgument(path + ": no data rows");
  LabelledData d;
  const int64_t n = static_cast<int64_t>(rows.size());
  d.features = Tensor(DType::kFloat32, Shape{n, static_cast<int64_t>(cols)});
  d.labels = Tensor::FromVector(labels);
  for (int64_t r = 0; r < n; ++r) {
    std::memcpy(d.features.data<float>() + r * cols, rows[r].data(), cols * sizeof(float));
  }
  d.source = path + " (" + std::to_string(n) + " rows)";
  return d;
}

void Standardize(LabelledData* data) {
  const int64_t rows = data->features.dim(0);
  const int64_t cols = data->features.dim(1);
  float* x = data->features.data<float>();
  for (int64_t c = 0; c < cols; ++c) {
    double sum = 0, sq = 0;
    for (int64_t r = 0; r < rows; ++r) sum += x[r * cols + c];
    const double mean = sum / rows;
    for (int64_t r = 0; r < rows; ++r) sq += (x[r * cols + c] - mean) * (x[r * cols + c] - mean);
    const double sd = std::sqrt(sq / rows);
    for (int64_t r = 0; r < rows; ++r) {
      x[r * cols + c] = static_cast<float>((x[r * cols + c] - mean) / (sd > 0 ? sd : 1.0));
    }
  }
}

namespace {

Tensor UniformTensor(const Shape& shape, float bound, std::mt19937* rng) {
  std::uniform_real_distribution<float> dist(-bound, bound);
  Tensor t(DType::kFloat32, shape);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.NumElements(); ++i) p[i] = dist(*rng);
  return t;
}

// Rows [begin, begin + count) of a [rows, ...] tensor, copied (done once, before timing).
Tensor Rows(const Tensor& t, int64_t begin, int64_t count) {
  const int64_t row_elems = t.NumElements() / t.dim(0);
  std::vector<int64_t> dims = t.shape().dims();
  dims[0] = count;
  Tensor out(t.dtype(), Shape(dims));
  const size_t row_bytes = static_cast<size_t>(row_elems) * DTypeSize(t.dtype());
  std::memcpy(out.raw_data(), static_cast<const char*>(t.raw_data()) + begin * row_bytes,
              count * row_bytes);
  return out;
}

}  // namespace

StatusOr<TrainingModel> BuildMlp(const std::vector<int64_t>& sizes, int batch,
                                 const LabelledData& data, double learning_rate,
                                 uint32_t seed) {
  if (sizes.size() < 2) return InvalidArgument("BuildMlp: sizes needs an input and an output");
  if (data.features.dim(1) != sizes.front() || data.features.dim(0) < batch) {
    return InvalidArgument("BuildMlp: data " + data.features.DebugString() + " does not fit " +
                           std::to_string(sizes.front()) + " inputs and batch " +
                           std::to_string(batch));
  }
  Scope root = Scope::NewRootScope();
  std::mt19937 rng(seed);
  auto x = Placeholder(root.WithOpName("x"), DType::kFloat32, Shape{-1, sizes.front()});
  auto y = Placeholder(root.WithOpName("y"), DType::kInt32, Shape{-1});
  Output h = x;
  for (size_t l = 0; l + 1 < sizes.size(); ++l) {
    const float bound = 1.0f / std::sqrt(static_cast<float>(sizes[l]));
    const std::string suffix = std::to_string(l + 1);
    AF_ASSIGN_OR_RETURN(Output w, CreateVariable(root, "w" + suffix,
                                                 UniformTensor(Shape{sizes[l], sizes[l + 1]},
                                                               bound, &rng)));
    AF_ASSIGN_OR_RETURN(Output b,
                        CreateVariable(root, "b" + suffix,
                                       UniformTensor(Shape{sizes[l + 1]}, bound, &rng)));
    h = BiasAdd(root, MatMul(root, h, w), b);  // [batch, sizes[l+1]]
    if (l + 2 < sizes.size()) h = Relu(root, h);
  }
  auto xent = SparseSoftmaxCrossEntropyWithLogits(root, h, y);
  auto loss = Mean(root.WithOpName("loss"), xent.loss);
  if (!root.ok()) return root.status();
  GradientDescentOptimizer sgd(learning_rate);
  AF_ASSIGN_OR_RETURN(Output train, sgd.Minimize(root.WithOpName("train"), loss, Output()));
  Output init = GlobalVariablesInitializer(root.WithOpName("init"));
  if (!root.ok()) return root.status();

  TrainingModel m;
  m.graph = root.graph_ptr();
  m.loss = loss.name();
  m.train = train.node->name();
  m.init = init.node->name();
  m.batch_size = batch;
  const int64_t rows = data.features.dim(0);
  for (int64_t begin = 0; begin + batch <= rows; begin += batch) {
    m.batches.push_back(
        {{"x", Rows(data.features, begin, batch)}, {"y", Rows(data.labels, begin, batch)}});
  }
  return m;
}

}  // namespace bench
}  // namespace actorflow
