// StepChannelClient (actors/cluster/step_channel.h): pooled connections, one step at a
// time on each, or no connection for a server of this very process.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "actors/scheduler/spinning_scheduler.h"
#include "actors/cluster/step_channel.h"
#include "actors/transport/step_frame.h"
#include "actors/transport/step_link.h"
#include "actors/transport/step_mailbox.h"
#include "actors/protocol/wire.h"

namespace actorflow {
namespace {

using bulk_internal::ConnectWithin;
using bulk_internal::ReadFull;
using step_internal::Clock;
using step_internal::DecodePayload;
using step_internal::EncodeFrame;
using step_internal::FrameRead;
using step_internal::FrameReader;
using step_internal::kAnswerFrame;
using step_internal::kStepFrame;
using step_internal::kStepLocalName;
using step_internal::kStepPrefixBytes;
using step_internal::kWelcomeFrame;
using step_internal::ParsePrefix;
using step_internal::StepLink;
using step_internal::StepMailbox;
using step_internal::RunOnServerInProcess;

constexpr int64_t kMaxConnectMs = 2000;
// The most answer bytes a client thread keeps between its steps.
constexpr size_t kKeptAnswerBytes = size_t{64} << 20;


// A pooled connection: its socket, closed with it, and the link its frames take.
struct Connection {
  Connection(int fd, std::unique_ptr<StepMailbox> mailbox)
      : link(fd, std::move(mailbox), FrameReader::kMaxPrefetch) {}
  ~Connection() { close(link.fd()); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // The server writes nothing after its answer until the next step: a socket's poll
  // may read a small answer whole in its one call.
  StepLink link;
};

}  // namespace

struct StepChannelClient::Impl {
  caf::actor_system& system;
  std::string endpoint;
  std::string target;
  StepChannelOptions options;
  int64_t connect_ms;
  std::mutex mu;
  std::vector<std::unique_ptr<Connection>> idle;  // no step in flight
  std::set<Connection*> busy;  // a step in flight (its thread owns it); CloseAll shuts these down
  bool closed = false;
  Clock::time_point retry_at{};
  std::atomic<int64_t> steps{0};
  // The server of this process at `endpoint`, once a step found it there.
  step_internal::InProcessServerCache in_process_server;
  // How long the last step's answer took from its sending (any thread's).
  std::atomic<int64_t> last_answer_us{0};

  Impl(caf::actor_system& sys, std::string ep, std::string tgt, StepChannelOptions opts,
       int64_t connect_timeout_ms)
      : system(sys),
        endpoint(std::move(ep)),
        target(std::move(tgt)),
        options(opts),
        connect_ms(std::min(connect_timeout_ms, kMaxConnectMs)) {}

  // A connection for one step, or null (closed, or no connection: use CAF).
  std::unique_ptr<Connection> Take() {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (closed) return nullptr;
      if (!idle.empty()) {
        std::unique_ptr<Connection> taken = std::move(idle.back());
        idle.pop_back();
        busy.insert(taken.get());
        return taken;
      }
      if (Clock::now() < retry_at) return nullptr;
    }
    const auto connect_by = Clock::now() + std::chrono::milliseconds(connect_ms);
    int fd = ConnectWithin(endpoint, connect_by, -1, options.host_local ? kStepLocalName : "");
    std::unique_ptr<StepMailbox> offered;
    if (fd >= 0 && !Welcomed(fd, connect_by, &offered)) {
      close(fd);
      fd = -1;
    }
    std::lock_guard<std::mutex> lock(mu);
    if (fd < 0) {
      retry_at = Clock::now() + std::chrono::milliseconds(options.retry_after_ms);
      return nullptr;
    }
    auto made = std::make_unique<Connection>(fd, std::move(offered));
    if (closed) return nullptr;  // closes it
    busy.insert(made.get());
    return made;
  }

  // Whether the server took the connection (its welcome frame came by `deadline`):
  // one it turned away (too many open) is closed unread, and a step sent on it could
  // not be told from one lost to a failing server. A welcome with a mailbox (its
  // file passed, its slots' size the payload) must be mapped: the server sends its
  // answers there. The welcome is read here, not by a FrameReader: its file comes
  // with its bytes.
  bool Welcomed(int fd, Clock::time_point deadline, std::unique_ptr<StepMailbox>* mailbox) {
    std::vector<int> passed;
    char prefix[kStepPrefixBytes];
    uint64_t bytes = 0;
    uint64_t slot_bytes = 0;
    bool taken = ReadFull(fd, prefix, sizeof(prefix), &deadline, &passed) &&
                 ParsePrefix(prefix, kWelcomeFrame, sizeof(slot_bytes), &bytes) &&
                 (bytes == 0 || (bytes == sizeof(slot_bytes) &&
                                 ReadFull(fd, &slot_bytes, sizeof(slot_bytes), &deadline, &passed)));
    if (taken && bytes > 0) {
      if (passed.size() == 1) {
        *mailbox = StepMailbox::Adopt(passed[0], slot_bytes);
        passed.clear();
      }
      taken = *mailbox != nullptr;
    }
    for (int extra : passed) close(extra);
    return taken;
  }

  // Ends the step on `connection`: kept for the next step when `reuse` (its stream
  // is at a frame boundary), else closed.
  void Give(std::unique_ptr<Connection> connection, bool reuse) {
    std::lock_guard<std::mutex> lock(mu);
    busy.erase(connection.get());
    if (reuse && !closed) idle.push_back(std::move(connection));
  }

