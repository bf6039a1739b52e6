// Fuzz target: cluster JSON (placement/cluster_spec.h ClusterSpec::FromJson), the
// --cluster file every task of a distributed run reads, and the command line's
// "local:ps=1,worker=2" shorthand (ParseLocalClusterShape) on the same bytes.
//
// Never crashes. Invariants of a spec that parses (the header's): at least one job,
// each with at least one task, every task's address readable with a port in
// 1..65535, no address used twice; FromJson(ToJson()) gives an equal spec and the
// same text. A shorthand that parses has jobs with 1..kMaxLocalTasksPerJob tasks.
#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "placement/cluster_spec.h"
#include "tools/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  auto spec = actorflow::ClusterSpec::FromJson(text, "fuzz.json");
  if (spec.ok()) {
    const std::string written = spec->ToJson();
    FUZZ_CHECK(!spec->jobs().empty(), written);
    std::set<std::string> addresses;
    for (const actorflow::TaskId& task : spec->AllTasks()) {
      auto address = spec->Address(task);
      FUZZ_CHECK(address.ok(), address.status().ToString());
      FUZZ_CHECK(!address->host.empty() && address->port > 0, written);
      std::string key = address->ToString();
      std::transform(key.begin(), key.end(), key.begin(),
                     [](unsigned char c) { return std::tolower(c); });
      FUZZ_CHECK(addresses.insert(key).second, "address used twice: " + written);
    }
    for (const std::string& job : spec->jobs()) FUZZ_CHECK(spec->num_tasks(job) > 0, written);
    auto again = actorflow::ClusterSpec::FromJson(written, "written");
    FUZZ_CHECK(again.ok(), again.status().ToString() + "\nwritten: " + written);
    FUZZ_CHECK(*again == *spec, "written: " + written);
    FUZZ_CHECK(again->ToJson() == written, "written: " + written);
  } else {
    FUZZ_CHECK(spec.status().message().rfind("fuzz.json: ", 0) == 0, spec.status().ToString());
  }

  auto shape = actorflow::ParseLocalClusterShape(text);
  if (shape.ok()) {
    FUZZ_CHECK(!shape->empty(), std::string(text));
    for (const auto& [job, count] : *shape) {
      FUZZ_CHECK(!job.empty() && count >= 1 && count <= actorflow::kMaxLocalTasksPerJob,
                 std::string(text));
    }
  }
  return 0;
}
