#include "kernels/parameter_client.h"

namespace actorflow {

Status ParseUpdateMode(const std::string& text, UpdateMode* mode, int* staleness_bound) {
  *staleness_bound = 0;
  if (text == "sync") {
    *mode = UpdateMode::kSync;
    return Status::OK();
  }
  if (text == "async") {
    *mode = UpdateMode::kAsync;
    return Status::OK();
  }
  const std::string prefix = "ssp:";
  if (text.rfind(prefix, 0) == 0) {
    std::string bound = text.substr(prefix.size());
    if (!bound.empty() && bound.size() <= 6 &&
        bound.find_first_not_of("0123456789") == std::string::npos) {
      *mode = UpdateMode::kStaleSynchronous;
      *staleness_bound = std::stoi(bound);
      return Status::OK();
    }
  }
  return InvalidArgument("--mode '" + text + "': expected sync, async or ssp:S (S >= 0)");
}

}  // namespace actorflow
