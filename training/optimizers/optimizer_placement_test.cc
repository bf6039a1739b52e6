// Optimizer updates placed as in TensorFlow 1.x: Minimize under a worker's device
// scope, with the variables on ps tasks, builds every update beside its variable and
// trains on a local cluster exactly as a single-device session does; the same with
// the variables placed by ReplicaDeviceSetter.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "actors/cluster/local_cluster.h"
#include "actors/cluster/session_factory.h"
#include "graph/ops.h"
#include "kernels/direct_session.h"
#include "placement/replica_device_setter.h"
#include "training/optimizers/optimizer.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

constexpr int kSteps = 50;
constexpr char kWorker[] = "/job:worker/task:0";

// y = x . [1, -2, 3] + 0.5 on 8 fixed rows.
FeedList Batch() {
  std::vector<float> xs, ys;
  for (int i = 0; i < 8; ++i) {
    const float a = 0.1f * i, b = 1.0f - 0.2f * i, c = (i % 3) - 1.0f;
    xs.insert(xs.end(), {a, b, c});
    ys.push_back(a - 2 * b + 3 * c + 0.5f);
  }
  return {{"x", Tensor::FromVector<float>(xs, {8, 3})},
          {"y", Tensor::FromVector<float>(ys, {8, 1})}};
}

// Linear regression trained by Adam. `variables`/`compute` are the scopes the
// variables and the model are built in; Minimize runs in `compute` (named "train").
void BuildModel(const Scope& variables, const Scope& compute, bool with_step) {
  auto w = CreateVariable(variables, "w", Tensor::FromVector<float>({0, 0, 0}, {3, 1}));
  auto b = CreateVariable(variables, "b", Tensor::FromVector<float>({0}));
  ASSERT_TRUE(w.ok() && b.ok()) << variables.status();
  Output step;
  if (with_step) {
    auto created = CreateGlobalStep(variables);
    ASSERT_TRUE(created.ok()) << created.status();
    step = *created;
  }
  auto x = Placeholder(compute.WithOpName("x"), DType::kFloat32, Shape{-1, 3});
  auto y = Placeholder(compute.WithOpName("y"), DType::kFloat32, Shape{-1, 1});
  auto prediction = Add(compute, MatMul(compute, x, *w), *b);
  auto loss = Mean(compute.WithOpName("loss"), Square(compute, Sub(compute, prediction, y)));
  AdamOptimizer adam(0.05);
  auto train = with_step ? adam.Minimize(compute.WithOpName("train"), loss, step)
                         : adam.Minimize(compute.WithOpName("train"), loss);
  ASSERT_TRUE(train.ok()) << train.status();
  GlobalVariablesInitializer(compute.WithOpName("init"));
  ASSERT_TRUE(compute.ok()) << compute.status();
}

