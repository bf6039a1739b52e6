// The data-parallel driver against the in-process FakeParameterServer: the three
// update modes train Iris, the step accounting of an epoch, stopping and losing a
// worker, an injected straggler, the chief's checkpoint. The same driver against the
// real parameter shards (LocalCluster, processes) is in tests/data_parallel_*.
#include "training/distributed/data_parallel.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "graph/status_testing.h"
#include "graph/test_files.h"
#include "kernels/direct_session.h"
#include "training/data/data_shard.h"
#include "training/data/dataset.h"
#include "training/distributed/iris_testing.h"
#include "training/distributed/fake_parameter_server.h"
#include "training/distributed/worker_model.h"
#include "training/estimators/dnn_classifier.h"
#include "training/estimators/feature_columns.h"
#include "training/estimators/model_spec.h"

namespace actorflow {
namespace {

SessionFactory DirectSessions() {
  return [](const Graph* graph) -> StatusOr<std::unique_ptr<Session>> {
    return NewDirectSession(graph);
  };
}

using ::testing::HasSubstr;

// `model` ("convnet", "convnet-bn") on 4x4 one-channel images, a dense layer of 8,
// 3 classes: the image models at a size a test step takes milliseconds.
DNNModelSpec SmallImageModel(const std::string& model) {
  DNNModelSpec spec;
  for (int i = 0; i < 16; ++i) {
    spec.feature_columns.push_back(NumericColumn{"p" + std::to_string(i)});
  }
  spec.model = model;
  spec.hidden_units = {8};
  spec.n_classes = 3;
  return spec;
}

class DataParallelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(iris_, LoadIris());
    train_ = iris_.train;
    test_ = iris_.test;
  }

  // Iris, normalized, [10, 10], plain SGD on the shards.
  DataParallelOptions Options(UpdateMode mode, int workers, int aggregate = 0) const {
    DataParallelOptions options = IrisDataParallelOptions(iris_, mode, workers, aggregate);
    options.session_factory = DirectSessions();
    options.timeout_ms = 20000;
    return options;
  }

  // A job whose workers connect to one fake server.
  std::unique_ptr<DataParallelJob> Job(const DataParallelOptions& options) {
    server_ = FakeParameterServer::Create(options.ps);
    auto server = server_;
    return std::make_unique<DataParallelJob>(
        options,
        [server](int) -> StatusOr<std::unique_ptr<ParameterClient>> { return server->NewClient(); },
        train_, test_);
  }

  IrisData iris_;
  LabeledData train_;
  LabeledData test_;
  std::shared_ptr<FakeParameterServer> server_;
};

TEST_F(DataParallelTest, SyncWithTwoWorkersStepsInLockStepAndLearnsIris) {
  DataParallelOptions options = Options(UpdateMode::kSync, 2);
  auto result = Job(options)->Run();
  ASSERT_TRUE(result.ok()) << result.status();
  const int64_t per_worker = 30 * StepsPerEpoch(120, 2, 16);  // 30 epochs x 4 batches
  EXPECT_EQ(result->stats.updates_applied, per_worker);
  EXPECT_EQ(result->stats.gradients_dropped_stale, 0);
  EXPECT_EQ(result->eval.global_step, per_worker);
  for (const WorkerReport& w : result->workers) {
    EXPECT_TRUE(w.status.ok()) << w.status;
    EXPECT_EQ(w.steps, per_worker) << "worker " << w.worker;
    EXPECT_EQ(w.applied, per_worker);
  }
  EXPECT_TRUE(result->workers_lost.empty());
  EXPECT_GE(result->eval.accuracy, 0.9);
  EXPECT_EQ(result->eval.num_examples, 30);
}

TEST_F(DataParallelTest, AsyncWithTwoWorkersAppliesEveryPushAndLearnsIris) {
  auto result = Job(Options(UpdateMode::kAsync, 2))->Run();
  ASSERT_TRUE(result.ok()) << result.status();
  const int64_t per_worker = 30 * StepsPerEpoch(120, 2, 16);
  EXPECT_EQ(result->stats.updates_applied, 2 * per_worker);
  EXPECT_EQ(result->workers[0].steps, per_worker);
  EXPECT_EQ(result->workers[1].steps, per_worker);
  EXPECT_GE(result->eval.accuracy, 0.9);
}

