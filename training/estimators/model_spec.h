// DNNModelSpec: what defines a DNNClassifier's graph, and its file "model.json" in a
// model directory. A checkpoint holds the variables' values; model.json holds
// everything else that prediction needs (the feature columns with their
// normalization statistics, the layers, the classes, the activation and the label
// column's name), so that a model directory alone is enough to predict.
//
//   {"format": "actorflow.dnn_classifier/1",
//    "feature_columns": [{"name": "sepal_length_cm", "mean": 5.84, "std": 0.82}, ...],
//    "hidden_units": [10, 10], "n_classes": 3, "activation": "relu",
//    "label_column": "label"}
//
// A model other than the plain mlp (training/estimators/model_parallel.h) adds
//    "model": "cnn", "split": "towers", "parts": 2
// ("parts": how many devices it was built for, which shapes a vertical split); absent
// keys mean "mlp", "none" and 1, so that a plain DNN's file is unchanged. For a cnn,
// hidden_units are the dense head's hidden layers (may be empty); for an rnn, the
// units of each recurrent layer.
//
// A column without "mean"/"std" passes its raw value. Numbers are written so that they
// read back bit for bit (JSON's shortest round-trip form).
//
// Thread safety: the functions are reentrant; the file functions touch only the
// file they name.
#ifndef ACTORFLOW_TRAINING_ESTIMATORS_MODEL_SPEC_H_
#define ACTORFLOW_TRAINING_ESTIMATORS_MODEL_SPEC_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "graph/status.h"
#include "training/estimators/feature_columns.h"

namespace actorflow {

inline constexpr char kModelSpecFormat[] = "actorflow.dnn_classifier/1";
inline constexpr char kModelSpecFile[] = "model.json";

struct DNNModelSpec {
  std::vector<NumericColumn> feature_columns;  // input column i is feature_columns[i]
  std::vector<int64_t> hidden_units;           // each > 0, at least one layer
  int64_t n_classes = 2;                       // >= 2
  std::string activation = "relu";             // "relu", "tanh" or "sigmoid"
  std::string label_column = "label";          // for files: the column predict ignores
  std::string model = "mlp";                   // "mlp", "cnn" or "rnn"
  std::string split = "none";                  // "none", "layer", "vertical", "towers"
  int64_t parts = 1;                           // devices the split was built for, >= 1

  bool operator==(const DNNModelSpec& o) const {
    return feature_columns == o.feature_columns && hidden_units == o.hidden_units &&
           n_classes == o.n_classes && activation == o.activation &&
           label_column == o.label_column && model == o.model && split == o.split &&
           parts == o.parts;
  }
  bool operator!=(const DNNModelSpec& o) const { return !(*this == o); }
};

// OK when a graph can be built from the spec. InvalidArgument naming the culprit:
// the feature columns (ValidateFeatureColumns), no hidden layer (a cnn may have
// none) or a layer size < 1, n_classes < 2, an unknown activation, model or split,
// a split the model does not have, parts < 1.
Status ValidateModelSpec(const DNNModelSpec& spec);

// "[10, 10]": for messages.
std::string HiddenUnitsString(const std::vector<int64_t>& hidden_units);

// model.json's text (pretty-printed, newline-terminated).
std::string ModelSpecToJson(const DNNModelSpec& spec);
// Parses model.json's text; `path` is named in every error. InvalidArgument for
// malformed JSON, another format, a missing or mistyped key, or a spec that fails
// ValidateModelSpec.
StatusOr<DNNModelSpec> ParseModelSpec(std::string_view text, const std::string& path);

// Writes <dir>/model.json (through a temporary file and a rename, so that a reader
// never sees half a file). Unavailable naming the file when it cannot be written.
Status WriteModelSpec(const std::string& dir, const DNNModelSpec& spec);
// Reads <dir>/model.json: NotFound naming the file when it does not exist, else
// ParseModelSpec's errors.
StatusOr<DNNModelSpec> ReadModelSpec(const std::string& dir);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_ESTIMATORS_MODEL_SPEC_H_
