// Files for tests: where a test's runfiles are (data files, binaries it runs) and
// fresh directories under the test's scratch space. One copy for every layer's tests
// (graph/ is the lowest layer); no GoogleTest dependency, so benchmarks may use it.
//
// Under `bazel test` the runfiles are at $TEST_SRCDIR/$TEST_WORKSPACE and the scratch
// space is $TEST_TMPDIR (Bazel empties it before each test); run by hand, the
// runfiles are looked up from the current directory and scratch goes to /tmp.
//
// Thread safety: the functions are safe to call from several threads; a
// ScopedTempDir belongs to its creator.
#ifndef ACTORFLOW_GRAPH_TEST_FILES_H_
#define ACTORFLOW_GRAPH_TEST_FILES_H_

#include <string>

namespace actorflow {

// The path of a runfile: `relative` is its path in the workspace, e.g.
// "tools/actorflow" or "examples/data/iris_training.csv".
std::string TestRunfile(const std::string& relative);

// A bundled data set: TestRunfile("examples/data/" + file), e.g. "iris_test.csv".
// The test target needs `data = ["//examples/data:data"]`.
std::string TestDataFile(const std::string& file);

// $TEST_TMPDIR (or /tmp): the root of the test's scratch space.
std::string TestTempRoot();

// TestTempRoot() + "/" + name. Not unique: for a file a test writes once.
std::string TestTempPath(const std::string& name);

// A new empty directory under TestTempRoot(), unique per call ("<prefix>_XXXXXX");
// it stays until Bazel cleans the scratch space. Empty string when it cannot be made.
std::string NewTestTempDir(const std::string& prefix = "test");

// Writes `contents` to `path` (truncating); false when the file cannot be written.
bool WriteTestFile(const std::string& path, const std::string& contents);
// The whole file; empty when it cannot be read.
std::string ReadTestFile(const std::string& path);

// A unique empty directory that is removed, with everything in it, when the object
// is destroyed: for tests that must not leave files behind (or run many times in
// one process).
class ScopedTempDir {
 public:
  explicit ScopedTempDir(const std::string& prefix = "test");
  ~ScopedTempDir();
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;

  // False when the directory could not be created (path() is empty then).
  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  // path() + "/" + name.
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_TEST_FILES_H_
