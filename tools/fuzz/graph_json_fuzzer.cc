// Fuzz target: graph JSON (graph/graph_json.h), the file format of `actorflow run`
// and `predict` and the form a partition takes on the wire.
//
// Never crashes, whatever the bytes. Invariants checked on input that parses:
//   - ParseGraphJson -> SerializeGraphJson -> ParseGraphJson succeeds, and serializing
//     again gives the same text; the NodeDefs are equal unless an attr holds a
//     non-finite float (written as a string by contract);
//   - GraphFromJson -> GraphToJson -> GraphFromJson gives equal NodeDefs and the same
//     text (the same exception).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph_json.h"
#include "tools/fuzz/fuzz_check.h"

namespace {

using actorflow::AttrValue;
using actorflow::NodeDef;

bool HasNonFiniteFloatAttr(const std::vector<NodeDef>& nodes) {
  for (const NodeDef& node : nodes) {
    for (const auto& [name, attr] : node.attrs) {
      if (attr.Is<double>() && !std::isfinite(attr.Get<double>())) return true;
      if (attr.Is<std::vector<double>>()) {
        for (double v : attr.Get<std::vector<double>>())
          if (!std::isfinite(v)) return true;
      }
    }
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  auto nodes = actorflow::ParseGraphJson(text);
  if (nodes.ok()) {
    const std::string written = actorflow::SerializeGraphJson(*nodes);
    auto again = actorflow::ParseGraphJson(written);
    FUZZ_CHECK(again.ok(), again.status().ToString() + "\nwritten: " + written);
    if (!HasNonFiniteFloatAttr(*nodes)) {
      FUZZ_CHECK(*again == *nodes, "written: " + written);
    }
    const std::string rewritten = actorflow::SerializeGraphJson(*again);
    FUZZ_CHECK(rewritten == written, "first: " + written + "\nsecond: " + rewritten);
    // The pretty form is the same graph.
    auto pretty = actorflow::ParseGraphJson(actorflow::SerializeGraphJson(*again, true));
    FUZZ_CHECK(pretty.ok() && *pretty == *again, "pretty form differs: " + written);
  }

  auto graph = actorflow::GraphFromJson(text);
  if (graph.ok()) {
    const std::vector<NodeDef> defs = (*graph)->ToNodeDefs();
    if (!HasNonFiniteFloatAttr(defs)) {
      const std::string written = actorflow::GraphToJson(**graph);
      auto second = actorflow::GraphFromJson(written);
      FUZZ_CHECK(second.ok(), second.status().ToString() + "\nwritten: " + written);
      FUZZ_CHECK((*second)->ToNodeDefs() == defs, "written: " + written);
      FUZZ_CHECK(actorflow::GraphToJson(**second) == written, "written: " + written);
    }
  }
  return 0;
}
