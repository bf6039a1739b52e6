#include "actors/transport/connect.h"

#include <condition_variable>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include <caf/io/all.hpp>

// gcc's -fsanitize=address defines this; clang's __has_feature is not needed here.
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

#include "actors/transport/cluster_transport.h"
#include "actors/transport/guarded_transport.h"
#include "actors/transport/peer_history.h"
#include "actors/protocol/messages.h"
#include "placement/cluster_spec.h"

namespace actorflow {
namespace {

// How long ShutDownClusterSystem waits for a system's destructor (see there).
constexpr int kShutdownGraceMs = 10000;
// A wait for a peer that is not there yet prints who is missing this often.
constexpr std::chrono::milliseconds kProgressEvery(5000);
// How long the probe that names a failed connection's cause may take.
constexpr std::chrono::milliseconds kProbeWait(200);
// How long one identity ping may go unanswered before it is sent again.
constexpr std::chrono::milliseconds kPingSlice(2000);
// How long a connection's identity pings may go unanswered before ConnectToServer
// connects anew, and the most it waits first (a random pause, so that a peer
// connecting to this process at the same moment does not race again).
constexpr std::chrono::milliseconds kReconnectAfter = kPingSlice;
constexpr int kMaxReconnectPauseMs = 100;

// One attempt, bounded by `wait`: the blocking remote_actor call runs on a thread
// that outlives the wait if it must (it ends when its socket does).
struct Attempt {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  caf::expected<FrontActor> result{caf::sec::none};
};

// The actor systems with a connection attempt still blocked in CAF (see
// ShutDownClusterSystem), counted per system.
std::mutex& StuckMutex() {
  static std::mutex mu;
  return mu;
}
std::map<const caf::actor_system*, int>& StuckAttempts() {
  static std::map<const caf::actor_system*, int> stuck;
  return stuck;
}

caf::expected<FrontActor> TryOnce(caf::actor_system& system, const std::string& host,
                                  uint16_t port, std::chrono::milliseconds wait, bool* timed_out) {
  auto attempt = std::make_shared<Attempt>();
  caf::actor_system* sys = &system;
  {
    std::lock_guard<std::mutex> stuck(StuckMutex());
    ++StuckAttempts()[sys];
  }
  std::thread([attempt, sys, host, port] {
    auto r = ConnectOnTransport<FrontActor>(*sys, host, port);
    {
      std::lock_guard<std::mutex> stuck(StuckMutex());
      if (--StuckAttempts()[sys] == 0) StuckAttempts().erase(sys);
    }
    std::lock_guard<std::mutex> lock(attempt->mu);
    attempt->result = std::move(r);
    attempt->done = true;
    attempt->cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(attempt->mu);
  *timed_out = !attempt->cv.wait_for(lock, wait, [&] { return attempt->done; });
  if (*timed_out) return caf::make_error(caf::sec::request_timeout);
  return attempt->result;
}

// A random pause of up to kMaxReconnectPauseMs before connecting anew.
int ReconnectPauseMs() {
  thread_local std::minstd_rand rng(std::random_device{}());
  return std::uniform_int_distribution<int>(1, kMaxReconnectPauseMs)(rng);
}

// PingForIdentity, adding the pings it sends to *sent (which may count earlier ones).
StatusOr<std::string> PingCounting(caf::actor_system& system, const FrontActor& front,
                                   std::chrono::steady_clock::time_point deadline,
                                   const std::string& where, int* sent) {
  caf::scoped_actor self{system};
  int& pings = *sent;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    const auto wait = std::max(std::chrono::milliseconds(1), std::min(left, kPingSlice));
    ++pings;
    std::string identity;
    caf::error failure;
    self->request(front, wait, ping_atom::value)
        .receive([&](const std::string& id) { identity = id; },
                 [&](caf::error& e) { failure = std::move(e); });
    if (!failure) return identity;
    if (failure != caf::sec::request_timeout) {
      return FailedPrecondition(where + " is not an actorflow server (" +
                                caf::to_string(failure) + ")");
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return DeadlineExceeded(where + " completed CAF's handshake but answered none of " +
                              std::to_string(pings) + " identity pings before the deadline");
    }
  }
}

}  // namespace

StatusOr<std::string> PingForIdentity(caf::actor_system& system, const FrontActor& front,
                                      std::chrono::steady_clock::time_point deadline,
                                      const std::string& where) {
  int pings = 0;
  return PingCounting(system, front, deadline, where, &pings);
}

StatusOr<FrontActor> ConnectToServer(caf::actor_system& system, const std::string& host,
                                     uint16_t port, std::chrono::milliseconds timeout,
                                     const std::string& who) {
  const std::string address = TaskAddress{host, port}.ToString();
  const std::string where = who + " at " + address;
  const auto start = std::chrono::steady_clock::now();
  auto deadline = start + timeout;
  auto next_progress = start + kProgressEvery;
  std::string last_error = "no attempt";
  auto backoff = std::chrono::milliseconds(10);
  int pings = 0;  // identity pings sent over every connection made
  auto unanswered = [&] {
    return DeadlineExceeded(where + " completed CAF's handshake but answered none of " +
                            std::to_string(pings) + " identity pings before the deadline");
  };
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    bool timed_out = false;
    auto front = TryOnce(system, host, port, left, &timed_out);
    if (front) {
      // Something CAF-speaking answered; make sure it is an actorflow server.
      const auto ping_until = std::min(deadline, std::chrono::steady_clock::now() + kReconnectAfter);
      StatusOr<std::string> answered = PingCounting(system, *front, ping_until, where, &pings);
      if (answered.status().code() == Code::kDeadlineExceeded &&
          std::chrono::steady_clock::now() < deadline) {
        // Two processes that connect to each other at the same moment can both lose
        // their route: CAF keeps one connection per pair of nodes, the connecting
        // side sends its handshake at once, and each side may then close, as
        // redundant, the very connection the other kept. The actor found stays
        // alive for CAF (reachable through a third node, as far as it knows) and
        // answers nothing. A new connection gives a direct route again (beside a
        // healthy route it is closed as redundant, and nothing changes); CAF hands
        // out what it found before until it forgets it.
        ForgetConnectedActor(system, caf::actor_cast<caf::actor_addr>(*front));
        last_error = "its connection answered no identity ping within " +
                     std::to_string(kReconnectAfter.count()) + " ms";
        std::this_thread::sleep_until(
            std::min(deadline, std::chrono::steady_clock::now() +
                                   std::chrono::milliseconds(ReconnectPauseMs())));
        continue;
      }
      if (answered.status().code() == Code::kDeadlineExceeded) return unanswered();
      AF_ASSIGN_OR_RETURN(std::string identity, std::move(answered));
      if (identity.rfind("actorflow server", 0) != 0) {
        return FailedPrecondition(where + " is not an actorflow server (it answered '" +
                                  identity + "')");
      }
      NotePeerReached(address);
      return *front;
    }
    if (!timed_out && TakeBusyRefusal(port)) {
      // The server is at --max-connections (over TCP BASP reports a malformed
      // header, over TLS a disconnect): a slot may free up, so retry.
      last_error = "it refused the connection: it has --max-connections connections open";
      std::this_thread::sleep_until(std::min(deadline, std::chrono::steady_clock::now() + backoff));
      backoff = std::min(backoff * 2, std::chrono::milliseconds(500));
      continue;
    }
    if (!timed_out && front.error() == caf::sec::disconnect_during_handshake) {
      // The peer accepted and then hung up before CAF's handshake: a TLS peer that
      // refused this process's certificate (or its lack of one), or a plain peer
      // that this process's TLS hello confused. Retrying gives the same answer.
      return Status(Code::kPermissionDenied, where + " closed the connection during the handshake: is "
                              "transport security (--tls-cert/--tls-key/--tls-ca) set the "
                              "same on both sides, with certificates of the same CA?");
    }
    if (!timed_out && (front.error() == caf::sec::malformed_basp_message ||
                       front.error() == caf::sec::unexpected_actor_messaging_interface)) {
      // Something answered, but not in CAF's protocol or not with a front actor's
      // interface: retrying will not help.
      return FailedPrecondition(where + " is not an actorflow server (" +
                                caf::to_string(front.error()) + ")");
    }
    last_error = timed_out ? "no handshake before the deadline" : caf::to_string(front.error());
    if (timed_out) break;
    if (front.error() == caf::sec::cannot_connect_to_node) {
      // CAF says only that connecting failed; the system's errno says why.
      std::string cause = ProbeTcpConnect(host, port, kProbeWait);
      if (!cause.empty()) {
        last_error = cause;
        if (auto since = SincePeerReached(address)) {
          // It answered this process before: it is down (or restarting), not starting.
          return Unavailable("cannot reach " + where + ": " + cause + "; it answered " +
                             SecondsText(*since) + " ago, so the task is down or restarting");
        }
      }
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_progress) {
      const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - start);
      std::fprintf(stderr, "actorflow: still waiting for %s: %s (%s of %s)\n", where.c_str(),
                   last_error.c_str(), SecondsText(waited).c_str(), SecondsText(timeout).c_str());
      next_progress = now + kProgressEvery;
    }
    std::this_thread::sleep_until(std::min(deadline, std::chrono::steady_clock::now() + backoff));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(500));
  }
  // A task that completed a handshake and then answered no ping is named as such,
  // whatever its connections did after.
  if (pings > 0) return unanswered();
  return Unavailable("cannot reach " + where + " within " + std::to_string(timeout.count()) +
                     " ms: " + last_error);
}

