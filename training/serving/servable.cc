#include "training/serving/servable.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <filesystem>
#include <set>
#include <system_error>
#include <utility>

#include <nlohmann/json.hpp>

#include "graph/graph_json.h"
#include "graph/prune.h"
#include "graph/scope.h"
#include "graph/tensor_json.h"
#include "training/checkpoint/checkpoint.h"
#include "training/checkpoint/checkpoint_file.h"
#include "training/estimators/dnn_model.h"
#include "training/estimators/model_dir.h"
#include "training/estimators/model_spec.h"

namespace actorflow {
namespace {

using checkpoint_file::JoinPath;

std::optional<int64_t> ParseVersionName(const std::string& name) {
  if (name.empty() || name.size() > 18) return std::nullopt;
  int64_t value = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), value);
  if (ec != std::errc() || end != name.data() + name.size() || value <= 0) return std::nullopt;
  return value;
}

nlohmann::json TensorInfoJson(const TensorInfo& info) {
  nlohmann::json shape = nlohmann::json::array();
  for (int64_t d : info.shape.dims()) shape.push_back(d);
  return {{"name", info.endpoint}, {"dtype", TfDTypeName(info.dtype)}, {"shape", shape}};
}

StatusOr<TensorInfo> ParseTensorInfo(const nlohmann::json& json, const std::string& what) {
  if (!json.is_object() || !json.contains("name") || !json["name"].is_string() ||
      !json.contains("dtype") || !json["dtype"].is_string() || !json.contains("shape") ||
      !json["shape"].is_array()) {
    return InvalidArgument(what + ": needs \"name\" (string), \"dtype\" (string) and \"shape\" (list)");
  }
  TensorInfo info;
  info.endpoint = json["name"].get<std::string>();
  AF_ASSIGN_OR_RETURN(info.dtype, DTypeFromTfName(json["dtype"].get<std::string>(), what));
  std::vector<int64_t> dims;
  for (const auto& d : json["shape"]) {
    if (!d.is_number_integer() || d.get<int64_t>() < -1) {
      return InvalidArgument(what + ": a shape dimension is not an integer >= -1");
    }
    dims.push_back(d.get<int64_t>());
  }
  info.shape = Shape(std::move(dims));
  return info;
}

StatusOr<std::map<std::string, TensorInfo>> ParseTensorInfoMap(const nlohmann::json& json,
                                                               const std::string& what) {
  if (!json.is_object()) return InvalidArgument(what + ": not an object");
  std::map<std::string, TensorInfo> infos;
  for (auto it = json.begin(); it != json.end(); ++it) {
    AF_ASSIGN_OR_RETURN(infos[it.key()], ParseTensorInfo(it.value(), what + " '" + it.key() + "'"));
  }
  if (infos.empty()) return InvalidArgument(what + ": empty");
  return infos;
}

// The signature's shape for an endpoint: the graph's inferred shape with the first
// dimension (the batch) unknown.
TensorInfo InfoFor(const Endpoint& endpoint) {
  TensorInfo info;
  info.endpoint = endpoint.ToString();
  info.dtype = endpoint.node->output_dtype(endpoint.index);
  Shape shape = endpoint.node->output_shape(endpoint.index);
  if (shape.unknown_rank()) shape = Shape({-1});
  if (shape.rank() > 0) shape.set_dim(0, -1);
  info.shape = shape;
  return info;
}

// A directory name beside the versions that readers ignore, unique in this process.
std::string TempVersionDir(const std::string& base, int64_t version) {
  static std::atomic<int> counter{0};
  return JoinPath(base, ".tmp-" + std::to_string(version) + "-" + std::to_string(::getpid()) + "-" +
                            std::to_string(counter.fetch_add(1)));
}

Status WriteDurableText(const std::string& path, const std::string& text) {
  AF_ASSIGN_OR_RETURN(checkpoint_file::DurableFile file, checkpoint_file::DurableFile::Create(path));
  AF_RETURN_IF_ERROR(file.Append(text.data(), text.size()));
  return file.SyncAndClose();
}

