// `actorflow train --cluster local:worker=W --mode allreduce`: collective data
// parallelism, no parameter servers, by the library trainer's kAllReduce policy
// (actors/trainer/cluster_trainer.h, training/distributed/allreduce_trainer.h): this
// file maps the flags onto TrainerOptions and prints the result. The W workers are
// tasks of a LocalCluster started here (real servers on 127.0.0.1, so gradient
// chunks cross the loopback network as between separate processes); worker r's
// thread trains its replica through a session on task r's master.
// `--cluster FILE --job worker --task I`: this process is worker I only; it serves
// task I itself (the file's address) and trains its replica there, the others run
// the same command with their --task. Every process prints its own result; their
// "weights_hash" values match when the replicas agree. With --devices cpu=N every
// task has N CPU devices and every one is a member (W × N replicas; member r is
// CPU r mod N of task r / N). Gradients travel in buckets of --bucket-mb MiB
// (default 25, DDP's), each one all-reduce.
//
// Output: one line per worker of this process ("worker r: N steps, S s"), one
// "all-reduce: ..." line (buckets per step, whether this process's replicas ended
// byte-identical, the weights' hash), then the test accuracy line; with --json one
// object: ResultJsonHead's keys, "mode", "workers" (members), "tasks", "epochs",
// "examples", "buckets", "bucket_mb", "replicas_identical", "weights_hash" and
// "worker_reports" (this process's workers: "worker", "steps", "seconds").
#ifndef ACTORFLOW_TOOLS_TRAIN_TRAIN_ALLREDUCE_H_
#define ACTORFLOW_TOOLS_TRAIN_TRAIN_ALLREDUCE_H_

#include <ostream>

#include "graph/status.h"
#include "tools/train/train_command.h"
#include "training/distributed/data_parallel.h"
#include "training/estimators/model_spec.h"

namespace actorflow {
namespace cli {

// The flags --mode allreduce takes: InvalidArgument naming the flag for a local
// cluster other than local:worker=W (a ps job included: all-reduce keeps no
// variables on ps tasks), a cluster file without --task, --replicas-to-aggregate, --task, --devices naming GPUs, or --bucket-mb
// <= 0. (--elastic needs a cluster file, whose tasks are processes that come and go;
// the elastic all-reduce trainer is TrainWithAllReduce's `elastic`.)
Status CheckAllReduceFlags(const TrainCommandOptions& options);

Status TrainAllReduceOnCluster(const TrainCommandOptions& options, const DNNModelSpec& spec,
                               const LabeledData& train, const LabeledData& test,
                               std::ostream& out, std::ostream& progress);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_TRAIN_TRAIN_ALLREDUCE_H_
