#include "graph/attr_value.h"

#include <type_traits>

#include "graph/checked_size.h"

namespace actorflow {

const char* AttrTypeName(AttrType type) {
  switch (type) {
    case AttrType::kInt: return "int";
    case AttrType::kFloat: return "float";
    case AttrType::kBool: return "bool";
    case AttrType::kString: return "string";
    case AttrType::kType: return "dtype";
    case AttrType::kShape: return "shape";
    case AttrType::kTensor: return "tensor";
    case AttrType::kIntList: return "list of int";
    case AttrType::kIntOrList: return "int or list of int";
    case AttrType::kStringList: return "list of string";
  }
  return "unknown";
}

namespace {

Status Mismatch(const AttrValue& v, AttrType type) {
  return InvalidArgument("expected " + std::string(AttrTypeName(type)) + ", got " +
                         v.DebugString());
}

}  // namespace

StatusOr<AttrValue> AttrValue::ConvertTo(AttrType type) const {
  switch (type) {
    case AttrType::kInt:
      if (Is<int64_t>()) return *this;
      break;
    case AttrType::kFloat:
      if (Is<double>()) return *this;
      if (Is<int64_t>()) return AttrValue(static_cast<double>(Get<int64_t>()));
      break;
    case AttrType::kBool:
      if (Is<bool>()) return *this;
      break;
    case AttrType::kString:
      if (Is<std::string>()) return *this;
      break;
    case AttrType::kType:
      if (Is<DType>()) return *this;
      if (Is<std::string>()) {
        auto dtype = DTypeFromName(Get<std::string>());
        if (!dtype.ok()) return dtype.status();
        return AttrValue(*dtype);
      }
      break;
    case AttrType::kShape: {
      // The dtype is not known here: the element count is checked (bool: one byte an
      // element); Graph::AddNode checks the byte count of the inferred outputs.
      if (Is<Shape>()) {
        AF_RETURN_IF_ERROR(CheckRepresentableShape(Get<Shape>(), DType::kBool));
        return *this;
      }
      if (Is<std::vector<int64_t>>()) {
        for (int64_t d : Get<std::vector<int64_t>>()) {
          if (d < -1) return InvalidArgument("shape dimension " + std::to_string(d) + " < -1");
        }
        Shape shape(Get<std::vector<int64_t>>());
        AF_RETURN_IF_ERROR(CheckRepresentableShape(shape, DType::kBool));
        return AttrValue(std::move(shape));
      }
      break;
    }
    case AttrType::kTensor:
      if (Is<Tensor>()) return *this;
      break;
    case AttrType::kIntList:
      if (Is<std::vector<int64_t>>()) return *this;
      break;
    case AttrType::kIntOrList:
      if (Is<int64_t>() || Is<std::vector<int64_t>>()) return *this;
      break;
    case AttrType::kStringList:
      if (Is<std::vector<std::string>>()) return *this;
      // An empty JSON list parses as a list of ints.
      if (Is<std::vector<int64_t>>() && Get<std::vector<int64_t>>().empty()) {
        return AttrValue(std::vector<std::string>{});
      }
      break;
  }
  return Mismatch(*this, type);
}

bool AttrValue::operator==(const AttrValue& other) const {
  if (value_.index() != other.value_.index()) return false;
  return std::visit(
      [&](const auto& mine) -> bool {
        using T = std::decay_t<decltype(mine)>;
        const T& theirs = std::get<T>(other.value_);
        if constexpr (std::is_same_v<T, Tensor>) {
          return TensorsEqual(mine, theirs);
        } else {
          return mine == theirs;
        }
      },
      value_);
}

std::string AttrValue::DebugString() const {
  struct Printer {
    std::string operator()(int64_t v) const { return "int " + std::to_string(v); }
    std::string operator()(double v) const { return "float " + std::to_string(v); }
    std::string operator()(bool v) const { return v ? "bool true" : "bool false"; }
    std::string operator()(const std::string& v) const { return "string \"" + v + "\""; }
    std::string operator()(DType v) const { return std::string("dtype ") + DTypeName(v); }
    std::string operator()(const Shape& v) const { return "shape " + v.ToString(); }
    std::string operator()(const Tensor& v) const { return "tensor " + v.DebugString(); }
    std::string operator()(const std::vector<int64_t>& v) const {
      return "list of " + std::to_string(v.size()) + " int";
    }
    std::string operator()(const std::vector<double>& v) const {
      return "list of " + std::to_string(v.size()) + " float";
    }
    std::string operator()(const std::vector<std::string>& v) const {
      return "list of " + std::to_string(v.size()) + " string";
    }
  };
  return std::visit(Printer{}, value_);
}

}  // namespace actorflow
