// ModelServer without HTTP: exported versions load, serve, swap and batch as
// actors/serving/model_server.h says. Polling is driven by PollNow (no timers), so every
// test is deterministic.
#include "actors/serving/model_server.h"

#include <filesystem>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/ops.h"
#include "graph/scope.h"
#include "graph/status_testing.h"
#include "graph/test_files.h"
#include "training/serving/servable.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

// y = a * x + b for x float32 [-1], exported as a version of `base`.
std::string ExportAffine(const std::string& base, int64_t version, float a, float b) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root.WithOpName("x"), DType::kFloat32, Shape{-1});
  Add(root.WithOpName("y"), Mul(root, x, Const(root, a)), Const(root, b));
  EXPECT_TRUE(root.ok()) << root.status();
  ExportRequest request{base, version};
  auto written = ExportGraph(*root.graph(), "", {{"x", "x"}}, {{"y", "y"}}, request);
  EXPECT_TRUE(written.ok()) << written.status();
  return written.ok() ? *written : "";
}

ServeOptions NoPolling() {
  ServeOptions options;
  options.file_system_poll_wait_seconds = 0;
  return options;
}

std::vector<float> Predict(ModelServer& server, const std::string& model, int64_t version,
                           std::vector<float> xs) {
  auto served = server.Resolve(model, version, "");
  EXPECT_TRUE(served.ok()) << served.status();
  if (!served.ok()) return {};
  auto sig = served->servable().Signature("");
  EXPECT_TRUE(sig.ok());
  const int64_t n = static_cast<int64_t>(xs.size());
  auto outputs = server.Run(*served, **sig, {{"x", Tensor::FromVector(xs, Shape{n})}});
  EXPECT_TRUE(outputs.ok()) << outputs.status();
  if (!outputs.ok()) return {};
  const Tensor& y = outputs->at("y");
  return std::vector<float>(y.data<float>(), y.data<float>() + y.NumElements());
}

std::string StateOf(const ModelServer& server, const std::string& model, int64_t version) {
  auto statuses = server.VersionStatuses(model);
  if (!statuses.ok()) return statuses.status().ToString();
  for (const ServedVersionStatus& s : *statuses)
    if (s.version == version) return s.state;
  return "absent";
}

TEST(ModelServerTest, ServesHalfPlusTwoFromItsExport) {
  ScopedTempDir dir;
  ExportAffine(dir.File("hpt"), 0, 0.5f, 2.0f);
  ASSERT_OK_AND_ASSIGN(auto server, ModelServer::Start({{"hpt", dir.File("hpt")}}, NoPolling()));
  EXPECT_EQ(Predict(*server, "hpt", 0, {1.0f, 2.0f, 5.0f}), (std::vector<float>{2.5f, 3.0f, 4.5f}));
  EXPECT_EQ(StateOf(*server, "hpt", 1), "AVAILABLE");
}

TEST(ModelServerTest, ANewVersionTakesOverAndTheOldOneEndsOnceItsRequestsFinish) {
  ScopedTempDir dir;
  const std::string base = dir.File("m");
  ExportAffine(base, 1, 1.0f, 0.0f);
  ASSERT_OK_AND_ASSIGN(auto server, ModelServer::Start({{"m", base}}, NoPolling()));
  ASSERT_OK_AND_ASSIGN(ServedVersion held, server->Resolve("m", 0, ""));
  EXPECT_EQ(held.version(), 1);

  ExportAffine(base, 2, 1.0f, 10.0f);
  server->PollNow();
  EXPECT_EQ(Predict(*server, "m", 0, {1.0f}), std::vector<float>{11.0f});
  // Version 1 is out of the policy but a request still holds it: it answers, and is
  // UNLOADING until released.
  EXPECT_EQ(StateOf(*server, "m", 1), "UNLOADING");
  auto sig = held.servable().Signature("");
  ASSERT_OK(sig.status());
  ASSERT_OK_AND_ASSIGN(auto old_out,
                       server->Run(held, **sig, {{"x", Tensor::FromVector<float>({1.0f}, Shape{1})}}));
  EXPECT_EQ(old_out.at("y").data<float>()[0], 1.0f);
  held = ServedVersion{};
  EXPECT_EQ(StateOf(*server, "m", 1), "END");
  EXPECT_EQ(StateOf(*server, "m", 2), "AVAILABLE");
  EXPECT_EQ(server->Resolve("m", 1, "").status().code(), Code::kNotFound);
}

