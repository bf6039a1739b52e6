#include "graph/tensor_json.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "graph/checked_size.h"

namespace actorflow {

std::string DescribeJson(const nlohmann::json& v) {
  if (v.is_array()) return "a list";
  if (v.is_object()) return "an object";
  std::string text = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

namespace {

using Json = nlohmann::json;

// Floats this close to zero are exact integers in both float32 and float64 and in
// an int64, so writing them as JSON integers loses nothing.
constexpr double kMaxExactInteger = 9007199254740992.0;  // 2^53

// Nested feed lists deeper than this are rejected before any recursion.
constexpr int kMaxFeedRank = 32;

// The shortest decimal that reads back as `f`, as the double nearest to it, so that
// nlohmann writes "0.1" for 0.1f rather than "0.10000000149011612".
double ShortestDoubleFor(float f) {
  char buf[64];
  auto written = std::to_chars(buf, buf + sizeof(buf), f);
  if (written.ec == std::errc()) {
    double d = 0;
    auto read = std::from_chars(buf, written.ptr, d);
    if (read.ec == std::errc() && static_cast<float>(d) == f) return d;
  }
  return static_cast<double>(f);
}

template <typename J, typename T>
J FloatElementToJson(T v) {
  if (std::isnan(v)) return J("nan");
  if (std::isinf(v)) return J(v > 0 ? "inf" : "-inf");
  if (v == std::trunc(v) && std::fabs(v) < kMaxExactInteger && !(v == 0 && std::signbit(v))) {
    return J(static_cast<int64_t>(v));
  }
  if constexpr (std::is_same_v<T, float>) {
    return J(ShortestDoubleFor(v));
  } else {
    return J(static_cast<double>(v));
  }
}

template <typename J>
J TensorToJsonImpl(const Tensor& tensor) {
  J shape = J::array();
  for (int64_t d : tensor.shape().dims()) shape.push_back(d);
  typename J::array_t data;
  data.reserve(static_cast<size_t>(tensor.NumElements()));
  if (tensor.IsInitialized()) {
    VisitDType(tensor.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* values = tensor.data<T>();
      for (int64_t i = 0; i < tensor.NumElements(); ++i) {
        if constexpr (std::is_floating_point_v<T>) {
          data.push_back(FloatElementToJson<J>(values[i]));
        } else {
          data.push_back(J(values[i]));
        }
      }
    });
  }
  J out = J::object();
  out["dtype"] = DTypeName(tensor.dtype());
  out["shape"] = std::move(shape);
  out["data"] = std::move(data);
  return out;
}

// Reads one element as a T (the C++ type of `dtype`); the message says why not.
template <typename T>
Status ReadElement(const Json& v, DType dtype, T* out) {
  // Named only in errors: a feed of many elements reads them all through here.
  const char* type_name = DTypeName(dtype);
  if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean())
      return InvalidArgument("expected true or false for bool, got " + DescribeJson(v));
    *out = v.get<bool>();
    return Status::OK();
  } else if constexpr (std::is_floating_point_v<T>) {
    if (v.is_number_unsigned()) {
      *out = static_cast<T>(v.get<uint64_t>());
    } else if (v.is_number_integer()) {
      *out = static_cast<T>(v.get<int64_t>());
    } else if (v.is_number_float()) {
      double d = v.get<double>();
      if (std::isfinite(d) && !std::isfinite(static_cast<T>(d))) {
        return InvalidArgument(DescribeJson(v) + " is out of range for " + type_name);
      }
      *out = static_cast<T>(d);
    } else if (v.is_string() && v.get_ref<const std::string&>() == "nan") {
      *out = std::numeric_limits<T>::quiet_NaN();
    } else if (v.is_string() && v.get_ref<const std::string&>() == "inf") {
      *out = std::numeric_limits<T>::infinity();
    } else if (v.is_string() && v.get_ref<const std::string&>() == "-inf") {
      *out = -std::numeric_limits<T>::infinity();
    } else {
      return InvalidArgument(std::string("expected a number (or \"nan\", \"inf\", \"-inf\") for ") +
                             type_name + ", got " + DescribeJson(v));
    }
    return Status::OK();
  } else {
    static_assert(std::is_integral_v<T>);
    auto out_of_range = [&] {
      return InvalidArgument(DescribeJson(v) + " is out of range for " + type_name);
    };
    if (v.is_number_unsigned()) {
      uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<T>::max())) return out_of_range();
      *out = static_cast<T>(u);
    } else if (v.is_number_integer()) {
      int64_t i = v.get<int64_t>();
      if (i < std::numeric_limits<T>::min() || i > std::numeric_limits<T>::max()) {
        return out_of_range();
      }
      *out = static_cast<T>(i);
    } else if (v.is_number_float()) {
      double d = v.get<double>();
      if (!std::isfinite(d) || d != std::trunc(d)) {
        return InvalidArgument("non-integer " + DescribeJson(v) + " cannot be " + type_name);
      }
      // Both bounds are powers of two, so exact as doubles; max() + 1 is 2^31 or 2^63.
      const double lower = static_cast<double>(std::numeric_limits<T>::min());
      const double upper = -lower;
      if (d < lower || d >= upper) return out_of_range();
      *out = static_cast<T>(d);
    } else {
      return InvalidArgument(std::string("expected an integer for ") + type_name + ", got " +
                             DescribeJson(v));
    }
    return Status::OK();
  }
}

