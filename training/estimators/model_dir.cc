#include "training/estimators/model_dir.h"

#include <cstdio>
#include <fstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "graph/graph_json.h"
#include "training/checkpoint/checkpoint.h"
#include "training/checkpoint/checkpoint_file.h"

namespace actorflow {

ChiefCheckpoints::ChiefCheckpoints(std::string dir, std::unique_ptr<Saver> saver)
    : dir_(std::move(dir)), saver_(std::move(saver)) {}
ChiefCheckpoints::ChiefCheckpoints(ChiefCheckpoints&&) noexcept = default;
ChiefCheckpoints& ChiefCheckpoints::operator=(ChiefCheckpoints&&) noexcept = default;
ChiefCheckpoints::~ChiefCheckpoints() = default;

StatusOr<ChiefCheckpoints> ChiefCheckpoints::Create(Graph* chief_graph, const std::string& dir) {
  if (dir.empty()) return ChiefCheckpoints("", nullptr);
  AF_ASSIGN_OR_RETURN(std::unique_ptr<Saver> saver, Saver::Create(chief_graph, SaverOptions()));
  return ChiefCheckpoints(dir, std::move(saver));
}

StatusOr<int64_t> ChiefCheckpoints::RestoreOrInitialize(Session* chief,
                                                        const std::string& init_op) {
  if (saver_ != nullptr) {
    StatusOr<std::string> latest = LatestCheckpoint(dir_);
    if (latest.ok()) {
      AF_RETURN_IF_ERROR(saver_->Restore(chief, *latest).WithContext("--checkpoint-dir " + dir_));
      return ReadCheckpointGlobalStep(*latest);
    }
    if (latest.status().code() != Code::kNotFound) return latest.status();
  }
  AF_RETURN_IF_ERROR(chief->Run({}, {}, {init_op}, nullptr));
  return int64_t{0};
}

Status ChiefCheckpoints::Save(Session* chief, int64_t global_step, const Graph& graph,
                              const ServingSpec& serving) {
  if (saver_ == nullptr) return Status::OK();
  AF_RETURN_IF_ERROR(saver_->Save(chief, dir_, global_step).status());
  AF_RETURN_IF_ERROR(WriteFileByRename(checkpoint_file::JoinPath(dir_, kServingGraphFile),
                                       GraphToJson(graph)));
  return WriteFileByRename(checkpoint_file::JoinPath(dir_, kServingSpecFile),
                           ServingSpecToJson(serving));
}

std::string ServingSpecToJson(const ServingSpec& spec) {
  nlohmann::ordered_json j;
  j["model"] = spec.model;
  j["graph"] = kServingGraphFile;
  j["inputs"] = spec.inputs;
  j["outputs"] = spec.outputs;
  return j.dump(2) + "\n";
}

StatusOr<ServingSpec> ParseServingSpec(const std::string& text, const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return InvalidArgument(path + ": malformed JSON: " + e.what());
  }
  ServingSpec spec;
  for (const char* field : {"model", "inputs", "outputs"}) {
    if (!j.is_object() || !j.contains(field)) {
      return InvalidArgument(path + ": no \"" + std::string(field) + "\"");
    }
  }
  try {
    spec.model = j.at("model").get<std::string>();
    spec.inputs = j.at("inputs").get<std::map<std::string, std::string>>();
    spec.outputs = j.at("outputs").get<std::map<std::string, std::string>>();
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(path + ": \"model\" must be a string and \"inputs\" and "
                           "\"outputs\" objects of strings: " + e.what());
  }
  if (spec.inputs.empty() || spec.outputs.empty()) {
    return InvalidArgument(path + ": \"inputs\" and \"outputs\" must name at least one node");
  }
  return spec;
}

StatusOr<ServingSpec> ReadServingSpec(const std::string& dir) {
  const std::string path = checkpoint_file::JoinPath(dir, kServingSpecFile);
  if (!checkpoint_file::IsRegularFile(path)) {
    return NotFound(path + ": no serving description (is '" + dir +
                    "' a model directory written by train --checkpoint-dir?)");
  }
  AF_ASSIGN_OR_RETURN(std::string text, checkpoint_file::ReadFileToString(path));
  return ParseServingSpec(text, path);
}

Status WriteFileByRename(const std::string& path, const std::string& text) {
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp, std::ios::out | std::ios::trunc | std::ios::binary);
    if (!out.is_open()) return Unavailable(temp + ": cannot open for writing");
    out << text;
    out.flush();
    if (!out.good()) return Unavailable(temp + ": write failed");
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    std::remove(temp.c_str());
    return Unavailable(path + ": cannot rename " + temp + " to it");
  }
  return Status::OK();
}

}  // namespace actorflow
