// The :predict bodies nearly every client sends, read straight from the text:
//   {"instances": LISTS} or {"inputs": LISTS}, optionally with "signature_name": S,
// where LISTS are nested, rectangular, non-empty lists of JSON numbers, for a
// signature with one float input. ParsePredictBody (serving_json.h) first builds a
// JSON document of every number (an MNIST request of 32 × 784 numbers is 25 088
// nodes, each read by strtod); this reads each number once (Clinger's exact fast path,
// else std::from_chars) and copies them into the input's tensor.
//
// Contract: whatever this returns equals what ParseJsonText + ParsePredictBody give
// for the same text and signature, bit for bit. Anything it is not sure of (a string
// or object among the values, escapes, ragged or empty lists, an integer beyond 2^53,
// a number outside the input's dtype, another key, a shape the signature refuses,
// malformed JSON) is not taken (nullopt): the caller then reads the body the general
// way, which also gives every error message. So a body gets the same inputs or the
// same error whichever path reads it.
//
// Thread safety: pure functions.
#ifndef ACTORFLOW_TRAINING_SERVING_NUMERIC_PREDICT_BODY_H_
#define ACTORFLOW_TRAINING_SERVING_NUMERIC_PREDICT_BODY_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/shape.h"
#include "training/serving/servable.h"
#include "training/serving/serving_json.h"

namespace actorflow {

// A body of the shape above, scanned: its numbers (row-major) as the doubles JSON's
// reader would give them, and the shape of the nested lists.
struct NumericPredictBody {
  std::string signature_name;  // "" when absent
  bool row_format = true;      // "instances" (true) or "inputs" (false)
  Shape shape;
  std::vector<double> values;
};

// The scanned body, or nullopt when `text` is not of the shape above or its outer
// list has more than `max_rows` entries (then nothing past them is stored: a server
// counts such a body's rows without reading its values, CountRequestRows, and
// refuses it). For a body it returns, CountRequestRows gives shape.dim(0).
std::optional<NumericPredictBody> ScanNumericPredictBody(
    std::string_view text, int64_t max_rows = std::numeric_limits<int64_t>::max());

// The inputs ParsePredictBody would read from `body` for `signature`, or nullopt when
// the signature is not one float32/float64 input, a number does not fit its dtype, or
// the shape does not fit its shape.
std::optional<PredictBody> NumericPredictInputs(const NumericPredictBody& body,
                                                const SignatureDef& signature);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_SERVING_NUMERIC_PREDICT_BODY_H_
