// Fuzz target: model.json (training/estimators/model_spec.h ParseModelSpec), the description of
// a trained DNNClassifier that `predict`, recovery and `export` read from a model
// directory beside its checkpoints.
//
// Never crashes. Invariants: errors name the path; a spec that parses passes
// ValidateModelSpec, and ModelSpecToJson of it parses back to an equal spec and the
// same text.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "training/estimators/model_spec.h"
#include "tools/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto spec = actorflow::ParseModelSpec(text, "model/model.json");
  if (!spec.ok()) {
    FUZZ_CHECK(spec.status().message().find("model/model.json") != std::string::npos,
               spec.status().ToString());
    return 0;
  }
  actorflow::Status valid = actorflow::ValidateModelSpec(*spec);
  FUZZ_CHECK(valid.ok(), valid.ToString());
  const std::string written = actorflow::ModelSpecToJson(*spec);
  auto again = actorflow::ParseModelSpec(written, "written");
  FUZZ_CHECK(again.ok(), again.status().ToString() + "\nwritten: " + written);
  FUZZ_CHECK(*again == *spec, "written: " + written);
  FUZZ_CHECK(actorflow::ModelSpecToJson(*again) == written, "written: " + written);
  return 0;
}
