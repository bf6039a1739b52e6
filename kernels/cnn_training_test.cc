// End to end through a DirectSession: a tiny CNN with batch normalization and dropout
// (conv -> batch norm -> relu -> dropout -> global average pool -> dense) learns to
// tell horizontal from vertical stripes with plain gradient descent; the train op also
// updates the moving averages (TF1's UPDATE_OPS pattern), and the inference path of
// the same variables (moving statistics, no dropout) classifies the images.
#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <string>
#include <vector>

#include "graph/gradients.h"
#include "graph/ops.h"
#include "graph/scope.h"
#include "gtest/gtest.h"
#include "kernels/direct_session.h"

namespace actorflow {
namespace {

constexpr int64_t kBatch = 16, kSide = 6, kFilters = 4;

// kBatch images [kSide, kSide, 1]: even ones with horizontal stripes (label 0), odd
// ones with vertical stripes (label 1), each with a random phase and noise.
void MakeBatch(std::mt19937_64* rng, Tensor* images, Tensor* labels) {
  std::uniform_real_distribution<float> noise(-0.3f, 0.3f);
  std::vector<float> pixels;
  std::vector<int32_t> classes;
  for (int64_t n = 0; n < kBatch; ++n) {
    const int label = static_cast<int>(n % 2);
    const int phase = static_cast<int>((*rng)() % 2);
    for (int64_t y = 0; y < kSide; ++y) {
      for (int64_t x = 0; x < kSide; ++x) {
        const int64_t along = label == 0 ? y : x;
        pixels.push_back(((along + phase) % 2 == 0 ? 1.0f : 0.0f) + noise(*rng));
      }
    }
    classes.push_back(label);
  }
  *images = Tensor::FromVector(pixels, Shape{kBatch, kSide, kSide, 1});
  *labels = Tensor::FromVector(classes);
}

Tensor RandomValues(std::mt19937_64* rng, const Shape& shape, float stddev) {
  std::normal_distribution<float> normal(0.0f, stddev);
  std::vector<float> v(shape.num_elements());
  for (float& e : v) e = normal(*rng);
  return Tensor::FromVector(v, shape);
}

struct Model {
  Output logits;
  Output loss;
};

TEST(CnnTrainingTest, ACnnWithBatchNormAndDropoutLearnsAndUpdatesItsMovingAverages) {
  std::mt19937_64 rng(2024);
  Scope root = Scope::NewRootScope();
  const Output images = Placeholder(root.WithOpName("images"), DType::kFloat32,
                                    Shape{-1, kSide, kSide, 1});
  const Output labels = Placeholder(root.WithOpName("labels"), DType::kInt32, Shape{-1});
  auto var = [&root](const std::string& name, const Tensor& init, std::vector<Output>* inits) {
    const Output v = Variable(root.WithOpName(name), init.shape(), DType::kFloat32);
    inits->push_back(Assign(root.WithOpName(name + "/init"), v, init));
    return v;
  };
  std::vector<Output> inits;
  const Output filter = var("filter", RandomValues(&rng, {3, 3, 1, kFilters}, 0.5f), &inits);
  const Output gamma = var("gamma", Tensor::FromVector<float>({1, 1, 1, 1}), &inits);
  const Output beta = var("beta", Tensor::FromVector<float>({0, 0, 0, 0}), &inits);
  const Output moving_mean = var("moving_mean", Tensor::FromVector<float>({0, 0, 0, 0}), &inits);
  const Output moving_variance =
      var("moving_variance", Tensor::FromVector<float>({1, 1, 1, 1}), &inits);
  const Output dense = var("dense", RandomValues(&rng, {kFilters, 2}, 0.5f), &inits);
  const Output bias = var("bias", Tensor::FromVector<float>({0, 0}), &inits);
  NoOp(root.WithOpName("init").WithControlDependencies(inits));

  auto model = [&](const Scope& s, bool training) {
    const Output conv = Conv2D(s, images, filter, {1, 1, 1, 1}, "SAME");
    const FusedBatchNormResult bn =
        FusedBatchNorm(s.WithOpName("bn"), conv, gamma, beta, moving_mean, moving_variance,
                       0.001, training);
    const Output hidden = Dropout(s, Relu(s, bn.y), 0.9, /*seed=*/5, training).output;
    const Output logits = BiasAdd(s, MatMul(s, GlobalAvgPool(s, hidden), dense), bias);
    const Output loss = Mean(s, SparseSoftmaxCrossEntropyWithLogits(s, logits, labels).loss);
    return std::make_pair(Model{logits, loss}, bn);
  };
  const auto [train, bn] = model(root.NewSubScope("train"), true);
  const auto [eval, eval_bn] = model(root.NewSubScope("eval"), false);
  (void)eval_bn;

  const std::vector<Output> params = {filter, gamma, beta, dense, bias};
  auto grads = Gradients(root, {train.loss}, params);
  ASSERT_TRUE(grads.ok()) << grads.status();
  std::vector<Output> updates;
  for (size_t i = 0; i < params.size(); ++i) {
    updates.push_back(ApplyGradientDescent(root, params[i], 0.5f, (*grads)[i]));
  }
  // TF1's UPDATE_OPS: the moving averages move with every training step.
  updates.push_back(AssignMovingAverage(root, moving_mean, bn.batch_mean, 0.9));
  updates.push_back(AssignMovingAverage(root, moving_variance, bn.batch_variance, 0.9));
  NoOp(root.WithOpName("train_op").WithControlDependencies(updates));
  ASSERT_TRUE(root.ok()) << root.status();

  auto session = NewDirectSession(root.graph()).value();
  ASSERT_TRUE(session->Run({}, {}, {"init"}, nullptr).ok());
  std::vector<double> losses;
  for (int step = 0; step < 150; ++step) {
    Tensor x, y;
    MakeBatch(&rng, &x, &y);
    std::vector<Tensor> out;
    const Status s = session->Run({{"images", x}, {"labels", y}}, {train.loss.name()},
                                  {"train_op"}, &out);
    ASSERT_TRUE(s.ok()) << s;
    losses.push_back(out[0].data<float>()[0]);
    ASSERT_TRUE(std::isfinite(losses.back())) << "step " << step;
  }
  auto average = [&losses](size_t from, size_t count) {
    double sum = 0;
    for (size_t i = from; i < from + count; ++i) sum += losses[i];
    return sum / count;
  };
  const double first = average(0, 10), last = average(losses.size() - 10, 10);
  EXPECT_LT(last, 0.5 * first) << "first 10 steps " << first << ", last 10 steps " << last;

  // The moving averages left their initial values and the inference path uses them.
  std::vector<Tensor> stats;
  ASSERT_TRUE(session->Run({}, {"moving_mean", "moving_variance"}, {}, &stats).ok());
  for (int64_t c = 0; c < kFilters; ++c) {
    EXPECT_NE(stats[0].data<float>()[c], 0.0f) << c;
    EXPECT_NE(stats[1].data<float>()[c], 1.0f) << c;
    EXPECT_GT(stats[1].data<float>()[c], 0.0f) << c;
  }
  Tensor x, y;
  MakeBatch(&rng, &x, &y);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({{"images", x}, {"labels", y}}, {eval.logits.name()}, {}, &out).ok());
  int correct = 0;
  for (int64_t n = 0; n < kBatch; ++n) {
    const float* row = out[0].data<float>() + 2 * n;
    correct += (row[1] > row[0] ? 1 : 0) == y.data<int32_t>()[n];
  }
  EXPECT_GE(correct, kBatch - 2) << "inference path: " << correct << " of " << kBatch;
}

}  // namespace
}  // namespace actorflow