TEST(ModelServerTest, AVersionThatFailsToLoadLeavesTheOldOneServingAndSaysWhy) {
  ScopedTempDir dir;
  const std::string base = dir.File("m");
  ExportAffine(base, 1, 1.0f, 1.0f);
  ASSERT_OK_AND_ASSIGN(auto server, ModelServer::Start({{"m", base}}, NoPolling()));
  const std::string v2 = ExportAffine(base, 2, 1.0f, 2.0f);
  ASSERT_TRUE(WriteTestFile(v2 + "/graph.json", "{\"format\": \"actorflow.graph/1\", \"nodes\": ["));
  server->PollNow();
  EXPECT_EQ(Predict(*server, "m", 0, {1.0f}), std::vector<float>{2.0f});
  ASSERT_OK_AND_ASSIGN(auto statuses, server->VersionStatuses("m"));
  ASSERT_EQ(statuses.size(), 2u);
  EXPECT_EQ(statuses[0].version, 2);
  EXPECT_EQ(statuses[0].state, "END");
  EXPECT_THAT(statuses[0].status.message(), HasSubstr("graph.json"));
  EXPECT_EQ(StateOf(*server, "m", 1), "AVAILABLE");
}

TEST(ModelServerTest, AMissingBasePathStartsWithNoVersionAndLoadsOnceOneAppears) {
  ScopedTempDir dir;
  const std::string base = dir.File("later");
  ASSERT_OK_AND_ASSIGN(auto server, ModelServer::Start({{"later", base}}, NoPolling()));
  Status none = server->Resolve("later", 0, "").status();
  EXPECT_EQ(none.code(), Code::kUnavailable);
  EXPECT_THAT(none.message(), HasSubstr(base));
  ExportAffine(base, 0, 2.0f, 0.0f);
  server->PollNow();
  EXPECT_EQ(Predict(*server, "later", 0, {3.0f}), std::vector<float>{6.0f});
}

TEST(ModelServerTest, PoliciesSelectVersionsAndADeletedVersionUnloads) {
  ScopedTempDir dir;
  const std::string base = dir.File("m");
  for (int v = 1; v <= 3; ++v) ExportAffine(base, v, 1.0f, static_cast<float>(v));
  ModelConfig latest2{"latest2", base};
  latest2.policy.num_versions = 2;
  ModelConfig specific{"specific", base};
  specific.policy.kind = VersionPolicy::Kind::kSpecific;
  specific.policy.versions = {1, 3};
  specific.labels = {{"stable", 1}};
  ModelConfig all{"all", base};
  all.policy.kind = VersionPolicy::Kind::kAll;
  ASSERT_OK_AND_ASSIGN(auto server, ModelServer::Start({latest2, specific, all}, NoPolling()));
  EXPECT_EQ(StateOf(*server, "latest2", 1), "absent");
  EXPECT_EQ(StateOf(*server, "latest2", 2), "AVAILABLE");
  EXPECT_EQ(StateOf(*server, "specific", 2), "absent");
  EXPECT_EQ(Predict(*server, "specific", 1, {0.0f}), std::vector<float>{1.0f});
  ASSERT_OK_AND_ASSIGN(ServedVersion stable, server->Resolve("specific", 0, "stable"));
  EXPECT_EQ(stable.version(), 1);
  EXPECT_EQ(server->Resolve("specific", 0, "canary").status().code(), Code::kNotFound);
  EXPECT_EQ(Predict(*server, "all", 2, {0.0f}), std::vector<float>{2.0f});

  std::filesystem::remove_all(base + "/3");
  server->PollNow();
  EXPECT_EQ(StateOf(*server, "all", 3), "END");
  EXPECT_EQ(Predict(*server, "all", 0, {0.0f}), std::vector<float>{2.0f});
  EXPECT_EQ(Predict(*server, "latest2", 0, {0.0f}), std::vector<float>{2.0f});
  EXPECT_EQ(StateOf(*server, "latest2", 1), "AVAILABLE");
}

