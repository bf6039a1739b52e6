#include "training/distributed/allreduce_training.h"

#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "graph/ops.h"
#include "training/data/data_shard.h"
#include "training/distributed/allreduce_optimizer.h"
#include "training/estimators/dnn_model.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// One worker's replica: its graph, session and the names it runs.
struct Replica {
  Scope root = Scope::NewRootScope();
  DNNModel model;
  std::unique_ptr<AllReduceOptimizer> optimizer;
  std::unique_ptr<Session> session;
  RunOptions run;
};

Status BuildReplica(const AllReduceTrainingOptions& options, int worker, Replica* replica) {
  const Scope s = replica->root.WithDevice(options.devices[worker]);
  AF_ASSIGN_OR_RETURN(replica->model, BuildDNNModel(s, options.spec, options.seed));
  AF_ASSIGN_OR_RETURN(Output step, CreateGlobalStep(s));
  AF_ASSIGN_OR_RETURN(std::unique_ptr<Optimizer> inner,
                      MakeOptimizer(options.optimizer, options.learning_rate));
  AllReduceOptions all_reduce;
  all_reduce.group = CollectiveGroup{"allreduce_training", options.devices};
  all_reduce.bucket_bytes = options.bucket_bytes;
  all_reduce.algorithm = options.algorithm;
  replica->optimizer = std::make_unique<AllReduceOptimizer>(std::move(inner), all_reduce);
  AF_RETURN_IF_ERROR(
      replica->optimizer->Minimize(s.WithOpName("train"), replica->model.loss, step).status());
  AF_RETURN_IF_ERROR(BroadcastGlobalVariables(s.WithOpName("broadcast"), all_reduce.group).status());
  GlobalVariablesInitializer(replica->root.WithOpName("init"));
  AF_RETURN_IF_ERROR(replica->root.status());
  AF_ASSIGN_OR_RETURN(replica->session, options.session_factories[worker](replica->root.graph()));
  replica->run.timeout_in_ms = options.timeout_ms;
  return Status::OK();
}

Status Run(Replica& r, const FeedList& feeds, const std::vector<std::string>& fetches,
           const std::vector<std::string>& targets, std::vector<Tensor>* out) {
  return r.session->Run(r.run, feeds, fetches, targets, out, nullptr);
}

StatusOr<EvalResult> Evaluate(Replica& r, const LabeledData& test) {
  const int64_t n = test.labels.NumElements();
  if (n == 0) return InvalidArgument("the test set has no example");
  EvalResult result;
  double loss_sum = 0.0;
  int64_t correct = 0;
  for (int64_t begin = 0; begin < n; begin += 256) {
    std::vector<int64_t> rows;
    for (int64_t i = begin; i < std::min(n, begin + 256); ++i) rows.push_back(i);
    Tensor y = GatherRows(test.labels, rows);
    std::vector<Tensor> out;
    AF_RETURN_IF_ERROR(Run(r, {{kDNNFeatures, GatherRows(test.features, rows)}, {kDNNLabels, y}},
                           {kDNNExampleLoss, kDNNClassIds, "global_step"}, {}, &out));
    for (size_t i = 0; i < rows.size(); ++i) {
      loss_sum += out[0].data<float>()[i];
      if (out[1].data<int64_t>()[i] == y.data<int32_t>()[i]) ++correct;
    }
    result.global_step = out[2].data<int64_t>()[0];
  }
  result.num_examples = n;
  result.accuracy = static_cast<double>(correct) / static_cast<double>(n);
  result.loss = loss_sum / static_cast<double>(n);
  return result;
}

