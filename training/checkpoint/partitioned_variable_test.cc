// Partitioned variables: how they are split and placed, that reading and training
// them is exactly reading and training the whole variable, and that a checkpoint
// holds the whole variable, so a 784x4096 weight trained on 3 shards restores into 2
// and goes on training. Also: Restore names every variable of another model's
// checkpoint that differs.

#include "training/optimizers/partitioned_variable.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "actors/cluster/local_cluster.h"
#include "actors/runtime/local_session.h"
#include "actors/cluster/session_factory.h"
#include "graph/ops.h"
#include "training/checkpoint/checkpoint.h"
#include "training/checkpoint/checkpoint_test_util.h"
#include "training/optimizers/optimizer.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using checkpoint_test::NewTempDir;

std::string Cpu(int k) { return "/cpu:" + std::to_string(k); }

// An in-process actor session with `cpus` CPU devices.
std::unique_ptr<ActorSession> OpenCpus(const Graph* graph, int cpus) {
  SessionOptions options;
  options.device_count = {{"CPU", cpus}};
  auto session = NewActorSession(graph, options);
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? std::move(session).value() : nullptr;
}

Tensor Fetch(Session* session, const std::string& name) {
  std::vector<Tensor> out;
  Status s = session->Run({}, {name}, {}, &out);
  EXPECT_TRUE(s.ok()) << name << ": " << s;
  return s.ok() ? out[0] : Tensor();
}

