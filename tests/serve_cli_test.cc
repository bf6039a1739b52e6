// End-to-end tests of `actorflow export` and `actorflow serve` answering TensorFlow
// Serving's REST API: the built binary trains and exports models, then serves them as
// a child process on 127.0.0.1 (tests/serve_cli_testing.h) while the test checks
// Iris and half-plus-two answers value by value (predict in row and columnar format,
// classify, metadata), bad requests and bad versions, and the metrics they leave.
// Versions coming and going: serve_versions_cli_test.cc; load: serve_load_cli_test.cc;
// slow, stalled and oversized clients: serve_bounds_cli_test.cc.
//
// Every wait is bounded: the server's first line (ChildProcess), status polls until
// a deadline, client timeouts. Each test starts its own server, so the counts it
// checks are its own; the server is stopped with SIGTERM and must exit 0.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/serve_cli_testing.h"
#include "tests/subprocess.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using serve_testing::Actorflow;
using serve_testing::Data;
using serve_testing::ExportAffine;
using serve_testing::kBody12;
using serve_testing::kHalfPlusTwoOf12;
using serve_testing::kPredict;
using serve_testing::ReadFile;
using serve_testing::Reply;
using serve_testing::RunOk;
using serve_testing::Sample;
using serve_testing::ServeProcess;
using serve_testing::StatusJson;
using serve_testing::TestDir;
using serve_testing::WriteDamagedVersion;
using serve_testing::WriteFile;
using subprocess::ProcessResult;

// The bundled Iris test set: feature names, rows of features, labels.
struct CsvData {
  std::vector<std::string> feature_names;
  std::vector<std::vector<double>> rows;
};

CsvData ReadIrisTest() {
  CsvData data;
  std::ifstream in(Data("iris_test.csv"));
  std::string line;
  std::getline(in, line);
  std::stringstream header(line);
  for (std::string name; std::getline(header, name, ',');) data.feature_names.push_back(name);
  data.feature_names.pop_back();  // the label column
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::stringstream fields(line);
    std::vector<double> row;
    for (std::string field; std::getline(fields, field, ',');) row.push_back(std::stod(field));
    row.pop_back();
    data.rows.push_back(row);
  }
  return data;
}

