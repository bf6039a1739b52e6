// A listening TCP socket that serves each accepted connection on a thread of its
// own: the bulk channel's receiver and the step channel's server
// (actors/transport/bulk_channel.h, actors/cluster/step_channel.h) differ only in what they read.
//
// Bounded: connections beyond `max_connections` open ones are closed at once (and
// counted). Shutting down (the destructor) shuts every socket down, which wakes
// every read and write on it, and joins every thread. CAF-free.
//
// Host-local peers: with a `local_name`, the acceptor also listens on a Unix stream
// socket in the abstract namespace, named from the TCP endpoint (LocalSocketAddress).
// A process on the same host reaches the same acceptor through it for about half of
// loopback TCP's CPU per byte (no TCP/IP processing; tools/bench/floor_bench.cc).
// The name is unique on the host because the TCP host:port it embeds has one
// listener there; a peer that finds no such socket uses TCP. Both sockets take the
// same peers (any local process may open either), so neither trusts more.
#ifndef ACTORFLOW_ACTORS_TRANSPORT_SOCKET_ACCEPTOR_H_
#define ACTORFLOW_ACTORS_TRANSPORT_SOCKET_ACCEPTOR_H_

#include <sys/socket.h>
#include <sys/un.h>

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
  // Also listen on the host-local socket named from this tag and the TCP endpoint
  // ("bulk", "step"); empty: TCP only.
  std::string local_name;
};

// The abstract Unix socket address of an acceptor with `local_name` whose TCP
// endpoint is `endpoint` ("host:port"): "\0actorflow/<local_name>/<endpoint>".
// False when it does not fit a sockaddr_un.
bool LocalSocketAddress(const std::string& local_name, const std::string& endpoint,
                        sockaddr_un* address, socklen_t* length);

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
  // Connections taken on the host-local socket.
  virtual int64_t local_connections() const = 0;
};

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_TRANSPORT_SOCKET_ACCEPTOR_H_