// Fills a new tensor of `dtype` and `shape` from `elements` (row-major); on a bad
// element returns its flat index in *bad_index and the reason.
Status FillTensor(const std::vector<const Json*>& elements, DType dtype, const Shape& shape,
                  Tensor* out, int64_t* bad_index) {
  Tensor tensor(dtype, shape);
  Status status = VisitDType(dtype, [&](auto zero) -> Status {
    using T = decltype(zero);
    T* data = tensor.data<T>();
    for (size_t i = 0; i < elements.size(); ++i) {
      Status s = ReadElement<T>(*elements[i], dtype, &data[i]);
      if (!s.ok()) {
        *bad_index = static_cast<int64_t>(i);
        return s;
      }
    }
    return Status::OK();
  });
  if (status.ok()) *out = std::move(tensor);
  return status;
}

// "[1][0]" for the list indices `at` of an element.
std::string PathString(const std::vector<size_t>& at) {
  std::string out;
  for (size_t i : at) out += "[" + std::to_string(i) + "]";
  return out;
}

// "[1][0]" for flat index 2 of shape [2,2].
std::string IndexString(int64_t flat, const std::vector<int64_t>& dims) {
  std::vector<size_t> index(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    index[d] = dims[d] == 0 ? 0 : static_cast<size_t>(flat % dims[d]);
    flat = dims[d] == 0 ? 0 : flat / dims[d];
  }
  return PathString(index);
}

// Collects the leaves of a nested feed list in row-major order and checks that
// every list at depth d has dims[d] entries and that leaves sit at depth dims.size().
// `at` holds the indices down to `v` (the path is spelled only for an error: a feed
// of many elements passes here once per element).
Status CollectLeaves(const Json& v, const std::vector<int64_t>& dims, size_t depth,
                     std::vector<size_t>* at, std::vector<const Json*>* leaves) {
  if (depth == dims.size()) {
    if (v.is_array()) {
      return InvalidArgument("ragged nested list: element " + PathString(*at) +
                             " is a list where a scalar was expected");
    }
    leaves->push_back(&v);
    return Status::OK();
  }
  if (!v.is_array() || static_cast<int64_t>(v.size()) != dims[depth]) {
    const std::string found =
        v.is_array() ? "has " + std::to_string(v.size()) + " entries" : "is not a list";
    return InvalidArgument("ragged nested list: element " + PathString(*at) + " " + found +
                           ", expected a list of " + std::to_string(dims[depth]) +
                           " like the first one at that depth");
  }
  for (size_t i = 0; i < v.size(); ++i) {
    at->push_back(i);
    AF_RETURN_IF_ERROR(CollectLeaves(v[i], dims, depth + 1, at, leaves));
    at->pop_back();
  }
  return Status::OK();
}

