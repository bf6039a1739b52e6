// Fuzz target: feed values (graph/tensor_json.h TensorFromJsonValue), what a user
// writes to feed a placeholder (`actorflow run --feed x=[[1,2]]`) and what the
// serving API reads for each input.
//
// Input layout: byte 0 picks the dtype; byte 1 the allowed shape (0xff: unknown
// rank; otherwise rank = byte % 4, followed by that many bytes, each a dimension
// byte % 5 - 1, so -1..3); the rest is the JSON text.
//
// Never crashes. Invariants: an error's message starts with the culprit; a tensor that
// parses has the requested dtype and a shape the allowed shape admits, and (when it
// has elements) written back as nested lists it parses to an equal tensor.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "graph/tensor_json.h"
#include "tools/fuzz/fuzz_check.h"

namespace {

using actorflow::DType;
using actorflow::Shape;
using actorflow::Tensor;
using nlohmann::json;

constexpr char kCulprit[] = "placeholder 'x'";

// The flat row-major `data` as nested lists of `shape` (a scalar for rank 0).
json Nest(const json& data, const std::vector<int64_t>& dims, size_t depth, size_t* next) {
  if (depth == dims.size()) return data[(*next)++];
  json list = json::array();
  for (int64_t i = 0; i < dims[depth]; ++i) list.push_back(Nest(data, dims, depth + 1, next));
  return list;
}

bool Admits(const Shape& allowed, const Shape& actual) {
  if (allowed.unknown_rank()) return true;
  if (allowed.rank() != actual.rank()) return false;
  for (int i = 0; i < allowed.rank(); ++i) {
    if (allowed.dim(i) != -1 && allowed.dim(i) != actual.dim(i)) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const DType dtype = static_cast<DType>(data[0] % 5);
  size_t pos = 2;
  Shape allowed = Shape::UnknownRank();
  if (data[1] != 0xff) {
    std::vector<int64_t> dims;
    for (int i = 0; i < data[1] % 4 && pos < size; ++i) dims.push_back(data[pos++] % 5 - 1);
    allowed = Shape(dims);
  }
  const std::string_view text(reinterpret_cast<const char*>(data) + pos, size - pos);
  auto value = actorflow::ParseJsonText(text, "feed");
  if (!value.ok()) return 0;

  auto tensor = actorflow::TensorFromJsonValue(*value, dtype, allowed, kCulprit);
  if (!tensor.ok()) {
    FUZZ_CHECK(tensor.status().message().rfind(kCulprit, 0) == 0, tensor.status().ToString());
    return 0;
  }
  FUZZ_CHECK(tensor->dtype() == dtype, tensor->DebugString());
  FUZZ_CHECK(Admits(allowed, tensor->shape()),
             tensor->DebugString() + " vs allowed " + allowed.ToString());
  if (tensor->NumElements() == 0) return 0;  // [] and [[]] lose inner dimensions

  size_t next = 0;
  const json nested = Nest(actorflow::TensorToJson(*tensor)["data"], tensor->shape().dims(), 0, &next);
  auto again = actorflow::TensorFromJsonValue(nested, dtype, allowed, kCulprit);
  FUZZ_CHECK(again.ok(), again.status().ToString() + "\nwritten: " + nested.dump());
  FUZZ_CHECK(actorflow::TensorsEqual(*tensor, *again), "written: " + nested.dump());
  return 0;
}