TEST(ModelServerTest, BatchingMergesConcurrentRequestsIntoOneBatchAndSplitsTheAnswers) {
  ScopedTempDir dir;
  ExportAffine(dir.File("m"), 1, 3.0f, 0.0f);
  ServeOptions options = NoPolling();
  options.enable_batching = true;
  options.max_batch_size = 4;
  options.batch_timeout_micros = 60'000'000;  // only a full batch leaves
  ASSERT_OK_AND_ASSIGN(auto server, ModelServer::Start({{"m", dir.File("m")}}, options));
  std::vector<std::vector<float>> answers(4);
  std::vector<std::thread> clients;
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back([&, i] {
      answers[i] = Predict(*server, "m", 0, {static_cast<float>(i)});
    });
  }
  for (std::thread& t : clients) t.join();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(answers[i], std::vector<float>{3.0f * i}) << i;
  std::vector<VersionMetrics> metrics = server->Metrics();
  ASSERT_EQ(metrics.size(), 1u);
  ASSERT_EQ(metrics[0].batch_size_counts.size(), 5u);
  EXPECT_EQ(metrics[0].batch_size_counts[4], 1);
  EXPECT_EQ(metrics[0].batch_size_counts[1], 0);
}

TEST(ModelServerTest, ReplicasPerDeviceMultiplyTheReplicasOfEveryVersion) {
  ScopedTempDir dir;
  ExportAffine(dir.File("m"), 1, 1.0f, 0.0f);
  ServeOptions options = NoPolling();
  options.cpu_devices = 2;
  options.replicas_per_device = 3;
  ASSERT_OK_AND_ASSIGN(auto server, ModelServer::Start({{"m", dir.File("m")}}, options));
  std::vector<std::thread> clients;
  for (int i = 0; i < 8; ++i) {
    clients.emplace_back([&, i] {
      EXPECT_EQ(Predict(*server, "m", 0, {static_cast<float>(i)}), std::vector<float>{1.0f * i});
    });
  }
  for (std::thread& t : clients) t.join();
  ASSERT_EQ(server->Metrics().size(), 1u);
  EXPECT_EQ(server->Metrics()[0].replicas, 6);
  EXPECT_EQ(server->Metrics()[0].in_flight, 0);
}

TEST(ModelServerTest, UnknownModelsAndBadOptionsAreNamed) {
  ScopedTempDir dir;
  ExportAffine(dir.File("m"), 1, 1.0f, 0.0f);
  ASSERT_OK_AND_ASSIGN(auto server, ModelServer::Start({{"m", dir.File("m")}}, NoPolling()));
  Status unknown = server->Resolve("nope", 0, "").status();
  EXPECT_EQ(unknown.code(), Code::kNotFound);
  EXPECT_THAT(unknown.message(), HasSubstr("nope"));
  EXPECT_EQ(server->VersionStatuses("nope").status().code(), Code::kNotFound);
  ServeOptions bad = NoPolling();
  bad.cpu_devices = 0;
  EXPECT_EQ(ModelServer::Start({{"m", dir.File("m")}}, bad).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ModelServer::Start({{"m", "a"}, {"m", "b"}}, NoPolling()).status().code(),
            Code::kInvalidArgument);
}

// probabilities = a * x for x float32 [-1, 2].
void ExportScaled(const std::string& base, float a) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root.WithOpName("x"), DType::kFloat32, Shape{-1, 2});
  Mul(root.WithOpName("probabilities"), x, Const(root, a));
  ASSERT_TRUE(root.ok()) << root.status();
  ASSERT_OK(ExportGraph(*root.graph(), "", {{"x", "x"}}, {{"probabilities", "probabilities"}},
                        ExportRequest{base, 1})
                .status());
}

