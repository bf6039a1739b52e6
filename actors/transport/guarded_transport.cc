#include "actors/transport/guarded_transport.h"

#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/io/network/scribe_impl.hpp>

#include "actors/scheduler/spinning_scheduler.h"
#include "actors/transport/guarded_connections.h"

namespace actorflow {
namespace guarded {
namespace {

// Where LoadGuardedMiddleman leaves the limits for the backend, which CAF constructs
// with nothing but the actor system.
constexpr const char kMaxMessageBytesKey[] = "actorflow.max-message-bytes";
constexpr const char kMaxConnectionsKey[] = "actorflow.max-connections";
constexpr const char kHandshakeTimeoutKey[] = "actorflow.handshake-timeout-ms";

// Ports of servers that refused this process as busy, until connect reads them.
std::mutex busy_mu;
std::map<uint16_t, int> busy_refusals;

TransportLimits LimitsFrom(const caf::actor_system_config& cfg) {
  TransportLimits limits;
  limits.max_message_bytes = caf::get_or(cfg, kMaxMessageBytesKey, limits.max_message_bytes);
  limits.max_connections = caf::get_or(cfg, kMaxConnectionsKey, limits.max_connections);
  limits.handshake_timeout_ms = caf::get_or(cfg, kHandshakeTimeoutKey, limits.handshake_timeout_ms);
  return limits;
}

// On the multiplexer's thread: closes the connections of `accepted` that have
// awaited their handshake for timeout_ms or more.
void CloseExpired(AcceptedConnections& accepted, int64_t timeout_ms) {
  const auto now = Clock::now();
  while (!accepted.awaiting.empty()) {
    const auto [connection, since] = accepted.awaiting.front();
    if (now - since < std::chrono::milliseconds(timeout_ms)) break;
    connection->CloseNow("no handshake within --handshake-timeout-ms " +
                         std::to_string(timeout_ms));  // leaves `awaiting`
  }
}

// Accepting fails with EMFILE before the connection limit is reached when the
// process may open fewer files than that (a soft limit of 1024 is common), and CAF's
// listener then wakes up in a loop until a descriptor frees: raise the soft limit
// (up to the hard one) to the connections plus room for everything else.
void MakeRoomForConnections(int64_t max_connections) {
  constexpr rlim_t kOtherFiles = 256;
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) != 0) return;
  const rlim_t wanted = static_cast<rlim_t>(max_connections) + kOtherFiles;
  if (files.rlim_cur != RLIM_INFINITY && files.rlim_cur < wanted) {
    files.rlim_cur = files.rlim_max == RLIM_INFINITY ? wanted : std::min(wanted, files.rlim_max);
    setrlimit(RLIMIT_NOFILE, &files);
  }
}

}  // namespace

// A flood of hostile connections must not turn into a flood of output (or block
// the middleman's thread on a full pipe).
void LogRefusal(const std::string& peer, const std::string& why) {
  constexpr int kLinesPerSecond = 10;
  static std::mutex mu;
  static auto window_start = std::chrono::steady_clock::now();
  static int printed = 0;
  static int64_t suppressed = 0;
  std::lock_guard<std::mutex> lock(mu);
  const auto now = std::chrono::steady_clock::now();
  if (now - window_start >= std::chrono::seconds(1)) {
    if (suppressed > 0) {
      std::cerr << "actorflow transport: " << suppressed
                << " more refusals in the last second were not shown" << std::endl;
    }
    window_start = now;
    printed = 0;
    suppressed = 0;
  }
  if (printed >= kLinesPerSecond) {
    ++suppressed;
    return;
  }
  ++printed;
  std::cerr << "actorflow transport: refused " << peer << ": " << why << std::endl;
}

std::string PeerOf(net::native_socket fd) {
  auto addr = net::remote_addr_of_fd(fd);
  auto port = net::remote_port_of_fd(fd);
  if (!addr || !port) return "a peer of unknown address";
  const bool v6 = addr->find(':') != std::string::npos;
  return (v6 ? "[" + *addr + "]" : *addr) + ":" + std::to_string(*port);
}