TEST_F(DataParallelTest, StaleSynchronousWithTwoWorkersLearnsIris) {
  DataParallelOptions options = Options(UpdateMode::kStaleSynchronous, 2);
  options.ps.staleness_bound = 1;
  auto result = Job(options)->Run();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->stats.updates_applied, 2 * 30 * StepsPerEpoch(120, 2, 16));
  EXPECT_LE(result->stats.mean_staleness, 2.0);
  EXPECT_GE(result->eval.accuracy, 0.9);
}

// The shards' optimizer, not the workers', updates the variables: adam on the shards
// (its slots kept there) trains as well as SGD does.
TEST_F(DataParallelTest, SyncWithAdamOnTheShardsLearnsIris) {
  DataParallelOptions options = Options(UpdateMode::kSync, 2);
  options.ps.optimizer = "adam";
  options.ps.learning_rate = 0.02;
  auto result = Job(options)->Run();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->stats.updates_applied, 30 * StepsPerEpoch(120, 2, 16));
  EXPECT_GE(result->eval.accuracy, 0.9);
}

TEST_F(DataParallelTest, ProgressReportsEveryPushOfEveryWorker) {
  DataParallelOptions options = Options(UpdateMode::kSync, 2);
  options.epochs = 2;
  std::mutex mu;
  std::map<int, int64_t> last_step;
  auto job = Job(options);
  job->set_progress([&](const WorkerProgress& p) {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(p.step, last_step[p.worker] + 1);
    EXPECT_EQ(p.planned_steps, 8);
    EXPECT_EQ(p.epoch, (p.step - 1) / 4);
    last_step[p.worker] = p.step;
  });
  ASSERT_TRUE(job->Run().ok());
  EXPECT_EQ(last_step[0], 8);
  EXPECT_EQ(last_step[1], 8);
}

TEST_F(DataParallelTest, AsyncWorkerStoppedMidRunIsReportedLostAndTheOthersFinish) {
  DataParallelOptions options = Options(UpdateMode::kAsync, 3);
  options.epochs = 5;
  auto job = Job(options);
  DataParallelJob* raw = job.get();
  job->set_progress([raw](const WorkerProgress& p) {
    if (p.worker == 1 && p.step == 3) raw->StopWorker(1);
  });
  auto result = job->Run();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->workers_lost, std::vector<int>{1});
  EXPECT_EQ(result->workers[1].status.code(), Code::kCancelled);
  EXPECT_EQ(result->workers[1].steps, 3);
  const int64_t planned = 5 * StepsPerEpoch(120, 3, 16);
  EXPECT_EQ(result->workers[0].steps, planned);
  EXPECT_EQ(result->workers[2].steps, planned);
  EXPECT_EQ(result->stats.updates_applied, 2 * planned + 3);
}

TEST_F(DataParallelTest, SyncWithABackupWorkerGoesOnWhenAWorkerIsLost) {
  DataParallelOptions options = Options(UpdateMode::kSync, 3, /*aggregate=*/2);
  options.epochs = 5;
  auto job = Job(options);
  DataParallelJob* raw = job.get();
  // Stopped when worker 0 is at its second step: workers 0 and 1 alone complete every
  // version, so worker 2's own progress is no trigger (its thread started late once
  // and found the run already done).
  job->set_progress([raw](const WorkerProgress& p) {
    if (p.worker == 0 && p.step == 2) raw->StopWorker(2);
  });
  auto result = job->Run();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->workers_lost, std::vector<int>{2})
      << "worker 2: " << result->workers[2].status << " after " << result->workers[2].steps
      << " steps";
  EXPECT_EQ(result->stats.updates_applied, SyncTargetGlobalStep(options, 120));
  EXPECT_TRUE(result->workers[0].status.ok()) << result->workers[0].status;
  EXPECT_TRUE(result->workers[1].status.ok()) << result->workers[1].status;
}