TEST(ModelServerTest, AnEnsembleOfServedModelsCombinesTheMembersThatAnswer) {
  ScopedTempDir dir;
  ExportScaled(dir.File("a"), 0.2f);
  ExportScaled(dir.File("b"), 0.6f);
  ASSERT_OK_AND_ASSIGN(auto server, ModelServer::Start({{"a", dir.File("a")}, {"b", dir.File("b")},
                                                        {"empty", dir.File("none")}},
                                                       NoPolling()));
  const std::map<std::string, Tensor> inputs = {
      {"x", Tensor::FromVector<float>({1.0f, 0.5f, 0.25f, 1.0f}, Shape{2, 2})}};
  ASSERT_OK_AND_ASSIGN(EnsembleResult mean,
                       server->PredictWithEnsemble({"a", "empty", "b"}, inputs, "probabilities",
                                                   EnsembleCombine::kMeanProbabilities, 5000));
  EXPECT_EQ(mean.answered, (std::vector<int>{0, 2}));
  EXPECT_EQ(mean.missing, std::vector<int>{1});
  ASSERT_EQ(mean.probabilities.shape(), Shape({2, 2}));
  const float want[] = {0.4f, 0.2f, 0.1f, 0.4f};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(mean.probabilities.data<float>()[i], want[i], 1e-6) << i;
  EXPECT_EQ(mean.classes, (std::vector<int64_t>{0, 1}));
  Status none = server->PredictWithEnsemble({"empty", "nope"}, inputs, "probabilities",
                                            EnsembleCombine::kMajorityVote, 1000)
                    .status();
  EXPECT_EQ(none.code(), Code::kDeadlineExceeded);
}

TEST(ModelConfigFileTest, ParsesPoliciesAndLabelsAndNamesEveryMistake) {
  ASSERT_OK_AND_ASSIGN(auto models, ParseModelConfigFile(R"({"model_config_list": [
      {"name": "a", "base_path": "/m/a", "model_version_policy": {"latest": {"num_versions": 2}}},
      {"name": "b", "base_path": "/m/b", "model_version_policy": {"specific": {"versions": [1, 3]}},
       "version_labels": {"stable": 1}},
      {"name": "c", "base_path": "/m/c", "model_version_policy": {"all": {}}}]})",
                                                       "models.json"));
  ASSERT_EQ(models.size(), 3u);
  EXPECT_EQ(models[0].policy.kind, VersionPolicy::Kind::kLatest);
  EXPECT_EQ(models[0].policy.num_versions, 2);
  EXPECT_EQ(models[1].policy.versions, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(models[1].labels.at("stable"), 1);
  EXPECT_EQ(models[2].policy.kind, VersionPolicy::Kind::kAll);

  const std::pair<const char*, const char*> bad[] = {
      {R"({"model_config_list": [{"name": "a", "base_path": "/x"})", "line 1"},
      {R"({"model_config_list": []})", "non-empty"},
      {R"({"model_config_list": [{"name": "a"}]})", "base_path"},
      {R"({"model_config_list": [{"name": "a", "base_path": "/x"}, {"name": "a", "base_path": "/y"}]})",
       "used twice"},
      {R"({"model_config_list": [{"name": "a", "base_path": "/x", "model_version_policy": {"newest": {}}}]})",
       "newest"},
      {R"({"model_config_list": [{"name": "a", "base_path": "/x", "basepath": "/y"}]})", "basepath"},
  };
  for (const auto& [text, culprit] : bad) {
    Status s = ParseModelConfigFile(text, "models.json").status();
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << text;
    EXPECT_THAT(s.message(), HasSubstr("models.json")) << text;
    EXPECT_THAT(s.message(), HasSubstr(culprit)) << text;
  }
}

}  // namespace
}  // namespace actorflow