uint16_t PeerPortOf(net::native_socket fd) {
  auto port = net::remote_port_of_fd(fd);
  return port ? *port : 0;
}

// A server or client handshake (operation 0 or 1), the two padding bytes zero, no
// flag but BASP's two. Any CAF 0.17 node's first message is one of those.
bool LooksLikeHandshake(const char* header) {
  const auto* h = reinterpret_cast<const unsigned char*>(header);
  const auto operation = static_cast<caf::io::basp::message_type>(h[0]);
  const bool handshake = operation == caf::io::basp::message_type::server_handshake ||
                         operation == caf::io::basp::message_type::client_handshake;
  return handshake && h[1] == 0 && h[2] == 0 && (h[3] & ~0x03) == 0;
}

std::string DescribeFirstFrame(const char* data) {
  static const char* const kHttp[] = {"GET ", "POST", "PUT ", "HEAD", "DELE",
                                      "OPTI", "PATC", "CONN", "TRAC", "HTTP"};
  for (const char* prefix : kHttp) {
    if (std::memcmp(data, prefix, 4) == 0) return "it looks like HTTP";
  }
  const auto* bytes = reinterpret_cast<const unsigned char*>(data);
  if (bytes[0] == 0x16 && bytes[1] == 0x03) {
    return "it looks like a TLS handshake: does the peer use --tls-cert or a cluster secret "
           "while this process does not?";
  }
  char hex[8];
  std::snprintf(hex, sizeof(hex), "0x%02x", bytes[0]);
  return std::string("its first byte is ") + hex;
}

void RecordBusyRefusal(uint16_t port) {
  std::lock_guard<std::mutex> lock(busy_mu);
  ++busy_refusals[port];
}

bool SawBusyFrame(net::native_socket fd) {
  constexpr size_t kRecordHeader = 5;
  char got[sizeof(kBusyFrame)];
  const ssize_t n = ::recv(fd, got, sizeof(got), MSG_PEEK | MSG_DONTWAIT);
  if (n == static_cast<ssize_t>(sizeof(got))) return std::memcmp(got, kBusyFrame, n) == 0;
  return n == static_cast<ssize_t>(sizeof(got) - kRecordHeader) &&
         std::memcmp(got, kBusyFrame + kRecordHeader, n) == 0;
}

bool GuardedDoorman::new_connection() {
  if (detached()) return false;
  auto& mx = acceptor_.backend();
  const net::native_socket fd = acceptor_.accepted_socket();
  const int64_t open = accepted_->open.load();
  if (open >= limits_.max_connections && !EvictAStalledConnection()) {
    LogRefusal(PeerOf(fd), std::to_string(open) + " connections are open, the most " +
                               "--max-connections " + std::to_string(limits_.max_connections) +
                               " allows");
    // Tell a CAF peer why (it reports the limit, not a failed handshake); a fresh
    // socket's send buffer takes 32 bytes without blocking.
    (void)::send(fd, kBusyFrame, sizeof(kBusyFrame), MSG_NOSIGNAL | MSG_DONTWAIT);
    // Closing with unread bytes (a TLS hello already sent) would reset the
    // connection, and a reset may discard the frame before the peer reads it.
    char unread[4096];
    for (int i = 0; i < 16 && ::recv(fd, unread, sizeof(unread), MSG_DONTWAIT) > 0; ++i) {
    }
    net::close_socket(fd);
    return true;  // go on accepting
  }
  caf::io::scribe_ptr scribe = MakeScribe(mx, fd);
  if (scribe == nullptr) return true;
  const caf::io::connection_handle hdl = scribe->hdl();
  parent()->add_scribe(std::move(scribe));
  return doorman::new_connection(&mx, hdl);
}

caf::io::scribe_ptr GuardedDoorman::MakeScribe(net::default_multiplexer& mx,
                                               net::native_socket fd) {
  return caf::make_counted<GuardedScribe<net::scribe_impl>>(limits_, accepted_, mx, fd);
}

