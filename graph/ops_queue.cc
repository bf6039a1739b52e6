// Queue and reader ops: TensorFlow's queues (FIFOQueue, RandomShuffleQueue) and a
// text-line reader with CSV decoding. Kernels: kernels/cpu/queue_kernels.cc and
// reader_kernels.cc, through the task's QueueService (kernels/queue_service.h).
//
// A queue is named by (container, shared_name) within the task that runs its ops:
// queue ops must be placed on the queue's task (the builder functions colocate them
// with the queue's node). A queue node without a shared_name makes a queue private to
// the session, named by the node's name (the other ops name it so; they look for the
// session's own queue of that name first, then a shared one). Elements are lists of
// components, one dtype each.
//
// FIFOQueue / RandomShuffleQueue() -> (nothing): creates the queue on first run, or
//   checks that the existing one has the same parameters.
//   component_types: string list of dtype names; shapes: optional string list, one
//   per component, in Shape::ToString form ("[4]", "[]"); capacity: int (-1 =
//   unbounded); shared_name "" = the session's own, by the node's name; RandomShuffleQueue adds
//   min_after_dequeue and seed (ints, 0).
// QueueEnqueue(c0, c1, ...) / QueueEnqueueMany(c0 [n,...], c1 [n,...], ...):
//   waits while the queue is full. timeout_ms: int (0 = the session's
//   operation_timeout_in_ms).
// QueueDequeue() -> c0, c1, ...; QueueDequeueMany() -> c0 [n,...], ...: wait while
//   too few elements are there; OutOfRange once the queue is closed and too few are
//   left. component_types/shapes as the queue's; n: int >= 0; timeout_ms.
// QueueClose(): cancel_pending_enqueues: bool (false).
// QueueSize() -> int32 [].
// CsvReaderRead() -> one scalar per record_types entry: the next line of the files
//   named by the filename queue (queue_container/queue_name, elements int32 [] =
//   indices into `filenames`), decoded as CSV. skip_header_lines: int (0) per file;
//   the reader's position is a resource named container/shared_name, shared by every
//   session that names it; without a shared_name it is the session's own (keyed by
//   the node's name within the session: on a server, another client's reader of the
//   same name has its own position). OutOfRange when the filename queue is closed and
//   exhausted.
// All are stateful.
//
// The builder functions are in graph/queue_ops.cc.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "graph/op_registry.h"
#include "graph/op_set_internal.h"

