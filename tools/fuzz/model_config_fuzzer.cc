// Fuzz target: model config files (actors/serving/model_server.h ParseModelConfigFile), the
// --model_config_file of `actorflow serve`.
//
// Never crashes. Invariants: errors name the path; a config that parses has at least
// one model, unique non-empty names, and version policies and labels with versions
// >= 1.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "actors/serving/model_server.h"
#include "tools/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto models = actorflow::ParseModelConfigFile(text, "models.json");
  if (!models.ok()) {
    FUZZ_CHECK(models.status().message().find("models.json") != std::string::npos,
               models.status().ToString());
    return 0;
  }
  FUZZ_CHECK(!models->empty(), "no models");
  std::set<std::string> names;
  for (const actorflow::ModelConfig& m : *models) {
    FUZZ_CHECK(!m.name.empty() && names.insert(m.name).second, "name '" + m.name + "'");
    FUZZ_CHECK(m.policy.num_versions >= 1, m.name);
    for (int64_t v : m.policy.versions) FUZZ_CHECK(v >= 1, m.name);
    if (m.policy.kind == actorflow::VersionPolicy::Kind::kSpecific) {
      FUZZ_CHECK(!m.policy.versions.empty(), m.name);
    }
    for (const auto& [label, v] : m.labels) FUZZ_CHECK(v >= 1, m.name + " label " + label);
  }
  return 0;
}
