// FileAccessPolicy (kernels/file_access.h) on its own, and CsvReaderRead under it:
// a server's data root lets the reader open files inside it and refuses, without
// opening them, paths that leave it by name, by "..", or through a symlink; and a
// record that fails to parse is located (file, line, column), never quoted.

#include "kernels/file_access.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <vector>

#include "graph/ops.h"
#include "graph/scope.h"
#include "graph/test_files.h"
#include "kernels/kernel.h"
#include "kernels/queue_service.h"
#include "kernels/resource.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

namespace fs = std::filesystem;

// A data root with one readable file, and a secret file beside it (outside).
struct DataRootFixture {
  ScopedTempDir dir{"file_access"};
  std::string root;
  std::string inside;
  std::string secret;

  DataRootFixture() {
    root = dir.File("root");
    fs::create_directories(root + "/sub");
    inside = root + "/sub/data.csv";
    secret = dir.File("secret.csv");
    EXPECT_TRUE(WriteTestFile(inside, "1,2\n3,4\n"));
    EXPECT_TRUE(WriteTestFile(secret, "root:TOPSECRETHASH:19000\n"));
  }
};

TEST(FileAccessPolicyTest, UnderRootAllowsFilesInsideByAbsoluteOrRelativePath) {
  DataRootFixture f;
  ASSERT_TRUE(f.dir.ok());
  auto policy = FileAccessPolicy::UnderRoot(f.root);
  ASSERT_TRUE(policy.ok()) << policy.status();
  auto absolute = policy->Resolve(f.inside);
  ASSERT_TRUE(absolute.ok()) << absolute.status();
  EXPECT_EQ(*absolute, fs::canonical(f.inside).string());
  auto relative = policy->Resolve("sub/data.csv");
  ASSERT_TRUE(relative.ok()) << relative.status();
  EXPECT_EQ(*relative, *absolute);
  // A file that does not exist yet, under the root, is allowed (opening it fails later).
  EXPECT_TRUE(policy->Resolve("sub/not_yet.csv").ok());
}

TEST(FileAccessPolicyTest, UnderRootRefusesPathsOutsideNamingThePathAndTheRoot) {
  DataRootFixture f;
  auto policy = FileAccessPolicy::UnderRoot(f.root);
  ASSERT_TRUE(policy.ok()) << policy.status();
  for (const std::string& path :
       {std::string("/etc/passwd"), f.secret, f.root + "/../secret.csv",
        std::string("../secret.csv"), std::string("sub/../../secret.csv"),
        f.root + "/sub/missing/../../../secret.csv", f.root + "2/data.csv"}) {
    auto resolved = policy->Resolve(path);
    ASSERT_FALSE(resolved.ok()) << path << " was allowed as " << *resolved;
    EXPECT_EQ(resolved.status().code(), Code::kPermissionDenied) << resolved.status();
    EXPECT_THAT(resolved.status().message(), HasSubstr("'" + path + "'"));
    EXPECT_THAT(resolved.status().message(), HasSubstr(fs::canonical(f.root).string()));
  }
}

TEST(FileAccessPolicyTest, UnderRootRefusesASymlinkThatLeadsOutOfTheRoot) {
  DataRootFixture f;
  fs::create_symlink(f.secret, f.root + "/innocent.csv");
  fs::create_directory_symlink(f.dir.path(), f.root + "/up");
  auto policy = FileAccessPolicy::UnderRoot(f.root);
  ASSERT_TRUE(policy.ok()) << policy.status();
  for (const std::string& path : {std::string("innocent.csv"), std::string("up/secret.csv")}) {
    auto resolved = policy->Resolve(path);
    ASSERT_FALSE(resolved.ok()) << path << " was allowed as " << *resolved;
    EXPECT_EQ(resolved.status().code(), Code::kPermissionDenied);
    EXPECT_THAT(resolved.status().message(), HasSubstr("resolves to '" + fs::canonical(f.secret).string() + "'"));
  }
  // A symlink that stays inside the root is fine.
  fs::create_symlink(f.inside, f.root + "/alias.csv");
  EXPECT_TRUE(policy->Resolve("alias.csv").ok());
}

