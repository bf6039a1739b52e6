#include "tools/cli/status_server.h"

#include <sys/socket.h>

#include <chrono>
#include <thread>
#include <utility>

#include <httplib.h>

#include "tools/cli/status_page.h"

namespace actorflow {
namespace cli {

struct StatusServer::Impl {
  httplib::Server server;
  std::thread thread;
  std::string host;
  int port = 0;
};

StatusOr<std::unique_ptr<StatusServer>> StatusServer::Start(const StatusBoard* board,
                                                            const std::string& host, int port) {
  auto impl = std::make_unique<Impl>();
  impl->host = host;
  // httplib's default also sets SO_REUSEPORT, which lets a second server bind a port
  // in use without an error: only SO_REUSEADDR, so "port in use" is reported.
  impl->server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  impl->server.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(kStatusPageHtml, "text/html; charset=utf-8");
  });
  impl->server.Get("/status.json", [board](const httplib::Request&, httplib::Response& res) {
    res.set_header("Cache-Control", "no-store");
    res.set_content(board->ToJson(), "application/json");
  });
  if (port == 0) {
    impl->port = impl->server.bind_to_any_port(host);
    if (impl->port <= 0) return Unavailable("--status-port: cannot listen on " + host);
  } else {
    if (!impl->server.bind_to_port(host, port)) {
      return Unavailable("--status-port " + std::to_string(port) + ": cannot listen on " + host +
                         ":" + std::to_string(port) + " (is the port in use?)");
    }
    impl->port = port;
  }
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->server.listen_after_bind(); });
  return std::unique_ptr<StatusServer>(new StatusServer(std::move(impl)));
}

StatusServer::StatusServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

StatusServer::~StatusServer() {
  // stop() only stops a server whose loop has started: wait (bounded) for the thread
  // to get there, or a server destroyed right after Start would listen forever.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!impl_->server.is_running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

int StatusServer::port() const { return impl_->port; }

std::string StatusServer::url() const {
  return "http://" + impl_->host + ":" + std::to_string(impl_->port) + "/";
}

}  // namespace cli
}  // namespace actorflow
