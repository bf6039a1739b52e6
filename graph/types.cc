#include "graph/types.h"

namespace actorflow {

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kBool: return "bool";
  }
  return "unknown";
}

StatusOr<DType> DTypeFromName(const std::string& name) {
  if (name == "float32" || name == "float") return DType::kFloat32;
  if (name == "float64" || name == "double") return DType::kFloat64;
  if (name == "int32") return DType::kInt32;
  if (name == "int64") return DType::kInt64;
  if (name == "bool") return DType::kBool;
  return InvalidArgument("unknown dtype '" + name +
                         "' (expected float32, float64, int32, int64 or bool)");
}

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return 4;
    case DType::kFloat64: return 8;
    case DType::kInt32: return 4;
    case DType::kInt64: return 8;
    case DType::kBool: return sizeof(bool);
  }
  return 0;
}

bool IsFloating(DType dtype) { return dtype == DType::kFloat32 || dtype == DType::kFloat64; }
bool IsInteger(DType dtype) { return dtype == DType::kInt32 || dtype == DType::kInt64; }

}  // namespace actorflow
