// `actorflow serve` and `actorflow export`: exported model versions behind TensorFlow
// Serving's REST API (tools/serve/serving_http.h, actors/serving/model_server.h).
//
//   actorflow export --model-base-path BASE [--version N] --checkpoint-dir DIR
//   actorflow export --model-base-path BASE [--version N] --graph G.json
//                    [--checkpoint-dir DIR] --input NAME=NODE... --output NAME=NODE...
//     writes BASE/<version>/ atomically (training/serving/servable.h) and prints
//     "exported version N to BASE/N".
//
//   actorflow serve --model-name NAME --model-base-path BASE [--rest-api-port 8501]
//                   [--model-config-file FILE] [--file-system-poll-wait-seconds 1]
//                   [--devices cpu=N] [--replicas-per-device K]
//                   [--enable-batching --max-batch-size B --batch-timeout-micros T
//                    --max-enqueued-batches Q] [--cluster FILE --job worker]
//     serves until SIGINT/SIGTERM; prints "actorflow serve: listening on
//     http://HOST:PORT" once it answers (with --rest-api-port 0, PORT is the one taken).
//     A model whose base path is missing still starts: its status says why.
//     With --cluster, the replicas run on the job's tasks (each an `actorflow server`
//     of that cluster file): K sessions per task over every loaded version.
#ifndef ACTORFLOW_TOOLS_SERVE_SERVE_COMMAND_H_
#define ACTORFLOW_TOOLS_SERVE_SERVE_COMMAND_H_

#include "tools/cli/cli_common.h"

namespace actorflow {
namespace cli {

Subcommand AddServeSubcommand(CLI::App* parent);
Subcommand AddExportSubcommand(CLI::App* parent);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_SERVE_SERVE_COMMAND_H_
