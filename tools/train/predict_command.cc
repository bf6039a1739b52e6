#include "tools/train/predict_command.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "tools/train/train_flags.h"
#include "training/data/csv_dataset.h"
#include "training/estimators/dnn_classifier.h"

namespace actorflow {
namespace cli {
namespace {

// The shortest decimal that reads back as `value` as a float32 (0.01f prints as
// 0.01, not 0.009999999776482582), as a JSON number.
nlohmann::json FloatJson(float value) {
  char buffer[32];
  auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return nlohmann::json::parse(std::string(buffer, result.ptr), nullptr, false);
}

// The file's features as the model's columns, in the model's order: float32 [N, F].
StatusOr<Tensor> ModelFeatures(const CsvData& data, const DNNModelSpec& spec,
                               const std::string& path) {
  const int64_t rows = data.features.dim(0);
  const int64_t file_columns = data.features.dim(1);
  const int64_t model_columns = static_cast<int64_t>(spec.feature_columns.size());
  if (data.feature_names.size() == spec.feature_columns.size()) {
    bool same = true;
    for (size_t i = 0; i < data.feature_names.size(); ++i) {
      same = same && data.feature_names[i] == spec.feature_columns[i].name;
    }
    if (same) return data.features;
  }
  std::vector<int64_t> source;
  for (const NumericColumn& column : spec.feature_columns) {
    int64_t found = -1;
    for (size_t i = 0; i < data.feature_names.size(); ++i) {
      if (data.feature_names[i] == column.name) found = static_cast<int64_t>(i);
    }
    if (found < 0) {
      std::string names;
      for (const std::string& name : data.feature_names)
        names += (names.empty() ? "" : ", ") + name;
      return InvalidArgument(path + ": no column '" + column.name +
                             "', which the model needs (the file's features: " + names + ")");
    }
    source.push_back(found);
  }
  Tensor features(DType::kFloat32, Shape{rows, model_columns});
  const float* in = data.features.data<float>();  // [rows, file_columns]
  float* out = features.data<float>();            // [rows, model_columns]
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < model_columns; ++c)
      out[r * model_columns + c] = in[r * file_columns + source[c]];
  }
  return features;
}

Status Predict(const PredictCommandOptions& options, std::ostream& out) {
  const std::string dir = ResolveUserPath(options.checkpoint_dir);
  const std::string path = ResolveUserPath(options.input_path);
  AF_ASSIGN_OR_RETURN(
      std::unique_ptr<DNNClassifier> classifier,
      DNNClassifier::Load(dir, SessionFactoryFor(SessionOptions()), options.timeout_ms));
  const DNNModelSpec& spec = classifier->spec();
  CsvOptions csv;
  csv.label_column = spec.label_column;
  StatusOr<CsvData> data = LoadCsv(path, csv);
  if (!data.ok()) {
    return data.status().WithContext("reading rows for the model in " + dir + " (label column '" +
                                     spec.label_column + "')");
  }
  AF_ASSIGN_OR_RETURN(Tensor features, ModelFeatures(*data, spec, path));
  InputFn input = [features]() -> StatusOr<std::shared_ptr<const Dataset>> {
    AF_ASSIGN_OR_RETURN(auto slices, Dataset::FromTensorSlices({features}));
    return slices->Batch(256);
  };
  AF_ASSIGN_OR_RETURN(std::vector<Prediction> predictions, classifier->Predict(input));
  // Finite weights can still overflow into NaN or infinite probabilities: a
  // prediction that is not a number is an error, never a row of "<discarded>".
  for (size_t i = 0; i < predictions.size(); ++i) {
    for (float v : predictions[i].probabilities) {
      if (std::isfinite(v)) continue;
      return InvalidArgument("the model in " + dir + " gives non-finite probabilities for row " +
                             std::to_string(i + 1) + " of " + path +
                             " (are its weights or the row's features extreme?)");
    }
  }

  if (options.json) {
    nlohmann::json rows = nlohmann::json::array();
    for (const Prediction& p : predictions) {
      nlohmann::json probabilities = nlohmann::json::array();
      for (float v : p.probabilities) probabilities.push_back(FloatJson(v));
      rows.push_back({{"class", p.class_id}, {"probabilities", probabilities}});
    }
    nlohmann::json result;
    result["predictions"] = rows;
    out << result.dump() << "\n";
  } else {
    for (size_t i = 0; i < predictions.size(); ++i) {
      out << "row " << i + 1 << ": class " << predictions[i].class_id << "  probabilities";
      for (float v : predictions[i].probabilities) {
        char buffer[32];
        std::snprintf(buffer, sizeof(buffer), " %.4f", v);
        out << buffer;
      }
      out << "\n";
    }
  }
  out.flush();
  return Status::OK();
}

}  // namespace

int PredictCommand(const PredictCommandOptions& options, std::ostream& out, std::ostream& err) {
  return RunChecked(
      out, err,
      [&]() -> Status {
        if (options.checkpoint_dir.empty() || options.input_path.empty()) {
          return InvalidArgument("predict needs --checkpoint-dir DIR and --input FILE");
        }
        return CheckTimeoutMs(options.timeout_ms);
      },
      [&]() { return Predict(options, out); });
}

Subcommand AddPredictSubcommand(CLI::App* parent) {
  auto options = std::make_shared<PredictCommandOptions>();
  CLI::App* app = parent->add_subcommand(
      "predict", "Classify the rows of a CSV file with a model saved by `train`");
  app->add_option("--checkpoint-dir", options->checkpoint_dir,
                  "Model directory written by train --checkpoint-dir")
      ->required();
  app->add_option("--input", options->input_path, "CSV file laid out like the training data")
      ->required();
  app->add_flag("--json", options->json, "Print one line of JSON");
  AddTimeoutMsOption(app, &options->timeout_ms)->capture_default_str();
  return Subcommand{app, [options]() { return PredictCommand(*options, std::cout, std::cerr); }};
}

}  // namespace cli
}  // namespace actorflow