void ShutDownClusterSystem(std::unique_ptr<caf::actor_system>& system) {
  if (!system) return;
  bool stuck = false;
  {
    std::lock_guard<std::mutex> lock(StuckMutex());
    stuck = StuckAttempts().count(system.get()) > 0;
  }
  if (stuck) {
    // Deliberately never destroyed: see the header. LeakSanitizer is told so: what
    // the system holds stays reachable from it and is not reported either.
    caf::actor_system* leaked = system.release();
#if defined(__SANITIZE_ADDRESS__)
    __lsan_ignore_object(leaked);
#else
    (void)leaked;
#endif
    return;
  }
  // CAF 0.17's destructor waits, after stopping the scheduler and the middleman,
  // for every detached actor's thread, and such a thread waits until its actor
  // object is destroyed. Rarely a reference to a detached actor stays held inside
  // CAF and the destructor never returns (a few in a hundred shutdowns of a server
  // that lost connections while stopping, when its front was a detached actor; the
  // connector of connect.h still is one). So it runs on its own thread; past
  // kShutdownGraceMs the caller goes on and the system is left to the process's exit.
  auto finished = std::make_shared<Attempt>();
  caf::actor_system* ending = system.release();
  // The thread that made a system holds its logger in a thread-local until that
  // thread makes another system, and the destructor waits for the logger's end: let
  // go of it here, or the destructor on the other thread would wait for this one.
  if (caf::logger::current_logger() == &ending->logger()) {
    caf::logger::set_current_actor_system(nullptr);
  }
  std::thread([ending, finished] {
    delete ending;
    std::lock_guard<std::mutex> lock(finished->mu);
    finished->done = true;
    finished->cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(finished->mu);
  if (!finished->cv.wait_for(lock, std::chrono::milliseconds(kShutdownGraceMs),
                             [&] { return finished->done; })) {
#if defined(__SANITIZE_ADDRESS__)
    __lsan_ignore_object(ending);
#endif
    std::fprintf(stderr,
                 "actorflow: an actor system did not finish shutting down within %d ms "
                 "(a detached actor is still referenced); it is left to the process's exit\n",
                 kShutdownGraceMs);
  }
}

ConnectorActor SpawnConnector(caf::actor_system& system) {
  return system.spawn<caf::detached>([](ConnectorActor::pointer self) -> ConnectorActor::behavior_type {
    return {
        [self](connect_atom, const std::string& host, uint16_t port, int64_t timeout_ms,
               const std::string& who) -> caf::result<Status, FrontActor> {
          auto front = ConnectToServer(self->system(), host, port,
                                       std::chrono::milliseconds(timeout_ms), who);
          self->quit();
          if (!front.ok()) return {front.status(), FrontActor{}};
          return {Status::OK(), *front};
        },
    };
  });
}

Status ParseTarget(const std::string& target, std::string* host, uint16_t* port) {
  const std::string prefix = "actorflow://";
  auto bad = [&](const std::string& why) {
    return InvalidArgument("bad target '" + target + "': " + why +
                           " (expected actorflow://HOST:PORT)");
  };
  if (target.rfind(prefix, 0) != 0) return bad("missing actorflow://");
  StatusOr<TaskAddress> address = ParseHostPort(target.substr(prefix.size()));
  if (!address.ok()) return bad(address.status().message());
  *host = address->host;
  *port = address->port;
  return Status::OK();
}

}  // namespace actorflow
