// Shared by checkpoint_test's files: fresh directories under $TEST_TMPDIR and small
// file helpers.
#ifndef ACTORFLOW_TRAINING_CHECKPOINT_CHECKPOINT_TEST_UTIL_H_
#define ACTORFLOW_TRAINING_CHECKPOINT_CHECKPOINT_TEST_UTIL_H_

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "graph/test_files.h"

namespace actorflow {
namespace checkpoint_test {

// A new empty directory, unique per call.
inline std::string NewTempDir() {
  const std::string dir = NewTestTempDir("ckpt");
  EXPECT_FALSE(dir.empty()) << "no new directory under " << TestTempRoot();
  return dir;
}

inline std::string ReadFile(const std::string& path) { return ReadTestFile(path); }

inline void WriteFile(const std::string& path, const std::string& bytes) {
  ASSERT_TRUE(WriteTestFile(path, bytes)) << "cannot write " << path;
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

#endif  // ACTORFLOW_TRAINING_CHECKPOINT_CHECKPOINT_TEST_UTIL_H_
