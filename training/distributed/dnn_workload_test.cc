// The DNN workload of simulated workers: stable initial values, each worker's own
// batches in order (a restart may go back), and clear errors.
#include "training/distributed/dnn_workload.h"

#include <cstring>

#include <gtest/gtest.h>

#include "graph/status_testing.h"
#include "kernels/direct_session.h"
#include "training/distributed/iris_testing.h"
#include "training/distributed/worker_model.h"

namespace actorflow {
namespace {

DNNWorkloadOptions Options(const IrisData& iris, int workers) {
  DataParallelOptions dp = IrisDataParallelOptions(iris, UpdateMode::kSync, workers);
  DNNWorkloadOptions o;
  o.spec = dp.spec;
  o.seed = dp.seed;
  o.batch_size = dp.batch_size;
  o.num_workers = workers;
  o.train = iris.train;
  o.test = iris.test;
  return o;
}

bool Same(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.TotalBytes() == b.TotalBytes() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
}

TEST(DNNWorkloadTest, InitialValuesAreTheClassifiersOnEveryCall) {
  ASSERT_OK_AND_ASSIGN(IrisData iris, LoadIris());
  ASSERT_OK_AND_ASSIGN(auto workload, NewDNNWorkload(Options(iris, 2)));
  ASSERT_OK_AND_ASSIGN(auto first, workload->InitialValues());
  ASSERT_OK_AND_ASSIGN(auto again, workload->InitialValues());
  SessionFactory direct = [](const Graph* g) -> StatusOr<std::unique_ptr<Session>> {
    return NewDirectSession(g);
  };
  const DNNWorkloadOptions o = Options(iris, 2);
  ASSERT_OK_AND_ASSIGN(auto model, WorkerModel::Create(o.spec, o.seed, direct, 0));
  ASSERT_OK_AND_ASSIGN(auto reference, model->InitialValues());
  ASSERT_EQ(first.size(), reference.size());
  for (const auto& [name, value] : reference) {
    EXPECT_TRUE(Same(first.at(name), value)) << name;
    EXPECT_TRUE(Same(again.at(name), value)) << name;
  }
}

TEST(DNNWorkloadTest, AWorkerReadsItsOwnBatchesAndMayGoBack) {
  ASSERT_OK_AND_ASSIGN(IrisData iris, LoadIris());
  ASSERT_OK_AND_ASSIGN(auto workload, NewDNNWorkload(Options(iris, 2)));
  ASSERT_OK_AND_ASSIGN(auto params, workload->InitialValues());
  ASSERT_OK_AND_ASSIGN(WorkloadGradients step3, workload->ComputeGradients(1, 3, params));
  ASSERT_OK_AND_ASSIGN(WorkloadGradients step0, workload->ComputeGradients(1, 0, params));
  ASSERT_OK_AND_ASSIGN(WorkloadGradients step3_again, workload->ComputeGradients(1, 3, params));
  EXPECT_EQ(step3.loss, step3_again.loss);  // the same batch after going back
  EXPECT_NE(step3.loss, step0.loss);
  ASSERT_OK_AND_ASSIGN(WorkloadGradients other, workload->ComputeGradients(0, 3, params));
  EXPECT_NE(other.loss, step3.loss);  // worker 0 reads other rows
  EXPECT_EQ(step3.gradients.size(), params.size());
  EXPECT_GT(workload->FlopsPerStep(), 0);
  EXPECT_EQ(workload->ComputeGradients(2, 0, params).status().code(), Code::kInvalidArgument);
}

TEST(DNNWorkloadTest, BadOptionsAreNamed) {
  ASSERT_OK_AND_ASSIGN(IrisData iris, LoadIris());
  DNNWorkloadOptions o = Options(iris, 2);
  o.num_workers = 0;
  EXPECT_EQ(NewDNNWorkload(o).status().code(), Code::kInvalidArgument);
  o = Options(iris, 2);
  o.spec.n_classes = 2;  // Iris has label 2
  EXPECT_EQ(NewDNNWorkload(o).status().code(), Code::kInvalidArgument);
  // More workers than rows share rows instead of failing.
  EXPECT_OK(NewDNNWorkload(Options(iris, 500)).status());
}

}  // namespace
}  // namespace actorflow