TEST(ServeCliTest, IrisExportedFromTrainingAnswersAsPredictDoesAndACorruptVersionLeavesItServing) {
  const std::string dir = TestDir("iris");
  const std::string model_dir = dir + "/model";
  const std::string base = dir + "/models/iris";
  RunOk({"train", "--steps", "200", "--checkpoint-dir", model_dir, "--json"});
  EXPECT_EQ(RunOk({"export", "--checkpoint-dir", model_dir, "--model-base-path", base}),
            "exported version 1 to " + base + "/1\n");
  const json local = json::parse(
      RunOk({"predict", "--checkpoint-dir", model_dir, "--input", Data("iris_test.csv"), "--json"}));
  const CsvData test = ReadIrisTest();
  ASSERT_EQ(test.rows.size(), 30u);
  ASSERT_EQ(local.at("predictions").size(), test.rows.size());
  ASSERT_EQ(test.feature_names, (std::vector<std::string>{"sepal_length_cm", "sepal_width_cm",
                                                         "petal_length_cm", "petal_width_cm"}));

  auto server = ServeProcess::Start({"--model-name", "iris", "--model-base-path", base});
  ASSERT_NE(server, nullptr);
  Reply r = server->Get("/v1/models/iris");
  EXPECT_EQ(r.code, 200) << r;
  EXPECT_EQ(r.body, StatusJson({{1, "AVAILABLE"}})) << r;
  r = server->Get("/v1/models/iris/versions/1");
  EXPECT_EQ(r.body, StatusJson({{1, "AVAILABLE"}})) << r;

  r = server->Get("/v1/models/iris/metadata");
  ASSERT_EQ(r.code, 200) << r;
  EXPECT_EQ(r.body.at("model_spec"), json({{"name", "iris"}, {"signature_name", ""}, {"version", "1"}}));
  const json& sigs = r.body.at("metadata").at("signature_def").at("signature_def");
  std::vector<std::string> names;
  for (auto it = sigs.begin(); it != sigs.end(); ++it) names.push_back(it.key());
  EXPECT_EQ(names, (std::vector<std::string>{"classification", "predict", "serving_default"}));
  const json features_shape = json::parse(
      R"({"dim": [{"size": "-1", "name": ""}, {"size": "4", "name": ""}], "unknown_rank": false})");
  for (const char* name : {"serving_default", "predict", "classification"}) {
    const json& sig = sigs.at(name);
    EXPECT_EQ(sig.at("method_name"), std::string(name) == "classification"
                                         ? "tensorflow/serving/classify"
                                         : "tensorflow/serving/predict");
    EXPECT_EQ(sig.at("inputs").size(), 1u) << name;
    EXPECT_EQ(sig.at("inputs").at("inputs").at("dtype"), "DT_FLOAT") << name;
    EXPECT_EQ(sig.at("inputs").at("inputs").at("tensor_shape"), features_shape) << name;
    EXPECT_THAT(sig.at("inputs").at("inputs").at("name").get<std::string>(), ::testing::EndsWith(":0"));
  }
  const json& outputs = sigs.at("serving_default").at("outputs");
  EXPECT_EQ(outputs.size(), 3u);
  EXPECT_EQ(outputs.at("class_ids").at("dtype"), "DT_INT64");
  EXPECT_EQ(outputs.at("probabilities").at("tensor_shape"),
            json::parse(R"({"dim": [{"size": "-1", "name": ""}, {"size": "3", "name": ""}],
                            "unknown_rank": false})"));
  EXPECT_EQ(sigs.at("classification").at("outputs").size(), 2u);
  EXPECT_TRUE(sigs.at("classification").at("outputs").contains("scores"));

  // Row format: every row's class and probabilities as `actorflow predict` gives them.
  const json rows = test.rows;
  r = server->Post("/v1/models/iris:predict", json({{"instances", rows}}).dump());
  ASSERT_EQ(r.code, 200) << r;
  const json& predictions = r.body.at("predictions");
  ASSERT_EQ(predictions.size(), test.rows.size());
  for (size_t i = 0; i < test.rows.size(); ++i) {
    const json& expected = local["predictions"][i];
    EXPECT_EQ(predictions[i].at("class_ids"), expected.at("class")) << "row " << i;
    ASSERT_EQ(predictions[i].at("probabilities").size(), 3u);
    ASSERT_EQ(predictions[i].at("logits").size(), 3u);
    for (size_t c = 0; c < 3; ++c) {
      EXPECT_NEAR(predictions[i]["probabilities"][c].get<double>(),
                  expected["probabilities"][c].get<double>(), 1e-6)
          << "row " << i << " class " << c;
    }
  }
  // Columnar format, and the "predict" signature by name: the same classes.
  json classes = json::array();
  for (const json& p : predictions) classes.push_back(p["class_ids"]);
  r = server->Post("/v1/models/iris:predict",
                   json({{"signature_name", "predict"}, {"inputs", rows}}).dump());
  ASSERT_EQ(r.code, 200) << r;
  EXPECT_EQ(r.body.at("outputs").at("class_ids"), classes);

  // Finite inputs that overflow float inside the model: no class is made up from the
  // NaN scores; the error names the instance, and the server goes on answering.
  json overflowing = json::array({rows[0], json::array({3e38, 3e38, -3e38, 3e38})});
  r = server->Post("/v1/models/iris:predict", json({{"instances", overflowing}}).dump());
  EXPECT_EQ(r.code, 400) << r;
  EXPECT_THAT(r.body.dump(), HasSubstr("instance 1: ")) << r;
  EXPECT_THAT(r.body.dump(), HasSubstr("overflowed float")) << r;
  r = server->Post("/v1/models/iris:predict", json({{"instances", json::array({rows[0]})}}).dump());
  ASSERT_EQ(r.code, 200) << r;
  EXPECT_EQ(r.body.at("predictions").at(0).at("class_ids"), classes[0]);

  // :classify with features by name: per example every label with its score, the
  // highest one predict's class.
  json examples = json::array();
  for (const auto& row : test.rows) {
    json example;
    for (size_t f = 0; f < row.size(); ++f) example[test.feature_names[f]] = row[f];
    examples.push_back(example);
  }
  r = server->Post("/v1/models/iris:classify", json({{"examples", examples}}).dump());
  ASSERT_EQ(r.code, 200) << r;
  const json& result = r.body.at("result");
  ASSERT_EQ(result.size(), test.rows.size());
  for (size_t i = 0; i < test.rows.size(); ++i) {
    ASSERT_EQ(result[i].size(), 3u) << result[i];
    size_t best = 0;
    for (size_t c = 0; c < 3; ++c) {
      EXPECT_EQ(result[i][c][0], std::to_string(c));
      if (result[i][c][1].get<double>() > result[i][best][1].get<double>()) best = c;
    }
    EXPECT_EQ(json(static_cast<int64_t>(best)), local["predictions"][i]["class"]) << "row " << i;
  }

  // A version 2 whose variables fail their checksum: it ends with that error and
  // version 1 keeps answering.
  WriteDamagedVersion(base, 1, 2, [](const std::string& version_dir) {
    const std::string data = version_dir + "/variables/ckpt-0.data";
    std::string bytes = ReadFile(data);
    ASSERT_GT(bytes.size(), 0u);
    bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0xff);
    WriteFile(data, bytes);
  });
  ASSERT_TRUE(server->WaitForStatus(
      "/v1/models/iris",
      [](const json& s) { return s["model_version_status"].size() == 2 && s["model_version_status"][0]["state"] == "END"; },
      &r))
      << r;
  const json& v2 = r.body["model_version_status"][0];
  EXPECT_EQ(v2["version"], "2");
  EXPECT_EQ(v2["status"]["error_code"], "INTERNAL");
  EXPECT_THAT(v2["status"]["error_message"].get<std::string>(), HasSubstr("checksum mismatch"));
  EXPECT_THAT(v2["status"]["error_message"].get<std::string>(), HasSubstr(base + "/2"));
  EXPECT_EQ(r.body["model_version_status"][1], StatusJson({{1, "AVAILABLE"}})["model_version_status"][0]);
  r = server->Post("/v1/models/iris:predict", json({{"inputs", rows}}).dump());
  ASSERT_EQ(r.code, 200) << r;
  EXPECT_EQ(r.body.at("outputs").at("class_ids"), classes);
  server->Stop();
}

