#include "graph/test_files.h"

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <vector>

namespace actorflow {

std::string TestRunfile(const std::string& relative) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  std::string base = srcdir != nullptr ? srcdir : ".";
  base += "/";
  base += workspace != nullptr ? workspace : "actorflow";
  return base + "/" + relative;
}

std::string TestDataFile(const std::string& file) {
  return TestRunfile("examples/data/" + file);
}

std::string TestTempRoot() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

std::string TestTempPath(const std::string& name) { return TestTempRoot() + "/" + name; }

std::string NewTestTempDir(const std::string& prefix) {
  const std::string pattern = TestTempRoot() + "/" + prefix + "_XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  const char* made = ::mkdtemp(buffer.data());
  return made != nullptr ? std::string(made) : std::string();
}

bool WriteTestFile(const std::string& path, const std::string& contents) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << contents;
  file.close();
  return file.good();
}

std::string ReadTestFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

ScopedTempDir::ScopedTempDir(const std::string& prefix) : path_(NewTestTempDir(prefix)) {}

ScopedTempDir::~ScopedTempDir() {
  if (path_.empty()) return;
  std::error_code ignored;  // a destructor cannot report; Bazel cleans up after us
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace actorflow
