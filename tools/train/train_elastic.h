// `actorflow train --cluster FILE --job worker --task I --elastic`: one worker of an
// elastic synchronous training (training/distributed/data_parallel.h's elastic loop). No
// recovery supervisor: the training goes on without a lost worker instead of
// restarting, and a worker started later joins it.
#ifndef ACTORFLOW_TOOLS_TRAIN_TRAIN_ELASTIC_H_
#define ACTORFLOW_TOOLS_TRAIN_TRAIN_ELASTIC_H_

#include <ostream>
#include <string>

#include "graph/status.h"
#include "placement/cluster_spec.h"
#include "tools/train/train_command.h"
#include "training/distributed/data_parallel.h"

namespace actorflow {

class StatusBoard;

namespace cli {

class TrainSummaries;

// Runs worker options.task to the end of the training and prints its result (a JSON
// line under --json, with "elastic", "min_workers", "membership_changes" and
// "updates_by_aggregated"; else text lines). Progress goes through `progress`.
Status TrainElasticWorker(const TrainCommandOptions& options, const ClusterSpec& cluster,
                          const DataParallelOptions& dp, const WorkerProgressFn& progress,
                          const LabeledData& train, const LabeledData& test,
                          TrainSummaries* summaries, StatusBoard* board, std::ostream& out);

// One progress line of an elastic worker: its batch, loss, global step, the
// version's members and the gradients averaged; or the pause it waits in.
std::string ElasticProgressLine(const WorkerProgress& p);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_TRAIN_TRAIN_ELASTIC_H_