  bool Closed() {
    std::lock_guard<std::mutex> lock(mu);
    return closed;
  }

  // Waits until the answer's first bytes came (true) or the step ends first (false,
  // with *status): the deadline passed, or the watch reports the server lost.
  bool AwaitAnswer(StepLink& link, Clock::time_point deadline, const Watch& watch,
                   Status* status) {
    // As an in-process session: a client whose last answer outlasted the poll parks
    // at once, leaving the core to the task that computes it.
    const int64_t last_wait_us = last_answer_us.load(std::memory_order_relaxed);
    const auto sent = Clock::now();
    if (SpinUntil([&link] { return link.Poll(); },
                  std::chrono::microseconds(last_wait_us <= options.spin_us ? options.spin_us
                                                                            : 0),
                  link.poll_cost())) {
      return true;
    }
    bool watching = false;
    for (;;) {
      const auto now = Clock::now();
      if (now >= deadline) {
        *status = DeadlineExceeded("no answer from " + target + " within the step's deadline");
        return false;
      }
      auto slice_end = std::min(deadline, watching ? now + std::chrono::milliseconds(10)
                                                   : sent + watch.long_wait);
      if (link.Park(&slice_end)) return true;  // the answer, or the connection's end
      if (!watching && Clock::now() >= sent + watch.long_wait) {
        watching = true;
        if (watch.on_long_wait) watch.on_long_wait();
      }
      if (watching && watch.lost && watch.lost(status)) return false;
    }
  }
};

StepChannelClient::StepChannelClient(caf::actor_system& system, std::string endpoint,
                                     std::string target, StepChannelOptions options,
                                     int64_t connect_timeout_ms)
    : impl_(std::make_unique<Impl>(system, std::move(endpoint), std::move(target), options,
                                   connect_timeout_ms)) {}

StepChannelClient::~StepChannelClient() {
  CloseAll();
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->idle.clear();
}

void StepChannelClient::CloseAll() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->closed = true;
  impl_->idle.clear();
  // Their steps' threads close them (Give); shutting down wakes their waits.
  for (Connection* busy : impl_->busy) shutdown(busy->link.fd(), SHUT_RDWR);
}

int64_t StepChannelClient::steps() const { return impl_->steps.load(std::memory_order_relaxed); }

StepChannelClient::Outcome StepChannelClient::Run(const RemoteStep& step,
                                                  Clock::time_point deadline, const Watch& watch,
                                                  RemoteStepResult* result) {
  Impl& c = *impl_;
  if (c.options.in_process &&
      RunOnServerInProcess(c.endpoint, c.target, step, result, &c.in_process_server)) {
    c.steps.fetch_add(1, std::memory_order_relaxed);
    return Outcome::kAnswered;
  }
  GatheredBytes frame;
  if (!EncodeFrame(c.system, kStepFrame, step, &frame)) return Outcome::kNotSent;
  if (frame.size() - kStepPrefixBytes > c.options.max_frame_bytes) return Outcome::kNotSent;
  std::unique_ptr<Connection> connection = c.Take();
  if (connection == nullptr) return Outcome::kNotSent;
  StepLink& link = connection->link;
  const auto write_by =
      std::min(deadline, Clock::now() + std::chrono::milliseconds(c.options.write_timeout_ms));
  if (!link.Send(frame, write_by)) {
    // Not whole: the server never runs it. A connection the server closed while it
    // was idle (a restarted server) ends here too.
    c.Give(std::move(connection), false);
    return Outcome::kNotSent;
  }
  Status ended;
  const auto sent_at = Clock::now();
  const bool answered = c.AwaitAnswer(link, deadline, watch, &ended);
  c.last_answer_us.store(
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - sent_at).count(),
      std::memory_order_relaxed);
  if (!answered) {
    c.Give(std::move(connection), false);  // its answer may still come: the stream is no longer usable
    *result = RemoteStepResult();
    result->status = c.Closed() ? Cancelled("the session ended while the step ran") : ended;
    return Outcome::kAnswered;
  }
  // A client thread steps again and again, often fetching the same sizes: its
  // answers' buffer is kept (up to kKeptAnswerBytes), so that a large fetch's pages
  // are neither faulted in nor zero-filled again every step.
  thread_local std::vector<char> payload;
  const auto read_by = Clock::now() + std::chrono::milliseconds(c.options.frame_timeout_ms);
  const FrameRead read = link.Finish(kAnswerFrame, c.options.max_frame_bytes, read_by, &payload);
  *result = RemoteStepResult();
  const bool decoded = read == FrameRead::kOk && DecodePayload(c.system, payload, result);
  if (payload.capacity() > kKeptAnswerBytes) std::vector<char>().swap(payload);
  if (decoded) {
    c.Give(std::move(connection), true);
    c.steps.fetch_add(1, std::memory_order_relaxed);
    return Outcome::kAnswered;
  }
  c.Give(std::move(connection), false);
  *result = RemoteStepResult();
  if (c.Closed()) {
    result->status = Cancelled("the session ended while the step ran");
  } else if (read == FrameRead::kClosed) {
    result->status =
        Unavailable("lost the master at " + c.target + ": its step connection closed");
  } else {
    result->status = Unavailable("malformed step answer from " + c.target);
  }
  return Outcome::kAnswered;
}

}  // namespace actorflow
