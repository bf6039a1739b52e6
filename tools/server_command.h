// `actorflow server`: one task of a cluster (TensorFlow's tf.train.Server).
//
//   actorflow server --cluster FILE --job NAME --task I [--devices cpu=N]
//   actorflow server            (cluster and task from the TF_CONFIG variable)
//
// Publishes the task's front actor on the address the cluster spec gives it (bound
// to that host only), prints one flushed line
//   actorflow server ready: actorflow://HOST:PORT job=NAME task=I
// and serves until SIGTERM or SIGINT, then shuts down cleanly (exit 0).
//
// --max-message-bytes, --max-connections, --max-graph-nodes and --max-tensor-bytes
// bound what peers and clients may send (actors/transport/server_limits.h).
#ifndef ACTORFLOW_TOOLS_SERVER_COMMAND_H_
#define ACTORFLOW_TOOLS_SERVER_COMMAND_H_

#include "tools/cli/cli_common.h"

namespace actorflow {
namespace cli {

Subcommand AddServerSubcommand(CLI::App* parent);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_SERVER_COMMAND_H_