// rows x cols of 0.01 * (i * cols + j) - 1: distinct values, so a row out of place shows.
Tensor Ramp(int64_t rows, int64_t cols) {
  std::vector<float> values(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.01f * static_cast<float>(i) - 1.0f;
  return Tensor::FromVector<float>(values, Shape{rows, cols});
}

TEST(PartitionSizesTest, AreAsEvenAsPossibleWithTheFirstPartsLarger) {
  EXPECT_EQ(PartitionSizes(10, 3), (std::vector<int64_t>{4, 3, 3}));
  EXPECT_EQ(PartitionSizes(784, 3), (std::vector<int64_t>{262, 261, 261}));
  EXPECT_EQ(PartitionSizes(784, 2), (std::vector<int64_t>{392, 392}));
  EXPECT_EQ(PartitionSizes(3, 3), (std::vector<int64_t>{1, 1, 1}));
}

TEST(CreatePartitionedVariableTest, MoreShardsThanRowsIsInvalidArgumentNamingTheVariable) {
  Scope root = Scope::NewRootScope();
  auto w = CreatePartitionedVariable(root, "embedding", Shape{2, 5}, Ramp(2, 5), 3, Cpu);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(w.status().message(), HasSubstr("'embedding'")) << w.status();
  EXPECT_THAT(w.status().message(), HasSubstr("dimension 0 (size 2) into 3 shards")) << w.status();
  EXPECT_EQ(root.graph()->FindNode("embedding/part_0"), nullptr) << "a rejected variable left nodes";
}

TEST(CreatePartitionedVariableTest, RejectsAScalarZeroShardsAndAnInitialValueOfAnotherShape) {
  Scope root = Scope::NewRootScope();
  EXPECT_EQ(CreatePartitionedVariable(root, "s", Shape{}, 1.0f, 1, nullptr).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(CreatePartitionedVariable(root, "z", Shape{4, 2}, Ramp(4, 2), 0, nullptr).status().code(),
            Code::kInvalidArgument);
  auto wrong = CreatePartitionedVariable(root, "v", Shape{4, 2}, Ramp(2, 4), 2, nullptr);
  EXPECT_EQ(wrong.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(wrong.status().message(), HasSubstr("'v'")) << wrong.status();
}

TEST(CreatePartitionedVariableTest, PartsLiveOnTheirShardsAndReadAsTheWholeValue) {
  Scope root = Scope::NewRootScope();
  auto w = CreatePartitionedVariable(root, "w", Shape{10, 2}, Ramp(10, 2), 3, Cpu);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->name, "w");
  ASSERT_EQ(w->parts.size(), 3u);
  EXPECT_EQ(w->parts[0].shape(), (Shape{4, 2}));
  EXPECT_EQ(w->parts[2].shape(), (Shape{3, 2}));
  EXPECT_EQ(w->value.shape(), (Shape{10, 2}));
  GlobalVariablesInitializer(root.WithOpName("init"));
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(root.graph()->GetCollection(kPartitionedVariablesCollection), (std::vector<std::string>{"w"}));
  EXPECT_EQ(root.graph()->GetCollection(PartitionedVariablePartsKey("w")),
            (std::vector<std::string>{"w/part_0", "w/part_1", "w/part_2"}));

  auto session = OpenCpus(root.graph(), 3);
  ASSERT_NE(session, nullptr);
  ASSERT_TRUE(session->Run({}, {}, {"init"}, nullptr).ok());
  EXPECT_TRUE(TensorsEqual(Fetch(session.get(), "w"), Ramp(10, 2)));
  EXPECT_TRUE(TensorsEqual(Fetch(session.get(), "w/part_1"), *SliceAlongDim0(Ramp(10, 2), 4, 3)));
  auto placement = session->ExplainPlacement();
  ASSERT_TRUE(placement.ok()) << placement.status();
  for (int k = 0; k < 3; ++k) {
    EXPECT_THAT(*placement, HasSubstr("w/part_" + std::to_string(k) +
                                         " (Variable): /job:localhost/replica:0/task:0/device:CPU:" +
                                         std::to_string(k)))
        << *placement;
  }
}

// x [4,6] -> logits = x w, w [6,3] whole or in `shards` parts; a sparse cross-entropy
// loss and plain gradient descent. Returns the session after `steps` steps.
struct TinyModel {
  Scope root = Scope::NewRootScope();
  std::unique_ptr<ActorSession> session;
};
void TrainTiny(TinyModel* m, int shards, int steps) {
  Output w;
  if (shards == 0) {
    auto v = CreateVariable(m->root, "w", Ramp(6, 3));
    ASSERT_TRUE(v.ok()) << v.status();
    w = *v;
  } else {
    auto v = CreatePartitionedVariable(m->root, "w", Shape{6, 3}, Ramp(6, 3), shards, Cpu);
    ASSERT_TRUE(v.ok()) << v.status();
    w = v->value;
  }
  Output x = Const(m->root, Ramp(4, 6));
  Output labels = Const(m->root, Tensor::FromVector<int32_t>({0, 2, 1, 2}));
  Output loss = Mean(m->root, SparseSoftmaxCrossEntropyWithLogits(m->root, MatMul(m->root, x, w), labels).loss);
  GradientDescentOptimizer sgd(0.5);
  ASSERT_TRUE(sgd.Minimize(m->root.WithOpName("train"), loss, Output()).ok());
  GlobalVariablesInitializer(m->root.WithOpName("init"));
  ASSERT_TRUE(m->root.ok()) << m->root.status();
  m->session = OpenCpus(m->root.graph(), 3);
  ASSERT_NE(m->session, nullptr);
  ASSERT_TRUE(m->session->Run({}, {}, {"init"}, nullptr).ok());
  for (int i = 0; i < steps; ++i) ASSERT_TRUE(m->session->Run({}, {}, {"train"}, nullptr).ok());
}

TEST(CreatePartitionedVariableTest, TrainingThePartsIsExactlyTrainingTheWholeVariable) {
  TinyModel whole, split;
  TrainTiny(&whole, /*shards=*/0, 3);
  TrainTiny(&split, /*shards=*/3, 3);
  ASSERT_NE(whole.session, nullptr);
  ASSERT_NE(split.session, nullptr);
  Tensor expected = Fetch(whole.session.get(), "w");
  EXPECT_FALSE(TensorsEqual(expected, Ramp(6, 3))) << "training changed nothing";
  EXPECT_TRUE(TensorsEqual(Fetch(split.session.get(), "w"), expected));
  // Each update ran on its part's shard.
  auto placement = split.session->ExplainPlacement();
  ASSERT_TRUE(placement.ok()) << placement.status();
  EXPECT_THAT(*placement, HasSubstr("GradientDescent/update_w/part_2/ApplyGradientDescent "
                                   "(ApplyGradientDescent): /job:localhost/replica:0/task:0/device:CPU:2"))
      << *placement;
}

// The 784x4096 model: x [32,784] -> relu(x w + b) [32,4096] -> h v [32,10], w split
// into `shards` parts on `devices` (shard k on devices(k)); momentum (a slot per part).
struct WideModel {
  Scope root = Scope::NewRootScope();
  std::unique_ptr<Session> session;
  std::unique_ptr<Saver> saver;
};
constexpr int64_t kIn = 784;
constexpr int64_t kHidden = 4096;

// The one batch every step trains on: x [32,784] in [0,1), y [32] in [0,10).
FeedList WideBatch() {
  std::vector<float> x(32 * kIn);
  std::vector<int32_t> y(32);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7) % 17) / 17.0f;
  for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<int32_t>(i % 10);
  return {{"x", Tensor::FromVector<float>(x, Shape{32, kIn})}, {"y", Tensor::FromVector<int32_t>(y)}};
}