TEST_F(DataParallelTest, SyncWithABackupWorkerDropsAStragglersStaleGradientsAndFinishes) {
  DataParallelOptions options = Options(UpdateMode::kSync, 3, /*aggregate=*/2);
  // Long enough for the straggler to push many times: each of its pushes that joins
  // a version leaves one of the others' gradients stale, and each that comes late is.
  // (60 epochs, about 30 ms, once ended on a loaded machine before the straggler
  // pushed at all.)
  options.epochs = 300;
  auto job = Job(options);
  // 5 ms on top of 10 steps' time: a step here takes microseconds, so without it a
  // busy machine's scheduling could hide the straggler among the others (with 2 ms,
  // 1 run in 20 beside a full test run found none of its gradients stale).
  job->set_delay(2, /*delay_factor=*/10.0, /*delay_ms=*/5);
  // Worker 0 waits after its first push until the straggler has pushed once: on a
  // loaded machine the straggler's thread once started only after workers 0 and 1
  // had completed every version (300 epochs in 55 ms), and nothing was stale. Held
  // this way, workers 1 and 2 complete versions meanwhile, and the straggler is in
  // the run for the rest of it. Bounded: the wait gives up after 30 s.
  std::mutex mu;
  std::condition_variable pushed;
  bool straggler_pushed = false;
  job->set_progress([&](const WorkerProgress& p) {
    std::unique_lock<std::mutex> lock(mu);
    if (p.worker == 2) {
      straggler_pushed = true;
      pushed.notify_all();
    } else if (p.worker == 0 && p.step == 1) {
      pushed.wait_for(lock, std::chrono::seconds(30), [&] { return straggler_pushed; });
    }
  });
  auto result = job->Run();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(straggler_pushed);
  EXPECT_EQ(result->stats.updates_applied, SyncTargetGlobalStep(options, 120));
  EXPECT_GT(result->stats.gradients_dropped_stale, 0);
  int64_t dropped = 0;
  for (const WorkerReport& w : result->workers) dropped += w.dropped_stale;
  EXPECT_EQ(dropped, result->stats.gradients_dropped_stale);
  EXPECT_GT(result->workers[2].delay_seconds, 0.0);
  EXPECT_TRUE(result->workers_lost.empty());
}

TEST_F(DataParallelTest, StopWakesAWorkerOutOfItsInjectedDelay) {
  DataParallelOptions options = Options(UpdateMode::kAsync, 1);
  auto server = FakeParameterServer::Create(options.ps);
  auto client = server->NewClient();
  std::mutex mu;
  std::condition_variable cv;
  bool stepped = false;
  WorkerOptions worker;
  worker.delay_ms = 3600 * 1000;  // an hour: only Stop can end it
  worker.progress = [&](const WorkerProgress&) {
    std::lock_guard<std::mutex> lock(mu);
    stepped = true;
    cv.notify_all();
  };
  auto driver = WorkerDriver::Create(options, worker, train_, client.get());
  ASSERT_TRUE(driver.ok()) << driver.status();
  WorkerReport report;
  std::thread runner([&] { report = (*driver)->Run(); });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return stepped; });
  }
  (*driver)->Stop();
  runner.join();
  EXPECT_EQ(report.status.code(), Code::kCancelled) << report.status;
  EXPECT_EQ(report.steps, 1);
  EXPECT_LT(report.delay_seconds, 3600.0);
}

TEST_F(DataParallelTest, TheChiefWritesACheckpointThatDNNClassifierLoads) {
  DataParallelOptions options = Options(UpdateMode::kSync, 2);
  options.epochs = 5;
  options.model_dir = NewTestTempDir("data_parallel_model");
  auto result = Job(options)->Run();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->checkpoint, options.model_dir + "/ckpt-20");
  auto loaded = DNNClassifier::Load(options.model_dir, DirectSessions());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto eval = (*loaded)->Evaluate([this]() -> StatusOr<std::shared_ptr<const Dataset>> {
    AF_ASSIGN_OR_RETURN(auto rows, Dataset::FromTensorSlices({test_.features, test_.labels}));
    return rows->Batch(8);
  });
  ASSERT_TRUE(eval.ok()) << eval.status();
  EXPECT_DOUBLE_EQ(eval->accuracy, result->eval.accuracy);
  EXPECT_NEAR(eval->loss, result->eval.loss, 1e-5);
  EXPECT_EQ(eval->global_step, 20);

  // A second run resumes from the checkpoint: its global steps continue from 20.
  auto resumed = Job(options)->Run();
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(resumed->eval.global_step, 40);
  EXPECT_EQ(resumed->checkpoint, options.model_dir + "/ckpt-40");
}