TEST(ServeCliTest, HalfPlusTwoAnswersExactlyInRowAndColumnarFormat) {
  const std::string dir = TestDir("half_plus_two");
  const std::string base = dir + "/models/hpt";
  ExportAffine(dir, base, 1, "0.5", "2");
  // A version is never overwritten.
  const ProcessResult again = subprocess::RunProcess(
      Actorflow(), {"export", "--graph", dir + "/affine_0.5_2.json", "--input", "x=x", "--output",
                    "y=y", "--model-base-path", base, "--version", "1"});
  EXPECT_TRUE(again.exited);
  EXPECT_NE(again.exit_code, 0);
  EXPECT_THAT(again.err, HasSubstr("exists already"));

  auto server = ServeProcess::Start({"--model-name", "hpt", "--model-base-path", base});
  ASSERT_NE(server, nullptr);
  Reply r = server->Post(kPredict, R"({"instances": [1.0, 2.0, 5.0]})");
  EXPECT_EQ(r.code, 200) << r;
  EXPECT_EQ(r.body, json::parse(R"({"predictions":[2.5,3.0,4.5]})")) << r;
  r = server->Post(kPredict, R"({"inputs": [1.0]})");
  EXPECT_EQ(r.code, 200) << r;
  EXPECT_EQ(r.body, json::parse(R"({"outputs":[2.5]})")) << r;
  // Inputs keyed by name, and the version named in the path.
  r = server->Post(kPredict, R"({"instances": [{"x": 1.0}, {"x": 2.0}]})");
  EXPECT_EQ(r.body, kHalfPlusTwoOf12) << r;
  r = server->Post("/v1/models/hpt/versions/1:predict", R"({"inputs": {"x": [1.0, 2.0]}})");
  EXPECT_EQ(r.body, json::parse(R"({"outputs":[2.5,3.0]})")) << r;

  r = server->Get("/v1/models/hpt/metadata");
  ASSERT_EQ(r.code, 200) << r;
  EXPECT_EQ(r.body, json::parse(R"({
      "model_spec": {"name": "hpt", "signature_name": "", "version": "1"},
      "metadata": {"signature_def": {"signature_def": {"serving_default": {
          "method_name": "tensorflow/serving/predict",
          "inputs": {"x": {"dtype": "DT_FLOAT", "name": "x:0",
                           "tensor_shape": {"dim": [{"size": "-1", "name": ""}], "unknown_rank": false}}},
          "outputs": {"y": {"dtype": "DT_FLOAT", "name": "y:0",
                            "tensor_shape": {"dim": [{"size": "-1", "name": ""}], "unknown_rank": false}}}
      }}}}})"))
      << r;
  server->Stop();
}

