// Element types of tensors.
#ifndef ACTORFLOW_GRAPH_TYPES_H_
#define ACTORFLOW_GRAPH_TYPES_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "graph/status.h"

namespace actorflow {

enum class DType { kFloat32, kFloat64, kInt32, kInt64, kBool };

// "float32", "float64", "int32", "int64", "bool".
const char* DTypeName(DType dtype);
// Accepts the names above (and "float"/"double" as aliases); InvalidArgument otherwise.
StatusOr<DType> DTypeFromName(const std::string& name);
size_t DTypeSize(DType dtype);
bool IsFloating(DType dtype);
bool IsInteger(DType dtype);

// Maps a C++ element type to its DType: DTypeOf<float>::value == DType::kFloat32.
template <typename T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::kFloat32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::kFloat64; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::kInt32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::kInt64; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::kBool; };

// Calls fn(T{}) with T the C++ type of `dtype`: AF_DISPATCH-style type switch.
template <typename Fn>
decltype(auto) VisitDType(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32: return fn(float{});
    case DType::kFloat64: return fn(double{});
    case DType::kInt32: return fn(int32_t{});
    case DType::kInt64: return fn(int64_t{});
    case DType::kBool: break;
  }
  return fn(bool{});
}

}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_TYPES_H_