TEST(FileAccessPolicyTest, DenyAllRefusesEveryPathSayingHowToAllowFiles) {
  FileAccessPolicy policy = FileAccessPolicy::DenyAll("start the server with --data-root DIR");
  auto resolved = policy.Resolve("/tmp/anything.csv");
  ASSERT_FALSE(resolved.ok());
  EXPECT_EQ(resolved.status().code(), Code::kPermissionDenied);
  EXPECT_THAT(resolved.status().message(), HasSubstr("/tmp/anything.csv"));
  EXPECT_THAT(resolved.status().message(), HasSubstr("--data-root DIR"));
}

TEST(FileAccessPolicyTest, NoPolicyOrUnrestrictedAllowsEveryPathUnchanged) {
  EXPECT_EQ(*ResolveFilePath(nullptr, "/etc/hostname"), "/etc/hostname");
  FileAccessPolicy open = FileAccessPolicy::Unrestricted();
  EXPECT_EQ(*ResolveFilePath(&open, "../x.csv"), "../x.csv");
}

TEST(FileAccessPolicyTest, ARootThatIsNotADirectoryIsInvalid) {
  DataRootFixture f;
  EXPECT_EQ(FileAccessPolicy::UnderRoot(f.inside).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(FileAccessPolicy::UnderRoot(f.root + "/missing").status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(FileAccessPolicy::UnderRoot("").status().code(), Code::kInvalidArgument);
}

// A filename queue that hands out file index 0 once, then says it is exhausted.
class OneFileQueue : public QueueService {
 public:
  void EnsureQueue(int64_t, const QueueSpec&, StatusCallback done) override { done(Status::OK()); }
  void Enqueue(int64_t, const QueueRef&, std::vector<Tensor>, bool, int64_t,
               StatusCallback done) override {
    done(Unimplemented("enqueue"));
  }
  void Dequeue(int64_t, const QueueRef&, int64_t, int64_t, DequeueCallback done) override {
    if (handed_out_) return done(OutOfRange("the filename queue is closed and empty"), {});
    handed_out_ = true;
    done(Status::OK(), {Tensor::Scalar(int32_t{0})});
  }
  void Close(int64_t, const QueueRef&, bool, StatusCallback done) override { done(Status::OK()); }
  void Size(int64_t, const QueueRef&, SizeCallback done) override { done(Status::OK(), 0); }

 private:
  bool handed_out_ = false;
};

// Runs one CsvReaderRead of `path` (two float32 columns) under `policy`; returns the
// node's status and, through `row`, its outputs.
Status ReadOneRecord(const std::string& path, const FileAccessPolicy* policy,
                     std::vector<float>* row = nullptr) {
  Scope root = Scope::NewRootScope();
  Queue files = FIFOQueue(root.WithOpName("files"), {DType::kInt32}, {Shape{}}, 10);
  auto outputs = CsvReaderRead(root.WithOpName("read"), {path}, files,
                               {DType::kFloat32, DType::kFloat32});
  if (!root.ok()) return root.status();
  const Node& node = *outputs[0].node;
  auto kernel = KernelRegistry::Global().CreateKernel(node, kDeviceCpu);
  if (!kernel.ok()) return kernel.status();
  ResourceManager resources;
  OneFileQueue queue;
  KernelContext ctx(&node, {}, &resources, /*step_id=*/1);
  ctx.set_queues(&queue);
  ctx.set_file_access(policy);
  bool done = false;
  (*kernel)->ComputeAsync(&ctx, [&done] { done = true; });
  if (!done) return Internal("the reader did not complete synchronously");
  if (ctx.status().ok() && row != nullptr) {
    for (const Tensor& t : ctx.outputs()) row->push_back(t.data<float>()[0]);
  }
  return ctx.status();
}

TEST(CsvReaderFileAccessTest, ReadsAFileInsideTheDataRoot) {
  DataRootFixture f;
  auto policy = FileAccessPolicy::UnderRoot(f.root);
  ASSERT_TRUE(policy.ok()) << policy.status();
  std::vector<float> row;
  Status s = ReadOneRecord(f.inside, &*policy, &row);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(row, (std::vector<float>{1, 2}));
  row.clear();
  ASSERT_TRUE(ReadOneRecord("sub/data.csv", &*policy, &row).ok());
  EXPECT_EQ(row, (std::vector<float>{1, 2}));
}

TEST(CsvReaderFileAccessTest, RefusesFilesOutsideTheDataRootWithoutLeakingThem) {
  DataRootFixture f;
  fs::create_symlink(f.secret, f.root + "/innocent.csv");
  auto policy = FileAccessPolicy::UnderRoot(f.root);
  ASSERT_TRUE(policy.ok()) << policy.status();
  for (const std::string& path :
       {std::string("/etc/passwd"), f.secret, f.root + "/../secret.csv",
        f.root + "/innocent.csv"}) {
    Status s = ReadOneRecord(path, &*policy);
    EXPECT_EQ(s.code(), Code::kPermissionDenied) << path << ": " << s;
    EXPECT_THAT(s.message(), HasSubstr("node 'read'"));
    EXPECT_THAT(s.message(), HasSubstr(path));
    EXPECT_THAT(s.message(), HasSubstr("data root"));
    EXPECT_THAT(s.message(), Not(HasSubstr("TOPSECRET")));
    EXPECT_THAT(s.message(), Not(HasSubstr("root:")));
  }
}

TEST(CsvReaderFileAccessTest, AServerWithoutADataRootRefusesEveryFile) {
  DataRootFixture f;
  FileAccessPolicy none = FileAccessPolicy::DenyAll("start the server with --data-root DIR");
  Status s = ReadOneRecord(f.inside, &none);
  EXPECT_EQ(s.code(), Code::kPermissionDenied) << s;
  EXPECT_THAT(s.message(), HasSubstr("--data-root"));
}

TEST(CsvReaderFileAccessTest, AParseErrorNamesFileLineAndColumnButNeverQuotesTheRecord) {
  DataRootFixture f;
  // What a password file read as CSV would give: no policy, the worst case.
  Status s = ReadOneRecord(f.secret, nullptr);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("expected 2 fields"));
  EXPECT_THAT(s.message(), Not(HasSubstr("TOPSECRET")));
  ASSERT_TRUE(WriteTestFile(f.inside, "1,TOPSECRETHASH\n"));
  s = ReadOneRecord(f.inside, nullptr);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr(f.inside + ":1:3: field 2 is not a float32 number"));
  EXPECT_THAT(s.message(), Not(HasSubstr("TOPSECRET")));
}

