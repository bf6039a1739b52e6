// Fuzz target: tensor objects {"dtype", "shape", "data"} (graph/tensor_json.h), the
// values of Const nodes in graph JSON, read through ParseJsonText as a file would be.
//
// Never crashes, whatever the bytes. Invariants checked on a tensor that parses:
// writing it (TensorToJson and TensorToOrderedJson) and reading the text back gives
// an equal tensor (NaN equals NaN) whose text is the same, bit for bit.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "graph/tensor_json.h"
#include "tools/fuzz/fuzz_check.h"

namespace {

actorflow::Tensor ReadBack(const std::string& text) {
  auto json = actorflow::ParseJsonText(text, "written tensor");
  FUZZ_CHECK(json.ok(), json.status().ToString() + "\nwritten: " + text);
  auto tensor = actorflow::TensorFromJson(*json);
  FUZZ_CHECK(tensor.ok(), tensor.status().ToString() + "\nwritten: " + text);
  return *tensor;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto json = actorflow::ParseJsonText(text, "fuzz input");
  if (!json.ok()) return 0;
  auto tensor = actorflow::TensorFromJson(*json);
  if (!tensor.ok()) return 0;

  FUZZ_CHECK(tensor->IsInitialized(), "parsed tensor is not initialized");
  const std::string written = actorflow::TensorToJson(*tensor).dump();
  actorflow::Tensor back = ReadBack(written);
  FUZZ_CHECK(actorflow::TensorsEqual(*tensor, back), "written: " + written);
  FUZZ_CHECK(actorflow::TensorToJson(back).dump() == written, "written: " + written);

  const std::string ordered = actorflow::TensorToOrderedJson(*tensor).dump();
  FUZZ_CHECK(actorflow::TensorsEqual(*tensor, ReadBack(ordered)), "written: " + ordered);
  (void)tensor->DebugStringWithValues();
  return 0;
}
