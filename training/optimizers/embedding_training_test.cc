// An embedding table partitioned over two ps tasks, trained from a worker of a local
// cluster as TensorFlow 1.x does it: each step reads only the rows its batch needs
// from the ps tasks and sends back only those rows' gradients (measured in
// RunMetadata::transfers), and trains exactly as the same graph on one device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "actors/cluster/local_cluster.h"
#include "actors/cluster/session_factory.h"
#include "graph/ops.h"
#include "graph/sparse_ops.h"
#include "kernels/direct_session.h"
#include "training/optimizers/optimizer.h"
#include "training/optimizers/partitioned_variable.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

constexpr int64_t kRows = 100000;
constexpr int64_t kDim = 16;
constexpr int64_t kBatch = 64;
constexpr int kSteps = 5;
constexpr char kWorker[] = "/job:worker/task:0";

// pred = lookup(ids) . w; loss = mean((pred - y)^2); Adagrad.
void BuildModel(const Scope& root, const std::string& strategy) {
  const Scope worker = root.WithDevice(kWorker);
  auto table = CreatePartitionedVariable(
      root, "emb", Shape{kRows, kDim},
      RandomUniform(worker, Shape{kRows, kDim}, DType::kFloat32, 3, -0.1, 0.1), 2,
      [](int k) { return "/job:ps/task:" + std::to_string(k); });
  ASSERT_TRUE(table.ok()) << table.status();
  auto w = CreateVariable(root.WithDevice("/job:ps/task:0"), "w",
                          Tensor::FromVector<float>(std::vector<float>(kDim, 0.5f), {kDim, 1}));
  ASSERT_TRUE(w.ok()) << w.status();
  const Output ids = Placeholder(worker.WithOpName("ids"), DType::kInt32, Shape{kBatch});
  const Output y = Placeholder(worker.WithOpName("y"), DType::kFloat32, Shape{kBatch, 1});
  const Output pred = MatMul(worker, EmbeddingLookup(worker, table->parts, ids, strategy), *w);
  const Output loss = Mean(worker.WithOpName("loss"), Square(worker, Sub(worker, pred, y)));
  AdagradOptimizer adagrad(0.5);
  auto train = adagrad.Minimize(worker.WithOpName("train"), loss);
  ASSERT_TRUE(train.ok()) << train.status();
  GlobalVariablesInitializer(worker.WithOpName("init"));
  ASSERT_TRUE(root.ok()) << root.status();
}

// Zipf-like ids: small ids are frequent.
FeedList Batch(int step) {
  std::mt19937 rng(100 + step);
  std::vector<int32_t> ids;
  std::vector<float> y;
  for (int64_t i = 0; i < kBatch; ++i) {
    const double u = std::uniform_real_distribution<double>(0, 1)(rng);
    ids.push_back(static_cast<int32_t>(std::pow(static_cast<double>(kRows), u)) - 1);
    y.push_back(static_cast<float>(ids.back() % 7) - 3.0f);
  }
  return {{"ids", Tensor::FromVector(ids)}, {"y", Tensor::FromVector(y, Shape{kBatch, 1})}};
}

struct Trained {
  std::vector<float> losses;
  int64_t last_step_bytes = 0;  // moved between devices by the last train step
};

Trained Train(Session* session) {
  Trained trained;
  EXPECT_TRUE(session->Run({}, {}, {"init"}, nullptr).ok());
  for (int step = 0; step < kSteps; ++step) {
    RunMetadata meta;
    std::vector<Tensor> out;
    const Status s = session->Run(RunOptions(), Batch(step), {"loss"}, {"train"}, &out, &meta);
    EXPECT_TRUE(s.ok()) << "step " << step << ": " << s;
    if (!s.ok()) return trained;
    trained.losses.push_back(out[0].data<float>()[0]);
    trained.last_step_bytes = 0;
    for (const CrossDeviceTransfer& t : meta.transfers) trained.last_step_bytes += t.bytes;
  }
  return trained;
}

class EmbeddingTrainingTest : public ::testing::TestWithParam<std::string> {};

TEST_P(EmbeddingTrainingTest, AStepMovesOnlyTheBatchRowsAndTrainsAsOnOneDevice) {
  Scope root = Scope::NewRootScope();
  BuildModel(root, GetParam());
  auto cluster = LocalCluster::Start({{"ps", 2}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  SessionOptions options;
  options.target = *(*cluster)->Target("worker", 0);
  auto session = NewSession(root.graph(), options);
  ASSERT_TRUE(session.ok()) << session.status();
  const Trained on_cluster = Train(session->get());

  auto direct = NewDirectSession(root.graph());
  ASSERT_TRUE(direct.ok()) << direct.status();
  const Trained on_one_device = Train(direct->get());

  ASSERT_EQ(on_cluster.losses.size(), static_cast<size_t>(kSteps));
  ASSERT_EQ(on_one_device.losses.size(), static_cast<size_t>(kSteps));
  for (int i = 0; i < kSteps; ++i) {
    EXPECT_FLOAT_EQ(on_cluster.losses[i], on_one_device.losses[i]) << "step " << i;
  }
  EXPECT_LT(on_cluster.losses.back(), on_cluster.losses.front()) << "the model did not learn";
  // Pulling and pushing the table whole would move 2 * 6.4 MB a step.
  const int64_t dense_bytes = 2 * kRows * kDim * 4;
  std::cout << "[ measured ] " << GetParam() << ": " << on_cluster.last_step_bytes
            << " bytes moved by a step, " << dense_bytes << " dense ("
            << dense_bytes / std::max<int64_t>(1, on_cluster.last_step_bytes) << "x fewer)\n";
  EXPECT_GT(on_cluster.last_step_bytes, 0);
  EXPECT_LT(on_cluster.last_step_bytes * 100, dense_bytes);
}

INSTANTIATE_TEST_SUITE_P(Strategies, EmbeddingTrainingTest, ::testing::Values("mod", "div"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace actorflow