TEST(CsvReaderFileAccessTest, AFifoOrADirectoryIsRefusedWithoutBlockingTheReader) {
  DataRootFixture f;
  const std::string fifo = f.root + "/sub/pipe.csv";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto policy = FileAccessPolicy::UnderRoot(f.root);
  ASSERT_TRUE(policy.ok()) << policy.status();
  // A FIFO without a writer: a blocking open() would never return. Bounded: if the
  // reader does block, opening the write end releases it and the test fails.
  auto read = std::async(std::launch::async, [&] { return ReadOneRecord("sub/pipe.csv", &*policy); });
  if (read.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    const int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (writer >= 0) ::close(writer);
    FAIL() << "the reader blocked opening a FIFO";
  }
  Status s = read.get();
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("sub/pipe.csv is a FIFO, not a regular file"));
  EXPECT_THAT(s.message(), HasSubstr("node 'read'"));

  s = ReadOneRecord("sub", &*policy);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("sub is a directory, not a regular file"));
  // A regular file still reads, and a missing one is NotFound naming it.
  std::vector<float> row;
  ASSERT_TRUE(ReadOneRecord("sub/data.csv", &*policy, &row).ok());
  EXPECT_EQ(row, (std::vector<float>{1, 2}));
  s = ReadOneRecord("sub/missing.csv", &*policy);
  EXPECT_EQ(s.code(), Code::kNotFound) << s;
  EXPECT_THAT(s.message(), HasSubstr("sub/missing.csv: cannot open the file to read"));
}

}  // namespace
}  // namespace actorflow
