// What the end-to-end tests of `actorflow export` and `actorflow serve` share: running
// the built binary to export models (half-plus-two style affine graphs, damaged
// versions), an `actorflow serve` child process on 127.0.0.1 (any free port, read from
// its "listening on" line), a TensorFlow Serving REST client of it, and readers of its
// answers (model status bodies, Prometheus samples).
//
// Every wait is bounded: the server's first line (ChildProcess), status polls until
// kStateDeadline, client timeouts. Failures are reported as gtest failures of the
// calling test.
//
// Thread safety: a ServeProcess belongs to the test's thread; other threads make
// their own clients with NewClient(port()). The free functions may be called from
// any thread.
#ifndef ACTORFLOW_TESTS_SERVE_CLI_TESTING_H_
#define ACTORFLOW_TESTS_SERVE_CLI_TESTING_H_

#include <chrono>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "tests/child_process.h"

namespace actorflow {
namespace serve_testing {

// How long a state the server reaches by polling its base path (every second) may take.
inline constexpr std::chrono::seconds kStateDeadline(20);

// The half-plus-two model exported as "hpt": its predict path, [1, 2] as a request
// body, and the answers of y = 0.5 * x + 2 and of y = 0.5 * x + 3 to it.
inline constexpr char kPredict[] = "/v1/models/hpt:predict";
inline constexpr char kBody12[] = R"({"instances": [1.0, 2.0]})";
inline const nlohmann::json kHalfPlusTwoOf12 =
    nlohmann::json::parse(R"({"predictions": [2.5, 3.0]})");  // 0.5 * [1, 2] + 2
inline const nlohmann::json kHalfPlusThreeOf12 =
    nlohmann::json::parse(R"({"predictions": [3.5, 4.0]})");  // 0.5 * [1, 2] + 3

// The built `actorflow` binary and a bundled data file (examples/data/<file>).
std::string Actorflow();
std::string Data(const std::string& file);

// An empty directory `name` under the test's temporary directory.
std::string TestDir(const std::string& name);
void WriteFile(const std::string& path, const std::string& contents);
std::string ReadFile(const std::string& path);

// Runs an actorflow command that must succeed; returns its stdout.
std::string RunOk(const std::vector<std::string>& args);

// Graph JSON of y = a * x + b for x float32 [-1] (TensorFlow Serving's half_plus_two
// when a = 0.5, b = 2). a and b are written as given; keep them exact in float32.
std::string AffineGraph(const std::string& a, const std::string& b);

// Exports y = a * x + b as `version` of `base`, checking export's one stdout line.
// The graph is written to <dir>/affine_<a>_<b>.json.
void ExportAffine(const std::string& dir, const std::string& base, int version,
                  const std::string& a, const std::string& b);

// Copies version `from` of `base` into a hidden directory beside it, lets `damage`
// change the copy, and renames it to `to`: the server sees the damaged version whole
// (a copy in place could be polled half-written and fail for another reason).
void WriteDamagedVersion(const std::string& base, int from, int to,
                         const std::function<void(const std::string&)>& damage);

// TensorFlow Serving's GetModelStatus body for versions in the given order, all OK.
nlohmann::json StatusJson(const std::vector<std::pair<int, std::string>>& versions);

// One HTTP answer: code 0 when none came (the error says why).
struct Reply {
  int code = 0;
  std::string text;
  nlohmann::json body;  // discarded when the text is not JSON
  std::string error;
};
std::ostream& operator<<(std::ostream& os, const Reply& r);

// A keep-alive client of 127.0.0.1:port with bounded timeouts.
std::unique_ptr<httplib::Client> NewClient(int port);
// `content_type` defaults to JSON's; curl -d sends application/x-www-form-urlencoded.
Reply Post(httplib::Client& client, const std::string& path, const std::string& body,
           const std::string& content_type = "application/json");
Reply Get(httplib::Client& client, const std::string& path);

// The value of the Prometheus sample `name{labels}` in `text`; -1 when absent.
long long Sample(const std::string& text, const std::string& name_and_labels);

// An `actorflow serve` process on 127.0.0.1 and a client of it (for the test's own
// thread; other threads make their own with NewClient(port())).
class ServeProcess {
 public:
  // Runs `actorflow serve` on 127.0.0.1, any free port, with `flags` added. Null
  // (with a test failure) when it does not print its address within 60 s.
  static std::unique_ptr<ServeProcess> Start(std::vector<std::string> flags);

  int port() const { return port_; }
  subprocess::ChildProcess& child() { return *child_; }
  Reply Get(const std::string& path);
  Reply Post(const std::string& path, const std::string& body,
             const std::string& content_type = "application/json");

  // Polls GET `path` until its 200 body satisfies `done` (true) or kStateDeadline
  // passes (false). *last gets the last answer.
  bool WaitForStatus(const std::string& path,
                     const std::function<bool(const nlohmann::json&)>& done, Reply* last);
  bool WaitForStatus(const std::string& path, const nlohmann::json& expected, Reply* last);

  // SIGTERM: the server stops answering and must exit 0 within 30 s (test failures
  // otherwise).
  void Stop();

 private:
  ServeProcess() = default;
  std::unique_ptr<subprocess::ChildProcess> child_;
  int port_ = 0;
  std::unique_ptr<httplib::Client> client_;
};

}  // namespace serve_testing
}  // namespace actorflow

#endif  // ACTORFLOW_TESTS_SERVE_CLI_TESTING_H_