bool Admits(const Shape& allowed, const Shape& actual) {
  if (allowed.unknown_rank()) return true;
  if (allowed.rank() != actual.rank()) return false;
  for (int i = 0; i < allowed.rank(); ++i) {
    if (allowed.dim(i) != Shape::kUnknownDim && allowed.dim(i) != actual.dim(i)) return false;
  }
  return true;
}

// Records where the first syntax error is; the DOM parser forgets the position of
// some errors (number overflow), this SAX pass never does.
class ErrorLocator : public nlohmann::json_sax<Json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    position_ = position;
    what_ = ex.what();
    return false;
  }

  size_t position() const { return position_; }
  // nlohmann's message without its "[json.exception...]" tag and its own position.
  std::string reason() const {
    std::string r = what_;
    auto tag_end = r.find("] ");
    if (r.rfind("[json.exception", 0) == 0 && tag_end != std::string::npos) r = r.substr(tag_end + 2);
    if (r.rfind("parse error", 0) == 0) {
      auto colon = r.find(": ");
      if (colon != std::string::npos) r = r.substr(colon + 2);
    }
    return r.empty() ? "syntax error" : r;
  }

 private:
  size_t position_ = 0;
  std::string what_;
};

// 1-based line and column (in bytes) of `offset` in `text`.
struct LineColumn {
  size_t line = 1;
  size_t column = 1;
};
LineColumn LocateOffset(std::string_view text, size_t offset) {
  LineColumn at;
  size_t line_start = 0;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++at.line;
      line_start = i + 1;
    }
  }
  at.column = offset - line_start + 1;
  return at;
}

// The offset of the first '[' or '{' (outside strings) that opens container number
// kMaxJsonDepth + 1 of its nesting. Precondition: `text` is well-formed JSON.
size_t TooDeepOffset(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return text.size();
}

}  // namespace

nlohmann::json TensorToJson(const Tensor& tensor) { return TensorToJsonImpl<Json>(tensor); }

nlohmann::ordered_json TensorToOrderedJson(const Tensor& tensor) {
  return TensorToJsonImpl<nlohmann::ordered_json>(tensor);
}

StatusOr<Tensor> TensorFromJson(const nlohmann::json& json) {
  if (!json.is_object()) {
    return InvalidArgument("tensor: expected an object {\"dtype\", \"shape\", \"data\"}, got " +
                           DescribeJson(json));
  }
  for (const auto& item : json.items()) {
    if (item.key() != "dtype" && item.key() != "shape" && item.key() != "data") {
      return InvalidArgument("tensor: unknown key \"" + item.key() +
                             "\" (expected dtype, shape, data)");
    }
  }
  for (const char* key : {"dtype", "shape", "data"}) {
    if (!json.contains(key)) return InvalidArgument(std::string("tensor: missing \"") + key + "\"");
  }
  const Json& dtype_json = json["dtype"];
  if (!dtype_json.is_string()) {
    return InvalidArgument("tensor: \"dtype\" must be a string, got " + DescribeJson(dtype_json));
  }
  auto dtype = DTypeFromName(dtype_json.get<std::string>());
  if (!dtype.ok()) return dtype.status().WithContext("tensor");

  const Json& shape_json = json["shape"];
  if (!shape_json.is_array()) {
    return InvalidArgument("tensor: \"shape\" must be a list of dimensions, got " +
                           DescribeJson(shape_json));
  }
  std::vector<int64_t> dims;
  for (size_t i = 0; i < shape_json.size(); ++i) {
    const Json& d = shape_json[i];
    if (!d.is_number_integer() || (d.is_number_unsigned() && d.get<uint64_t>() > (1ull << 62)) ||
        (!d.is_number_unsigned() && d.get<int64_t>() < 0)) {
      return InvalidArgument("tensor: shape dimension " + std::to_string(i) + " is " +
                             DescribeJson(d) +
                             "; a tensor's shape is fully defined (integers >= 0)");
    }
    dims.push_back(d.get<int64_t>());
  }
  Shape shape(dims);
  // Checked before anything is allocated: the data list must then match it exactly.
  StatusOr<int64_t> bytes = CheckedByteSize(*dtype, shape);
  if (!bytes.ok()) return bytes.status().WithContext("tensor");
  const int64_t num_elements = shape.num_elements();

  const Json& data_json = json["data"];
  if (!data_json.is_array()) {
    return InvalidArgument("tensor: \"data\" must be a flat list (row-major), got " +
                           DescribeJson(data_json));
  }
  if (static_cast<int64_t>(data_json.size()) != num_elements) {
    return InvalidArgument("tensor: \"data\" has " + std::to_string(data_json.size()) +
                           " values but shape " + shape.ToString() + " needs " +
                           std::to_string(num_elements));
  }
  std::vector<const Json*> elements;
  elements.reserve(data_json.size());
  for (const Json& e : data_json) elements.push_back(&e);
  Tensor tensor;
  int64_t bad = 0;
  Status s = FillTensor(elements, *dtype, shape, &tensor, &bad);
  if (!s.ok()) return s.WithContext("tensor: data[" + std::to_string(bad) + "]");
  return tensor;
}

