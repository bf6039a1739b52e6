// Clusters of real `actorflow server` processes with transport security: every task
// and client presents a certificate signed by the cluster's CA (mutual TLS), and a
// plain-TCP client, or one whose certificate another CA signed, is refused during
// the handshake; the same with a cluster secret, from which every node derives its
// certificates. Also: each task listens on its spec host only.
//
// Certificates are made for each test with the openssl command line. Every wait is
// bounded.
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "actors/transport/cluster_secret.h"
#include "tests/child_process.h"
#include "tests/process_cluster.h"
#include "tests/subprocess.h"

namespace actorflow {
namespace {

using subprocess::ChildProcess;
using subprocess::ProcessCluster;
using subprocess::ProcessClusterOptions;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

std::string TmpDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

std::string ActorflowBinary() { return subprocess::Runfile("tools/actorflow"); }

// A CA "<name>.pem"/"<name>_key.pem", or a certificate of `name` signed by `ca`.
bool MakeCa(const std::string& dir, const std::string& name) {
  const std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=" + name +
                          " -keyout " + dir + "/" + name + "_key.pem -out " + dir + "/" + name +
                          ".pem >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}
bool MakeCert(const std::string& dir, const std::string& name, const std::string& ca) {
  const std::string p = dir + "/" + name;
  const std::string c = dir + "/" + ca;
  const std::string cmd =
      "openssl req -newkey rsa:2048 -nodes -subj /CN=" + name + " -keyout " + p + "_key.pem -out " +
      p + ".csr >/dev/null 2>&1 && openssl x509 -req -days 2 -in " + p + ".csr -CA " + c +
      ".pem -CAkey " + c + "_key.pem -CAcreateserial -out " + p + ".pem >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

// Every process's failure detector: generous, so that only certificates decide.
constexpr char kHeartbeatTimeoutMs[] = "10000";

std::vector<std::string> TlsArgs(const std::string& dir, const std::string& cert,
                                 const std::string& ca) {
  return {"--tls-cert", dir + "/" + cert + ".pem", "--tls-key", dir + "/" + cert + "_key.pem",
          "--tls-ca", dir + "/" + ca + ".pem"};
}

// A graph whose fetch needs both workers (so the tasks talk to each other too).
std::string WriteTwoWorkerGraph(const std::string& dir) {
  const std::string path = dir + "/two_workers.json";
  std::ofstream(path) << R"({"format": "actorflow.graph/1", "nodes": [
    {"name": "a", "op": "Const", "device": "/job:worker/task:1",
     "attrs": {"value": {"dtype": "float32", "shape": [], "data": [3]}}},
    {"name": "b", "op": "Neg", "inputs": ["a"], "device": "/job:worker/task:0"}]})";
  return path;
}

struct RunResult {
  bool ended = false;
  int exit_code = -1;
  std::string out, err;
  milliseconds took{0};
};

RunResult RunCommand(const std::vector<std::string>& args) {
  RunResult r;
  std::string error;
  const auto start = std::chrono::steady_clock::now();
  auto child = ChildProcess::Start(ActorflowBinary(), args, &error);
  EXPECT_NE(child, nullptr) << error;
  if (child == nullptr) return r;
  r.ended = child->WaitForExit(milliseconds(30000));
  r.took = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start);
  if (!r.ended) child->Kill();
  r.exit_code = child->exit_code();
  r.out = child->out();
  r.err = child->err();
  return r;
}

class SecureClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TmpDir();
    ASSERT_TRUE(MakeCa(dir_, "cluster_ca"));
    ASSERT_TRUE(MakeCa(dir_, "other_ca"));
    ASSERT_TRUE(MakeCert(dir_, "task", "cluster_ca"));
    ASSERT_TRUE(MakeCert(dir_, "client", "cluster_ca"));
    ASSERT_TRUE(MakeCert(dir_, "rogue", "other_ca"));
    ProcessClusterOptions options;
    options.binary = ActorflowBinary();
    options.shape = {{"worker", 2}};
    options.dir = dir_;
    options.server_args = TlsArgs(dir_, "task", "cluster_ca");
    // Failure detection is not what these tests judge: a loaded machine (TLS
    // handshakes beside other tests' clusters) must not have a task declared down.
    for (const char* arg : {"--heartbeat-timeout-ms", kHeartbeatTimeoutMs}) {
      options.server_args.push_back(arg);
    }
    auto cluster = ProcessCluster::Start(std::move(options));
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = std::move(cluster).value();
    graph_ = WriteTwoWorkerGraph(dir_);
  }

  std::vector<std::string> RunArgs(std::vector<std::string> extra) {
    std::vector<std::string> args = {"run", "--graph", graph_, "--fetch", "b", "--target",
                                     cluster_->Target("worker", 0), "--timeout-ms", "10000",
                                     "--heartbeat-timeout-ms", kHeartbeatTimeoutMs};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  std::string dir_;
  std::string graph_;
  std::unique_ptr<ProcessCluster> cluster_;
};