// A model with an embedding table: word2vec trained with --checkpoint-dir, exported
// from that directory alone, serves word ids (int32 in the request's JSON) as their
// unit-length embeddings.
TEST(ServeCliTest, Word2VecFromItsCheckpointDirServesUnitEmbeddingsByWordId) {
  const std::string dir = TestDir("word2vec");
  std::string text;
  for (int s = 0; s < 200; ++s) text += "alpha beta gamma delta epsilon zeta eta theta.\n";
  WriteFile(dir + "/text.txt", text);
  RunOk({"train", "--model", "word2vec", "--text", dir + "/text.txt", "--steps", "50",
         "--batch", "16", "--embedding-dim", "4", "--num-sampled", "2", "--checkpoint-dir",
         dir + "/model"});
  const std::string base = dir + "/models/w2v";
  EXPECT_EQ(RunOk({"export", "--checkpoint-dir", dir + "/model", "--model-base-path", base}),
            "exported version 1 to " + base + "/1\n");
  auto server = ServeProcess::Start({"--model-name", "w2v", "--model-base-path", base});
  ASSERT_NE(server, nullptr);
  const Reply r = server->Post("/v1/models/w2v:predict",
                               R"({"instances": [{"words": 1}, {"words": 8}]})");
  ASSERT_EQ(r.code, 200) << r;
  const json& rows = r.body.at("predictions");
  ASSERT_EQ(rows.size(), 2u) << r;
  for (const json& row : rows) {
    ASSERT_EQ(row.size(), 4u) << r;
    double norm = 0;
    for (const json& v : row) norm += v.get<double>() * v.get<double>();
    EXPECT_NEAR(norm, 1.0, 1e-5) << r;
  }
  EXPECT_NE(rows[0], rows[1]);
  // An id outside the vocabulary (UNK and 8 words) is refused, naming it.
  const Reply bad = server->Post("/v1/models/w2v:predict", R"({"instances": [{"words": 9}]})");
  EXPECT_EQ(bad.code, 400) << bad;
  EXPECT_THAT(bad.body.dump(), HasSubstr("9")) << bad;
  server->Stop();
}

// A bad request: where it goes, its body, the code and a piece of the error naming
// the culprit.
struct BadRequest {
  std::string path;
  std::string body;  // empty: GET
  int code;
  std::string culprit;
};

// curl -d (and Python's urllib) label a body application/x-www-form-urlencoded, as TF
// Serving's documentation sends it; httplib itself refuses such a body past 8 KiB (a
// single 28x28 image is more). A 1 MB body is served.
TEST(ServeCliTest, ALargeBodyLabelledAsAFormIsReadAsJson) {
  const std::string dir = TestDir("form_body");
  const std::string base = dir + "/models/hpt";
  ExportAffine(dir, base, 1, "0.5", "2");
  auto server = ServeProcess::Start(
      {"--model-name", "hpt", "--model-base-path", base, "--max-instances", "200000"});
  ASSERT_NE(server, nullptr);
  std::string body = R"({"instances": [1.0)";
  constexpr int kValues = 200000;
  for (int i = 1; i < kValues; ++i) body += ", 2.0";
  body += "]}";
  ASSERT_GT(body.size(), 1000000u);
  const Reply r = server->Post(kPredict, body, "application/x-www-form-urlencoded");
  ASSERT_EQ(r.code, 200) << r.error << " " << r.body.dump().substr(0, 300);
  ASSERT_EQ(r.body["predictions"].size(), static_cast<size_t>(kValues));
  EXPECT_EQ(r.body["predictions"][0], 2.5);
  EXPECT_EQ(r.body["predictions"][kValues - 1], 3.0);
}