StatusOr<Tensor> TensorFromJsonValue(const nlohmann::json& value, DType dtype,
                                     const Shape& allowed_shape, const std::string& culprit) {
  // The shape comes from the first entry at each depth; CollectLeaves checks the rest.
  std::vector<int64_t> dims;
  const Json* cur = &value;
  while (cur->is_array()) {
    if (static_cast<int>(dims.size()) == kMaxFeedRank) {
      return InvalidArgument(culprit + ": nested lists deeper than " +
                             std::to_string(kMaxFeedRank) + " levels");
    }
    dims.push_back(static_cast<int64_t>(cur->size()));
    if (cur->empty()) break;
    cur = &(*cur)[0];
  }
  std::vector<const Json*> leaves;
  std::vector<size_t> at;
  Status s = CollectLeaves(value, dims, 0, &at, &leaves);
  if (!s.ok()) return s.WithContext(culprit);

  Shape shape(dims);
  if (!Admits(allowed_shape, shape)) {
    return InvalidArgument(culprit + ": a value of shape " + shape.ToString() +
                           " does not fit shape " + allowed_shape.ToString());
  }
  Tensor tensor;
  int64_t bad = 0;
  s = FillTensor(leaves, dtype, shape, &tensor, &bad);
  if (!s.ok()) {
    return s.WithContext(dims.empty() ? culprit
                                      : culprit + ": element " + IndexString(bad, dims));
  }
  return tensor;
}

StatusOr<nlohmann::json> ParseJsonText(std::string_view text, const std::string& what) {
  // Containers nested deeper than kMaxJsonDepth are discarded while parsing (the
  // parser itself does not recurse) and the text refused below.
  bool too_deep = false;
  Json::parser_callback_t limit_depth = [&too_deep](int depth, Json::parse_event_t event, Json&) {
    if ((event == Json::parse_event_t::array_start ||
         event == Json::parse_event_t::object_start) &&
        depth >= kMaxJsonDepth) {
      too_deep = true;
      return false;
    }
    return true;
  };
  Json parsed = Json::parse(text.begin(), text.end(), limit_depth,
                            /*allow_exceptions=*/false);
  if (!parsed.is_discarded() && !too_deep) return parsed;

  if (!parsed.is_discarded()) {
    const LineColumn at = LocateOffset(text, TooDeepOffset(text));
    return InvalidArgument(what + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                           " levels at line " + std::to_string(at.line) + ", column " +
                           std::to_string(at.column));
  }

  ErrorLocator locator;
  Json::sax_parse(text.begin(), text.end(), &locator);
  // nlohmann's position counts the characters read, the offending one included.
  size_t offset = locator.position() == 0 ? 0 : locator.position() - 1;
  if (offset > text.size()) offset = text.size();
  const LineColumn at = LocateOffset(text, offset);
  return InvalidArgument(what + ": malformed JSON at line " + std::to_string(at.line) +
                         ", column " + std::to_string(at.column) + ": " + locator.reason());
}

}  // namespace actorflow
