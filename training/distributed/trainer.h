// The library trainer: between-graph data-parallel training of a workload on a
// cluster under a policy (training/distributed/trainer_options.h), the one
// composition behind `actorflow train --cluster ...` and any program that wants the
// same:
//
//   kAllReduce          no ps tasks: every member trains its own replica and the
//                       gradients are all-reduced among them
//                       (training/distributed/allreduce_trainer.h).
//   kInGraph            one client (this process) drives a tower per worker, the
//                       variables on the ps tasks
//                       (training/distributed/in_graph_trainer.h).
//   kSimulated          every task simulated in this process, in virtual time
//                       (actors/trainer/cluster_trainer.h runs it; the result's
//                       `simulation` holds the run).
//   kLocal cluster      the W workers on W threads (DataParallelJob); the result is
//                       the chief's evaluation and the shards' stats.
//   kSpec, kElastic     this process's worker joins the elastic sync training; a
//                       worker other than the chief that loses the ps tasks
//                       (Unavailable) rejoins as a new member within
//                       recovery.reconnect_timeout_ms.
//   kSpec, otherwise    this process's worker under the recovery supervisor
//                       (training/distributed/recovery.h): reconnects to lost ps
//                       tasks, restores from the chief's checkpoints, waits for lost
//                       workers; only the chief checkpoints.
//
// Train (actors/trainer/cluster_trainer.h) starts the cluster and connects to it;
// RunTrainerWorkers is the part that only needs a way to reach the ps tasks, so that
// it runs against any ParameterClient (tests: FakeParameterServer).
//
// Thread safety: one call at a time per options object; the callbacks in
// TrainerOptions are called from the workers' threads.
#ifndef ACTORFLOW_TRAINING_DISTRIBUTED_TRAINER_H_
#define ACTORFLOW_TRAINING_DISTRIBUTED_TRAINER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/status.h"
#include "kernels/parameter_client.h"
#include "training/distributed/data_parallel.h"
#include "training/distributed/recovery.h"
#include "training/distributed/trainer_options.h"

namespace actorflow {

// A simulated run's report and event log (kSimulated; defined in
// actors/trainer/cluster_trainer.h, which runs it).
struct SimulatedTrainerRun;

// kInGraph: the client's evaluation and training (steps run, the last batch's loss).
struct InGraphTrainerReport {
  EvalResult eval;
  TrainResult train;
  std::map<std::string, Tensor> parameters;  // the trained variables, by name
};

struct TrainerResult {
  // At the final parameters, on the test set (global_step includes a resumed
  // checkpoint's), and from the shards.
  double accuracy = 0.0;
  double loss = 0.0;             // mean test cross-entropy
  int64_t global_step = 0;
  int64_t updates_applied = 0;
  int64_t dropped_stale = 0;     // gradients computed on a version already replaced
  double mean_staleness = 0.0;
  std::vector<int> workers_lost;
  double seconds = 0.0;          // training and evaluation

  TrainerPlan plan;              // what ran (workers, the data-parallel options)
  DataParallelResult details;    // per-worker reports, the stats, the checkpoint (ps)
  // kAllReduce (which leaves the shards' fields and `details` empty): the chief's
  // evaluation, this process's members' reports, the all-reduces per step, whether
  // this process's replicas ended byte-identical and the weights' hash (which
  // replicas in other processes compare by).
  AllReduceTrainingResult allreduce;
  InGraphTrainerReport in_graph;  // kInGraph (which leaves the same fields empty)
  // kSimulated: the run's report (invariants, hang, per-worker counts, the
  // parameters) and event log; `seconds` is wall time, the virtual time is in it.
  std::shared_ptr<const SimulatedTrainerRun> simulation;
  // Set for a supervised kSpec worker (not kElastic): its failures and recoveries.
  bool supervised = false;
  RecoveryReport recovery;
};

// Opens worker `worker`'s connection to the ps tasks, waiting at most `timeout_ms`.
using ParameterServerConnector =
    std::function<StatusOr<std::unique_ptr<ParameterClient>>(int worker, int64_t timeout_ms)>;

// Runs the workers this process runs under `plan` (see the top of this file) and
// fills the result. `plan.data_parallel` needs its session factory; kAllReduce and
// kInGraph are InvalidArgument (RunAllReduceTrainer, RunInGraphTrainer run them).
// Errors: the
// workers' (a kLocal run fails only when no worker finished), the supervisor's, a
// rejoin that did not succeed in time.
StatusOr<TrainerResult> RunTrainerWorkers(const TrainerOptions& options, const TrainerPlan& plan,
                                          const ParameterServerConnector& connect,
                                          const LabeledData& train, const LabeledData& test);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DISTRIBUTED_TRAINER_H_
