// Fuzz target: TF_CONFIG (placement/cluster_spec.h ParseTfConfig), the environment
// variable that tells a task its cluster and which task it is.
//
// Never crashes. Invariants of a config that parses: its task is a task of its
// cluster (Address succeeds), and the config written back as TF_CONFIG text parses to
// the same cluster and task. Errors start with "TF_CONFIG: ".
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "placement/cluster_spec.h"
#include "tools/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = actorflow::ParseTfConfig(text);
  if (!config.ok()) {
    FUZZ_CHECK(config.status().message().rfind("TF_CONFIG: ", 0) == 0,
               config.status().ToString());
    return 0;
  }
  auto address = config->cluster.Address(config->task);
  FUZZ_CHECK(address.ok(), address.status().ToString());

  nlohmann::json written;
  written["cluster"] = nlohmann::json::parse(config->cluster.ToJson());
  written["task"] = {{"type", config->task.job}, {"index", config->task.index}};
  auto again = actorflow::ParseTfConfig(written.dump());
  FUZZ_CHECK(again.ok(), again.status().ToString() + "\nwritten: " + written.dump());
  FUZZ_CHECK(again->cluster == config->cluster && again->task == config->task,
             "written: " + written.dump());
  return 0;
}