namespace actorflow {
namespace op_set_internal {
namespace {

int ComponentCount(const AttrMap& attrs, const std::string& attr) {
  auto it = attrs.find(attr);
  if (it == attrs.end() || !it->second.Is<std::vector<std::string>>()) return 0;
  return static_cast<int>(it->second.Get<std::vector<std::string>>().size());
}

// The dtypes and shapes of a queue's (or a record's) components, from attrs.
Status ParseComponents(const InferenceContext& ctx, const std::string& types_attr,
                       std::vector<DType>* dtypes, std::vector<Shape>* shapes) {
  const auto& names = ctx.attr<std::vector<std::string>>(types_attr);
  if (names.empty()) {
    return InvalidArgument("attr '" + types_attr + "' is empty: give at least one component");
  }
  for (size_t i = 0; i < names.size(); ++i) {
    StatusOr<DType> dtype = DTypeFromName(names[i]);
    if (!dtype.ok()) {
      return dtype.status().WithContext("attr '" + types_attr + "' entry " + std::to_string(i));
    }
    dtypes->push_back(*dtype);
  }
  if (shapes == nullptr) return Status::OK();
  if (!ctx.has_attr("shapes")) {
    shapes->assign(dtypes->size(), Shape::UnknownRank());
    return Status::OK();
  }
  const auto& texts = ctx.attr<std::vector<std::string>>("shapes");
  if (texts.size() != names.size()) {
    return InvalidArgument("attr 'shapes' has " + std::to_string(texts.size()) + " entries for " +
                           std::to_string(names.size()) + " components: give one per component");
  }
  for (size_t i = 0; i < texts.size(); ++i) {
    StatusOr<Shape> shape = ParseShapeString(texts[i]);
    if (!shape.ok()) return shape.status().WithContext("attr 'shapes' entry " + std::to_string(i));
    shapes->push_back(std::move(shape).value());
  }
  return Status::OK();
}

Status CheckQueueName(const InferenceContext& ctx, const std::string& attr = "shared_name") {
  if (ctx.attr<std::string>(attr).empty()) {
    return InvalidArgument("attr '" + attr + "' is empty: a queue needs a name");
  }
  return Status::OK();
}

Status InferQueue(InferenceContext& ctx) {
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  AF_RETURN_IF_ERROR(ParseComponents(ctx, "component_types", &dtypes, &shapes));
  const int64_t capacity = ctx.attr<int64_t>("capacity");
  if (capacity == 0 || capacity < -1) {
    return InvalidArgument("attr 'capacity' is " + std::to_string(capacity) +
                           ": it must be >= 1, or -1 for unbounded");
  }
  if (ctx.has_attr("min_after_dequeue")) {
    const int64_t min_after = ctx.attr<int64_t>("min_after_dequeue");
    if (min_after < 0 || (capacity > 0 && min_after >= capacity)) {
      return InvalidArgument("attr 'min_after_dequeue' is " + std::to_string(min_after) +
                             ": it must be >= 0 and below the capacity (" +
                             std::to_string(capacity) + ")");
    }
  }
  return Status::OK();
}

Status InferEnqueue(InferenceContext& ctx, bool many) {
  AF_RETURN_IF_ERROR(CheckQueueName(ctx));
  for (int i = 0; many && i < ctx.num_inputs(); ++i) {
    const Shape& s = ctx.input_shape(i);
    if (!s.unknown_rank() && s.rank() < 1) {
      return InvalidArgument("input " + std::to_string(i) +
                             " is a scalar: QueueEnqueueMany takes [n, ...] per component");
    }
  }
  return Status::OK();
}

Status InferDequeue(InferenceContext& ctx, bool many) {
  AF_RETURN_IF_ERROR(CheckQueueName(ctx));
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  AF_RETURN_IF_ERROR(ParseComponents(ctx, "component_types", &dtypes, &shapes));
  int64_t n = 0;
  if (many) {
    n = ctx.attr<int64_t>("n");
    if (n < 0) return InvalidArgument("attr 'n' is " + std::to_string(n) + ": must be >= 0");
  }
  for (size_t i = 0; i < dtypes.size(); ++i) {
    Shape shape = shapes[i];
    if (many && !shape.unknown_rank()) {
      std::vector<int64_t> dims = {n};
      dims.insert(dims.end(), shape.dims().begin(), shape.dims().end());
      shape = Shape(std::move(dims));
    }
    ctx.set_output(static_cast<int>(i), dtypes[i], std::move(shape));
  }
  return Status::OK();
}

Status InferCsvReaderRead(InferenceContext& ctx) {
  AF_RETURN_IF_ERROR(CheckQueueName(ctx, "queue_name"));
  if (ctx.attr<std::vector<std::string>>("filenames").empty()) {
    return InvalidArgument("attr 'filenames' is empty: the reader needs files to read");
  }
  if (ctx.attr<int64_t>("skip_header_lines") < 0) {
    return InvalidArgument("attr 'skip_header_lines' must be >= 0");
  }
  std::vector<DType> dtypes;
  AF_RETURN_IF_ERROR(ParseComponents(ctx, "record_types", &dtypes, nullptr));
  for (size_t i = 0; i < dtypes.size(); ++i) {
    if (dtypes[i] == DType::kBool) {
      return InvalidArgument("attr 'record_types' entry " + std::to_string(i) +
                             " is bool: CSV columns are numbers (float32, float64, int32, int64)");
    }
    ctx.set_output(static_cast<int>(i), dtypes[i], Shape{});
  }
  return Status::OK();
}

std::vector<OpDef> QueueOpSet() {
  using T = AttrType;
  const std::vector<AttrDef> name = {Default("container", T::kString, AttrValue("")),
                                     Required("shared_name", T::kString)};
  auto with = [&name](std::vector<AttrDef> more) {
    std::vector<AttrDef> all = name;
    all.insert(all.end(), more.begin(), more.end());
    return all;
  };
  const AttrDef types = Required("component_types", T::kStringList);
  const AttrDef shapes = Optional("shapes", T::kStringList);
  const AttrDef timeout = Default("timeout_ms", T::kInt, AttrValue(int64_t{0}));

  // A queue node's shared_name may be empty: the node's own name.
  const std::vector<AttrDef> queue_attrs = {
      Default("container", T::kString, AttrValue("")),
      Default("shared_name", T::kString, AttrValue("")), types, shapes,
      Default("capacity", T::kInt, AttrValue(int64_t{-1}))};
  OpDef fifo = Stateful(MakeOp("FIFOQueue", 0, 0, queue_attrs, InferQueue));
  std::vector<AttrDef> shuffle_attrs = queue_attrs;
  shuffle_attrs.push_back(Default("min_after_dequeue", T::kInt, AttrValue(int64_t{0})));
  shuffle_attrs.push_back(Default("seed", T::kInt, AttrValue(int64_t{0})));
  OpDef shuffle = Stateful(MakeOp("RandomShuffleQueue", 0, 0, shuffle_attrs, InferQueue));
  OpDef enqueue = Stateful(MakeOp("QueueEnqueue", -1, 0, with({timeout}),
                                  [](InferenceContext& c) { return InferEnqueue(c, false); }));
  enqueue.min_inputs = 1;
  OpDef enqueue_many = Stateful(MakeOp("QueueEnqueueMany", -1, 0, with({timeout}),
                                       [](InferenceContext& c) { return InferEnqueue(c, true); }));
  enqueue_many.min_inputs = 1;
  OpDef dequeue = Stateful(MakeOp("QueueDequeue", 0, 1, with({types, shapes, timeout}),
                                  [](InferenceContext& c) { return InferDequeue(c, false); }));
  dequeue.num_outputs_fn = [](const AttrMap& a) { return ComponentCount(a, "component_types"); };
  OpDef dequeue_many =
      Stateful(MakeOp("QueueDequeueMany", 0, 1,
                      with({types, shapes, timeout, Required("n", T::kInt)}),
                      [](InferenceContext& c) { return InferDequeue(c, true); }));
  dequeue_many.num_outputs_fn = dequeue.num_outputs_fn;
  OpDef close = Stateful(MakeOp(
      "QueueClose", 0, 0, with({Default("cancel_pending_enqueues", T::kBool, AttrValue(false))}),
      [](InferenceContext& c) { return CheckQueueName(c); }));
  OpDef size = Stateful(MakeOp("QueueSize", 0, 1, name, [](InferenceContext& c) {
    AF_RETURN_IF_ERROR(CheckQueueName(c));
    c.set_output(0, DType::kInt32, Shape{});
    return Status::OK();
  }));
  OpDef reader = Stateful(MakeOp(
      "CsvReaderRead", 0, 1,
      {Required("filenames", T::kStringList), Default("queue_container", T::kString, AttrValue("")),
       Required("queue_name", T::kString), Required("record_types", T::kStringList),
       Default("skip_header_lines", T::kInt, AttrValue(int64_t{0})),
       Default("container", T::kString, AttrValue("")),
       Default("shared_name", T::kString, AttrValue(""))},
      InferCsvReaderRead));
  reader.num_outputs_fn = [](const AttrMap& a) { return ComponentCount(a, "record_types"); };

  std::vector<OpDef> ops;
  for (OpDef* def : {&fifo, &shuffle, &enqueue, &enqueue_many, &dequeue, &dequeue_many, &close,
                     &size, &reader}) {
    ops.push_back(std::move(*def));
  }
  return ops;
}

[[maybe_unused]] const bool kQueueOpsRegistered = [] {
  for (OpDef& def : QueueOpSet()) OpRegistration registration(std::move(def));
  return true;
}();

}  // namespace
}  // namespace op_set_internal
}  // namespace actorflow
