// Dataset ops: the graph side of training/data/dataset.h (TensorFlow's tf.data).
//
// IteratorGetNext() -> one output per component of the dataset's elements.
//   iterator_id: string: names the iterator resource in the step's ResourceManager
//     and the dataset it iterates (training/data/iterator_ops.h keeps the registry).
//   output_dtypes: string list of dtype names, one per component ("float32", ...).
//   output_shapes: string list in Shape::ToString form, one per component: "[?,4]",
//     "[]", "<unknown>" ("?" or -1 = unknown dim). Absent = every rank unknown.
// Stateful: each run takes the next element; the end of the data is OutOfRange.
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "graph/op_registry.h"
#include "graph/op_set_internal.h"

namespace actorflow {
namespace op_set_internal {
namespace {

int IteratorGetNextNumOutputs(const AttrMap& attrs) {
  auto it = attrs.find("output_dtypes");
  if (it == attrs.end() || !it->second.Is<std::vector<std::string>>()) return 0;
  return static_cast<int>(it->second.Get<std::vector<std::string>>().size());
}

Status InferIteratorGetNext(InferenceContext& ctx) {
  const auto& dtypes = ctx.attr<std::vector<std::string>>("output_dtypes");
  if (dtypes.empty()) {
    return InvalidArgument(
        "attr 'output_dtypes' is empty: an element has at least one component");
  }
  if (ctx.attr<std::string>("iterator_id").empty()) {
    return InvalidArgument("attr 'iterator_id' is empty");
  }
  std::vector<std::string> shapes;
  if (ctx.has_attr("output_shapes")) {
    shapes = ctx.attr<std::vector<std::string>>("output_shapes");
    if (shapes.size() != dtypes.size()) {
      return InvalidArgument("attr 'output_shapes' has " + std::to_string(shapes.size()) +
                             " entries but 'output_dtypes' has " +
                             std::to_string(dtypes.size()) + ": give one per component");
    }
  }
  for (size_t i = 0; i < dtypes.size(); ++i) {
    StatusOr<DType> dtype = DTypeFromName(dtypes[i]);
    if (!dtype.ok()) {
      return dtype.status().WithContext("attr 'output_dtypes' entry " + std::to_string(i));
    }
    Shape shape = Shape::UnknownRank();
    if (!shapes.empty()) {
      StatusOr<Shape> parsed = ParseShapeString(shapes[i]);
      if (!parsed.ok()) {
        return parsed.status().WithContext("attr 'output_shapes' entry " + std::to_string(i));
      }
      shape = std::move(parsed).value();
    }
    ctx.set_output(static_cast<int>(i), *dtype, std::move(shape));
  }
  return Status::OK();
}

std::vector<OpDef> DatasetOpSet() {
  using T = AttrType;
  OpDef get_next = Stateful(MakeOp("IteratorGetNext", 0, 1,
                                   {Required("iterator_id", T::kString),
                                    Required("output_dtypes", T::kStringList),
                                    Optional("output_shapes", T::kStringList)},
                                   InferIteratorGetNext));
  get_next.num_outputs_fn = IteratorGetNextNumOutputs;
  return {std::move(get_next)};
}

[[maybe_unused]] const bool kDatasetOpsRegistered = [] {
  for (OpDef& def : DatasetOpSet()) OpRegistration registration(std::move(def));
  return true;
}();

}  // namespace
}  // namespace op_set_internal
}  // namespace actorflow
