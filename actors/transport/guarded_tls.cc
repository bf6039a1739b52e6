// The guarded transport over TLS (guarded_transport.h): CAF's OpenSSL sessions in
// connections that the guarded backend counts, times out before their handshake
// and refuses beyond --max-connections, exactly as over plain TCP.
//
// CAF's OpenSSL module makes its connections in its own middleman actor, which
// knows nothing of these limits. This process publishes and connects through
// another middleman actor instead (one per actor system), whose
// listeners and connections are the guarded backend's; the module itself is still
// loaded, for the TLS context it configures (certificate, key, CA).
#include <sys/socket.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/io/basp_broker.hpp>
#include <caf/io/middleman_actor_impl.hpp>
#include <caf/io/network/stream_impl.hpp>
#include <caf/openssl/all.hpp>
#include <caf/openssl/session.hpp>
#include <openssl/err.h>

#include "actors/transport/guarded_connections.h"
#include "actors/transport/guarded_transport.h"

namespace actorflow {
namespace guarded {
namespace {

class TlsScribe;

// OpenSSL reports why an SSL_read or SSL_write returned nothing through the calling
// thread's error queue, which must be empty before the call (SSL_get_error(3)):
// with an error left there by any earlier call on this thread (a refused peer's
// "unexpected eof while reading", a certificate file's parse), a read that merely
// has to wait (SSL_ERROR_WANT_READ) is taken for a fatal error and CAF closes a
// healthy connection. CAF's session leaves its errors in the queue, and the
// multiplexer's thread serves every connection: so each call into OpenSSL here
// starts with an empty queue.
void ClearTlsErrors() { ERR_clear_error(); }

// CAF's OpenSSL session as the policy of a stream. An accepted connection's session
// is started by the peer's first bytes, and its owner told of the first bytes that
// TLS hands on (see TlsScribe).
class TlsPolicy {
 public:
  // `session`: an outgoing connection's, started already; null for an accepted one,
  // whose `owner` is told when the peer has spoken through TLS.
  TlsPolicy(caf::openssl::session_ptr session, TlsScribe* owner)
      : session_(std::move(session)), waiting_owner_(session_ == nullptr ? owner : nullptr) {}

  net::rw_state read_some(size_t& result, net::native_socket fd, void* buf, size_t len) {
    if (session_ == nullptr && !StartAcceptedSession(fd)) return net::rw_state::failure;
    ClearTlsErrors();
    const net::rw_state state = session_->read_some(result, fd, buf, len);
    if (waiting_owner_ != nullptr && state == net::rw_state::success && result > 0) {
      TlsScribe* owner = waiting_owner_;
      waiting_owner_ = nullptr;
      PeerSpoke(owner);
    }
    return state;
  }
  net::rw_state write_some(size_t& result, net::native_socket fd, const void* buf, size_t len) {
    if (session_ == nullptr) {  // not asked: nothing is written before the peer spoke
      result = 0;
      return net::rw_state::indeterminate;
    }
    ClearTlsErrors();
    return session_->write_some(result, fd, buf, len);
  }
  bool must_read_more(net::native_socket fd, size_t threshold) {
    return session_ != nullptr && session_->must_read_more(fd, threshold);
  }

 private:
  bool StartAcceptedSession(net::native_socket fd);
  static void PeerSpoke(TlsScribe* owner);

  caf::openssl::session_ptr session_;
  TlsScribe* waiting_owner_;  // an accepted connection's until its peer spoke
};

// A connection over TLS: what caf::io::network::scribe_impl is for TCP, with the
// stream in `stream_` (GuardedScribe's contract).
//
// An accepted connection has no TLS session until its peer's first bytes arrive, and
// writes nothing of its own (BASP's first message) until TLS hands on the peer's
// first bytes, which comes after TLS's handshake (TLS writes its own part of the
// handshake as it reads the peer's). A peer that connects and stays silent, or
// stops inside TLS's handshake, then costs neither a TLS context (CAF makes one per
// session, loading the certificate files) nor the multiplexer's time: CAF's TLS
// stream, holding data to write while TLS's handshake waits for the peer, is woken by
// every writable socket. This relies on a CAF 0.17 client writing its BASP handshake
// without waiting for the server's, as every actorflow process does.
class TlsScribe : public caf::io::scribe {
 public:
  // `session`: an outgoing connection's; null for an accepted one.
  TlsScribe(net::default_multiplexer& mx, net::native_socket fd,
            caf::openssl::session_ptr session, caf::actor_system& system)
      : scribe(net::conn_hdl_from_socket(fd)),
        system_(system),
        waiting_for_peer_(session == nullptr),
        stream_(mx, fd, std::move(session), this) {}

