// Shared by checkpoint_test's files: fresh directories under $TEST_TMPDIR and small
// file helpers.
#ifndef ACTORFLOW_TRAINING_CHECKPOINT_TEST_UTIL_H_
#define ACTORFLOW_TRAINING_CHECKPOINT_TEST_UTIL_H_

#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <dirent.h>
#include <gtest/gtest.h>

namespace actorflow {
namespace checkpoint_test {

inline bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// A new empty directory, unique per call.
inline std::string NewTempDir() {
  const char* root = std::getenv("TEST_TMPDIR");
  std::string pattern = std::string(root != nullptr ? root : "/tmp") + "/ckpt_XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  const char* made = ::mkdtemp(buffer.data());
  EXPECT_NE(made, nullptr) << "mkdtemp " << pattern;
  return made != nullptr ? std::string(made) : pattern;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

inline void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << bytes;
  ASSERT_TRUE(file.good()) << "cannot write " << path;
}

inline bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// The names in `dir`, sorted, without "." and "..".
inline std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (struct dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace checkpoint_test
}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_CHECKPOINT_TEST_UTIL_H_
