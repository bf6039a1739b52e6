// The ParameterClient of kernels/parameter_client.h over parameter shard actors on
// the ps tasks of a cluster: real `actorflow server` processes, or the Servers of a
// LocalCluster (they are real Servers on loopback, so both are the same code path).
//
// ConnectParameterServers starts an actor system of its own (with CAF's middleman),
// connects to every ps task's front actor, and gets or creates there the shard named
// `client_options.shard_name` with the options' update protocol (every worker of a
// model must pass equal options: a shard created with other ones refuses). Then:
//   Register(w)    a tiny actor stands for the worker; every shard monitors it, so a
//                  worker whose process dies is noticed (lost); the client's
//                  destructor leaves gracefully (not counted as lost).
//   Initialize     assigns the variables to the ps tasks with ps_strategy
//                  (placement/ps_strategy.h; round robin by default) and creates them
//                  on their shards; every shard is told, even one that holds none.
//                  AlreadyExists when a shard was already initialized (its values
//                  are kept: a restarted chief must not reset the model).
//   Pull           every variable from every shard, and the shard versions. Waits for
//                  the chief's Initialize. Under kSync the snapshot is consistent: a
//                  shard behind the others is asked again for their version.
//   Push           needs Register first and a snapshot from this client's own Pull;
//                  one gradient for every variable the last Pull returned (push zeros
//                  for one the loss does not use), each of its shape and dtype (checked here,
//                  before any shard sees the push, so that nothing is applied on any shard;
//                  InvalidArgument naming the variable). PushResult: applied = every
//                  shard applied it; staleness = the largest; global_step = the
//                  largest shard version. An SSP push whose answer waited past its
//                  deadline was applied on arrival: it is reported applied.
//   Stats          updates_applied and gradients_dropped_stale: the largest over the
//                  shards (each shard counts every push); mean_staleness over all
//                  applied gradients; workers_lost: the union.
// Large pushes (bulk_min_bytes) on plain clusters: a ps task's share of the gradients
// is written on its bulk channel and the reply's values come back on a receiver of
// this client (actors/ps/bulk_gradients.h), beside the push message: off CAF's broker
// threads and without their copies. Whatever the channel cannot carry goes over CAF;
// the results are the same either way.
// Timeouts: the shards answer a parked request with DeadlineExceeded (saying what it
// waited for) at timeout_ms; the client gives up on its own 250 ms later. A call with
// timeout_ms <= 0 waits without a deadline (a ps task going down still ends it, with
// Unavailable naming the task); Register and Initialize wait at most max(the connect
// timeout, 10 s). A shard that went down stays down for this client (its variables
// died with it): reconnect with a new client.
//
// CAF-free header. Thread safety: as ParameterClient (one thread per client).
#ifndef ACTORFLOW_ACTORS_PS_PARAMETER_CLIENT_IMPL_H_
#define ACTORFLOW_ACTORS_PS_PARAMETER_CLIENT_IMPL_H_

#include <cstdint>
#include <memory>
#include <string>

#include "graph/status.h"
#include "kernels/parameter_client.h"
#include "placement/cluster_spec.h"
#include "placement/ps_strategy.h"

namespace actorflow {

struct ParameterClientOptions {
  // How Initialize spreads the variables over the ps tasks.
  PsStrategy strategy = PsStrategy::kRoundRobin;
  // The shard's key on every ps task, "container/name"; ResetCluster of the
  // container drops it. Clients of one model use the same name.
  std::string shard_name = "parameters/model";
  // 2: every shard gets a standby on the next ps task (a copy after every update, see
  // actors/protocol/shard_messages.h), which FailOver switches to when the shard's task dies.
  // Needs 2 or more ps tasks.
  int ps_replicas = 1;
  // Without a standby, FailOver replaces a lost shard by an empty one
  // ("<shard>/replacement_of_<i>") on the next live ps task, for the chief to restore
  // from a checkpoint. Off: a lost shard stays lost for this client.
  bool replace_lost_shards = false;
  // A push whose gradients for one ps task total this many bytes or more writes them
  // on that task's bulk channel (actors/ps/bulk_gradients.h), beside the push message,
  // when the task has one (plain clusters; servers with transport security do not
  // open it). A gradient the channel cannot carry goes over CAF instead. 0: never.
  int64_t bulk_min_bytes = int64_t{256} << 10;
  // Where this client listens for the values of push-and-pull replies that a ps task
  // writes on its bulk channel instead of in the reply (the same size rule). Empty:
  // 127.0.0.1 when every ps task is on a loopback address, otherwise no listener
  // (the values stay in the replies). Set it to this worker's host on other clusters.
  std::string bulk_reply_host;
};

// Connects to every task of `ps_job` in `cluster` within `timeout_ms`.
// Errors: InvalidArgument for bad options (replicas_to_aggregate > total_replicas,
// an unknown optimizer, ...) or a cluster without `ps_job`; Unavailable naming the
// ps task ("/job:ps/task:1 at host:port") that cannot be reached before the deadline;
// FailedPrecondition when a ps task already has the shard with other options.
StatusOr<std::unique_ptr<ParameterClient>> ConnectParameterServers(
    const ClusterSpec& cluster, const std::string& ps_job, const ParameterServerOptions& options,
    int64_t timeout_ms, const ParameterClientOptions& client_options = ParameterClientOptions());

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_PS_PARAMETER_CLIENT_IMPL_H_