  void configure_read(caf::io::receive_policy::config config) override {
    stream_.configure_read(config);
    if (!launched_) Launch();
  }
  void ack_writes(bool enable) override { stream_.ack_writes(enable); }
  std::vector<char>& wr_buf() override { return stream_.wr_buf(); }
  std::vector<char>& rd_buf() override { return stream_.rd_buf(); }
  void graceful_shutdown() override {
    stream_.graceful_shutdown();
    detach(&stream_.backend(), false);
  }
  void flush() override {
    if (waiting_for_peer_) {
      flush_pending_ = true;  // the data waits in the stream's buffer
      return;
    }
    stream_.flush(this);
  }
  std::string addr() const override {
    auto addr = net::remote_addr_of_fd(stream_.fd());
    return addr ? *addr : std::string();
  }
  uint16_t port() const override {
    auto port = net::remote_port_of_fd(stream_.fd());
    return port ? *port : 0;
  }
  void add_to_loop() override { stream_.activate(this); }
  void remove_from_loop() override { stream_.passivate(); }

  caf::actor_system& system_of_connection() { return system_; }

  // The accepted peer spoke through TLS: what BASP wrote meanwhile goes.
  void PeerSpoke() {
    waiting_for_peer_ = false;
    if (flush_pending_) {
      flush_pending_ = false;
      stream_.flush(this);
    }
  }

 private:
  void Launch() {
    launched_ = true;
    stream_.start(this);
    // An outgoing connection: an empty write schedules the stream while TLS's own
    // handshake still has to write (SSL_connect), before BASP has anything to send.
    if (!waiting_for_peer_) stream_.force_empty_write(this);
  }

  caf::actor_system& system_;
  bool waiting_for_peer_;
  bool flush_pending_ = false;
  bool launched_ = false;

 protected:
  net::stream_impl<TlsPolicy> stream_;
};

bool TlsPolicy::StartAcceptedSession(net::native_socket fd) {
  ClearTlsErrors();
  session_ = caf::openssl::make_session(waiting_owner_->system_of_connection(), fd,
                                        /*from_accepted_socket=*/true);
  if (session_ == nullptr) {
    ClearTlsErrors();  // the refused peer's errors are not the next connection's
    LogRefusal(PeerOf(fd), "its first bytes start no TLS session (a peer without TLS, or gone)");
    return false;
  }
  return true;
}

void TlsPolicy::PeerSpoke(TlsScribe* owner) { owner->PeerSpoke(); }

// A guarded listener whose connections are TLS sessions.
class GuardedTlsDoorman : public GuardedDoorman {
 public:
  using GuardedDoorman::GuardedDoorman;

 protected:
  // The session starts with the peer's first bytes (TlsScribe).
  caf::io::scribe_ptr MakeScribe(net::default_multiplexer& mx, net::native_socket fd) override {
    (void)net::nonblocking(fd, true);
    return caf::make_counted<GuardedScribe<TlsScribe>>(limits_, accepted_, mx, fd, nullptr,
                                                       parent()->system());
  }
};

GuardedMultiplexer* GuardedBackendOf(caf::actor_system& sys) {
  return dynamic_cast<GuardedMultiplexer*>(&sys.middleman().backend());
}

// CAF's middleman actor (publish, connect) making guarded TLS listeners and
// connections. Detached, as CAF's own: connecting blocks in connect(2). Its down
// handler, which replaces the base's (that one dropped the cached results of an
// actor gone down), ends it on any down message: the BASP broker's, or a found
// actor's, whose cached result then goes with this actor (ForgetOverGuardedTls). A detached
// actor's thread ends only once its actor is destroyed, and the system's destructor
// waits for that thread: so nothing outside holds this actor for good. It holds
// itself, and lets go when the BASP broker ends (the middleman ends it when the
// system stops).
class GuardedTlsMiddlemanActor : public caf::io::middleman_actor_impl {
 public:
  GuardedTlsMiddlemanActor(caf::actor_config& cfg, caf::actor basp)
      : middleman_actor_impl(cfg, basp), basp_(std::move(basp)) {}

  const char* name() const override { return "actorflow.guarded_tls_middleman"; }

  behavior_type make_behavior() override {
    itself_ = caf::actor_cast<caf::strong_actor_ptr>(this);
    monitor(basp_);
    set_down_handler([this](caf::down_msg&) { quit(); });
    return middleman_actor_impl::make_behavior();
  }

  void on_exit() override {
    middleman_actor_impl::on_exit();
    basp_ = nullptr;
    itself_.reset();
  }

 protected:
  caf::expected<caf::io::scribe_ptr> connect(const std::string& host, uint16_t port) override {
    GuardedMultiplexer* backend = GuardedBackendOf(system());
    if (backend == nullptr) return caf::sec::cannot_connect_to_node;
    auto fd = net::new_tcp_connection(host, port);
    if (!fd) return std::move(fd.error());
    (void)net::nonblocking(*fd, true);
    ClearTlsErrors();
    caf::openssl::session_ptr session =
        caf::openssl::make_session(system(), *fd, /*from_accepted_socket=*/false);
    if (session == nullptr) {
      ClearTlsErrors();
      // A server at --max-connections may have written kBusyFrame before TLS's
      // first read, which then failed on it.
      if (SawBusyFrame(*fd)) RecordBusyRefusal(port);
      net::close_socket(*fd);
      return caf::sec::cannot_connect_to_node;
    }
    return caf::io::scribe_ptr{caf::make_counted<GuardedScribe<TlsScribe>>(
        backend->limits(), nullptr, *backend, *fd, std::move(session), system())};
  }