// The nodes the outputs need from the inputs (each input a Placeholder), as NodeDefs
// in graph order with their devices cleared (a servable is placed where it is served).
StatusOr<std::vector<NodeDef>> PrunedInferenceGraph(const Graph& graph,
                                                    const std::vector<std::string>& inputs,
                                                    const std::vector<std::string>& outputs) {
  AF_ASSIGN_OR_RETURN(RunSignature sig, ResolveRunSignature(graph, inputs, outputs, {}));
  for (const Endpoint& feed : sig.feeds) {
    if (feed.node->op() != "Placeholder") {
      return InvalidArgument("export input '" + feed.ToString() + "' is a " + feed.node->op() +
                             ", not a Placeholder: a servable is fed through its placeholders");
    }
  }
  AF_ASSIGN_OR_RETURN(std::vector<const Node*> needed, PruneForRun(graph, sig));
  std::set<const Node*> keep(needed.begin(), needed.end());
  for (const Endpoint& feed : sig.feeds) keep.insert(feed.node);
  std::vector<NodeDef> defs;
  for (int id = 0; id < graph.num_nodes(); ++id) {
    const Node* node = graph.node(id);
    if (node == nullptr || keep.count(node) == 0) continue;
    NodeDef def = node->def();
    def.device.clear();
    defs.push_back(std::move(def));
  }
  return defs;
}

// Writes one version (graph, variables, manifest) into a temporary directory and
// renames it into place.
StatusOr<std::string> WriteVersion(const std::vector<NodeDef>& defs,
                                   const std::vector<std::pair<std::string, Tensor>>& variables,
                                   const ServableManifest& manifest, const ExportRequest& request) {
  if (request.base_path.empty()) return InvalidArgument("export: the model base path is empty");
  AF_RETURN_IF_ERROR(checkpoint_file::CreateDirectories(request.base_path));
  int64_t version = request.version;
  if (version <= 0) {
    AF_ASSIGN_OR_RETURN(std::vector<int64_t> versions, ListServableVersions(request.base_path));
    version = versions.empty() ? 1 : versions.back() + 1;
  }
  const std::string final_dir = JoinPath(request.base_path, std::to_string(version));
  if (checkpoint_file::IsDirectory(final_dir) || checkpoint_file::IsRegularFile(final_dir)) {
    return AlreadyExists("export: version " + std::to_string(version) + " exists already at '" +
                         final_dir + "' (pick another --version, or leave it out for the next)");
  }
  const std::string temp = TempVersionDir(request.base_path, version);
  Status s = [&]() -> Status {
    AF_RETURN_IF_ERROR(checkpoint_file::CreateDirectories(temp));
    AF_RETURN_IF_ERROR(WriteDurableText(JoinPath(temp, kServableGraphFile),
                                        SerializeGraphJson(defs, /*pretty=*/true)));
    AF_RETURN_IF_ERROR(WriteCheckpointTensors(JoinPath(temp, kServableVariablesDir), 0, variables,
                                              /*max_to_keep=*/0)
                           .status());
    AF_RETURN_IF_ERROR(WriteDurableText(JoinPath(temp, kServableManifestFile),
                                        ServableManifestToJson(manifest)));
    AF_RETURN_IF_ERROR(checkpoint_file::SyncDirectory(temp));
    AF_RETURN_IF_ERROR(checkpoint_file::Rename(temp, final_dir));
    return checkpoint_file::SyncDirectory(request.base_path);
  }();
  if (!s.ok()) {
    std::error_code ignored;
    std::filesystem::remove_all(temp, ignored);
    return s.WithContext("export of version " + std::to_string(version) + " into '" +
                         request.base_path + "'");
  }
  return final_dir;
}

// The values of the Variables among `defs`, from `checkpoint` (a directory or prefix).
StatusOr<std::vector<std::pair<std::string, Tensor>>> VariableValues(
    const std::vector<NodeDef>& defs, const std::string& checkpoint) {
  std::vector<std::pair<std::string, Tensor>> values;
  std::map<std::string, Tensor> tensors;
  bool read = false;
  for (const NodeDef& def : defs) {
    if (def.op != "Variable") continue;
    if (checkpoint.empty()) {
      return InvalidArgument("export: the outputs need Variable '" + def.name +
                             "', and no checkpoint was given to take its value from");
    }
    if (!read) {
      AF_ASSIGN_OR_RETURN(tensors, ReadCheckpoint(checkpoint));
      read = true;
    }
    auto it = tensors.find(def.name);
    if (it == tensors.end()) {
      return NotFound("export: the checkpoint '" + checkpoint + "' has no value for Variable '" +
                      def.name + "'");
    }
    values.emplace_back(def.name, it->second);
  }
  return values;
}

}  // namespace