void BuildWide(WideModel* m, int shards, const ShardDeviceFn& devices) {
  const Scope& root = m->root;
  Output x = Placeholder(root.WithOpName("x"), DType::kFloat32, Shape{-1, kIn});
  Output y = Placeholder(root.WithOpName("y"), DType::kInt32, Shape{-1});
  Output init = TruncatedNormal(root, Shape{kIn, kHidden}, DType::kFloat32, /*seed=*/7, 0.0, 0.03);
  auto w = CreatePartitionedVariable(root, "w", Shape{kIn, kHidden}, init, shards, devices);
  ASSERT_TRUE(w.ok()) << w.status();
  auto b = CreateVariable(root.WithDevice(devices(0)), "b", Tensor(DType::kFloat32, Shape{kHidden}));
  ASSERT_TRUE(b.ok()) << b.status();
  auto v = CreateVariable(root.WithDevice(devices(0)), "v",
                          TruncatedNormal(root, Shape{kHidden, 10}, DType::kFloat32, 8, 0.0, 0.02));
  ASSERT_TRUE(v.ok()) << v.status();
  Output h = Relu(root, BiasAdd(root, MatMul(root, x, w->value), *b));
  Output logits = MatMul(root, h, *v);
  Output loss = Mean(root.WithOpName("loss"), SparseSoftmaxCrossEntropyWithLogits(root, logits, y).loss);
  MomentumOptimizer momentum(0.05, 0.9);
  ASSERT_TRUE(momentum.Minimize(root.WithOpName("train"), loss, Output()).ok());
  GlobalVariablesInitializer(root.WithOpName("init"));
  ASSERT_TRUE(root.ok()) << root.status();
  auto saver = Saver::Create(root.graph(), SaverOptions());
  ASSERT_TRUE(saver.ok()) << saver.status();
  m->saver = std::move(saver).value();
}

// One step; returns the loss before it.
double Train(WideModel* m) {
  std::vector<Tensor> out;
  Status s = m->session->Run(WideBatch(), {"loss"}, {"train"}, &out);
  EXPECT_TRUE(s.ok()) << s;
  return s.ok() ? out[0].ElementAsDouble(0) : -1.0;
}

