#include "training/estimators/model_spec.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "graph/tensor_json.h"
#include "training/estimators/model_parallel.h"

namespace actorflow {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

std::string ModelSpecPath(const std::string& dir) {
  if (dir.empty() || dir.back() == '/') return dir + kModelSpecFile;
  return dir + "/" + kModelSpecFile;
}

// The value of `key` in `object`, checked to have the type `is` tests for.
StatusOr<json> Member(const json& object, const std::string& key, bool (json::*is)() const,
                      const char* expected, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end()) return InvalidArgument(where + ": missing key \"" + key + "\"");
  if (!((*it).*is)()) {
    return InvalidArgument(where + ": \"" + key + "\" must be " + expected + ", got " + it->dump());
  }
  return *it;
}

}  // namespace

std::string HiddenUnitsString(const std::vector<int64_t>& hidden_units) {
  std::string s = "[";
  for (size_t i = 0; i < hidden_units.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(hidden_units[i]);
  }
  return s + "]";
}

Status ValidateModelSpec(const DNNModelSpec& spec) {
  AF_RETURN_IF_ERROR(ValidateFeatureColumns(spec.feature_columns));
  AF_ASSIGN_OR_RETURN(ModelKind kind, ParseModelKind(spec.model));
  AF_ASSIGN_OR_RETURN(ModelSplit split, ParseModelSplit(spec.split));
  ModelPlacement placement;  // only the split is judged here, not the devices
  placement.split = split;
  placement.devices.assign(static_cast<size_t>(kCnnTowers), "");
  AF_RETURN_IF_ERROR(CheckModelPlacement(kind, placement));
  if (spec.parts < 1) {
    return InvalidArgument("parts " + std::to_string(spec.parts) + ": must be >= 1");
  }
  const bool convolutional = kind == ModelKind::kCnn || kind == ModelKind::kConvnet ||
                             kind == ModelKind::kConvnetBn;
  if (spec.hidden_units.empty() && !convolutional) {
    return InvalidArgument("hidden units: none given; a DNN needs at least one hidden layer");
  }
  for (size_t i = 0; i < spec.hidden_units.size(); ++i) {
    if (spec.hidden_units[i] < 1) {
      return InvalidArgument("hidden units " + HiddenUnitsString(spec.hidden_units) + ": layer " +
                             std::to_string(i + 1) + " has " +
                             std::to_string(spec.hidden_units[i]) + " units; each needs >= 1");
    }
  }
  if (spec.n_classes < 2) {
    return InvalidArgument("n_classes " + std::to_string(spec.n_classes) +
                           ": a classifier needs at least 2 classes");
  }
  if (spec.activation != "relu" && spec.activation != "tanh" && spec.activation != "sigmoid") {
    return InvalidArgument("unknown activation '" + spec.activation +
                           "' (expected relu, tanh or sigmoid)");
  }
  return Status::OK();
}

std::string ModelSpecToJson(const DNNModelSpec& spec) {
  ordered_json j;
  j["format"] = kModelSpecFormat;
  ordered_json columns = ordered_json::array();
  for (const NumericColumn& column : spec.feature_columns) {
    ordered_json c;
    c["name"] = column.name;
    if (column.normalization) {
      c["mean"] = column.normalization->mean;
      c["std"] = column.normalization->stddev;
    }
    columns.push_back(c);
  }
  j["feature_columns"] = columns;
  j["hidden_units"] = spec.hidden_units;
  j["n_classes"] = spec.n_classes;
  j["activation"] = spec.activation;
  j["label_column"] = spec.label_column;
  if (spec.model != "mlp" || spec.split != "none" || spec.parts != 1) {
    j["model"] = spec.model;
    j["split"] = spec.split;
    j["parts"] = spec.parts;
  }
  return j.dump(2) + "\n";
}

