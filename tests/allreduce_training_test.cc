// AllReduceOptimizer and BroadcastGlobalVariables on a LocalCluster of worker tasks
// (real servers on 127.0.0.1), between-graph, no ps: every worker holds its own
// replica on its own device. The replicas must start and stay bit-identical, and
// their training must equal plain SGD on the union of the workers' batches.
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "actorflow.h"

namespace actorflow {
namespace {

constexpr int kFeatures = 6;
constexpr int kBatch = 8;

std::string Cpu(int task) {
  return "/job:worker/replica:0/task:" + std::to_string(task) + "/device:CPU:0";
}

// Worker r's batch at step t: deterministic, different per worker and step.
Tensor Features(int r, int t) {
  std::vector<float> v(kBatch * kFeatures);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.01f * static_cast<float>((i * 7 + r * 13 + t * 5) % 23) - 0.1f;
  return Tensor::FromVector<float>(v, Shape{kBatch, kFeatures});
}
Tensor Targets(int r, int t) {
  std::vector<float> v(kBatch);
  for (int i = 0; i < kBatch; ++i) v[i] = 0.1f * static_cast<float>((i + r * 3 + t) % 5);
  return Tensor::FromVector<float>(v, Shape{kBatch, 1});
}

// A two-layer regression model; `seed` differs per worker so that only the broadcast
// can make the replicas equal.
struct Model {
  Scope root = Scope::NewRootScope();
  Output x, y, loss, train, sync, w1, b1, w2;
  std::unique_ptr<AllReduceOptimizer> opt;
};

Status Build(Model* m, const std::string& device, int64_t seed, const CollectiveGroup* group,
             int64_t bucket_bytes) {
  Scope s = m->root.WithDevice(device);
  m->x = Placeholder(s.WithOpName("x"), DType::kFloat32, Shape{-1, kFeatures});
  m->y = Placeholder(s.WithOpName("y"), DType::kFloat32, Shape{-1, 1});
  AF_ASSIGN_OR_RETURN(m->w1, CreateVariable(s, "w1", RandomNormal(s, Shape{kFeatures, 5}, DType::kFloat32, seed, 0, 0.5)));
  AF_ASSIGN_OR_RETURN(m->b1, CreateVariable(s, "b1", Tensor::FromVector<float>({0, 0, 0, 0, 0})));
  AF_ASSIGN_OR_RETURN(m->w2, CreateVariable(s, "w2", RandomNormal(s, Shape{5, 1}, DType::kFloat32, seed + 1, 0, 0.5)));
  Output h = Tanh(s, Add(s, MatMul(s, m->x, m->w1), m->b1));
  Output diff = Sub(s, MatMul(s, h, m->w2), m->y);
  m->loss = Mean(s.WithOpName("loss"), Mul(s, diff, diff), {0, 1});
  AF_ASSIGN_OR_RETURN(Output step, CreateGlobalStep(s));
  if (group == nullptr) {
    GradientDescentOptimizer plain(0.5);
    AF_ASSIGN_OR_RETURN(m->train, plain.Minimize(s.WithOpName("train"), m->loss, step));
  } else {
    AllReduceOptions options;
    options.group = *group;
    options.bucket_bytes = bucket_bytes;
    m->opt = std::make_unique<AllReduceOptimizer>(std::make_unique<GradientDescentOptimizer>(0.5),
                                                  options);
    AF_ASSIGN_OR_RETURN(m->train, m->opt->Minimize(s.WithOpName("train"), m->loss, step));
    AF_ASSIGN_OR_RETURN(m->sync, BroadcastGlobalVariables(s.WithOpName("sync"), *group));
  }
  GlobalVariablesInitializer(m->root.WithOpName("init"));
  return m->root.status();
}

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
}

class AllReduceTrainingTest : public ::testing::TestWithParam<int64_t> {};

TEST_P(AllReduceTrainingTest, ReplicasStayBitIdenticalAndTrainAsSgdOnTheUnionOfTheirBatches) {
  auto cluster = LocalCluster::Start({{"worker", 2}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  CollectiveGroup group{"gradients", {Cpu(0), Cpu(1)}};
  Model models[2];
  std::unique_ptr<Session> sessions[2];
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(Build(&models[r], Cpu(r), 11 + 100 * r, &group, GetParam()).ok()) << models[r].root.status();
    SessionOptions options;
    options.target = *(*cluster)->Target("worker", r);
    auto session = NewSession(models[r].root.graph(), options);
    ASSERT_TRUE(session.ok()) << session.status();
    sessions[r] = std::move(session).value();
  }
  // Bucket plan: 0 = one bucket per variable, huge = everything in one bucket.
  EXPECT_EQ(models[0].opt->buckets().size(), GetParam() == 0 ? 3u : 1u);
  EXPECT_EQ(models[0].opt->buckets().front().front(), "w2");  // reverse order

  auto on_both = [&](const std::function<Status(int)>& fn) {
    auto other = std::async(std::launch::async, fn, 1);
    Status mine = fn(0);
    Status theirs = other.get();
    return mine.ok() ? theirs : mine;
  };
  RunOptions deadline;
  deadline.timeout_in_ms = 20000;
  {
    Status init_status = on_both([&](int r) { return sessions[r]->Run(deadline, {}, {}, {"init"}, nullptr, nullptr); });
    ASSERT_TRUE(init_status.ok()) << init_status;
  }
  {
    Status sync_status = on_both([&](int r) { return sessions[r]->Run(deadline, {}, {}, {"sync"}, nullptr, nullptr); });
    ASSERT_TRUE(sync_status.ok()) << sync_status;
  }

  // The reference: one process, plain SGD on both workers' rows, from worker 0's start.
  Model reference;
  ASSERT_TRUE(Build(&reference, "", 11, nullptr, 0).ok()) << reference.root.status();
  auto direct = NewSession(reference.root.graph(), SessionOptions());
  ASSERT_TRUE(direct.ok());
  ASSERT_TRUE((*direct)->Run({}, {}, {"init"}, nullptr).ok());

  for (int t = 0; t < 5; ++t) {
    ASSERT_TRUE(on_both([&](int r) {
      return sessions[r]->Run(deadline, {{"x", Features(r, t)}, {"y", Targets(r, t)}}, {}, {"train"}, nullptr, nullptr);
    }).ok());
    // Both workers' batches at once (the mean loss over 2B rows has the mean gradient).
    std::vector<float> xs, ys;
    for (int r = 0; r < 2; ++r) {
      Tensor f = Features(r, t), y = Targets(r, t);
      xs.insert(xs.end(), f.data<float>(), f.data<float>() + f.NumElements());
      ys.insert(ys.end(), y.data<float>(), y.data<float>() + y.NumElements());
    }
    ASSERT_TRUE((*direct)->Run({{"x", Tensor::FromVector<float>(xs, Shape{2 * kBatch, kFeatures})},
                                {"y", Tensor::FromVector<float>(ys, Shape{2 * kBatch, 1})}},
                               {}, {"train"}, nullptr).ok());
  }
  std::vector<Tensor> a, b, want;
  ASSERT_TRUE(sessions[0]->Run(deadline, {}, {"w1", "b1", "w2", "global_step"}, {}, &a, nullptr).ok());
  ASSERT_TRUE(sessions[1]->Run(deadline, {}, {"w1", "b1", "w2", "global_step"}, {}, &b, nullptr).ok());
  ASSERT_TRUE((*direct)->Run({}, {"w1", "b1", "w2"}, {}, &want).ok());
  for (int v = 0; v < 3; ++v) {
    EXPECT_TRUE(SameBits(a[v], b[v])) << "variable " << v << " differs between the replicas";
    for (int64_t i = 0; i < want[v].NumElements(); ++i) {
      EXPECT_NEAR(a[v].data<float>()[i], want[v].data<float>()[i], 1e-5) << "variable " << v << "[" << i << "]";
    }
  }
  EXPECT_EQ(a[3].scalar<int64_t>().value(), 5);
  EXPECT_EQ(b[3].scalar<int64_t>().value(), 5);
}

INSTANTIATE_TEST_SUITE_P(Buckets, AllReduceTrainingTest, ::testing::Values(0, int64_t{25} << 20));

TEST(AllReduceOptimizerTest, AnEmptyGroupIsRefused) {
  Scope root = Scope::NewRootScope();
  auto w = CreateVariable(root, "w", Tensor::Scalar(1.0f));
  ASSERT_TRUE(w.ok());
  AllReduceOptions options;
  AllReduceOptimizer opt(std::make_unique<GradientDescentOptimizer>(0.1), options);
  auto train = opt.Minimize(root, Mul(root, *w, 2.0f), Output());
  EXPECT_EQ(train.status().code(), Code::kInvalidArgument) << train.status();
  EXPECT_EQ(BroadcastGlobalVariables(root, CollectiveGroup{}).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace actorflow
