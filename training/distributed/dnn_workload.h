// The DNN classifier as a TrainingWorkload (kernels/training_workload.h): what each
// simulated data-parallel worker computes. One WorkerModel (training/distributed/worker_model.h)
// serves every worker (the parameters are fed, so workers share the graph); each
// worker reads its own shard of every epoch (training/data/data_shard.h), exactly as
// between-graph training with real processes does. With more workers than training
// rows, worker w reads the shard of w mod N of N one-row shards (a thousand
// simulated workers on Iris' 120 rows share them).
//
//   DNNWorkloadOptions options;
//   options.spec = spec; options.seed = 7; options.batch_size = 32;
//   options.num_workers = 4; options.train = train; options.test = test;
//   AF_ASSIGN_OR_RETURN(auto workload, NewDNNWorkload(options));
//
// Thread safety: one thread at a time.
#ifndef ACTORFLOW_TRAINING_DISTRIBUTED_DNN_WORKLOAD_H_
#define ACTORFLOW_TRAINING_DISTRIBUTED_DNN_WORKLOAD_H_

#include <cstdint>
#include <memory>

#include "graph/status.h"
#include "kernels/training_workload.h"
#include "training/distributed/data_parallel.h"
#include "training/estimators/model_spec.h"

namespace actorflow {

struct DNNWorkloadOptions {
  DNNModelSpec spec;
  uint64_t seed = 1;        // the initial weights and the epochs' shuffles
  int64_t batch_size = 32;  // rows per worker step
  int num_workers = 1;
  LabeledData train;
  LabeledData test;  // what Evaluate scores
};

// InvalidArgument naming the culprit: a spec ValidateModelSpec rejects, a batch size
// or worker count < 1, data of the wrong dtype or
// rank, a label outside [0, n_classes) (naming its row).
StatusOr<std::unique_ptr<TrainingWorkload>> NewDNNWorkload(const DNNWorkloadOptions& options);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DISTRIBUTED_DNN_WORKLOAD_H_