// Trains `saved` (built and opened) 3 steps, saves; restores into `restored` (built
// and opened, uninitialized) and checks that the whole values match and that one
// more step on each gives the same weights.
void SaveThenRestoreIntoOtherShards(WideModel* saved, WideModel* restored) {
  ASSERT_TRUE(saved->session->Run({}, {}, {"init"}, nullptr).ok());
  const double first = Train(saved);
  for (int step = 1; step < 3; ++step) Train(saved);
  const std::string dir = NewTempDir();
  auto prefix = saved->saver->Save(saved->session.get(), dir, 3);
  ASSERT_TRUE(prefix.ok()) << prefix.status();

  // The checkpoint holds the whole variable and its whole slot, not the parts.
  auto tensors = ReadCheckpoint(*prefix);
  ASSERT_TRUE(tensors.ok()) << tensors.status();
  ASSERT_EQ(tensors->count("w"), 1u);
  EXPECT_EQ(tensors->at("w").shape(), (Shape{kIn, kHidden}));
  ASSERT_EQ(tensors->count("w/Momentum"), 1u);
  EXPECT_EQ(tensors->at("w/Momentum").shape(), (Shape{kIn, kHidden}));
  EXPECT_EQ(tensors->count("w/part_0"), 0u);
  EXPECT_TRUE(TensorsEqual(tensors->at("w"), Fetch(saved->session.get(), "w")));

  Status s = restored->saver->Restore(restored->session.get(), *prefix);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_TRUE(TensorsEqual(Fetch(restored->session.get(), "w"), tensors->at("w")));
  EXPECT_TRUE(TensorsEqual(Fetch(restored->session.get(), "v"), tensors->at("v")));

  // Training continues where it stopped, with the momentum it had.
  const double last_saved = Train(saved);
  const double last_restored = Train(restored);
  EXPECT_LT(last_saved, first) << "the loss did not go down";
  EXPECT_EQ(last_restored, last_saved);
  EXPECT_TRUE(TensorsEqual(Fetch(restored->session.get(), "w"), Fetch(saved->session.get(), "w")));
}

TEST(PartitionedCheckpointTest, A784x4096VariableTrainedOn3ShardsRestoresInto2AndTrainsOn) {
  WideModel saved, restored;
  BuildWide(&saved, 3, Cpu);
  BuildWide(&restored, 2, Cpu);
  saved.session = OpenCpus(saved.root.graph(), 3);
  restored.session = OpenCpus(restored.root.graph(), 2);
  ASSERT_NE(saved.session, nullptr);
  ASSERT_NE(restored.session, nullptr);
  SaveThenRestoreIntoOtherShards(&saved, &restored);
}

TEST(PartitionedCheckpointTest, OnALocalClusterTheShardsArePsTasks3Then2) {
  auto ps = [](int k) { return "/job:ps/task:" + std::to_string(k); };
  auto three = LocalCluster::Start({{"ps", 3}, {"worker", 1}});
  auto two = LocalCluster::Start({{"ps", 2}, {"worker", 1}});
  ASSERT_TRUE(three.ok()) << three.status();
  ASSERT_TRUE(two.ok()) << two.status();
  WideModel saved, restored;
  BuildWide(&saved, 3, ps);
  BuildWide(&restored, 2, ps);
  SessionOptions options;
  options.target = *(*three)->Target("worker", 0);
  auto s3 = NewSession(saved.root.graph(), options);
  options.target = *(*two)->Target("worker", 0);
  auto s2 = NewSession(restored.root.graph(), options);
  ASSERT_TRUE(s3.ok()) << s3.status();
  ASSERT_TRUE(s2.ok()) << s2.status();
  saved.session = std::move(s3).value();
  restored.session = std::move(s2).value();
  SaveThenRestoreIntoOtherShards(&saved, &restored);
}