bool GuardedDoorman::EvictAStalledConnection() {
  if (accepted_->awaiting.empty()) return false;
  const auto [connection, since] = accepted_->awaiting.front();
  const auto waited =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - since).count();
  if (waited < kHandshakeGraceMs) return false;
  connection->CloseNow("no handshake after " + std::to_string(waited) +
                       " ms while --max-connections " + std::to_string(limits_.max_connections) +
                       " were open: its slot goes to a new connection");
  return true;
}

void HandshakeReaper::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { Loop(); });
}

void HandshakeReaper::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void HandshakeReaper::Loop() {
  const auto period = std::chrono::milliseconds(std::clamp<int64_t>(timeout_ms_ / 4, 10, 1000));
  std::unique_lock<std::mutex> lock(mu_);
  while (!wake_.wait_for(lock, period, [this] { return stopping_; })) {
    if (accepted_->awaiting_count.load() == 0) continue;
    std::shared_ptr<AcceptedConnections> accepted = accepted_;
    const int64_t timeout_ms = timeout_ms_;
    mx_.post([accepted, timeout_ms] { CloseExpired(*accepted, timeout_ms); });
  }
}

GuardedMultiplexer::GuardedMultiplexer(caf::actor_system* sys)
    : default_multiplexer(sys),
      limits_(LimitsFrom(sys->config())),
      spin_(caf::get_or(sys->config(), kSchedulerSpinUsKey, int64_t{0})),
      reaper_(*this, accepted_, limits_.handshake_timeout_ms) {}

// CAF's loop blocks in epoll_wait as soon as no event is ready, so every message of
// a request/reply exchange costs a wake-up of this thread. After an event this loop
// first polls without blocking for `spin_` (bounded, as the scheduler's threads do:
// an idle transport still blocks), and the reply that usually follows within
// microseconds is read at once. After a wait longer than kQuietGap (an idle
// connection's heartbeat, a lone request) it blocks again without polling: an idle
// cluster's heartbeats cost a wake-up each, not a poll. The exit condition is CAF's
// own.
void GuardedMultiplexer::run() {
  if (spin_.count() <= 0) return default_multiplexer::run();
  bool lonely = false;
  while (num_socket_handlers() > 0) {
    if (poll_once(false)) continue;
    if (!lonely &&
        SpinUntil([this] { return poll_once(false); }, spin_, PollCost::kSystemCall)) {
      continue;
    }
    const auto waited_from = std::chrono::steady_clock::now();
    poll_once(true);
    lonely = std::chrono::steady_clock::now() - waited_from > kQuietGap;
  }
}

caf::io::scribe_ptr GuardedMultiplexer::new_scribe(net::native_socket fd) {
  return caf::make_counted<GuardedScribe<net::scribe_impl>>(limits_, nullptr, *this, fd);
}

caf::io::doorman_ptr GuardedMultiplexer::new_doorman(net::native_socket fd) {
  reaper_.Start();
  return caf::make_counted<GuardedDoorman>(*this, fd, limits_, accepted_);
}

}  // namespace guarded

void LoadGuardedMiddleman(caf::actor_system_config& cfg, const TransportLimits& limits) {
  caf::put(cfg.content, guarded::kMaxMessageBytesKey, limits.max_message_bytes);
  caf::put(cfg.content, guarded::kMaxConnectionsKey, limits.max_connections);
  caf::put(cfg.content, guarded::kHandshakeTimeoutKey, limits.handshake_timeout_ms);
  guarded::MakeRoomForConnections(limits.max_connections);
  cfg.load<caf::io::middleman, guarded::GuardedMultiplexer>();
}

bool TakeBusyRefusal(uint16_t port) {
  std::lock_guard<std::mutex> lock(guarded::busy_mu);
  auto it = guarded::busy_refusals.find(port);
  if (it == guarded::busy_refusals.end()) return false;
  if (--it->second == 0) guarded::busy_refusals.erase(it);
  return true;
}

}  // namespace actorflow
