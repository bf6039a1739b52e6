// AttrValue: a static argument of a node (TensorFlow's attrs), as it appears in graph
// JSON: numbers, strings, bools, lists, dtypes, shapes and tensors.
#ifndef ACTORFLOW_GRAPH_ATTR_VALUE_H_
#define ACTORFLOW_GRAPH_ATTR_VALUE_H_

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "graph/shape.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "graph/types.h"

namespace actorflow {

// The schema type of an attr, declared by the op (see op_registry.h).
enum class AttrType {
  kInt,        // int64_t
  kFloat,      // double (JSON integers are accepted and converted)
  kBool,       // bool
  kString,     // std::string
  kType,       // DType (JSON: its name)
  kShape,      // Shape (JSON: a list, -1 for unknown dimensions)
  kTensor,     // Tensor (JSON: {"dtype", "shape", "data"})
  kIntList,    // std::vector<int64_t>
  kIntOrList,  // int64_t or std::vector<int64_t>, kept as written (reduction axes)
  kStringList, // std::vector<std::string>
};
const char* AttrTypeName(AttrType type);

class AttrValue {
 public:
  using Value = std::variant<int64_t, double, bool, std::string, DType, Shape, Tensor,
                             std::vector<int64_t>, std::vector<double>,
                             std::vector<std::string>>;

  AttrValue() = default;
  AttrValue(int v) : value_(int64_t{v}) {}                   // NOLINT
  AttrValue(int64_t v) : value_(v) {}                        // NOLINT
  AttrValue(double v) : value_(v) {}                         // NOLINT
  AttrValue(bool v) : value_(v) {}                           // NOLINT
  AttrValue(const char* v) : value_(std::string(v)) {}       // NOLINT
  AttrValue(std::string v) : value_(std::move(v)) {}         // NOLINT
  AttrValue(DType v) : value_(v) {}                          // NOLINT
  AttrValue(Shape v) : value_(std::move(v)) {}               // NOLINT
  AttrValue(Tensor v) : value_(std::move(v)) {}              // NOLINT
  AttrValue(std::vector<int64_t> v) : value_(std::move(v)) {}      // NOLINT
  AttrValue(std::vector<double> v) : value_(std::move(v)) {}       // NOLINT
  AttrValue(std::vector<std::string> v) : value_(std::move(v)) {}  // NOLINT

  const Value& value() const { return value_; }

  template <typename T>
  bool Is() const { return std::holds_alternative<T>(value_); }
  // Precondition: Is<T>().
  template <typename T>
  const T& Get() const { return std::get<T>(value_); }

  // Converts a value as parsed (e.g. a string where a dtype is declared, a list
  // where a shape is declared, an int where a float is declared) to the declared
  // type. InvalidArgument (without node context) when it cannot.
  StatusOr<AttrValue> ConvertTo(AttrType type) const;

  // Equality with tensors compared by value (TensorsEqual).
  bool operator==(const AttrValue& other) const;
  bool operator!=(const AttrValue& other) const { return !(*this == other); }

  std::string DebugString() const;

 private:
  Value value_ = int64_t{0};
};

// Attrs by name; ordered so that serialization is deterministic.
using AttrMap = std::map<std::string, AttrValue>;

}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_ATTR_VALUE_H_
