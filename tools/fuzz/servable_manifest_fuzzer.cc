// Fuzz target: servable manifests (training/serving/servable.h ParseServableManifest), the
// saved_model.json that `actorflow serve` reads from every version directory of a
// model base path.
//
// Never crashes. Invariants: errors name the path; a manifest that parses writes
// back (ServableManifestToJson) to text that parses to an equal manifest and the same
// text, and its metadata response (ModelMetadataJson) dumps without throwing.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

#include "training/serving/servable.h"
#include "training/serving/serving_json.h"
#include "tools/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto manifest = actorflow::ParseServableManifest(text, "1/saved_model.json");
  if (!manifest.ok()) {
    FUZZ_CHECK(manifest.status().message().find("1/saved_model.json") != std::string::npos,
               manifest.status().ToString());
    return 0;
  }
  const std::string written = actorflow::ServableManifestToJson(*manifest);
  auto again = actorflow::ParseServableManifest(written, "written");
  FUZZ_CHECK(again.ok(), again.status().ToString() + "\nwritten: " + written);
  FUZZ_CHECK(*again == *manifest, "written: " + written);
  FUZZ_CHECK(actorflow::ServableManifestToJson(*again) == written, "written: " + written);
  try {
    (void)actorflow::ModelMetadataJson("model", 1, *manifest).dump();
  } catch (const std::exception& e) {
    FUZZ_CHECK(false, std::string("metadata does not dump: ") + e.what());
  }
  return 0;
}
