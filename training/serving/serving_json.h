// TensorFlow Serving's REST JSON bodies and tensors, both ways: what `actorflow serve`
// reads from POST /v1/models/NAME[/versions/N]:{predict,classify,regress} and writes
// back, and the bodies of GET /v1/models/NAME[/versions/N][/metadata]
// (https://www.tensorflow.org/tfx/serving/api_rest).
//
// :predict request, either format:
//   row      {"signature_name"?: S, "instances": [instance, ...]}
//            one input:  an instance is that input's value for one example (a number
//                        or nested lists), or {KEY: value};
//            several:    every instance is {KEY: value, ...} with every input key.
//            Each input's tensor is its instances stacked: [N, ...instance shape].
//   columnar {"signature_name"?: S, "inputs": value}
//            one input:  the value itself, or {KEY: value};
//            several:    {KEY: value, ...} with every input key.
//            Each value is the whole tensor (its first dimension is the batch).
// Values are read as the signature's dtypes (graph/tensor_json.h's feed values) and
// must fit the signature's shapes (-1 admits any size). Float inputs must be finite.
//
// :predict response: numbers are written so they read back to the same value and look
// short (0.01f as 0.01; 3.0f as 3.0); int32/int64 as integers, bool as true/false.
// Non-finite floats, which JSON cannot hold, are written as the strings "nan", "inf",
// "-inf" (what tensor_json.h writes and reads).
//   row      one output:  {"predictions": [value of example 0, ...]} (an output [N]
//                         gives bare numbers)
//            several:     {"predictions": [{KEY: value, ...}, ...]}
//   columnar one output:  {"outputs": value}; several: {"outputs": {KEY: value, ...}}
//
// Errors are InvalidArgument naming the culprit: the top-level key, the input key,
// the instance (example) index, the expected shape and dtype. Nothing here throws,
// whatever the JSON.
//
// Thread safety: every function is pure and may be called concurrently.
#ifndef ACTORFLOW_TRAINING_SERVING_SERVING_JSON_H_
#define ACTORFLOW_TRAINING_SERVING_SERVING_JSON_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/status.h"
#include "graph/tensor.h"
#include "training/serving/servable.h"

namespace actorflow {

// A parsed :predict body.
struct PredictBody {
  std::string signature_name;            // as given; "" when absent
  bool row_format = true;                // "instances" (true) or "inputs" (false)
  std::map<std::string, Tensor> inputs;  // by signature input key, every input present
};

// Parses a :predict body against `signature` (the caller resolved signature_name
// already, through PeekSignatureName). InvalidArgument for a body that is not an
// object, has both or neither of "instances" and "inputs", or another top-level key;
// an empty "instances"; a missing or unknown input key; a ragged instance; a value
// that does not convert to the input's dtype, is not finite (floats), or does not
// fit the input's shape ("input 'x': expected shape [-1, 4] (float32), got [2, 3]").
StatusOr<PredictBody> ParsePredictBody(const nlohmann::json& body, const SignatureDef& signature);

// OK when `tensor` fits input `key`'s shape in the signature: the same rank and equal
// dimensions where the signature knows them; else InvalidArgument "input 'x':
// expected shape [-1, 4] (float32), got [2, 3]".
Status CheckInputShape(const std::string& key, const TensorInfo& info, const Tensor& tensor);

// The "signature_name" of a body ("" when absent). InvalidArgument when it is not a
// string, or when the body is not a JSON object.
StatusOr<std::string> PeekSignatureName(const nlohmann::json& body);

// The :predict response for `outputs`, keyed by signature output key. In the row
// format every output is [N, ...] with the same N; when one is a scalar or the batch
// sizes differ, the result is ErrorJson(...) saying which (no row format exists).
// An output without a readable host buffer is written as null.
nlohmann::json PredictResponseJson(const std::map<std::string, Tensor>& outputs, bool row_format);

// InvalidArgument naming the output and the instance (its row, when the output has
// rows) of the first NaN or infinity in a float output: inputs that are finite can
// still overflow inside the model (3e38 times a weight), and a class id computed from
// NaN scores is no prediction. OK for finite outputs and those of other dtypes.
Status CheckFiniteOutputs(const std::map<std::string, Tensor>& outputs);

// :classify / :regress bodies (TF Serving's shapes):
//   {"signature_name"?: S, "context"?: {feature: value}, "examples": [{feature: value}, ...]}
// For a classifier export (`classifier` not null) the signature's single input
// [N, F] is built from each example's features by name, in classifier->feature_names
// order; a feature the example lacks comes from "context". A feature value is a
// number or a one-number list; features the model does not use are ignored (as TF
// Serving's tf.Example parsing does). Otherwise each example (with the context's
// keys filling what it lacks) is read like a row-format instance object keyed by the
// signature's input keys. Returns the inputs keyed by signature input key.
// InvalidArgument naming the key, the example index or the feature otherwise.
StatusOr<std::map<std::string, Tensor>> ParseExamplesBody(const nlohmann::json& body,
                                                         const SignatureDef& signature,
                                                         const ClassifierInfo* classifier);

// {"result": [[["label", score], ...], ...]}: per example every class with its score,
// from scores [N, C] and the C labels (a class without a label is named by its index).
// Scores of another rank give ErrorJson(...).
nlohmann::json ClassifyResponseJson(const Tensor& scores, const std::vector<std::string>& labels);

// {"result": [v, ...]}: one number per example, from values [N] or [N, 1].
// InvalidArgument naming the shape otherwise.
StatusOr<nlohmann::json> RegressResponseJson(const Tensor& values);

// One version's entry in GET /v1/models/NAME[/versions/N].
struct VersionState {
  int64_t version = 0;
  std::string state;  // "LOADING", "AVAILABLE", "UNLOADING", "END"
  std::string error_code = "OK";
  std::string error_message;
};

// TF Serving's GetModelStatus response, in the order given:
// {"model_version_status": [{"version": "N", "state": S,
//                            "status": {"error_code": C, "error_message": M}}, ...]}
nlohmann::json ModelStatusJson(const std::vector<VersionState>& versions);

// TF Serving's GetModelMetadata response:
// {"model_spec": {"name": NAME, "signature_name": "", "version": "N"},
//  "metadata": {"signature_def": {"signature_def": {SIG: {
//      "inputs": {KEY: {"dtype": "DT_FLOAT", "name": "node:0",
//                       "tensor_shape": {"dim": [{"size": "-1", "name": ""}, ...],
//                                        "unknown_rank": false}}},
//      "outputs": {...}, "method_name": "tensorflow/serving/predict"}}}}}
// An endpoint "node" is written "node:0", as TensorFlow names tensors.
nlohmann::json ModelMetadataJson(const std::string& model_name, int64_t version,
                                 const ServableManifest& manifest);

// {"error": message}. Bytes of `message` that are not UTF-8 are replaced (U+FFFD),
// so the result always dumps.
nlohmann::json ErrorJson(const std::string& message);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_SERVING_SERVING_JSON_H_
