// Helpers shared by the queue and reader kernels (queue_kernels.cc,
// reader_kernels.cc): reading a queue's name and component attrs from a node, and
// finishing an asynchronous computation.
#ifndef ACTORFLOW_KERNELS_CPU_QUEUE_KERNEL_UTIL_H_
#define ACTORFLOW_KERNELS_CPU_QUEUE_KERNEL_UTIL_H_

#include <functional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"
#include "kernels/kernel.h"
#include "kernels/queue_service.h"

namespace actorflow {

// The queue named by the node's "container" and "shared_name" attrs.
QueueRef QueueRefOf(const Node& node);
// `queue` as the running step sees it: looked for first among the queues private to
// its session (KernelContext::session_scope, 0 = none).
QueueRef InSession(QueueRef queue, const KernelContext& ctx);

// Parses the dtype names of attr `types_attr` and, when present, the "shapes" attr
// (Shape::ToString form: "[4]", "[?,2]", "[]", "<unknown>"). Shape inference already
// checked them, so an error here means a node built around it.
Status ParseComponentAttrs(const Node& node, const std::string& types_attr,
                           std::vector<DType>* dtypes, std::vector<Shape>* shapes);

// The spec a creating node (FIFOQueue, ConditionalAccumulator, ...) asks for in the
// running step: a node without a shared_name (`is_private`) makes the session's own,
// under the session's container (TensorFlow 1), so another client's node of the same
// name on this task has its own and it goes when the session does.
QueueSpec SpecInSession(QueueSpec spec, bool is_private, const KernelContext& ctx);

// The completion of a request that answers only a Status: records a failure
// (prefixed with the node), then completes the computation.
std::function<void(const Status&)> DoneWithStatus(KernelContext* ctx, std::function<void()> done);

// FailedPrecondition: the session has no QueueService (DirectSession).
Status NoQueueService(const Node& node);

// Records `status` (prefixed with the node) and completes the computation.
void FailAndDone(KernelContext* ctx, const Status& status, const std::function<void()>& done);

// Sets output i to components[i] after checking the count, dtypes and shapes
// against the node's inferred outputs (an error names the component).
void SetComponentOutputs(KernelContext* ctx, std::vector<Tensor> components);

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CPU_QUEUE_KERNEL_UTIL_H_