TEST_F(DataParallelTest, MoreReplicasToAggregateThanWorkersIsInvalid) {
  Status status = Job(Options(UpdateMode::kSync, 2, /*aggregate=*/3))->Run().status();
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("replicas to aggregate 3")) << status;
  EXPECT_THAT(status.message(), HasSubstr("2 workers")) << status;
}

TEST_F(DataParallelTest, WorkerModelStartsFromTheClassifiersSeededInitialValues) {
  DataParallelOptions options = Options(UpdateMode::kSync, 1);
  auto a = WorkerModel::Create(options.spec, 5, DirectSessions(), 0);
  auto b = WorkerModel::Create(options.spec, 5, DirectSessions(), 0);
  auto c = WorkerModel::Create(options.spec, 6, DirectSessions(), 0);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  auto va = (*a)->InitialValues();
  auto vb = (*b)->InitialValues();
  auto vc = (*c)->InitialValues();
  ASSERT_TRUE(va.ok() && vb.ok() && vc.ok());
  ASSERT_EQ(va->size(), 6u);  // 3 layers: kernel and bias each
  EXPECT_TRUE(TensorsEqual(va->at("dnn/hiddenlayer_0/kernel"), vb->at("dnn/hiddenlayer_0/kernel")));
  EXPECT_FALSE(TensorsEqual(va->at("dnn/hiddenlayer_0/kernel"), vc->at("dnn/hiddenlayer_0/kernel")));
  EXPECT_EQ(va->at("dnn/logits/kernel").shape(), (Shape{10, 3}));
}

TEST_F(DataParallelTest, EachReplicaDrawsItsOwnDropoutMasksFromTheSameWeights) {
  // A convnet (dropout 0.4 before its logits) on 4x4 images.
  const DNNModelSpec spec = SmallImageModel("convnet");
  Tensor features(DType::kFloat32, Shape{6, 16});
  Tensor labels(DType::kInt32, Shape{6});
  for (int64_t i = 0; i < features.NumElements(); ++i) {
    features.data<float>()[i] = static_cast<float>((i * 7) % 11) / 10.0f;
  }
  for (int64_t i = 0; i < 6; ++i) labels.data<int32_t>()[i] = static_cast<int32_t>(i % 3);
  std::vector<std::unique_ptr<WorkerModel>> replicas;
  for (int replica : {0, 0, 1}) {
    ASSERT_OK_AND_ASSIGN(auto model,
                         WorkerModel::Create(spec, 5, DirectSessions(), 0, replica));
    replicas.push_back(std::move(model));
  }
  // (InitialValues runs the initializers, which draw anew on each run: once per model.)
  ASSERT_OK_AND_ASSIGN(ParameterMap weights, replicas[0]->InitialValues());
  for (size_t r = 1; r < replicas.size(); ++r) {
    ASSERT_OK_AND_ASSIGN(ParameterMap initial, replicas[r]->InitialValues());
    for (const auto& [name, value] : weights) {
      EXPECT_TRUE(TensorsEqual(initial.at(name), value)) << name;  // replicas start alike
    }
  }
  std::vector<double> losses, eval_losses;
  for (const auto& model : replicas) {
    ASSERT_OK_AND_ASSIGN(GradientStep step, model->ComputeGradients(weights, features, labels));
    losses.push_back(step.loss);
    ASSERT_OK_AND_ASSIGN(EvalResult eval, model->Evaluate(weights, features, labels, 0));
    eval_losses.push_back(eval.loss);
  }
  EXPECT_EQ(losses[0], losses[1]);  // the same replica draws the same masks
  EXPECT_NE(losses[0], losses[2]);  // another replica draws its own
  // Inference has no dropout: every replica evaluates alike.
  EXPECT_EQ(eval_losses[0], eval_losses[2]);
}

