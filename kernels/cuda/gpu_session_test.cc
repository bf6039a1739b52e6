// The GPU device in the actor runtime, in a binary that links the CUDA kernels
// (--config=cuda). On a machine without a GPU the runtime finds zero GPU devices and
// the guide's example runs through soft placement: pi on the CPU instead of /gpu:0.
// With a GPU, pi runs there, and training on the GPU matches training on the CPU, as
// do a convolutional net's gradients (also through batch normalization and dropout);
// those cases are skipped, with the driver's answer, where there is no GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "actors/runtime/local_session.h"
#include "graph/gradients.h"
#include "graph/ops.h"
#include "graph/scope.h"
#include "kernels/gpu_runtime.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

std::string Device(const std::string& type, int i) {
  return std::string(kLocalTask) + "/device:" + type + ":" + std::to_string(i);
}

std::unique_ptr<ActorSession> MakeSession(const Graph* graph, int gpus, bool soft) {
  SessionOptions options;
  options.device_count["CPU"] = 1;
  options.device_count["GPU"] = gpus;
  options.allow_soft_placement = soft;
  auto session = NewActorSession(graph, options);
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? std::move(session).value() : nullptr;
}

// The line of ExplainPlacement() that describes node `name`.
std::string LineOf(const std::string& explained, const std::string& name) {
  size_t start = 0;
  while (start < explained.size()) {
    size_t end = explained.find('\n', start);
    if (end == std::string::npos) end = explained.size();
    std::string line = explained.substr(start, end - start);
    if (line.compare(0, name.size() + 2, name + " (") == 0) return line;
    start = end + 1;
  }
  return "";
}

TEST(GpuSessionTest, TheRuntimeIsLinkedAndSaysWhatItFound) {
  ASSERT_NE(GetGpuRuntime(), nullptr);
  if (GpuDeviceCount() == 0) {
    EXPECT_THAT(DescribeGpus(), HasSubstr("no GPU")) << DescribeGpus();
  } else {
    EXPECT_THAT(DescribeGpus(), HasSubstr("GPU(s)")) << DescribeGpus();
  }
}

TEST(GpuSessionTest, TheSessionHasOneGpuDevicePerGpuFoundUpToTheRequest) {
  Scope root = Scope::NewRootScope();
  Const(root.WithOpName("a"), 1.0f);
  auto session = MakeSession(root.graph(), 1, false);
  ASSERT_NE(session, nullptr);
  std::vector<std::string> want = {Device("CPU", 0)};
  if (GpuDeviceCount() > 0) want.push_back(Device("GPU", 0));
  EXPECT_EQ(session->DeviceNames(), want);
  auto none = MakeSession(root.graph(), 0, false);
  ASSERT_NE(none, nullptr);
  EXPECT_EQ(none->DeviceNames(), std::vector<std::string>{Device("CPU", 0)});
}

TEST(GpuSessionTest, GuideExampleRunsWithPiOnTheGpuOrSoftPlacedAndAAndBOnTheCpu) {
  Scope root = Scope::NewRootScope();
  Scope gpu = root.WithDevice("/gpu:0");
  Scope cpu = root.WithDevice("/cpu:0");
  auto pi = Variable(gpu.WithOpName("pi"), Shape{}, DType::kFloat32);
  Assign(gpu.WithOpName("pi_init"), pi, 3.14159f);
  auto a = Const(cpu.WithOpName("a"), 2.0f);
  auto b = Const(cpu.WithOpName("b"), 3.0f);
  Mul(cpu.WithOpName("c"), a, b);
  Mul(root.WithOpName("pi_c"), pi, Output(root.graph()->FindNode("c")));
  ASSERT_TRUE(root.ok()) << root.status();

  auto session = MakeSession(root.graph(), 1, /*soft=*/true);
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {"pi_init"}, nullptr).ok());
  Status s = session->Run({}, {"c", "pi_c", "pi"}, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  for (const Tensor& t : out) EXPECT_FALSE(t.IsOnDevice());
  EXPECT_EQ(out[0].data<float>()[0], 6.0f);
  EXPECT_FLOAT_EQ(out[1].data<float>()[0], 3.14159f * 6.0f);
  EXPECT_FLOAT_EQ(out[2].data<float>()[0], 3.14159f);

  auto explained = session->ExplainPlacement();
  ASSERT_TRUE(explained.ok()) << explained.status();
  EXPECT_THAT(LineOf(*explained, "a"), HasSubstr(Device("CPU", 0))) << *explained;
  EXPECT_THAT(LineOf(*explained, "b"), HasSubstr(Device("CPU", 0))) << *explained;
  if (GpuDeviceCount() == 0) {
    EXPECT_THAT(LineOf(*explained, "pi"), HasSubstr(Device("CPU", 0))) << *explained;
    EXPECT_THAT(LineOf(*explained, "pi"), HasSubstr("soft placement")) << *explained;
  } else {
    EXPECT_THAT(LineOf(*explained, "pi"), HasSubstr(Device("GPU", 0))) << *explained;
    EXPECT_THAT(LineOf(*explained, "pi"), HasSubstr("requested /gpu:0")) << *explained;
  }
}

