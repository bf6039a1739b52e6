// The builder functions of the queue and reader ops (declared in graph/ops.h).
#include <string>
#include <utility>
#include <vector>

#include "graph/ops.h"

namespace actorflow {
namespace {

std::vector<std::string> DTypeNames(const std::vector<DType>& dtypes) {
  std::vector<std::string> names;
  for (DType d : dtypes) names.push_back(DTypeName(d));
  return names;
}

std::vector<std::string> ShapeStrings(const std::vector<Shape>& shapes) {
  std::vector<std::string> out;
  for (const Shape& s : shapes) out.push_back(s.ToString());
  return out;
}

Queue MakeQueue(const Scope& scope, const std::string& op, const std::vector<DType>& dtypes,
                const std::vector<Shape>& shapes, AttrMap attrs, const std::string& shared_name,
                const std::string& container) {
  attrs["component_types"] = DTypeNames(dtypes);
  if (!shapes.empty()) attrs["shapes"] = ShapeStrings(shapes);
  attrs["shared_name"] = shared_name;  // "": the session's own queue, as in TensorFlow 1
  attrs["container"] = container;
  const Node* node = scope.AddNode(op, {}, std::move(attrs));
  if (node == nullptr) return {};
  const std::string name = shared_name.empty() ? node->name() : shared_name;
  return Queue{node, container, name, dtypes, shapes};
}

// The scope of an op on `queue`: the queue node's device, colocated with it, after it.
StatusOr<Scope> OnQueue(const Scope& scope, const Queue& queue, const char* op) {
  if (!scope.ok()) return scope.status();
  if (!queue.valid()) {
    return InvalidArgument(std::string(op) + ": the queue is invalid (its creation failed?)");
  }
  Output q(queue.node, 0);
  return scope.WithDevice(queue.node->requested_device())
      .ColocateWith(q)
      .WithControlDependencies({q});
}

AttrMap QueueNameAttrs(const Queue& queue) {
  return {{"container", queue.container}, {"shared_name", queue.shared_name}};
}

const Node* Enqueue(const Scope& scope, const char* op, const Queue& queue,
                    const std::vector<Input>& components, int64_t timeout_ms) {
  StatusOr<Scope> on = OnQueue(scope, queue, op);
  if (!on.ok()) {
    scope.UpdateStatus(on.status());
    return nullptr;
  }
  AttrMap attrs = QueueNameAttrs(queue);
  attrs["timeout_ms"] = timeout_ms;
  return on->AddNode(op, components, std::move(attrs));
}

std::vector<Output> Outputs(const Node* node) {
  std::vector<Output> out;
  if (node == nullptr) return out;
  for (int i = 0; i < node->num_outputs(); ++i) out.emplace_back(node, i);
  return out;
}

std::vector<Output> Dequeue(const Scope& scope, const char* op, const Queue& queue, AttrMap more) {
  StatusOr<Scope> on = OnQueue(scope, queue, op);
  if (!on.ok()) {
    scope.UpdateStatus(on.status());
    return {};
  }
  AttrMap attrs = QueueNameAttrs(queue);
  attrs["component_types"] = DTypeNames(queue.dtypes);
  if (!queue.shapes.empty()) attrs["shapes"] = ShapeStrings(queue.shapes);
  for (auto& [k, v] : more) attrs[k] = std::move(v);
  return Outputs(on->AddNode(op, {}, std::move(attrs)));
}

}  // namespace

Queue FIFOQueue(const Scope& scope, const std::vector<DType>& dtypes,
                const std::vector<Shape>& shapes, int64_t capacity, const std::string& shared_name,
                const std::string& container) {
  return MakeQueue(scope, "FIFOQueue", dtypes, shapes, {{"capacity", capacity}}, shared_name,
                   container);
}

Queue RandomShuffleQueue(const Scope& scope, const std::vector<DType>& dtypes,
                         const std::vector<Shape>& shapes, int64_t capacity,
                         int64_t min_after_dequeue, int64_t seed, const std::string& shared_name,
                         const std::string& container) {
  return MakeQueue(scope, "RandomShuffleQueue", dtypes, shapes,
                   {{"capacity", capacity},
                    {"min_after_dequeue", min_after_dequeue},
                    {"seed", seed}},
                   shared_name, container);
}

const Node* QueueEnqueue(const Scope& scope, const Queue& queue,
                         const std::vector<Input>& components, int64_t timeout_ms) {
  return Enqueue(scope, "QueueEnqueue", queue, components, timeout_ms);
}

const Node* QueueEnqueueMany(const Scope& scope, const Queue& queue,
                             const std::vector<Input>& components, int64_t timeout_ms) {
  return Enqueue(scope, "QueueEnqueueMany", queue, components, timeout_ms);
}

std::vector<Output> QueueDequeue(const Scope& scope, const Queue& queue, int64_t timeout_ms) {
  return Dequeue(scope, "QueueDequeue", queue, {{"timeout_ms", timeout_ms}});
}

std::vector<Output> QueueDequeueMany(const Scope& scope, const Queue& queue, int64_t n,
                                     int64_t timeout_ms) {
  return Dequeue(scope, "QueueDequeueMany", queue, {{"timeout_ms", timeout_ms}, {"n", n}});
}

const Node* QueueClose(const Scope& scope, const Queue& queue, bool cancel_pending_enqueues) {
  StatusOr<Scope> on = OnQueue(scope, queue, "QueueClose");
  if (!on.ok()) {
    scope.UpdateStatus(on.status());
    return nullptr;
  }
  AttrMap attrs = QueueNameAttrs(queue);
  attrs["cancel_pending_enqueues"] = cancel_pending_enqueues;
  return on->AddNode("QueueClose", {}, std::move(attrs));
}

Output QueueSize(const Scope& scope, const Queue& queue) {
  StatusOr<Scope> on = OnQueue(scope, queue, "QueueSize");
  if (!on.ok()) {
    scope.UpdateStatus(on.status());
    return Output();
  }
  return Output(on->AddNode("QueueSize", {}, QueueNameAttrs(queue)), 0);
}

std::vector<Output> CsvReaderRead(const Scope& scope, const std::vector<std::string>& filenames,
                                  const Queue& filename_queue,
                                  const std::vector<DType>& record_types,
                                  int64_t skip_header_lines, const std::string& shared_name) {
  StatusOr<Scope> on = OnQueue(scope, filename_queue, "CsvReaderRead");
  if (!on.ok()) {
    scope.UpdateStatus(on.status());
    return {};
  }
  AttrMap attrs;
  attrs["filenames"] = filenames;
  attrs["queue_container"] = filename_queue.container;
  attrs["queue_name"] = filename_queue.shared_name;
  attrs["record_types"] = DTypeNames(record_types);
  attrs["skip_header_lines"] = skip_header_lines;
  if (!shared_name.empty()) attrs["shared_name"] = shared_name;
  return Outputs(on->AddNode("CsvReaderRead", {}, std::move(attrs)));
}

}  // namespace actorflow