  caf::expected<caf::io::doorman_ptr> open(uint16_t port, const char* addr, bool reuse) override {
    GuardedMultiplexer* backend = GuardedBackendOf(system());
    if (backend == nullptr) return caf::sec::cannot_open_port;
    auto fd = net::new_tcp_acceptor_impl(port, addr, reuse);
    if (!fd) return std::move(fd.error());
    return backend->NewTlsDoorman(*fd);
  }

 private:
  caf::actor basp_;
  caf::strong_actor_ptr itself_;
};

// The system's guarded TLS middleman actor, spawned on first use; known here by its
// address only (see GuardedTlsMiddlemanActor).
caf::io::middleman_actor GuardedTlsMiddleman(caf::actor_system& sys) {
  static std::mutex mu;
  static std::map<const caf::actor_system*, caf::actor_addr> actors;
  std::lock_guard<std::mutex> lock(mu);
  auto known = actors.find(&sys);
  if (known != actors.end()) {
    auto alive = caf::actor_cast<caf::io::middleman_actor>(known->second);
    if (alive) return alive;
  }
  caf::actor basp = sys.middleman().named_broker<caf::io::basp_broker>(caf::atom("BASP"));
  caf::io::middleman_actor actor = caf::actor_cast<caf::io::middleman_actor>(
      sys.spawn<GuardedTlsMiddlemanActor, caf::detached + caf::hidden>(std::move(basp)));
  actors[&sys] = actor.address();
  return actor;
}

}  // namespace

caf::io::doorman_ptr GuardedMultiplexer::NewTlsDoorman(net::native_socket fd) {
  reaper_.Start();
  return caf::make_counted<GuardedTlsDoorman>(*this, fd, limits_, accepted_);
}

}  // namespace guarded

caf::expected<uint16_t> PublishOverGuardedTls(caf::actor_system& sys,
                                              const caf::strong_actor_ptr& whom,
                                              std::set<std::string> interface, uint16_t port,
                                              const std::string& host) {
  if (!sys.has_openssl_manager() || guarded::GuardedBackendOf(sys) == nullptr) {
    return caf::make_error(caf::sec::runtime_error,
                           "TLS publishing needs ConfigureClusterTransport's transport");
  }
  caf::expected<uint16_t> result{caf::sec::cannot_open_port};
  caf::scoped_actor self{sys};
  self->request(guarded::GuardedTlsMiddleman(sys), caf::infinite, caf::publish_atom::value, port,
                whom, std::move(interface), host, /*reuse=*/true)
      .receive([&](uint16_t bound) { result = bound; },
               [&](caf::error& error) { result = std::move(error); });
  return result;
}

void ForgetOverGuardedTls(caf::actor_system& sys, const caf::actor_addr& found) {
  if (!sys.has_openssl_manager() || guarded::GuardedBackendOf(sys) == nullptr) return;
  // Its down handler ends it on any down message (GuardedTlsMiddlemanActor), taking
  // every cached result with it; the next connection spawns a new one.
  caf::anon_send(caf::actor_cast<caf::actor>(guarded::GuardedTlsMiddleman(sys)),
                 caf::down_msg{found, caf::exit_reason::unreachable});
}

caf::expected<caf::strong_actor_ptr> ConnectOverGuardedTls(
    caf::actor_system& sys, const std::set<std::string>& interface, const std::string& host,
    uint16_t port) {
  if (!sys.has_openssl_manager() || guarded::GuardedBackendOf(sys) == nullptr) {
    return caf::make_error(caf::sec::runtime_error,
                           "TLS connections need ConfigureClusterTransport's transport");
  }
  caf::expected<caf::strong_actor_ptr> result{caf::sec::cannot_connect_to_node};
  caf::scoped_actor self{sys};
  self->request(guarded::GuardedTlsMiddleman(sys), caf::infinite, caf::connect_atom::value, host,
                port)
      .receive(
          [&](const caf::node_id&, caf::strong_actor_ptr& found,
              const std::set<std::string>& found_interface) {
            if (found == nullptr) {
              result = caf::sec::no_actor_published_at_port;
            } else if (!sys.assignable(found_interface, interface)) {
              result = caf::sec::unexpected_actor_messaging_interface;
            } else {
              result = std::move(found);
            }
          },
          [&](caf::error& error) { result = std::move(error); });
  return result;
}

}  // namespace actorflow