StatusOr<DNNModelSpec> ParseModelSpec(std::string_view text, const std::string& path) {
  AF_ASSIGN_OR_RETURN(json j, ParseJsonText(text, path));
  if (!j.is_object()) return InvalidArgument(path + ": expected a JSON object");
  AF_ASSIGN_OR_RETURN(json format, Member(j, "format", &json::is_string, "a string", path));
  if (format.get<std::string>() != kModelSpecFormat) {
    return InvalidArgument(path + ": format " + format.dump() + " is not \"" + kModelSpecFormat +
                           "\"");
  }
  DNNModelSpec spec;
  AF_ASSIGN_OR_RETURN(json columns, Member(j, "feature_columns", &json::is_array, "a list", path));
  for (size_t i = 0; i < columns.size(); ++i) {
    const std::string where = path + ": feature_columns[" + std::to_string(i) + "]";
    const json& c = columns[i];
    if (!c.is_object()) return InvalidArgument(where + ": expected an object");
    AF_ASSIGN_OR_RETURN(json name, Member(c, "name", &json::is_string, "a string", where));
    NumericColumn column{name.get<std::string>(), std::nullopt};
    if (c.contains("mean") || c.contains("std")) {
      AF_ASSIGN_OR_RETURN(json mean, Member(c, "mean", &json::is_number, "a number", where));
      AF_ASSIGN_OR_RETURN(json stddev, Member(c, "std", &json::is_number, "a number", where));
      column.normalization = Normalization{mean.get<double>(), stddev.get<double>()};
    }
    spec.feature_columns.push_back(std::move(column));
  }
  AF_ASSIGN_OR_RETURN(json hidden, Member(j, "hidden_units", &json::is_array, "a list", path));
  for (const json& units : hidden) {
    if (!units.is_number_integer()) {
      return InvalidArgument(path + ": hidden_units must be integers, got " + units.dump());
    }
    spec.hidden_units.push_back(units.get<int64_t>());
  }
  AF_ASSIGN_OR_RETURN(json classes,
                      Member(j, "n_classes", &json::is_number_integer, "an integer", path));
  spec.n_classes = classes.get<int64_t>();
  AF_ASSIGN_OR_RETURN(json activation, Member(j, "activation", &json::is_string, "a string", path));
  spec.activation = activation.get<std::string>();
  AF_ASSIGN_OR_RETURN(json label, Member(j, "label_column", &json::is_string, "a string", path));
  spec.label_column = label.get<std::string>();
  if (j.contains("model")) {
    AF_ASSIGN_OR_RETURN(json model, Member(j, "model", &json::is_string, "a string", path));
    spec.model = model.get<std::string>();
  }
  if (j.contains("split")) {
    AF_ASSIGN_OR_RETURN(json split, Member(j, "split", &json::is_string, "a string", path));
    spec.split = split.get<std::string>();
  }
  if (j.contains("parts")) {
    AF_ASSIGN_OR_RETURN(json parts,
                        Member(j, "parts", &json::is_number_integer, "an integer", path));
    spec.parts = parts.get<int64_t>();
  }
  Status valid = ValidateModelSpec(spec);
  if (!valid.ok()) return valid.WithContext(path);
  return spec;
}

Status WriteModelSpec(const std::string& dir, const DNNModelSpec& spec) {
  const std::string path = ModelSpecPath(dir);
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp, std::ios::out | std::ios::trunc | std::ios::binary);
    if (!out.is_open()) return Unavailable(temp + ": cannot open for writing");
    out << ModelSpecToJson(spec);
    out.flush();
    if (!out.good()) return Unavailable(temp + ": write failed");
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    std::remove(temp.c_str());
    return Unavailable(path + ": cannot rename " + temp + " to it");
  }
  return Status::OK();
}

StatusOr<DNNModelSpec> ReadModelSpec(const std::string& dir) {
  const std::string path = ModelSpecPath(dir);
  std::ifstream in(path, std::ios::in | std::ios::binary);
  if (!in.is_open()) {
    return NotFound(path + ": no model description (is '" + dir +
                    "' a model directory written by training?)");
  }
  std::stringstream text;
  text << in.rdbuf();
  return ParseModelSpec(text.str(), path);
}

}  // namespace actorflow
