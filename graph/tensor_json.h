// Tensors as JSON: the {"dtype", "shape", "data"} objects of graph JSON (Const values)
// and the looser number-or-nested-list values a user writes to feed a placeholder.
//
// Tensor object: {"dtype": "float32", "shape": [2, 3], "data": [1, 2.5, 3, 4, 5, 6]}.
// "data" is flat and row-major; its length must equal the product of "shape" (a
// tensor's shape is always fully defined). The dtype decides how "data" is read:
//   - float32/float64: JSON numbers, or the strings "nan", "inf", "-inf";
//   - int32/int64: JSON integers in range (an integral float such as 2.0 is accepted);
//   - bool: true/false.
// Writing is deterministic and round-trips exactly: integral floats below 2^53 are
// written as JSON integers ([3, 7], not [3.0, 7.0]), other floats with the shortest
// decimal that reads back to the same float32/float64 value, non-finite values as
// the strings above, and -0.0 as -0.0.
//
// None of these functions throws; errors are InvalidArgument naming what is wrong.
// Thread safety: all functions are pure and may be called concurrently.
#ifndef ACTORFLOW_GRAPH_TENSOR_JSON_H_
#define ACTORFLOW_GRAPH_TENSOR_JSON_H_

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "graph/shape.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "graph/types.h"

namespace actorflow {

// A short description of a JSON value for error messages: `2.5`, `"abc"`, `a list`
// (text past 40 characters shortened, invalid UTF-8 replaced).
std::string DescribeJson(const nlohmann::json& v);

// {"data", "dtype", "shape"} (an nlohmann::json object keeps its keys sorted).
nlohmann::json TensorToJson(const Tensor& tensor);
// The same object with its keys in reading order: "dtype", "shape", "data". This is
// what graph JSON writes.
nlohmann::ordered_json TensorToOrderedJson(const Tensor& tensor);

// Reads a {"dtype", "shape", "data"} object. InvalidArgument ("tensor: ...") for a
// missing or unknown key, an unknown dtype, a shape that is not a list of
// non-negative integers, a data length that differs from the shape's element count,
// or an element that does not fit the dtype (named by its flat index).
StatusOr<Tensor> TensorFromJson(const nlohmann::json& json);

// Reads a feed value: a number or bool (a scalar) or nested lists of them
// (e.g. 3, [1, 3], [[1, 2], [3, 4]]); the nesting gives the shape. Numbers are
// converted to `dtype` (3 feeds float32 as 3.0f). InvalidArgument whose message
// starts with `culprit` (e.g. "placeholder 'x'") for: a non-integer or out-of-range
// number for an int dtype, a bool for a numeric dtype or a number for bool, a ragged
// list, anything else (strings other than "nan"/"inf"/"-inf" for floats, objects,
// null), or a shape that `allowed_shape` does not admit (its -1 dims and an unknown
// rank admit anything).
StatusOr<Tensor> TensorFromJsonValue(const nlohmann::json& value, DType dtype,
                                     const Shape& allowed_shape, const std::string& culprit);

// The deepest nesting of lists and objects ParseJsonText accepts: far more than any
// actorflow format uses (a feed of the highest rank nests 32 lists, a serving request
// a few more). Deeper text is refused because printing, copying and comparing a JSON
// value recurse once per level: 200000 '[' in a 400 KB request would overflow the stack.
inline constexpr int kMaxJsonDepth = 256;

// Parses JSON text. Malformed text gives InvalidArgument
// "<what>: malformed JSON at line L, column C: <reason>". L and C (1-based, C counts
// bytes) locate the last character read when the error was noticed: the end of the
// offending token, or one past the end of the text when it ends too early. Text
// nesting lists and objects deeper than kMaxJsonDepth gives InvalidArgument
// "<what>: JSON nested deeper than 256 levels at line L, column C" (the first bracket
// too deep).
StatusOr<nlohmann::json> ParseJsonText(std::string_view text, const std::string& what);

}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_TENSOR_JSON_H_