// Runs init and kSteps train steps; returns w, b and the loss after them.
std::vector<Tensor> Train(Session* session) {
  EXPECT_TRUE(session->Run({}, {}, {"init"}, nullptr).ok());
  for (int i = 0; i < kSteps; ++i) {
    Status s = session->Run(Batch(), {}, {"train"}, nullptr);
    EXPECT_TRUE(s.ok()) << "step " << i << ": " << s;
    if (!s.ok()) return {};
  }
  std::vector<Tensor> out;
  Status s = session->Run(Batch(), {"w", "b", "loss"}, {}, &out);
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

// The same model on one device: what the cluster must reproduce.
std::vector<Tensor> TrainOnOneDevice(bool with_step) {
  Scope root = Scope::NewRootScope();
  BuildModel(root, root, with_step);
  auto session = NewDirectSession(root.graph());
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? Train(session->get()) : std::vector<Tensor>{};
}

std::vector<Tensor> TrainOnCluster(const Graph* graph, int ps_tasks) {
  auto cluster = LocalCluster::Start({{"ps", ps_tasks}, {"worker", 1}});
  EXPECT_TRUE(cluster.ok()) << cluster.status();
  if (!cluster.ok()) return {};
  SessionOptions options;
  options.target = *(*cluster)->Target("worker", 0);
  auto session = NewSession(graph, options);
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? Train(session->get()) : std::vector<Tensor>{};
}

void ExpectSameTraining(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  ASSERT_EQ(got.size(), 3u);
  ASSERT_EQ(want.size(), 3u);
  for (int j = 0; j < 3; ++j) EXPECT_FLOAT_EQ(got[0].data<float>()[j], want[0].data<float>()[j]);
  EXPECT_FLOAT_EQ(got[1].data<float>()[0], want[1].data<float>()[0]);
  EXPECT_FLOAT_EQ(got[2].data<float>()[0], want[2].data<float>()[0]);
  EXPECT_LT(want[2].data<float>()[0], 1.0f) << "the model did not learn";
}

// Every node that updates a variable (a ref input) is on that variable's device, and
// so are the constants it reads (hyper-parameters).
void ExpectUpdatesBesideTheirVariables(const Graph& graph) {
  int updates = 0;
  for (int id = 0; id < graph.num_nodes(); ++id) {
    const Node* n = graph.node(id);
    for (int k = 0; k < n->num_inputs(); ++k) {
      if (!n->IsRefInput(k)) continue;
      const Node* var = n->input(k).node;
      EXPECT_EQ(n->requested_device(), var->requested_device())
          << n->Describe() << " updates '" << var->name() << "'";
      ++updates;
    }
    if (n->op().rfind("Apply", 0) != 0) continue;
    for (const Endpoint& in : n->inputs()) {
      if (in.node->op() == "Const") {
        EXPECT_EQ(in.node->requested_device(), n->requested_device()) << in.node->Describe();
      }
    }
  }
  EXPECT_GT(updates, 0);
}

TEST(OptimizerPlacementTest, MinimizeUnderAWorkerScopeAppliesOnThePsTask) {
  Scope root = Scope::NewRootScope();
  BuildModel(root.WithDevice("/job:ps/task:0"), root.WithDevice(kWorker), /*with_step=*/true);
  const Graph& graph = *root.graph();
  ExpectUpdatesBesideTheirVariables(graph);
  EXPECT_EQ(graph.FindNode("train")->requested_device(), kWorker);
  for (const char* slot : {"w/Adam_m", "w/Adam_v", "beta1_power", "global_step"}) {
    ASSERT_NE(graph.FindNode(slot), nullptr) << slot;
    EXPECT_EQ(graph.FindNode(slot)->requested_device(), "/job:ps/task:0") << slot;
  }

  std::vector<Tensor> got = TrainOnCluster(root.graph(), 1);
  ExpectSameTraining(got, TrainOnOneDevice(/*with_step=*/true));
}

TEST(OptimizerPlacementTest, ReplicaDeviceSetterSpreadsVariablesAndTrainsWithoutAGlobalStep) {
  auto setter = ReplicaDeviceSetter(ReplicaDeviceSetterOptions{2, "/job:ps", kWorker});
  ASSERT_TRUE(setter.ok()) << setter.status();
  Scope root = Scope::NewRootScope();
  Scope model = root.WithDeviceFunction(*setter);
  BuildModel(model, model, /*with_step=*/false);
  const Graph& graph = *root.graph();
  EXPECT_EQ(graph.FindNode("w")->requested_device(), "/job:ps/task:0");
  EXPECT_EQ(graph.FindNode("b")->requested_device(), "/job:ps/task:1");
  EXPECT_EQ(graph.FindNode("loss")->requested_device(), kWorker);
  ExpectUpdatesBesideTheirVariables(graph);

  std::vector<Tensor> got = TrainOnCluster(root.graph(), 2);
  ExpectSameTraining(got, TrainOnOneDevice(/*with_step=*/false));
}

}  // namespace
}  // namespace actorflow
