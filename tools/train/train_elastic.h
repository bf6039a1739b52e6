// What `actorflow train --cluster FILE --job worker --task I --elastic` shows of one
// worker of an elastic synchronous training (the library trainer's kElastic policy,
// training/distributed/trainer.h): its progress lines and its result. No recovery
// supervisor: the training goes on without a lost worker instead of restarting, and a
// worker started later joins it.
#ifndef ACTORFLOW_TOOLS_TRAIN_TRAIN_ELASTIC_H_
#define ACTORFLOW_TOOLS_TRAIN_TRAIN_ELASTIC_H_

#include <ostream>
#include <string>

#include "tools/train/train_command.h"
#include "training/distributed/data_parallel.h"

namespace actorflow {
namespace cli {

class TrainSummaries;

// The end of worker options.task's run: its TensorBoard scalars (accuracy,
// updates_applied, membership_changes) and its result (a JSON line under --json, with
// "elastic", "min_workers", "membership_changes" and "updates_by_aggregated"; else
// text lines).
void ReportElasticResult(const TrainCommandOptions& options, const DataParallelOptions& dp,
                         const DataParallelResult& result, TrainSummaries* summaries,
                         std::ostream& out);

// One progress line of an elastic worker: its batch, loss, global step, the
// version's members and the gradients averaged; or the pause it waits in.
std::string ElasticProgressLine(const WorkerProgress& p);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_TRAIN_TRAIN_ELASTIC_H_
