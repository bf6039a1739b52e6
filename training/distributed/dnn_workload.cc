#include "training/distributed/dnn_workload.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "kernels/direct_session.h"
#include "training/data/data_shard.h"
#include "training/distributed/worker_model.h"

namespace actorflow {
namespace {

class DNNWorkload : public TrainingWorkload {
 public:
  DNNWorkload(DNNWorkloadOptions options, std::unique_ptr<WorkerModel> model)
      : options_(std::move(options)), model_(std::move(model)) {
    // Forward 2 and backward 4 operations per weight and row (the dense layers).
    int64_t in = static_cast<int64_t>(options_.spec.feature_columns.size());
    double weights = 0;
    for (int64_t units : options_.spec.hidden_units) {
      weights += static_cast<double>(in) * units;
      in = units;
    }
    weights += static_cast<double>(in) * options_.spec.n_classes;
    flops_ = 6.0 * weights * static_cast<double>(options_.batch_size);
  }

  Status Init() {
    for (int w = 0; w < options_.num_workers; ++w) {
      AF_ASSIGN_OR_RETURN(ShardedBatches batches, ShardOf(w));
      shards_.push_back(std::move(batches));
      next_step_.push_back(0);
    }
    return Status::OK();
  }

  // Worker w's shard: a disjoint 1/W of every epoch; with more workers than rows,
  // the shard of w mod N of N one-row shards (workers then share rows).
  StatusOr<ShardedBatches> ShardOf(int w) const {
    const int64_t rows = options_.train.features.shape().rank() > 0 ? options_.train.features.dim(0) : 0;
    const int shards = static_cast<int>(std::min<int64_t>(options_.num_workers, std::max<int64_t>(rows, 1)));
    ShardOptions shard;
    shard.batch_size = options_.batch_size;
    shard.seed = options_.seed;
    shard.worker = w % shards;
    shard.num_workers = shards;
    return ShardedBatches::Create(options_.train.features, options_.train.labels, shard);
  }

  // Drawn once: the initializers' random ops go on drawing, and every caller (the
  // simulator's sizing, the chief) must see the values DNNClassifier starts from.
  StatusOr<std::map<std::string, Tensor>> InitialValues() override {
    if (initial_.empty()) {
      AF_ASSIGN_OR_RETURN(initial_, model_->InitialValues());
    }
    return initial_;
  }

  StatusOr<WorkloadGradients> ComputeGradients(
      int worker, int64_t step, const std::map<std::string, Tensor>& parameters) override {
    if (worker < 0 || worker >= options_.num_workers) {
      return InvalidArgument("worker " + std::to_string(worker) + " is not one of the " +
                             std::to_string(options_.num_workers) + " workers");
    }
    if (step < next_step_[worker]) {
      // A worker that went back (restarted with fewer steps counted): start its
      // shard over and walk to the batch.
      AF_ASSIGN_OR_RETURN(shards_[worker], ShardOf(worker));
      next_step_[worker] = 0;
    }
    shards_[worker].Skip(step - next_step_[worker]);
    Batch batch;
    shards_[worker].Next(&batch);
    next_step_[worker] = step + 1;
    AF_ASSIGN_OR_RETURN(GradientStep computed,
                        model_->ComputeGradients(parameters, batch.features, batch.labels));
    WorkloadGradients out;
    out.loss = computed.loss;
    out.gradients = std::move(computed.gradients);
    return out;
  }

  StatusOr<WorkloadEvaluation> Evaluate(const std::map<std::string, Tensor>& parameters) override {
    AF_ASSIGN_OR_RETURN(EvalResult eval, model_->Evaluate(parameters, options_.test.features,
                                                          options_.test.labels, 0));
    WorkloadEvaluation out;
    out.accuracy = eval.accuracy;
    out.loss = eval.loss;
    return out;
  }

  double FlopsPerStep() const override { return flops_; }

 private:
  DNNWorkloadOptions options_;
  std::unique_ptr<WorkerModel> model_;
  std::vector<ShardedBatches> shards_;
  std::vector<int64_t> next_step_;
  std::map<std::string, Tensor> initial_;
  double flops_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<TrainingWorkload>> NewDNNWorkload(const DNNWorkloadOptions& options) {
  AF_RETURN_IF_ERROR(ValidateModelSpec(options.spec));
  if (options.batch_size < 1) {
    return InvalidArgument("batch size " + std::to_string(options.batch_size) + " is below 1");
  }
  if (options.num_workers < 1) {
    return InvalidArgument("a workload needs at least 1 worker, got " +
                           std::to_string(options.num_workers));
  }
  AF_RETURN_IF_ERROR(CheckLabelRange(options.train, options.spec.n_classes, "training"));
  AF_RETURN_IF_ERROR(CheckLabelRange(options.test, options.spec.n_classes, "test"));
  SessionFactory direct = [](const Graph* graph) -> StatusOr<std::unique_ptr<Session>> {
    return NewDirectSession(graph);
  };
  AF_ASSIGN_OR_RETURN(std::unique_ptr<WorkerModel> model,
                      WorkerModel::Create(options.spec, options.seed, direct, /*timeout_ms=*/0));
  auto workload = std::make_unique<DNNWorkload>(options, std::move(model));
  AF_RETURN_IF_ERROR(workload->Init());
  return std::unique_ptr<TrainingWorkload>(std::move(workload));
}

}  // namespace actorflow