const char* TfDTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "DT_FLOAT";
    case DType::kFloat64: return "DT_DOUBLE";
    case DType::kInt32: return "DT_INT32";
    case DType::kInt64: return "DT_INT64";
    case DType::kBool: return "DT_BOOL";
  }
  return "DT_INVALID";
}

StatusOr<DType> DTypeFromTfName(const std::string& name, const std::string& what) {
  for (DType d : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64, DType::kBool}) {
    if (name == TfDTypeName(d)) return d;
  }
  return InvalidArgument(what + ": unknown dtype '" + name +
                         "' (DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64 or DT_BOOL)");
}

std::string ServableManifestToJson(const ServableManifest& manifest) {
  nlohmann::ordered_json root;
  root["format"] = kServableFormat;
  nlohmann::json signatures = nlohmann::json::object();
  for (const auto& [name, sig] : manifest.signatures) {
    nlohmann::json inputs = nlohmann::json::object(), outputs = nlohmann::json::object();
    for (const auto& [key, info] : sig.inputs) inputs[key] = TensorInfoJson(info);
    for (const auto& [key, info] : sig.outputs) outputs[key] = TensorInfoJson(info);
    signatures[name] = {{"method_name", sig.method_name}, {"inputs", inputs}, {"outputs", outputs}};
  }
  root["signatures"] = signatures;
  if (manifest.classifier) {
    root["classifier"] = {{"feature_names", manifest.classifier->feature_names},
                          {"labels", manifest.classifier->labels}};
  }
  return root.dump(2) + "\n";
}

StatusOr<ServableManifest> ParseServableManifest(const std::string& text, const std::string& path) {
  AF_ASSIGN_OR_RETURN(nlohmann::json root, ParseJsonText(text, path));
  if (!root.is_object()) return InvalidArgument(path + ": not a JSON object");
  if (!root.contains("format") || root["format"] != kServableFormat) {
    return InvalidArgument(path + ": \"format\" is not \"" + std::string(kServableFormat) + "\"");
  }
  if (!root.contains("signatures") || !root["signatures"].is_object() ||
      root["signatures"].empty()) {
    return InvalidArgument(path + ": needs \"signatures\", an object with at least one signature");
  }
  ServableManifest manifest;
  const nlohmann::json& signatures = root["signatures"];
  for (auto it = signatures.begin(); it != signatures.end(); ++it) {
    const std::string what = path + ": signature '" + it.key() + "'";
    const nlohmann::json& s = it.value();
    if (!s.is_object() || !s.contains("method_name") || !s["method_name"].is_string() ||
        !s.contains("inputs") || !s.contains("outputs")) {
      return InvalidArgument(what + ": needs \"method_name\", \"inputs\" and \"outputs\"");
    }
    SignatureDef sig;
    sig.method_name = s["method_name"].get<std::string>();
    AF_ASSIGN_OR_RETURN(sig.inputs, ParseTensorInfoMap(s["inputs"], what + " inputs"));
    AF_ASSIGN_OR_RETURN(sig.outputs, ParseTensorInfoMap(s["outputs"], what + " outputs"));
    manifest.signatures[it.key()] = std::move(sig);
  }
  if (root.contains("classifier")) {
    const nlohmann::json& c = root["classifier"];
    auto strings = [](const nlohmann::json& j) {
      if (!j.is_array()) return false;
      for (const auto& e : j)
        if (!e.is_string()) return false;
      return true;
    };
    if (!c.is_object() || !c.contains("feature_names") || !strings(c["feature_names"]) ||
        !c.contains("labels") || !strings(c["labels"])) {
      return InvalidArgument(path + ": \"classifier\" needs \"feature_names\" and \"labels\", "
                                    "lists of strings");
    }
    manifest.classifier = ClassifierInfo{c["feature_names"].get<std::vector<std::string>>(),
                                         c["labels"].get<std::vector<std::string>>()};
  }
  return manifest;
}

