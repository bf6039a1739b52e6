// TensorFlow 1.x's tf.train.replica_device_setter for the C++ builder API: a device
// function (Scope::WithDeviceFunction) that puts every variable on a ps task and
// everything else on the worker's device, so that one model-building function serves
// every worker of a between-graph replicated cluster.
//
//   auto setter = ReplicaDeviceSetter(cluster, "/job:worker/task:" + std::to_string(k));
//   if (!setter.ok()) return setter.status();
//   Scope root = Scope::NewRootScope();
//   Scope model = root.WithDeviceFunction(*setter);
//   auto w = CreateVariable(model, "w", ...);  // /job:ps/task:0, its initializer too
//   auto b = CreateVariable(model, "b", ...);  // /job:ps/task:1 (with 2 ps tasks)
//   auto loss = ...;                            // /job:worker/task:k
//   auto train = GradientDescentOptimizer(0.1).Minimize(model, loss);
//   // gradients on the worker; each update beside its variable, on its ps task
//
// What goes where:
// - A node whose op is one of `ps_ops` (by default "Variable") goes to
//   "<ps_device>/task:<t>", t chosen by the strategy, merged with the node's own
//   request (fields the scope's WithDevice sets win; t is not used when that request
//   names another job).
// - A node built colocated with another (Scope::ColocateWith) or that updates a
//   variable through a ref input (its initializer Assign, optimizer updates, slots)
//   stays with it: the device function is not asked (graph/scope.h).
// - Every other node: `worker_device` merged with the node's own request.
//
// Strategies, applied as variables are created (the order of creation, unlike
// placement/ps_strategy.h's AssignVariablesToPs, which sees them all at once):
//   kRoundRobin   tasks 0, 1, ..., N-1, 0, ... (TensorFlow's default)
//   kGreedyBytes  the task holding the fewest bytes of variables so far, ties to the
//                 lowest index (TensorFlow's GreedyLoadBalancingStrategy, byte size)
//
// Thread safety: the returned function keeps the strategy's state; like the Scope
// it is given to, it is for one building thread at a time. Copies of the function
// share that state, so every sub-scope continues the same sequence.
#ifndef ACTORFLOW_PLACEMENT_REPLICA_DEVICE_SETTER_H_
#define ACTORFLOW_PLACEMENT_REPLICA_DEVICE_SETTER_H_

#include <string>
#include <vector>

#include "graph/scope.h"
#include "graph/status.h"
#include "placement/cluster_spec.h"
#include "placement/ps_strategy.h"

namespace actorflow {

struct ReplicaDeviceSetterOptions {
  // The number of ps tasks. 0: no ps task, every node goes to worker_device.
  int ps_tasks = 0;
  // The ps job (a device spec without a task), e.g. "/job:ps".
  std::string ps_device = "/job:ps";
  // Where everything but the variables goes, e.g. "/job:worker/task:0"; may be empty
  // (the placer's default device).
  std::string worker_device = "/job:worker";
  PsStrategy strategy = PsStrategy::kRoundRobin;
  // The ops that live on ps tasks.
  std::vector<std::string> ps_ops = {"Variable"};
};

// The device function. InvalidArgument naming the option for ps_tasks < 0, a
// ps_device or worker_device that is not a device spec, or a ps_device that names a
// task (the strategy picks it).
StatusOr<Scope::DeviceFunction> ReplicaDeviceSetter(const ReplicaDeviceSetterOptions& options);

// The same with ps_tasks = the number of tasks of `cluster`'s "ps" job (0 when it
// has none) and ps_device "/job:ps".
StatusOr<Scope::DeviceFunction> ReplicaDeviceSetter(const ClusterSpec& cluster,
                                                    const std::string& worker_device,
                                                    PsStrategy strategy = PsStrategy::kRoundRobin);

}  // namespace actorflow

#endif  // ACTORFLOW_PLACEMENT_REPLICA_DEVICE_SETTER_H_
