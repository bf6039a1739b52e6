// A user's own driver (examples/iris_cluster, written against actorflow.h only)
// writes a model directory with ChiefCheckpoints: `actorflow export` makes a servable
// of it, `actorflow serve` answers with its probabilities, and the driver run again
// on the same directory resumes from its checkpoint. Real processes; every wait is
// bounded (RunProcess, ServeProcess).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/serve_cli_testing.h"
#include "tests/subprocess.h"

namespace actorflow {
namespace {

using serve_testing::Reply;
using serve_testing::RunOk;
using serve_testing::ServeProcess;
using serve_testing::TestDir;
using ::testing::HasSubstr;

subprocess::ProcessResult RunDriver(const std::string& model_dir) {
  subprocess::ProcessResult r = subprocess::RunProcess(
      subprocess::Runfile("examples/iris_cluster/iris_cluster"), {"--model-dir", model_dir});
  EXPECT_TRUE(r.exited) << r.error;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r;
}

TEST(DriverModelDirTest, AUsersDriverIsExportedServedAndResumed) {
  const std::string dir = TestDir("driver_model_dir");
  const std::string model_dir = dir + "/iris";
  const subprocess::ProcessResult first = RunDriver(model_dir);
  EXPECT_THAT(first.out, HasSubstr("Test set accuracy: ")) << first.out;
  EXPECT_THAT(first.out, ::testing::Not(HasSubstr("Resumed"))) << first.out;

  const std::string base = dir + "/models/iris";
  EXPECT_THAT(RunOk({"export", "--checkpoint-dir", model_dir, "--model-base-path", base}),
              HasSubstr("exported version"));
  auto server = ServeProcess::Start({"--model-name", "iris", "--model-base-path", base});
  ASSERT_NE(server, nullptr);
  // Rows of iris_test.csv: a versicolor (1), a setosa (0) and a virginica (2).
  Reply r = server->Post("/v1/models/iris:predict",
                         R"({"instances": [[5.7, 2.8, 4.5, 1.3], [5.5, 3.5, 1.3, 0.2],
                                           [6.5, 3.0, 5.2, 2.0]]})");
  ASSERT_EQ(r.code, 200) << r;
  const nlohmann::json& predictions = r.body.at("predictions");
  ASSERT_EQ(predictions.size(), 3u) << r;
  for (const nlohmann::json& p : predictions) {
    ASSERT_EQ(p.size(), 3u) << r;
    EXPECT_NEAR(p[0].get<double>() + p[1].get<double>() + p[2].get<double>(), 1.0, 1e-5) << r;
  }
  auto most_likely = [](const nlohmann::json& p) {
    int best = 0;
    for (int k = 1; k < 3; ++k) best = p[k].get<double>() > p[best].get<double>() ? k : best;
    return best;
  };
  EXPECT_EQ(most_likely(predictions[0]), 1) << r;  // versicolor
  EXPECT_EQ(most_likely(predictions[1]), 0) << r;  // setosa
  EXPECT_EQ(most_likely(predictions[2]), 2) << r;  // virginica
  server->Stop();

  // 250 epochs of 4 batches: the first run ended at step 1000; the second resumes there.
  const subprocess::ProcessResult second = RunDriver(model_dir);
  EXPECT_THAT(second.out, HasSubstr("Resumed at step 1000 from " + model_dir)) << second.out;
}

}  // namespace
}  // namespace actorflow