StatusOr<const SignatureDef*> Servable::Signature(const std::string& name) const {
  const std::string wanted = name.empty() ? kDefaultServingSignature : name;
  auto it = manifest.signatures.find(wanted);
  if (it != manifest.signatures.end()) return &it->second;
  std::string names;
  for (const auto& [n, sig] : manifest.signatures) names += (names.empty() ? "" : ", ") + n;
  return NotFound("Serving signature name: \"" + wanted + "\" not found in signature def (" +
                  "version " + std::to_string(version) + " has: " + names + ")");
}

StatusOr<std::vector<int64_t>> ListServableVersions(const std::string& base) {
  if (!checkpoint_file::IsDirectory(base)) {
    return NotFound("model base path '" + base + "' does not exist or is not a directory");
  }
  AF_ASSIGN_OR_RETURN(std::vector<std::string> names, checkpoint_file::ListDirectory(base));
  std::vector<int64_t> versions;
  for (const std::string& name : names) {
    std::optional<int64_t> v = ParseVersionName(name);
    if (v && checkpoint_file::IsDirectory(JoinPath(base, name))) versions.push_back(*v);
  }
  std::sort(versions.begin(), versions.end());
  return versions;
}

StatusOr<std::shared_ptr<const Servable>> LoadServable(const std::string& version_dir,
                                                       int64_t version) {
  auto load = [&]() -> StatusOr<std::shared_ptr<const Servable>> {
    const std::string manifest_path = JoinPath(version_dir, kServableManifestFile);
    AF_ASSIGN_OR_RETURN(std::string manifest_text, checkpoint_file::ReadFileToString(manifest_path));
    auto servable = std::make_shared<Servable>();
    servable->version = version;
    servable->path = version_dir;
    AF_ASSIGN_OR_RETURN(servable->manifest, ParseServableManifest(manifest_text, manifest_path));
    const std::string graph_path = JoinPath(version_dir, kServableGraphFile);
    AF_ASSIGN_OR_RETURN(std::string graph_text, checkpoint_file::ReadFileToString(graph_path));
    StatusOr<std::vector<NodeDef>> parsed = ParseGraphJson(graph_text);
    if (!parsed.ok()) return parsed.status().WithContext(graph_path);
    std::vector<NodeDef> defs = std::move(parsed).value();
    // Freeze: every Variable becomes a Const of its checkpointed value, so that the
    // graph is immutable and any number of replicas share it without initializing.
    bool has_variables = std::any_of(defs.begin(), defs.end(),
                                     [](const NodeDef& d) { return d.op == "Variable"; });
    if (has_variables) {
      AF_ASSIGN_OR_RETURN(auto values,
                          ReadCheckpoint(JoinPath(version_dir, kServableVariablesDir)));
      for (NodeDef& def : defs) {
        if (def.op != "Variable") continue;
        auto it = values.find(def.name);
        if (it == values.end()) {
          return InvalidArgument("the variables have no value for Variable '" + def.name + "'");
        }
        def.op = "Const";
        def.attrs.clear();
        def.attrs["value"] = AttrValue(it->second);
      }
    }
    AF_ASSIGN_OR_RETURN(servable->graph, Graph::FromNodeDefs(defs));
    for (const auto& [name, sig] : servable->manifest.signatures) {
      for (const auto* infos : {&sig.inputs, &sig.outputs}) {
        for (const auto& [key, info] : *infos) {
          auto resolved = ResolveRunSignature(*servable->graph, {}, {info.endpoint}, {});
          if (!resolved.ok()) {
            return InvalidArgument("signature '" + name + "' tensor '" + key + "' names '" +
                                   info.endpoint + "', which the graph does not have");
          }
        }
      }
    }
    return std::shared_ptr<const Servable>(std::move(servable));
  };
  auto loaded = load();
  if (!loaded.ok()) return loaded.status().WithContext("version directory '" + version_dir + "'");
  return loaded;
}

StatusOr<std::string> ExportModelDir(const std::string& model_dir,
                                     const ExportRequest& request) {
  using checkpoint_file::IsRegularFile;
  using checkpoint_file::JoinPath;
  if (IsRegularFile(JoinPath(model_dir, "model.json"))) {
    return ExportDnnClassifier(model_dir, request);
  }
  if (!IsRegularFile(JoinPath(model_dir, kServingSpecFile))) {
    return NotFound("'" + model_dir + "' holds neither a classifier (model.json) nor a "
                    "serving description (" + kServingSpecFile + "): is it a model directory "
                    "written by train --checkpoint-dir?");
  }
  AF_ASSIGN_OR_RETURN(ServingSpec serving, ReadServingSpec(model_dir));
  AF_ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph,
                      LoadGraphFile(JoinPath(model_dir, kServingGraphFile)));
  return ExportGraph(*graph, model_dir, serving.inputs, serving.outputs, request);
}

