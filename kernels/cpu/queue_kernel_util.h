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

// FailedPrecondition: the session has no QueueService (DirectSession).
Status NoQueueService(const Node& node);

// Records `status` (prefixed with the node) and completes the computation.
void FailAndDone(KernelContext* ctx, const Status& status, const std::function<void()>& done);

// Sets output i to components[i] after checking the count, dtypes and shapes
// against the node's inferred outputs (an error names the component).
void SetComponentOutputs(KernelContext* ctx, std::vector<Tensor> components);

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CPU_QUEUE_KERNEL_UTIL_H_