TEST_F(SecureClusterTest, AClientWithACertificateOfTheClustersCaRunsAStepAcrossTasks) {
  RunResult r = RunCommand(RunArgs(TlsArgs(dir_, "client", "cluster_ca")));
  ASSERT_TRUE(r.ended) << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("b = float32[] -3"));
}

TEST_F(SecureClusterTest, APlainClientIsRefusedDuringTheHandshakeAtOnce) {
  RunResult r = RunCommand(RunArgs({}));
  ASSERT_TRUE(r.ended);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("PermissionDenied"));
  EXPECT_THAT(r.err, HasSubstr(cluster_->Address("worker", 0)));
  EXPECT_THAT(r.err, HasSubstr("closed the connection during the handshake"));
  EXPECT_LT(r.took, milliseconds(5000)) << "refused only at the deadline";
}

TEST_F(SecureClusterTest, AClientWhoseCertificateAnotherCaSignedIsRefused) {
  for (const std::string& trusted : {"other_ca", "cluster_ca"}) {
    RunResult r = RunCommand(RunArgs(TlsArgs(dir_, "rogue", trusted)));
    ASSERT_TRUE(r.ended) << trusted;
    EXPECT_EQ(r.exit_code, 1) << trusted << ": " << r.out;
    EXPECT_THAT(r.err, HasSubstr("PermissionDenied")) << trusted;
    EXPECT_LT(r.took, milliseconds(5000)) << trusted;
  }
}

TEST_F(SecureClusterTest, HalfATlsConfigurationIsAUsageErrorNamingTheFlag) {
  RunResult r = RunCommand(RunArgs({"--tls-cert", dir_ + "/client.pem"}));
  ASSERT_TRUE(r.ended);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--tls-key"));
  RunResult missing = RunCommand(RunArgs(
      {"--tls-cert", dir_ + "/nope.pem", "--tls-key", dir_ + "/client_key.pem"}));
  ASSERT_TRUE(missing.ended);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("nope.pem"));
}

// A secret file of `text`, readable by its owner only unless `mode` says otherwise.
std::string WriteSecret(const std::string& dir, const std::string& name, const std::string& text,
                        int mode = 0600) {
  const std::string path = dir + "/" + name;
  std::ofstream(path) << text << "\n";
  ::chmod(path.c_str(), mode);
  return path;
}

TEST(ClusterSecretTest, OnlyPeersThatKnowTheSecretAreAccepted) {
  const std::string dir = TmpDir();
  const std::string secret = WriteSecret(dir, "secret", "correct horse battery staple 42");
  const std::string wrong = WriteSecret(dir, "wrong", "correct horse battery staple 43");
  ProcessClusterOptions options;
  options.binary = ActorflowBinary();
  options.shape = {{"worker", 2}};
  options.dir = dir;
  // As for TLS above: the secret decides, not a failure detector on a loaded machine.
  options.server_args = {"--cluster-secret-file", secret, "--heartbeat-timeout-ms",
                         kHeartbeatTimeoutMs};
  auto cluster = ProcessCluster::Start(std::move(options));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const std::string graph = WriteTwoWorkerGraph(dir);
  auto run_args = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"run", "--graph", graph, "--fetch", "b", "--target",
                                     (*cluster)->Target("worker", 0), "--timeout-ms", "10000",
                                     "--heartbeat-timeout-ms", kHeartbeatTimeoutMs};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  auto run = [&](std::vector<std::string> extra) { return RunCommand(run_args(extra)); };
  RunResult ok = RunCommand(run_args({"--cluster-secret-file", secret}));
  ASSERT_TRUE(ok.ended);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("b = float32[] -3"));
  for (const std::vector<std::string>& refused :
       {std::vector<std::string>{"--cluster-secret-file", wrong}, std::vector<std::string>{}}) {
    RunResult r = run(refused);
    ASSERT_TRUE(r.ended);
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_THAT(r.err, HasSubstr("PermissionDenied"));
    EXPECT_LT(r.took, milliseconds(5000));
  }
}

