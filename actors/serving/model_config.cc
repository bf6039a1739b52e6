// ParseModelConfigFile (actors/serving/model_server.h): the model config file of `actorflow
// serve`. Kept apart from the server so that the parser, which reads outside input,
// builds and is tested (and fuzzed: tools/fuzz/model_config_fuzzer.cc) without the
// actor runtime.
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/serving/model_server.h"
#include "graph/tensor_json.h"

namespace actorflow {
namespace {

StatusOr<int64_t> PositiveInt(const nlohmann::json& j, const std::string& what) {
  if (!j.is_number_integer() || j.get<int64_t>() < 1) return InvalidArgument(what + " must be an integer >= 1");
  return j.get<int64_t>();
}

}  // namespace

StatusOr<std::vector<ModelConfig>> ParseModelConfigFile(const std::string& text,
                                                        const std::string& path) {
  AF_ASSIGN_OR_RETURN(nlohmann::json root, ParseJsonText(text, path));
  if (!root.is_object() || !root.contains("model_config_list") ||
      !root["model_config_list"].is_array() || root["model_config_list"].empty()) {
    return InvalidArgument(path + ": needs \"model_config_list\", a non-empty list of models");
  }
  std::vector<ModelConfig> models;
  std::set<std::string> names;
  int index = 0;
  for (const nlohmann::json& m : root["model_config_list"]) {
    const std::string what = path + ": model_config_list[" + std::to_string(index++) + "]";
    if (!m.is_object() || !m.contains("name") || !m["name"].is_string() ||
        !m.contains("base_path") || !m["base_path"].is_string()) {
      return InvalidArgument(what + ": needs \"name\" and \"base_path\" (strings)");
    }
    ModelConfig config;
    config.name = m["name"].get<std::string>();
    config.base_path = m["base_path"].get<std::string>();
    if (config.name.empty() || !names.insert(config.name).second) {
      return InvalidArgument(what + ": the name '" + config.name + "' is empty or used twice");
    }
    for (auto it = m.begin(); it != m.end(); ++it) {
      const std::string& key = it.key();
      if (key == "name" || key == "base_path" || key == "model_platform") continue;
      if (key == "model_version_policy") {
        const nlohmann::json& p = it.value();
        if (!p.is_object() || p.size() != 1) {
          return InvalidArgument(what + ": model_version_policy needs exactly one of \"latest\", "
                                        "\"specific\", \"all\"");
        }
        if (p.contains("latest")) {
          config.policy.kind = VersionPolicy::Kind::kLatest;
          const nlohmann::json& l = p["latest"];
          if (l.is_object() && l.contains("num_versions")) {
            AF_ASSIGN_OR_RETURN(config.policy.num_versions,
                                PositiveInt(l["num_versions"], what + ": latest.num_versions"));
          }
        } else if (p.contains("specific")) {
          config.policy.kind = VersionPolicy::Kind::kSpecific;
          const nlohmann::json& s = p["specific"];
          if (!s.is_object() || !s.contains("versions") || !s["versions"].is_array() ||
              s["versions"].empty()) {
            return InvalidArgument(what + ": specific needs \"versions\", a non-empty list");
          }
          for (const auto& v : s["versions"]) {
            AF_ASSIGN_OR_RETURN(int64_t version, PositiveInt(v, what + ": specific.versions"));
            config.policy.versions.push_back(version);
          }
        } else if (p.contains("all")) {
          config.policy.kind = VersionPolicy::Kind::kAll;
        } else {
          return InvalidArgument(what + ": unknown model_version_policy '" + p.begin().key() +
                                 "' (latest, specific or all)");
        }
      } else if (key == "version_labels") {
        if (!it.value().is_object()) return InvalidArgument(what + ": version_labels must be an object");
        for (auto l = it.value().begin(); l != it.value().end(); ++l) {
          AF_ASSIGN_OR_RETURN(config.labels[l.key()],
                              PositiveInt(l.value(), what + ": version_labels." + l.key()));
        }
      } else {
        return InvalidArgument(what + ": unknown key '" + key + "'");
      }
    }
    models.push_back(std::move(config));
  }
  return models;
}

}  // namespace actorflow
