// StepChannelClient (actors/cluster/step_channel.h): pooled connections, one step at a
// time on each, or no connection for a server of this very process.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "actors/scheduler/spinning_scheduler.h"
#include "actors/cluster/step_channel.h"
#include "actors/transport/step_frame.h"
#include "actors/transport/step_mailbox.h"
#include "actors/protocol/wire.h"

namespace actorflow {
namespace {

using bulk_internal::ConnectWithin;
using bulk_internal::ReadFull;
using bulk_internal::WaitReady;
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
using step_internal::StepMailbox;
using step_internal::RunOnServerInProcess;
using step_internal::WriteFrame;

constexpr int64_t kMaxConnectMs = 2000;
// The most answer bytes a client thread keeps between its steps.
constexpr size_t kKeptAnswerBytes = size_t{64} << 20;

}  // namespace

struct StepChannelClient::Impl {
  caf::actor_system& system;
  std::string endpoint;
  std::string target;
  StepChannelOptions options;
  int64_t connect_ms;
  std::mutex mu;
  std::vector<int> idle;  // connected, no step in flight
  std::set<int> busy;     // a step in flight; CloseAll shuts these down
  // The mailboxes of the connections that have one (host-local ones).
  std::map<int, std::unique_ptr<StepMailbox>> mailboxes;
  bool closed = false;
  Clock::time_point retry_at{};
  std::atomic<int64_t> steps{0};
  // How long the last step's answer took from its sending (any thread's).
  std::atomic<int64_t> last_answer_us{0};

  Impl(caf::actor_system& sys, std::string ep, std::string tgt, StepChannelOptions opts,
       int64_t connect_timeout_ms)
      : system(sys),
        endpoint(std::move(ep)),
        target(std::move(tgt)),
        options(opts),
        connect_ms(std::min(connect_timeout_ms, kMaxConnectMs)) {}

  // A connection for one step, or -1 (closed, or no connection: use CAF); its
  // mailbox in *mailbox (null: frames on the socket).
  int Take(StepMailbox** mailbox) {
    *mailbox = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (closed) return -1;
      if (!idle.empty()) {
        int fd = idle.back();
        idle.pop_back();
        busy.insert(fd);
        auto it = mailboxes.find(fd);
        if (it != mailboxes.end()) *mailbox = it->second.get();
        return fd;
      }
      if (Clock::now() < retry_at) return -1;
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
      return -1;
    }
    if (closed) {
      close(fd);
      return -1;
    }
    busy.insert(fd);
    if (offered) {
      *mailbox = offered.get();
      mailboxes[fd] = std::move(offered);
    }
    return fd;
  }

  // Whether the server took the connection (its welcome frame came by `deadline`):
  // one it turned away (too many open) is closed unread, and a step sent on it could
  // not be told from one lost to a failing server. A welcome with a mailbox (its
  // file passed, its slots' size the payload) must be mapped: the server sends its
  // answers there.
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

  // Ends the step on `fd`: kept for the next step when `reuse` (its stream is at a
  // frame boundary), else closed.
  void Give(int fd, bool reuse) {
    std::lock_guard<std::mutex> lock(mu);
    busy.erase(fd);
    if (reuse && !closed) {
      idle.push_back(fd);
    } else {
      mailboxes.erase(fd);
      close(fd);
    }
  }

  bool Closed() {
    std::lock_guard<std::mutex> lock(mu);
    return closed;
  }

