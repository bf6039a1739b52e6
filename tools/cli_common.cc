#include "tools/cli_common.h"

#include <cstdlib>

namespace actorflow {
namespace cli {

std::string ResolveUserPath(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  const char* base = std::getenv("BUILD_WORKING_DIRECTORY");
  if (base == nullptr || base[0] == '\0') return path;
  std::string resolved = base;
  if (resolved.back() != '/') resolved += '/';
  return resolved + path;
}

void PrintError(std::ostream& err, const Status& status) {
  std::string text = status.ToString();
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  err << "actorflow: " << text << "\n";
  err.flush();
}

}  // namespace cli
}  // namespace actorflow