std::string FileText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The public key of the PEM certificate in `path`, DER-encoded ("" if unreadable).
std::string CertificateKey(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return "";
  X509* cert = PEM_read_X509(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  if (cert == nullptr) return "";
  unsigned char* der = nullptr;
  const int size = i2d_PUBKEY(X509_get0_pubkey(cert), &der);
  std::string key = size > 0 ? std::string(reinterpret_cast<char*>(der), size) : "";
  OPENSSL_free(der);
  X509_free(cert);
  return key;
}

// The derived PEMs are in-memory files of this process: readable through their
// /proc/self/fd paths, never in a directory that could outlive the process. The CA
// follows from the secret alone; each derivation makes a fresh node key.
TEST(ClusterSecretTest, DerivedCertificatesLiveInMemoryAndTheCaFollowsTheSecret) {
  auto first = TlsFromClusterSecret("correct horse battery staple 42");
  auto again = TlsFromClusterSecret("correct horse battery staple 42");
  auto other = TlsFromClusterSecret("correct horse battery staple 43");
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_TRUE(other.ok()) << other.status();
  for (const std::string& path : {first->ca, first->certificate, first->key}) {
    EXPECT_THAT(path, ::testing::StartsWith("/proc/self/fd/"));
  }
  EXPECT_THAT(FileText(first->ca), HasSubstr("-----BEGIN CERTIFICATE-----"));
  EXPECT_THAT(FileText(first->certificate), HasSubstr("-----BEGIN CERTIFICATE-----"));
  EXPECT_THAT(FileText(first->key), HasSubstr("PRIVATE KEY-----"));
  // ECDSA signatures are randomized: the CA's key, not its certificate's bytes, is fixed.
  EXPECT_EQ(CertificateKey(first->ca), CertificateKey(again->ca));
  EXPECT_NE(CertificateKey(first->ca), CertificateKey(other->ca));
  EXPECT_FALSE(CertificateKey(first->ca).empty());
  EXPECT_NE(FileText(first->key), FileText(again->key));
  auto weak = TlsFromClusterSecret("short");
  ASSERT_FALSE(weak.ok());
  EXPECT_THAT(weak.status().message(), HasSubstr("at least 16"));
}

TEST(ClusterSecretTest, AWeakOrExposedSecretFileIsAUsageError) {
  const std::string dir = TmpDir();
  const std::string graph = WriteTwoWorkerGraph(dir);
  const std::string shared = WriteSecret(dir, "shared", "a long enough secret for a cluster", 0644);
  const std::string shorty = WriteSecret(dir, "short", "short");
  for (const auto& [file, culprit] :
       {std::make_pair(shared, std::string("chmod 600")), std::make_pair(shorty, std::string("at least 16"))}) {
    RunResult r = RunCommand({"run", "--graph", graph, "--fetch", "b", "--target",
                              "actorflow://127.0.0.1:1", "--cluster-secret-file", file});
    ASSERT_TRUE(r.ended);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr(culprit));
  }
}

// The local addresses of the sockets listening on `port` (from /proc/net/tcp and
// tcp6), e.g. "127.0.0.1".
std::vector<std::string> ListeningAddresses(int port) {
  std::vector<std::string> found;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state;
      fields >> slot >> local >> remote >> state;
      if (state != "0A") continue;  // LISTEN
      const size_t colon = local.find(':');
      if (std::stoi(local.substr(colon + 1), nullptr, 16) != port) continue;
      const std::string hex = local.substr(0, colon);
      if (hex.size() != 8) {
        found.push_back("ipv6:" + hex);
        continue;
      }
      const unsigned long a = std::stoul(hex, nullptr, 16);  // little-endian bytes
      found.push_back(std::to_string(a & 0xff) + "." + std::to_string((a >> 8) & 0xff) + "." +
                      std::to_string((a >> 16) & 0xff) + "." + std::to_string((a >> 24) & 0xff));
    }
  }
  return found;
}

TEST_F(SecureClusterTest, EachTaskListensOnItsSpecHostOnly) {
  for (int task = 0; task < 2; ++task) {
    const std::string address = cluster_->Address("worker", task);  // 127.0.0.1:PORT
    const int port = std::stoi(address.substr(address.rfind(':') + 1));
    EXPECT_EQ(ListeningAddresses(port), std::vector<std::string>{"127.0.0.1"}) << address;
  }
}

// The bulk channel's second port (actors/transport/bulk_channel.h): a TLS task does not open it
// (its tensors stay on the encrypted transport); a plain task says where it opened
// it, on its spec host only.
TEST_F(SecureClusterTest, OnlyAPlainTaskOpensABulkPortAndOnItsSpecHostOnly) {
  const std::string bulk_line = "actorflow server: tensors of ";
  std::string line;
  // The line comes before the ready line the cluster waited for, so it would be in
  // the pipe already.
  for (int task = 0; task < 2; ++task) {
    EXPECT_FALSE(cluster_->process("worker", task)
                     ->WaitForErrLine(bulk_line, std::chrono::milliseconds(1000), &line))
        << line;
  }
  const std::string plain_dir = dir_ + "/plain";
  mkdir(plain_dir.c_str(), 0700);
  ProcessClusterOptions options;
  options.binary = ActorflowBinary();
  options.shape = {{"worker", 1}};
  options.dir = plain_dir;
  auto plain = ProcessCluster::Start(std::move(options));
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE((*plain)->process("worker", 0)->WaitForErrLine(
      bulk_line, std::chrono::milliseconds(10000), &line));
  const size_t at = line.find(" arrive on 127.0.0.1:");
  ASSERT_NE(at, std::string::npos) << line;
  const int bulk_port = std::stoi(line.substr(at + std::string(" arrive on 127.0.0.1:").size()));
  EXPECT_EQ(ListeningAddresses(bulk_port), std::vector<std::string>{"127.0.0.1"}) << line;
}

}  // namespace
}  // namespace actorflow