TEST(ServeCliTest, BadRequestsGetTheirCodeAndAnErrorNamingTheCulpritAndTheServerKeepsServing) {
  const std::string dir = TestDir("bad_requests");
  const std::string base = dir + "/models/hpt";
  ExportAffine(dir, base, 1, "0.5", "2");
  auto server = ServeProcess::Start(
      {"--model-name", "hpt", "--model-base-path", base, "--max-body-bytes", "1000000"});
  ASSERT_NE(server, nullptr);

  // 2 MB of instances, over --max-body-bytes.
  std::string big = R"({"instances": [1.0)";
  while (big.size() < (2u << 20)) big += ", 1.0";
  big += "]}";
  const std::vector<BadRequest> cases = {
      {kPredict, "this is not json", 400, "request body: malformed JSON at line 1"},
      {kPredict, R"({"instances": [1.0, 2.0)", 400, "malformed JSON at line 1, column"},
      {kPredict, R"({"instancez": [1.0]})", 400, "'instancez'"},
      {kPredict, R"({"instances": [1.0], "inputs": [1.0]})", 400, "\"inputs\""},
      {kPredict, R"({"instances": []})", 400, "\"instances\""},
      {kPredict, R"([1.0, 2.0])", 400, "JSON object"},
      {kPredict, R"({"instances": [[1.0, 2.0], [3.0]]})", 400, "instance 1"},
      {kPredict, R"({"instances": [[1.0, 2.0], [3.0, 4.0]]})", 400, "expected shape [-1]"},
      {kPredict, R"({"instances": [1.0, "two"]})", 400, "\"two\""},
      {kPredict, R"({"instances": [{"z": 1.0}]})", 400, "'z'"},
      {kPredict, R"({"inputs": {"x": [true]}})", 400, "input 'x'"},
      {kPredict, R"({"instances": [1.0, "nan"]})", 400, "not a finite number"},
      {kPredict, R"({"instances": [1.0, NaN]})", 400, "malformed JSON at line 1, column"},
      {kPredict, R"({"instances": [1e999]})", 400, "1e999"},
      {kPredict, R"({"signature_name": 7, "instances": [1.0]})", 400, "signature_name"},
      {"/v1/models/hpt:classify", R"({"examples": [{"x": 1.0}]})", 400, "classify"},
      {kPredict, big, 413, "1000000 bytes"},
      {"/v1/models/nope:predict", kBody12, 404, "nope"},
      {"/v1/models/nope", "", 404, "nope"},
      {"/v1/models/hpt/versions/7:predict", kBody12, 404, "hpt, 7"},
      {"/v1/models/hpt/versions/7", "", 404, "version 7"},
      {"/v1/models/hpt/versions/seven:predict", kBody12, 404, "'seven'"},
      // Spellings a lenient parse turns into a version (0: the latest; the others: 1).
      {"/v1/models/hpt/versions/0:predict", kBody12, 404, "'0'"},
      {"/v1/models/hpt/versions/-1:predict", kBody12, 404, "'-1'"},
      {"/v1/models/hpt/versions/+1:predict", kBody12, 404, "'+1'"},
      {"/v1/models/hpt/versions/1abc:predict", kBody12, 404, "'1abc'"},
      {"/v1/models/hpt/versions/001:predict", kBody12, 404, "'001'"},
      {"/v1/models/hpt/versions/1.0", "", 404, "'1.0'"},
      {"/v1/models/hpt/labels/stable:predict", kBody12, 404, "'stable'"},
      {kPredict, R"({"signature_name": "zz", "instances": [1.0]})", 404, "\"zz\""},
      {"/v1/modelz/hpt", "", 404, "/v1/modelz/hpt"},
  };
  int hpt_400s = 0;
  for (const BadRequest& c : cases) {
    SCOPED_TRACE(c.path + " " + c.body.substr(0, 60));
    const Reply r = c.body.empty() ? server->Get(c.path) : server->Post(c.path, c.body);
    EXPECT_EQ(r.code, c.code) << r;
    ASSERT_TRUE(r.body.is_object() && r.body.size() == 1 && r.body.contains("error") &&
                r.body["error"].is_string())
        << r;
    EXPECT_THAT(r.body["error"].get<std::string>(), HasSubstr(c.culprit));
    if (c.code == 400 && c.path == kPredict) ++hpt_400s;
    // The next request is answered as if nothing happened.
    const Reply good = server->Post(kPredict, kBody12);
    EXPECT_EQ(good.code, 200) << good;
    EXPECT_EQ(good.body, kHalfPlusTwoOf12) << good;
  }

  // The metrics count each answer by code: the good ones (one after each bad one)
  // and the bad ones the model got.
  const Reply m = server->Get("/monitoring/prometheus/metrics");
  ASSERT_EQ(m.code, 200) << m;
  EXPECT_EQ(Sample(m.text, R"(actorflow_serving_requests_total{model="hpt",version="1",api="predict",code="200"})"),
            static_cast<long long>(cases.size()));
  EXPECT_EQ(Sample(m.text, R"(actorflow_serving_requests_total{model="hpt",version="1",api="predict",code="400"})"),
            hpt_400s);
  EXPECT_EQ(Sample(m.text, R"(actorflow_serving_request_errors_total{model="hpt",version="1",api="predict",code="400"})"),
            hpt_400s);
  EXPECT_EQ(Sample(m.text, R"(actorflow_serving_requests_total{model="nope",version="",api="predict",code="404"})"), 1);
  EXPECT_EQ(Sample(m.text, R"(actorflow_serving_replicas{model="hpt",version="1"})"), 1);
  EXPECT_GT(Sample(m.text, R"(actorflow_serving_request_latency_seconds_count{model="hpt",api="predict"})"),
            static_cast<long long>(cases.size()) + hpt_400s);
  server->Stop();
}

}  // namespace
}  // namespace actorflow
