// A listening TCP socket that serves each accepted connection on a thread of its
// own: the bulk channel's receiver and the step channel's server
// (actors/bulk_channel.h, actors/step_channel.h) differ only in what they read.
//
// Bounded: connections beyond `max_connections` open ones are closed at once (and
// counted). Shutting down (the destructor) shuts every socket down, which wakes
// every read and write on it, and joins every thread. CAF-free.
#ifndef ACTORFLOW_ACTORS_SOCKET_ACCEPTOR_H_
#define ACTORFLOW_ACTORS_SOCKET_ACCEPTOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "graph/status.h"

namespace actorflow {

struct SocketAcceptorOptions {
  std::string what;  // names the listener in errors: "bulk channel"
  int max_connections = 64;
  // Thread names (at most 15 characters), so that profiles tell these threads apart.
  const char* accept_thread_name = "af.accept";
  const char* connection_thread_name = "af.conn";
};

class SocketAcceptor {
 public:
  // Runs on the connection's own thread with its socket (blocking, TCP_NODELAY) and
  // returns when the connection should end; the acceptor then shuts the socket
  // down, so the peer sees the end at once, and closes it when the thread is joined.
  using Serve = std::function<void(int fd)>;

  // Listens on host (any free port). Unavailable naming `what` and host when it
  // cannot.
  static StatusOr<std::unique_ptr<SocketAcceptor>> Listen(const std::string& host,
                                                          SocketAcceptorOptions options,
                                                          Serve serve);
  virtual ~SocketAcceptor() = default;
  virtual uint16_t port() const = 0;
  // "host:port" with the host as given to Listen (a cluster spec's name for it).
  virtual std::string endpoint() const = 0;
  // Connections closed at once because max_connections were open.
  virtual int64_t turned_away() const = 0;
};

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_SOCKET_ACCEPTOR_H_