  // Waits until fd has a byte to read (true) or the step ends first (false, with
  // *status): the deadline passed, or the watch reports the server lost.
  // The reader's Poll takes the answer's first bytes (often all of it).
  bool AwaitAnswer(int fd, StepMailbox* mailbox, Clock::time_point deadline, const Watch& watch,
                   FrameReader* reader, Status* status) {
    auto readable = [fd, reader, mailbox] {
      return mailbox ? mailbox->Poll(fd) : reader->Poll(fd);
    };
    // As an in-process session: a client whose last answer outlasted the poll parks
    // at once, leaving the core to the task that computes it.
    const int64_t last_wait_us = last_answer_us.load(std::memory_order_relaxed);
    const auto sent = Clock::now();
    if (SpinUntil(readable, std::chrono::microseconds(
                                last_wait_us <= options.spin_us ? options.spin_us : 0),
                  mailbox ? PollCost::kMemory : PollCost::kSystemCall)) {
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
      if (mailbox) {
        if (mailbox->Park(fd, &slice_end)) return true;  // a frame, or the socket's end
      } else {
        WaitReady(fd, POLLIN, &slice_end);  // input, or the slice's end
        if (readable()) return true;  // bytes, or an error or hang-up (poll reports them too)
      }
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
  for (int fd : impl_->idle) close(fd);
  impl_->idle.clear();
  impl_->mailboxes.clear();  // no step is in flight any more
}

void StepChannelClient::CloseAll() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->closed = true;
  for (int fd : impl_->idle) {
    impl_->mailboxes.erase(fd);
    close(fd);
  }
  impl_->idle.clear();
  // Their steps' threads close them (Give); shutting down wakes their waits.
  for (int fd : impl_->busy) shutdown(fd, SHUT_RDWR);
}

int64_t StepChannelClient::steps() const { return impl_->steps.load(std::memory_order_relaxed); }

StepChannelClient::Outcome StepChannelClient::Run(const RemoteStep& step,
                                                  Clock::time_point deadline, const Watch& watch,
                                                  RemoteStepResult* result) {
  Impl& c = *impl_;
  if (c.options.in_process && RunOnServerInProcess(c.endpoint, c.target, step, result)) {
    c.steps.fetch_add(1, std::memory_order_relaxed);
    return Outcome::kAnswered;
  }
  GatheredBytes frame;
  if (!EncodeFrame(c.system, kStepFrame, step, &frame)) return Outcome::kNotSent;
  if (frame.size() - kStepPrefixBytes > c.options.max_frame_bytes) return Outcome::kNotSent;
  StepMailbox* mailbox = nullptr;
  const int fd = c.Take(&mailbox);
  if (fd < 0) return Outcome::kNotSent;
  const auto write_by =
      std::min(deadline, Clock::now() + std::chrono::milliseconds(c.options.write_timeout_ms));
  if (!(mailbox ? mailbox->Send(fd, frame, write_by) : WriteFrame(fd, frame, write_by))) {
    // Not whole: the server never runs it. A connection the server closed while it
    // was idle (a restarted server) ends here too.
    c.Give(fd, false);
    return Outcome::kNotSent;
  }
  Status ended;
  const auto sent_at = Clock::now();
  // The server writes nothing after its answer until the next step: the answer may
  // be read whole in the poll's one call.
  FrameReader reader(FrameReader::kMaxPrefetch);
  const bool answered = c.AwaitAnswer(fd, mailbox, deadline, watch, &reader, &ended);
  c.last_answer_us.store(
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - sent_at).count(),
      std::memory_order_relaxed);
  if (!answered) {
    c.Give(fd, false);  // its answer may still come: the stream is no longer usable
    *result = RemoteStepResult();
    result->status = c.Closed() ? Cancelled("the session ended while the step ran") : ended;
    return Outcome::kAnswered;
  }
  // A client thread steps again and again, often fetching the same sizes: its
  // answers' buffer is kept (up to kKeptAnswerBytes), so that a large fetch's pages
  // are neither faulted in nor zero-filled again every step.
  thread_local std::vector<char> payload;
  const auto read_by = Clock::now() + std::chrono::milliseconds(c.options.frame_timeout_ms);
  const FrameRead read =
      mailbox ? mailbox->Finish(fd, kAnswerFrame, c.options.max_frame_bytes, read_by, &payload)
              : reader.Finish(fd, kAnswerFrame, c.options.max_frame_bytes, read_by, &payload);
  *result = RemoteStepResult();
  const bool decoded = read == FrameRead::kOk && DecodePayload(c.system, payload, result);
  if (payload.capacity() > kKeptAnswerBytes) std::vector<char>().swap(payload);
  if (decoded) {
    c.Give(fd, true);
    c.steps.fetch_add(1, std::memory_order_relaxed);
    return Outcome::kAnswered;
  }
  c.Give(fd, false);
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