StatusOr<std::string> ExportDnnClassifier(const std::string& model_dir,
                                          const ExportRequest& request) {
  AF_ASSIGN_OR_RETURN(DNNModelSpec spec, ReadModelSpec(model_dir));
  Scope root = Scope::NewRootScope();
  AF_ASSIGN_OR_RETURN(DNNModel model, BuildDNNModel(root, spec, /*seed=*/0));
  const Graph& graph = *root.graph();
  const std::string input = model.features.name();
  AF_ASSIGN_OR_RETURN(std::vector<NodeDef> defs,
                      PrunedInferenceGraph(graph, {input},
                                           {model.probabilities.name(), model.class_ids.name(),
                                            model.logits.name()}));
  AF_ASSIGN_OR_RETURN(std::string checkpoint, LatestCheckpoint(model_dir));
  AF_ASSIGN_OR_RETURN(auto variables, VariableValues(defs, checkpoint));

  const TensorInfo inputs = InfoFor(Endpoint{model.features.node, model.features.index});
  const TensorInfo class_ids = InfoFor(Endpoint{model.class_ids.node, model.class_ids.index});
  const TensorInfo probabilities =
      InfoFor(Endpoint{model.probabilities.node, model.probabilities.index});
  const TensorInfo logits = InfoFor(Endpoint{model.logits.node, model.logits.index});
  ServableManifest manifest;
  SignatureDef predict;
  predict.inputs = {{"inputs", inputs}};
  predict.outputs = {{"class_ids", class_ids}, {"probabilities", probabilities}, {"logits", logits}};
  manifest.signatures[kDefaultServingSignature] = predict;
  manifest.signatures["predict"] = predict;
  SignatureDef classify;
  classify.method_name = kClassifyMethodName;
  classify.inputs = {{"inputs", inputs}};
  classify.outputs = {{"classes", class_ids}, {"scores", probabilities}};
  manifest.signatures["classification"] = classify;
  ClassifierInfo classifier;
  for (const NumericColumn& column : spec.feature_columns) classifier.feature_names.push_back(column.name);
  for (int64_t c = 0; c < spec.n_classes; ++c) classifier.labels.push_back(std::to_string(c));
  manifest.classifier = classifier;
  auto written = WriteVersion(defs, variables, manifest, request);
  if (!written.ok()) return written.status().WithContext("model directory '" + model_dir + "'");
  return written;
}

StatusOr<std::string> ExportGraph(const Graph& graph, const std::string& checkpoint,
                                  const std::map<std::string, std::string>& inputs,
                                  const std::map<std::string, std::string>& outputs,
                                  const ExportRequest& request) {
  if (inputs.empty() || outputs.empty()) {
    return InvalidArgument("export: a graph export needs at least one --input and one --output");
  }
  std::vector<std::string> input_names, output_names;
  for (const auto& [key, endpoint] : inputs) input_names.push_back(endpoint);
  for (const auto& [key, endpoint] : outputs) output_names.push_back(endpoint);
  AF_ASSIGN_OR_RETURN(std::vector<NodeDef> defs,
                      PrunedInferenceGraph(graph, input_names, output_names));
  AF_ASSIGN_OR_RETURN(auto variables, VariableValues(defs, checkpoint));
  AF_ASSIGN_OR_RETURN(RunSignature sig, ResolveRunSignature(graph, input_names, output_names, {}));
  SignatureDef predict;
  size_t i = 0;
  for (const auto& [key, endpoint] : inputs) predict.inputs[key] = InfoFor(sig.feeds[i++]);
  i = 0;
  for (const auto& [key, endpoint] : outputs) predict.outputs[key] = InfoFor(sig.fetches[i++]);
  ServableManifest manifest;
  manifest.signatures[kDefaultServingSignature] = predict;
  return WriteVersion(defs, variables, manifest, request);
}

}  // namespace actorflow
