#include "tests/serve_cli_testing.h"

#include <signal.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/subprocess.h"

namespace actorflow {
namespace serve_testing {

using nlohmann::json;
using subprocess::ChildProcess;
using subprocess::ProcessResult;
using Clock = std::chrono::steady_clock;

std::string Actorflow() { return subprocess::Runfile("tools/actorflow"); }
std::string Data(const std::string& file) { return subprocess::Runfile("examples/data/" + file); }

std::string TestDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(tmp ? tmp : "/tmp") + "/" + name;
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  return path;
}

void WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << contents;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string RunOk(const std::vector<std::string>& args) {
  const ProcessResult r = subprocess::RunProcess(Actorflow(), args);
  EXPECT_TRUE(r.started) << r.error;
  EXPECT_TRUE(r.exited) << args[0] << " killed by signal " << r.signal << "; stderr: " << r.err;
  EXPECT_EQ(r.exit_code, 0) << args[0] << " stderr: " << r.err;
  return r.out;
}

std::string AffineGraph(const std::string& a, const std::string& b) {
  return R"({"format": "actorflow.graph/1",
 "nodes": [
  {"name": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [-1]}},
  {"name": "a", "op": "Const", "attrs": {"value": {"dtype": "float32", "shape": [], "data": [)" +
         a + R"(]}}},
  {"name": "b", "op": "Const", "attrs": {"value": {"dtype": "float32", "shape": [], "data": [)" +
         b + R"(]}}},
  {"name": "ax", "op": "Mul", "inputs": ["a", "x"]},
  {"name": "y", "op": "Add", "inputs": ["ax", "b"]}
 ]}
)";
}

void ExportAffine(const std::string& dir, const std::string& base, int version,
                  const std::string& a, const std::string& b) {
  const std::string graph = dir + "/affine_" + a + "_" + b + ".json";
  WriteFile(graph, AffineGraph(a, b));
  const std::string out =
      RunOk({"export", "--graph", graph, "--input", "x=x", "--output", "y=y", "--model-base-path",
             base, "--version", std::to_string(version)});
  EXPECT_EQ(out, "exported version " + std::to_string(version) + " to " + base + "/" +
                     std::to_string(version) + "\n");
}

void WriteDamagedVersion(const std::string& base, int from, int to,
                         const std::function<void(const std::string&)>& damage) {
  const std::string temp = base + "/.damaged-" + std::to_string(to);
  std::filesystem::remove_all(temp);
  std::filesystem::copy(base + "/" + std::to_string(from), temp,
                        std::filesystem::copy_options::recursive);
  damage(temp);
  std::filesystem::rename(temp, base + "/" + std::to_string(to));
}

json StatusJson(const std::vector<std::pair<int, std::string>>& versions) {
  json list = json::array();
  for (const auto& [version, state] : versions) {
    list.push_back({{"version", std::to_string(version)},
                    {"state", state},
                    {"status", {{"error_code", "OK"}, {"error_message", ""}}}});
  }
  return {{"model_version_status", list}};
}

std::unique_ptr<httplib::Client> NewClient(int port) {
  auto client = std::make_unique<httplib::Client>("127.0.0.1", port);
  client->set_connection_timeout(10);
  client->set_read_timeout(30);
  client->set_write_timeout(10);
  // One connection for all of a client's requests: status polls would otherwise
  // leave a socket in TIME_WAIT per request.
  client->set_keep_alive(true);
  // httplib writes a POST's headers and body apart: without TCP_NODELAY, Nagle holds
  // the body until the server's delayed ACK (~40 ms a request).
  client->set_tcp_nodelay(true);
  return client;
}

namespace {

Reply ToReply(const httplib::Result& result) {
  Reply reply;
  if (!result) {
    reply.error = httplib::to_string(result.error());
    return reply;
  }
  reply.code = result->status;
  reply.text = result->body;
  reply.body = json::parse(result->body, nullptr, /*allow_exceptions=*/false);
  return reply;
}

}  // namespace

Reply Post(httplib::Client& client, const std::string& path, const std::string& body,
           const std::string& content_type) {
  return ToReply(client.Post(path.c_str(), body, content_type.c_str()));
}

Reply Get(httplib::Client& client, const std::string& path) {
  return ToReply(client.Get(path.c_str()));
}

std::ostream& operator<<(std::ostream& os, const Reply& r) {
  return os << "HTTP " << r.code << " " << r.text << (r.error.empty() ? "" : " (" + r.error + ")");
}

long long Sample(const std::string& text, const std::string& name_and_labels) {
  const std::string prefix = name_and_labels + " ";
  for (size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at + 1)) {
    if (at == 0 || text[at - 1] == '\n') return std::stoll(text.substr(at + prefix.size()));
  }
  return -1;
}

std::unique_ptr<ServeProcess> ServeProcess::Start(std::vector<std::string> flags) {
  std::vector<std::string> args = {"serve", "--rest-api-host", "127.0.0.1", "--rest-api-port", "0"};
  args.insert(args.end(), flags.begin(), flags.end());
  std::string error;
  auto child = ChildProcess::Start(Actorflow(), args, &error);
  if (child == nullptr) {
    ADD_FAILURE() << error;
    return nullptr;
  }
  const std::string prefix = "actorflow serve: listening on http://127.0.0.1:";
  std::string line;
  if (!child->WaitForLine(prefix, std::chrono::seconds(60), &line)) {
    ADD_FAILURE() << "serve did not print \"" << prefix << "PORT\"; stdout: " << child->out()
                  << "\nstderr: " << child->err();
    return nullptr;
  }
  std::unique_ptr<ServeProcess> server(new ServeProcess);
  server->child_ = std::move(child);
  server->port_ = std::stoi(line.substr(prefix.size()));
  server->client_ = NewClient(server->port_);
  return server;
}

Reply ServeProcess::Get(const std::string& path) { return serve_testing::Get(*client_, path); }

Reply ServeProcess::Post(const std::string& path, const std::string& body,
                         const std::string& content_type) {
  return serve_testing::Post(*client_, path, body, content_type);
}

bool ServeProcess::WaitForStatus(const std::string& path,
                                 const std::function<bool(const json&)>& done, Reply* last) {
  const auto deadline = Clock::now() + kStateDeadline;
  do {
    *last = Get(path);
    if (last->code == 200 && done(last->body)) return true;
  } while (Clock::now() < deadline);
  return false;
}

bool ServeProcess::WaitForStatus(const std::string& path, const json& expected, Reply* last) {
  return WaitForStatus(path, [&](const json& body) { return body == expected; }, last);
}

void ServeProcess::Stop() {
  client_.reset();
  child_->Kill(SIGTERM);
  ASSERT_TRUE(child_->WaitForExit(std::chrono::seconds(30))) << "serve ignored SIGTERM";
  EXPECT_TRUE(child_->exited()) << "serve ended by signal " << child_->term_signal()
                                << "; stderr: " << child_->err();
  EXPECT_EQ(child_->exit_code(), 0) << child_->err();
}

}  // namespace serve_testing
}  // namespace actorflow