TEST(PartitionedCheckpointTest, AWholeCheckpointRestoresIntoPartsAndPartsIntoAWholeVariable) {
  const std::string dir = NewTempDir();
  Scope whole = Scope::NewRootScope();
  ASSERT_TRUE(CreateVariable(whole, "w", Ramp(5, 2)).ok());
  GlobalVariablesInitializer(whole.WithOpName("init"));
  auto whole_saver = Saver::Create(whole.graph(), SaverOptions());
  ASSERT_TRUE(whole_saver.ok()) << whole_saver.status();
  auto whole_session = OpenCpus(whole.graph(), 1);
  ASSERT_TRUE(whole_session->Run({}, {}, {"init"}, nullptr).ok());
  ASSERT_TRUE((*whole_saver)->Save(whole_session.get(), dir, 1).ok());

  Scope split = Scope::NewRootScope();
  ASSERT_TRUE(CreatePartitionedVariable(split, "w", Shape{5, 2}, Tensor(DType::kFloat32, Shape{5, 2}), 2, Cpu).ok());
  auto split_saver = Saver::Create(split.graph(), SaverOptions());
  ASSERT_TRUE(split_saver.ok()) << split_saver.status();
  EXPECT_EQ((*split_saver)->var_names(), (std::vector<std::string>{"w/part_0", "w/part_1"}));
  auto split_session = OpenCpus(split.graph(), 2);
  ASSERT_TRUE((*split_saver)->Restore(split_session.get(), dir).ok());
  EXPECT_TRUE(TensorsEqual(Fetch(split_session.get(), "w"), Ramp(5, 2)));
  EXPECT_TRUE(TensorsEqual(Fetch(split_session.get(), "w/part_1"), *SliceAlongDim0(Ramp(5, 2), 3, 2)));
}

TEST(RestoreAnotherModelTest, NamesEveryVariableThatDiffersMissingMismatchedAndExtra) {
  const std::string dir = NewTempDir();
  Scope a = Scope::NewRootScope();
  ASSERT_TRUE(CreateVariable(a, "dense/kernel", Ramp(3, 2)).ok());
  ASSERT_TRUE(CreateVariable(a, "dense/bias", Tensor(DType::kFloat32, Shape{2})).ok());
  ASSERT_TRUE(CreateVariable(a, "conv/filter", Ramp(2, 2)).ok());
  GlobalVariablesInitializer(a.WithOpName("init"));
  auto saver_a = Saver::Create(a.graph(), SaverOptions());
  ASSERT_TRUE(saver_a.ok()) << saver_a.status();
  auto session_a = OpenCpus(a.graph(), 1);
  ASSERT_TRUE(session_a->Run({}, {}, {"init"}, nullptr).ok());
  ASSERT_TRUE((*saver_a)->Save(session_a.get(), dir, 1).ok());

  Scope b = Scope::NewRootScope();
  ASSERT_TRUE(CreateVariable(b, "dense/kernel", Ramp(2, 3)).ok());  // other shape
  ASSERT_TRUE(CreateVariable(b, "dense/bias", Tensor(DType::kFloat32, Shape{2})).ok());
  ASSERT_TRUE(CreateVariable(b, "logits/kernel", Ramp(3, 4)).ok());  // not in the checkpoint
  GlobalVariablesInitializer(b.WithOpName("init"));
  auto saver_b = Saver::Create(b.graph(), SaverOptions());
  ASSERT_TRUE(saver_b.ok()) << saver_b.status();
  auto session_b = OpenCpus(b.graph(), 1);
  ASSERT_TRUE(session_b->Run({}, {}, {"init"}, nullptr).ok());
  Status s = (*saver_b)->Restore(session_b.get(), dir);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("does not match the graph")) << s;
  EXPECT_THAT(s.message(),
              HasSubstr("variable 'dense/kernel' has shape [2,3] in the graph but [3,2]"))
      << s;
  EXPECT_THAT(s.message(), HasSubstr("no tensor for variable 'logits/kernel'")) << s;
  EXPECT_THAT(s.message(), HasSubstr("the checkpoint has variables the graph lacks: 'conv/filter'"))
      << s;
  EXPECT_THAT(s.message(), Not(HasSubstr("'dense/bias'"))) << "dense/bias matches: " << s;
  // Nothing was assigned.
  EXPECT_TRUE(TensorsEqual(Fetch(session_b.get(), "dense/kernel"), Ramp(2, 3)));
}

}  // namespace
}  // namespace actorflow