TEST(GpuSessionTest, WithoutAGpuARequestForOneFailsStrictlyListingTheDevices) {
  if (GpuDeviceCount() > 0) GTEST_SKIP() << "a GPU is present: " << DescribeGpus();
  Scope root = Scope::NewRootScope();
  Const(root.WithDevice("/gpu:0").WithOpName("x"), 1.0f);
  auto session = MakeSession(root.graph(), 1, /*soft=*/false);
  ASSERT_NE(session, nullptr);
  Status s = session->Run({}, {"x"}, {}, nullptr);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("/gpu:0")) << s;
  EXPECT_THAT(s.message(), HasSubstr(Device("CPU", 0))) << s;
}

// A two-layer classifier on `device` ("" = the session's default), trained with
// each optimizer for a few steps; returns the final weights and loss.
struct TrainResult {
  Status status;
  std::vector<float> w1;
  float loss = 0;
};

TrainResult Train(const std::string& device, int gpus, const std::string& optimizer) {
  TrainResult result;
  Scope root = Scope::NewRootScope();
  Scope dev = device.empty() ? root : root.WithDevice(device);
  auto x = Placeholder(root.WithOpName("x"), DType::kFloat32, Shape{8, 4});
  auto labels = Placeholder(root.WithOpName("labels"), DType::kInt32, Shape{8});
  auto w1 = Variable(dev.WithOpName("w1"), Shape{4, 6}, DType::kFloat32);
  auto b1 = Variable(dev.WithOpName("b1"), Shape{6}, DType::kFloat32);
  auto w2 = Variable(dev.WithOpName("w2"), Shape{6, 3}, DType::kFloat32);
  std::vector<float> w1_init(24), w2_init(18);
  for (int i = 0; i < 24; ++i) w1_init[i] = 0.1f * static_cast<float>((i * 7) % 11) - 0.5f;
  for (int i = 0; i < 18; ++i) w2_init[i] = 0.1f * static_cast<float>((i * 5) % 9) - 0.4f;
  std::vector<Output> inits = {
      Assign(dev.WithOpName("w1_init"), w1, Tensor::FromVector(w1_init, Shape{4, 6})),
      Assign(dev.WithOpName("b1_init"), b1, Tensor::FromVector(std::vector<float>(6, 0.1f))),
      Assign(dev.WithOpName("w2_init"), w2, Tensor::FromVector(w2_init, Shape{6, 3}))};
  auto hidden = Relu(dev, BiasAdd(dev, MatMul(dev, x, w1), b1));
  auto logits = MatMul(dev, hidden, w2);
  auto loss = Mean(dev.WithOpName("loss"), SparseSoftmaxCrossEntropyWithLogits(dev, logits, labels).loss);
  auto grads = Gradients(dev, {loss}, {w1, b1, w2});
  if (!grads.ok()) return {grads.status()};
  std::vector<Output> vars = {w1, b1, w2};
  std::vector<Output> updates;
  for (size_t i = 0; i < vars.size(); ++i) {
    const Shape shape = i == 0 ? Shape{4, 6} : i == 1 ? Shape{6} : Shape{6, 3};
    auto slot = [&](const std::string& name, float value) {
      auto v = Variable(dev.WithOpName(name + std::to_string(i)), shape, DType::kFloat32);
      inits.push_back(Assign(dev, v, Fill(dev, shape, value)));
      return v;
    };
    const Output g = (*grads)[i];
    if (optimizer == "sgd") {
      updates.push_back(ApplyGradientDescent(dev, vars[i], 0.5f, g));
    } else if (optimizer == "momentum") {
      updates.push_back(ApplyMomentum(dev, vars[i], slot("accum", 0), 0.1f, g, 0.9f, true));
    } else if (optimizer == "adam") {
      updates.push_back(ApplyAdam(dev, vars[i], slot("m", 0), slot("v", 0), 0.9f, 0.999f, 0.05f,
                                  0.9f, 0.999f, 1e-7f, g));
    } else {
      updates.push_back(ApplyAdagrad(dev, vars[i], slot("accum", 0.1f), 0.2f, g));
    }
  }
  NoOp(root.WithOpName("init").WithControlDependencies(inits));
  NoOp(root.WithOpName("train").WithControlDependencies(updates));
  if (!root.ok()) return {root.status()};

  auto session = MakeSession(root.graph(), gpus, /*soft=*/true);
  if (session == nullptr) return {Internal("no session")};
  std::vector<float> xs(32);
  for (int i = 0; i < 32; ++i) xs[i] = 0.25f * static_cast<float>((i * 3) % 8) - 1.0f;
  const FeedList feeds = {{"x", Tensor::FromVector(xs, Shape{8, 4})},
                          {"labels", Tensor::FromVector<int32_t>({0, 1, 2, 0, 1, 2, 0, 1})}};
  result.status = session->Run({}, {}, {"init"}, nullptr);
  for (int step = 0; result.status.ok() && step < 5; ++step) {
    result.status = session->Run(feeds, {}, {"train"}, nullptr);
  }
  std::vector<Tensor> out;
  if (result.status.ok()) result.status = session->Run(feeds, {"w1", "loss"}, {}, &out);
  if (!result.status.ok()) return result;
  result.w1.assign(out[0].data<float>(), out[0].data<float>() + out[0].NumElements());
  result.loss = out[1].data<float>()[0];
  return result;
}

class GpuTrainingTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuTrainingTest, TrainingOnTheGpuMatchesTrainingOnTheCpu) {
  if (GpuDeviceCount() == 0) GTEST_SKIP() << DescribeGpus();
  TrainResult cpu = Train("/cpu:0", 0, GetParam());
  ASSERT_TRUE(cpu.status.ok()) << cpu.status;
  for (const std::string device : {"/gpu:0", ""}) {  // requested, and by default
    TrainResult gpu = Train(device, 1, GetParam());
    ASSERT_TRUE(gpu.status.ok()) << gpu.status;
    EXPECT_NEAR(gpu.loss, cpu.loss, 1e-4) << device;
    ASSERT_EQ(gpu.w1.size(), cpu.w1.size());
    for (size_t i = 0; i < cpu.w1.size(); ++i) {
      EXPECT_NEAR(gpu.w1[i], cpu.w1[i], 1e-4) << device << " w1[" << i << "]";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Optimizers, GpuTrainingTest,
                         ::testing::Values("sgd", "momentum", "adam", "adagrad"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// The gradients of a small convolutional net on `device`, for inputs whose batch is
// unknown when the graph is built: the size inputs of Conv2DBackpropInput and
// AvgPoolGrad are then computed at run time (Shape has no GPU kernel: it runs on the
// CPU) and reach the GPU kernels in device memory. Fetches dx, dw and the placement.
struct ConvGradients {
  Status status;
  std::vector<Tensor> dx_dw;
  std::string placement;
};

// Which part of the net the gradients flow through, so that a mismatch names its op.
enum class ConvNetPart {
  kWhole, kWholeStaticBatch, kConvOnly, kReluMaxPoolOnly, kAvgPoolOnly, kBatchNormDropout
};

ConvGradients ConvNetGradients(const std::string& device, int gpus,
                               ConvNetPart part = ConvNetPart::kWhole) {
  Scope root = Scope::NewRootScope();
  Scope dev = root.WithDevice(device);
  const int64_t batch = part == ConvNetPart::kWholeStaticBatch ? 2 : -1;
  auto x = Placeholder(root.WithOpName("x"), DType::kFloat32, Shape{batch, 7, 6, 2});
  auto w = Placeholder(root.WithOpName("w"), DType::kFloat32, Shape{3, 3, 2, 4});
  Output out;
  std::vector<Output> wrt = {x, w};
  if (part == ConvNetPart::kConvOnly) {
    out = Conv2D(dev, x, w, {1, 2, 2, 1}, "SAME");
  } else if (part == ConvNetPart::kReluMaxPoolOnly) {
    out = MaxPool(dev, Relu(dev, x), {1, 2, 2, 1}, {1, 1, 1, 1}, "SAME");
    wrt = {x};
  } else if (part == ConvNetPart::kAvgPoolOnly) {
    out = AvgPool(dev, x, {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
    wrt = {x};
  } else if (part == ConvNetPart::kBatchNormDropout) {
    // Training-mode statistics, and the same dropout mask on both devices (one run each).
    const Tensor no_statistics(DType::kFloat32, Shape{0});
    auto bn = FusedBatchNorm(dev, Conv2D(dev, x, w, {1, 1, 1, 1}, "SAME"),
                             Tensor::FromVector<float>({1, 0.5f, 2, 1}),
                             Tensor::FromVector<float>({0, 0.1f, -0.2f, 0.3f}), no_statistics,
                             no_statistics);
    out = Dropout(dev, Relu(dev, bn.y), 0.8, /*seed=*/3).output;  // [N,7,6,4]
  } else {
    auto conv = Conv2D(dev, x, w, {1, 2, 2, 1}, "SAME");                          // [N,4,3,4]
    auto maxed = MaxPool(dev, Relu(dev, conv), {1, 2, 2, 1}, {1, 1, 1, 1}, "SAME");  // [N,4,3,4]
    out = AvgPool(dev, maxed, {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");               // [N,2,1,4]
  }
  auto loss = Sum(dev, Mul(dev, out, out));
  auto grads = Gradients(dev, {loss}, wrt);
  if (!grads.ok()) return {grads.status()};
  Identity(dev.WithOpName("dx"), (*grads)[0]);
  Identity(dev.WithOpName("dw"), wrt.size() > 1 ? (*grads)[1] : Output(w));
  if (!root.ok()) return {root.status()};
  auto session = MakeSession(root.graph(), gpus, /*soft=*/true);
  if (session == nullptr) return {Internal("no session")};
  // Distinct pseudo-random values: with periodic ones, two maxima of a MaxPool window
  // can be equal in exact arithmetic, and then the CPU's and the GPU's rounding pick
  // different elements, each correctly (the gradient is discontinuous at a tie).
  std::mt19937 random(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> xs(2 * 7 * 6 * 2), ws(3 * 3 * 2 * 4);
  for (float& v : xs) v = uniform(random);
  for (float& v : ws) v = uniform(random);
  const FeedList feeds = {{"x", Tensor::FromVector(xs, Shape{2, 7, 6, 2})},
                          {"w", Tensor::FromVector(ws, Shape{3, 3, 2, 4})}};
  ConvGradients result;
  result.status = session->Run(feeds, {"dx", "dw"}, {}, &result.dx_dw);
  auto explained = session->ExplainPlacement();
  if (explained.ok()) result.placement = *explained;
  return result;
}

// The elements where two gradients differ by more than 1e-4, at most 8 of them.
std::string Mismatches(const Tensor& got, const Tensor& want) {
  std::string out;
  int shown = 0;
  for (int64_t j = 0; j < want.NumElements() && shown < 8; ++j) {
    const float g = got.data<float>()[j], w = want.data<float>()[j];
    if (std::abs(g - w) <= 1e-4f) continue;
    out += " [" + std::to_string(j) + "] got " + std::to_string(g) + " want " + std::to_string(w);
    ++shown;
  }
  return out;
}

TEST(GpuSessionTest, ConvolutionGradientsOnTheGpuMatchTheCpusWithRunTimeSizes) {
  ConvGradients cpu = ConvNetGradients("/cpu:0", 0);  // the oracle, also without a GPU
  ASSERT_TRUE(cpu.status.ok()) << cpu.status;
  ASSERT_EQ(cpu.dx_dw.size(), 2u);
  EXPECT_EQ(cpu.dx_dw[0].shape(), Shape({2, 7, 6, 2}));
  if (GpuDeviceCount() == 0) GTEST_SKIP() << DescribeGpus();
  ConvGradients gpu = ConvNetGradients("/gpu:0", 1);
  ASSERT_TRUE(gpu.status.ok()) << gpu.status;
  for (const std::string op : {"(Conv2DBackpropInput)", "(Conv2DBackpropFilter)", "(AvgPoolGrad)",
                               "(MaxPoolGrad)"}) {
    const size_t at = gpu.placement.find(op);
    ASSERT_NE(at, std::string::npos) << gpu.placement;
    const std::string line = gpu.placement.substr(at, gpu.placement.find('\n', at) - at);
    EXPECT_THAT(line, HasSubstr(Device("GPU", 0))) << gpu.placement;
  }
  ASSERT_EQ(gpu.dx_dw.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(gpu.dx_dw[i].shape(), cpu.dx_dw[i].shape()) << i;
    EXPECT_EQ(Mismatches(gpu.dx_dw[i], cpu.dx_dw[i]), "") << (i == 0 ? "dx" : "dw");
  }
}

// Each part of the net alone, and the whole net with its batch known when built.
TEST(GpuSessionTest, EachPartOfTheConvNetHasTheCpusGradientsOnTheGpu) {
  if (GpuDeviceCount() == 0) GTEST_SKIP() << DescribeGpus();
  const std::pair<ConvNetPart, const char*> parts[] = {
      {ConvNetPart::kWholeStaticBatch, "whole net, static batch"},
      {ConvNetPart::kConvOnly, "Conv2D"},
      {ConvNetPart::kReluMaxPoolOnly, "Relu + MaxPool (stride 1, SAME)"},
      {ConvNetPart::kAvgPoolOnly, "AvgPool"},
      {ConvNetPart::kBatchNormDropout, "Conv2D + FusedBatchNorm + Relu + Dropout"}};
  for (const auto& [part, name] : parts) {
    ConvGradients cpu = ConvNetGradients("/cpu:0", 0, part);
    ConvGradients gpu = ConvNetGradients("/gpu:0", 1, part);
    ASSERT_TRUE(cpu.status.ok()) << name << ": " << cpu.status;
    ASSERT_TRUE(gpu.status.ok()) << name << ": " << gpu.status;
    for (int i = 0; i < 2; ++i) {
      ASSERT_EQ(gpu.dx_dw[i].shape(), cpu.dx_dw[i].shape()) << name;
      EXPECT_EQ(Mismatches(gpu.dx_dw[i], cpu.dx_dw[i]), "") << name << (i == 0 ? " dx" : " dw");
    }
  }
}

TEST(GpuSessionTest, IntegerOpsRequestedOnTheGpuAreSoftPlacedOnTheCpuSayingWhy) {
  if (GpuDeviceCount() == 0) GTEST_SKIP() << DescribeGpus();
  Scope root = Scope::NewRootScope();
  Scope gpu = root.WithDevice("/gpu:0");
  auto x = Const(gpu.WithOpName("x"), 2.0f);
  auto n = Const(root.WithOpName("n"), 41);
  auto m = Add(gpu.WithOpName("m"), n, Const(root.WithOpName("one"), 1));
  Mul(gpu.WithOpName("y"), x, Cast(gpu.WithOpName("mf"), m, DType::kFloat32));
  ASSERT_TRUE(root.ok()) << root.status();
  auto session = MakeSession(root.graph(), 1, /*soft=*/true);
  std::vector<Tensor> out;
  Status s = session->Run({}, {"y", "m"}, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out[0].data<float>()[0], 84.0f);
  EXPECT_EQ(out[1].data<int32_t>()[0], 42);
  auto explained = session->ExplainPlacement();
  ASSERT_TRUE(explained.ok());
  EXPECT_THAT(LineOf(*explained, "x"), HasSubstr(Device("GPU", 0))) << *explained;
  EXPECT_THAT(LineOf(*explained, "m"), HasSubstr(Device("CPU", 0))) << *explained;
  EXPECT_THAT(LineOf(*explained, "m"), HasSubstr("no GPU kernel for op Add with dtype int32"))
      << *explained;
}

}  // namespace
}  // namespace actorflow
