// Servables: one exported version of a model, laid out as TensorFlow Serving expects
// (a model base path holding numeric version directories), written by `actorflow
// export` and read by `actorflow serve`.
//
//   BASE/
//     1/                      a version: complete, or not there at all
//       saved_model.json      {"format": "actorflow.servable/1", "signatures": {...}}
//       graph.json            the pruned inference graph (graph/graph_json.h)
//       variables/            its Variables' values: a checkpoint (checkpoint_format.h)
//     2/ ...
//
// saved_model.json:
//   {"format": "actorflow.servable/1",
//    "signatures": {"serving_default": {
//        "method_name": "tensorflow/serving/predict",
//        "inputs":  {"x": {"name": "features:0", "dtype": "DT_FLOAT", "shape": [-1, 4]}},
//        "outputs": {"probabilities": {"name": "probabilities:0", "dtype": "DT_FLOAT",
//                                      "shape": [-1, 3]}, ...}}, ...},
//    "classifier": {"feature_names": ["sepal_length_cm", ...], "labels": ["0", "1", "2"]}}
// Dtypes are TensorFlow's enum names (DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64,
// DT_BOOL); shapes use -1 for the batch (and any other unknown) dimension. "classifier"
// is present for DNNClassifier exports: it makes `:classify` (features by name) and
// `/labels/L` answerable.
//
// Atomicity: a version is written into a hidden temporary directory beside it
// (".tmp-<version>-<pid>-<n>"), each file fsynced, then renamed to "<version>" and the
// base fsynced: a reader sees a complete version or none. Readers ignore entries that
// are not decimal version numbers.
//
// Thread safety: the functions are reentrant; a Servable is immutable once loaded and
// may be shared between threads.
#ifndef ACTORFLOW_TRAINING_SERVING_SERVABLE_H_
#define ACTORFLOW_TRAINING_SERVING_SERVABLE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/shape.h"
#include "graph/status.h"
#include "graph/types.h"

namespace actorflow {

inline constexpr char kServableFormat[] = "actorflow.servable/1";
inline constexpr char kServableManifestFile[] = "saved_model.json";
inline constexpr char kServableGraphFile[] = "graph.json";
inline constexpr char kServableVariablesDir[] = "variables";
inline constexpr char kDefaultServingSignature[] = "serving_default";
inline constexpr char kPredictMethodName[] = "tensorflow/serving/predict";
inline constexpr char kClassifyMethodName[] = "tensorflow/serving/classify";
inline constexpr char kRegressMethodName[] = "tensorflow/serving/regress";

// One named input or output of a signature: the graph endpoint it feeds or fetches.
struct TensorInfo {
  std::string endpoint;  // "node" or "node:k"
  DType dtype = DType::kFloat32;
  Shape shape;           // -1 for the batch dimension and any other unknown one

  bool operator==(const TensorInfo& o) const {
    return endpoint == o.endpoint && dtype == o.dtype && shape == o.shape;
  }
};

struct SignatureDef {
  std::string method_name = kPredictMethodName;
  // Keyed by the names clients use (sorted, as JSON objects read back).
  std::map<std::string, TensorInfo> inputs;
  std::map<std::string, TensorInfo> outputs;

  bool operator==(const SignatureDef& o) const {
    return method_name == o.method_name && inputs == o.inputs && outputs == o.outputs;
  }
};

// What a DNNClassifier export adds: the feature columns by name, in the order of the
// single input's last dimension, and the class labels ("0", "1", ...).
struct ClassifierInfo {
  std::vector<std::string> feature_names;
  std::vector<std::string> labels;

  bool operator==(const ClassifierInfo& o) const {
    return feature_names == o.feature_names && labels == o.labels;
  }
};

struct ServableManifest {
  std::map<std::string, SignatureDef> signatures;
  std::optional<ClassifierInfo> classifier;

  bool operator==(const ServableManifest& o) const {
    return signatures == o.signatures && classifier == o.classifier;
  }
};

// TensorFlow's name for a dtype ("DT_FLOAT") and back. InvalidArgument naming `what`
// for an unknown name.
const char* TfDTypeName(DType dtype);
StatusOr<DType> DTypeFromTfName(const std::string& name, const std::string& what);

// saved_model.json's text, and its parse. Parse errors are InvalidArgument naming
// `path` (line and column for malformed JSON, the signature and key otherwise).
std::string ServableManifestToJson(const ServableManifest& manifest);
StatusOr<ServableManifest> ParseServableManifest(const std::string& text,
                                                 const std::string& path);

// A loaded version: the inference graph with its variables frozen into constants
// (so any number of sessions can share it), and its signatures.
struct Servable {
  int64_t version = 0;
  std::string path;  // the version directory
  std::unique_ptr<Graph> graph;
  ServableManifest manifest;
  // The signature named `name` ("" = serving_default). NotFound naming it and the
  // signatures there are.
  StatusOr<const SignatureDef*> Signature(const std::string& name) const;
};

// Reads and verifies BASE/<version>: NotFound when the directory or a file is
// missing; InvalidArgument for a malformed manifest or graph, a signature endpoint
// that names no node of the graph, or a checkpoint that lacks a Variable of the
// graph; the checkpoint's errors (checksum mismatch: Internal). Every error names the
// version directory.
StatusOr<std::shared_ptr<const Servable>> LoadServable(const std::string& version_dir,
                                                       int64_t version);

// The version numbers under `base` (decimal directory names, ascending; hidden and
// other entries ignored). NotFound naming `base` when it does not exist.
StatusOr<std::vector<int64_t>> ListServableVersions(const std::string& base);

// What an export writes.
struct ExportRequest {
  // The model base path; created with its parents.
  std::string base_path;
  // The version to write; <= 0: one more than the highest there (1 for none).
  // AlreadyExists when that version directory exists.
  int64_t version = 0;
};

// Exports the DNNClassifier of a model directory written by `actorflow train
// --checkpoint-dir DIR` (model.json + its latest intact checkpoint). Signatures:
// "serving_default" and "predict" (predict: input "inputs" float [-1, F], outputs
// "class_ids" int64 [-1], "probabilities" float [-1, C], "logits" float [-1, C]),
// "classification" (classify: the same input, outputs "classes" and "scores"), and a
// ClassifierInfo. Returns the version directory written.
StatusOr<std::string> ExportDnnClassifier(const std::string& model_dir,
                                          const ExportRequest& request);

// Exports the model of any directory `actorflow train --checkpoint-dir DIR` writes:
// a DNNClassifier (model.json) as ExportDnnClassifier does, else the graph and
// signature its serving.json names (word2vec, wide & deep:
// training/estimators/model_dir.h) as ExportGraph does, with its latest checkpoint.
// NotFound naming the directory when it holds neither.
StatusOr<std::string> ExportModelDir(const std::string& model_dir, const ExportRequest& request);

// Exports any graph: `inputs` and `outputs` map client names to endpoints
// ("NAME=NODE[:k]" on the command line); the graph is pruned to what the outputs need
// from the inputs, and its Variables take their values from `checkpoint` (a
// directory or prefix; empty: the graph must have no Variable the outputs need).
// Signature "serving_default" (predict) with the endpoints' dtypes and shapes as
// shape inference gives them, the first dimension written as -1.
StatusOr<std::string> ExportGraph(const Graph& graph, const std::string& checkpoint,
                                  const std::map<std::string, std::string>& inputs,
                                  const std::map<std::string, std::string>& outputs,
                                  const ExportRequest& request);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_SERVING_SERVABLE_H_