// The ps path's arithmetic is the single process's: one sync worker that feeds
// pulled values, its shard applying Adam with the rate decay, and its own moving
// averages, against DNNClassifier training the same batches in the same order.
// convnet-bn has every kind of state (batch statistics, moving averages, dropout).
TEST_F(DataParallelTest, OneSyncWorkerOnTheShardTrainsAsTheSingleProcessClassifier) {
  const DNNModelSpec spec = SmallImageModel("convnet-bn");
  constexpr int64_t kRows = 12, kBatch = 4, kSteps = 7;
  Tensor features(DType::kFloat32, Shape{kRows, 16});
  Tensor labels(DType::kInt32, Shape{kRows});
  for (int64_t i = 0; i < features.NumElements(); ++i) {
    features.data<float>()[i] = static_cast<float>((i * 7) % 13) / 10.0f;
  }
  for (int64_t i = 0; i < kRows; ++i) labels.data<int32_t>()[i] = static_cast<int32_t>(i % 3);
  LearningRateDecay decay;  // halves the rate every 3 steps
  decay.decay_steps = 3;
  decay.decay_rate = 0.5;

  DNNClassifierOptions single;
  single.feature_columns = spec.feature_columns;
  single.hidden_units = spec.hidden_units;
  single.n_classes = spec.n_classes;
  single.model = spec.model;
  single.optimizer = "adam";
  single.learning_rate = 0.01;
  single.learning_rate_decay = decay;
  single.seed = 5;
  single.session_factory = DirectSessions();
  ASSERT_OK_AND_ASSIGN(auto classifier, DNNClassifier::Create(single));
  InputFn in_order = [&]() -> StatusOr<std::shared_ptr<const Dataset>> {
    AF_ASSIGN_OR_RETURN(auto rows, Dataset::FromTensorSlices({features, labels}));
    return rows->Batch(kBatch)->Repeat(-1);
  };
  std::vector<double> single_losses;
  ASSERT_OK(classifier
                ->Train(in_order, kSteps,
                        [&](const TrainProgress& p) { single_losses.push_back(p.loss); })
                .status());
  InputFn once = [&]() -> StatusOr<std::shared_ptr<const Dataset>> {
    AF_ASSIGN_OR_RETURN(auto rows, Dataset::FromTensorSlices({features, labels}));
    return rows->Batch(kBatch);
  };
  ASSERT_OK_AND_ASSIGN(EvalResult single_eval, classifier->Evaluate(once));

  ParameterServerOptions ps;
  ps.mode = UpdateMode::kSync;
  ps.optimizer = "adam";
  ps.learning_rate = 0.01;
  ps.lr_decay = decay;
  auto server = FakeParameterServer::Create(ps);
  std::unique_ptr<ParameterClient> client = server->NewClient();
  ASSERT_OK(client->Register(0));
  ASSERT_OK_AND_ASSIGN(auto worker, WorkerModel::Create(spec, 5, DirectSessions(), 0));
  ASSERT_OK_AND_ASSIGN(ParameterMap initial, worker->InitialValues());
  ASSERT_OK(client->Initialize(initial));
  std::vector<double> ps_losses;
  for (int64_t step = 0; step < kSteps; ++step) {
    std::vector<int64_t> rows;
    for (int64_t r = 0; r < kBatch; ++r) rows.push_back((step * kBatch + r) % kRows);
    ASSERT_OK_AND_ASSIGN(ParameterSnapshot snapshot, client->Pull(10000));
    ASSERT_OK_AND_ASSIGN(GradientStep computed,
                         worker->ComputeGradients(snapshot.values, GatherRows(features, rows),
                                                  GatherRows(labels, rows)));
    ps_losses.push_back(computed.loss);
    ASSERT_OK(client->Push(snapshot, computed.gradients, 10000).status());
  }
  ASSERT_OK_AND_ASSIGN(ParameterSnapshot final_values, client->Pull(10000));
  EXPECT_EQ(final_values.global_step, kSteps);
  ASSERT_OK_AND_ASSIGN(EvalResult ps_eval,
                       worker->Evaluate(final_values.values, features, labels, kSteps, kBatch));

  ASSERT_EQ(ps_losses.size(), single_losses.size());
  for (size_t i = 0; i < ps_losses.size(); ++i) {
    EXPECT_NEAR(ps_losses[i], single_losses[i], 1e-5 * (1 + std::abs(single_losses[i])))
        << "training step " << i + 1;
  }
  // Inference reads the trained weights and the moving averages: both alike.
  EXPECT_NEAR(ps_eval.loss, single_eval.loss, 1e-5 * (1 + single_eval.loss));
  EXPECT_NE(single_losses.front(), single_losses.back());  // it did train
}

}  // namespace
}  // namespace actorflow