// Worker `w`'s whole run: build, initialize, take the chief's values, train.
Status RunWorker(const AllReduceTrainingOptions& options, int w, const LabeledData& train,
                 Replica* replica, AllReduceWorkerReport* report, std::mutex* progress_mu) {
  const auto start = std::chrono::steady_clock::now();
  AF_RETURN_IF_ERROR(BuildReplica(options, w, replica));
  AF_RETURN_IF_ERROR(Run(*replica, {}, {}, {"init"}, nullptr));
  AF_RETURN_IF_ERROR(Run(*replica, {}, {}, {"broadcast"}, nullptr));
  ShardOptions shard;
  shard.batch_size = options.batch_size;
  shard.seed = options.seed;
  shard.worker = w;
  shard.num_workers = static_cast<int>(options.devices.size());
  AF_ASSIGN_OR_RETURN(ShardedBatches batches,
                      ShardedBatches::Create(train.features, train.labels, shard));
  const int64_t planned = batches.steps_per_epoch() * options.epochs;
  Batch batch;
  for (int64_t step = 1; step <= planned; ++step) {
    batches.Next(&batch);
    std::vector<Tensor> out;
    AF_RETURN_IF_ERROR(Run(*replica, {{kDNNFeatures, batch.features}, {kDNNLabels, batch.labels}},
                           {kDNNLoss}, {"train"}, &out)
                           .WithContext("worker " + std::to_string(w) + " step " +
                                        std::to_string(step)));
    report->steps = step;
    if (options.progress) {
      std::lock_guard<std::mutex> lock(*progress_mu);
      options.progress(w, step, planned, out[0].data<float>()[0]);
    }
  }
  report->seconds = SecondsSince(start);
  return Status::OK();
}

bool SameBytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
}

}  // namespace

StatusOr<AllReduceTrainingResult> TrainWithAllReduce(const AllReduceTrainingOptions& options,
                                                     const LabeledData& train,
                                                     const LabeledData& test) {
  const int workers = static_cast<int>(options.devices.size());
  if (workers == 0) return InvalidArgument("all-reduce training needs at least one worker device");
  if (options.session_factories.size() != options.devices.size()) {
    return InvalidArgument("all-reduce training needs one session factory per worker device (" +
                           std::to_string(options.session_factories.size()) + " for " +
                           std::to_string(workers) + ")");
  }
  if (options.batch_size < 1 || options.epochs < 1) {
    return InvalidArgument("batch size " + std::to_string(options.batch_size) + " and epochs " +
                           std::to_string(options.epochs) + ": both must be >= 1");
  }
  if (train.features.dim(0) < workers * options.batch_size) {
    return InvalidArgument(std::to_string(train.features.dim(0)) +
                           " training rows are fewer than the workers × batch size (" +
                           std::to_string(workers) + " × " +
                           std::to_string(options.batch_size) + ")");
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<Replica> replicas(workers);
  AllReduceTrainingResult result;
  result.workers.resize(workers);
  std::mutex progress_mu;
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    result.workers[w].worker = w;
    threads.emplace_back([&, w] {
      result.workers[w].status =
          RunWorker(options, w, train, &replicas[w], &result.workers[w], &progress_mu);
    });
  }
  for (std::thread& t : threads) t.join();
  for (const AllReduceWorkerReport& report : result.workers) AF_RETURN_IF_ERROR(report.status);
  result.seconds = SecondsSince(start);
  result.buckets = static_cast<int64_t>(replicas[0].optimizer->buckets().size());

  std::vector<std::string> names;
  for (const Output& v : replicas[0].model.variables) names.push_back(v.node->name());
  std::vector<Tensor> chief;
  AF_RETURN_IF_ERROR(Run(replicas[0], {}, names, {}, &chief));
  result.replicas_identical = true;
  for (int w = 1; w < workers; ++w) {
    std::vector<Tensor> other;
    AF_RETURN_IF_ERROR(Run(replicas[w], {}, names, {}, &other));
    for (size_t i = 0; i < names.size(); ++i) {
      result.replicas_identical = result.replicas_identical && SameBytes(chief[i], other[i]);
    }
  }
  AF_ASSIGN_OR_RETURN(result.eval, Evaluate(replicas[0], test));
  return result;
}

}  // namespace actorflow
