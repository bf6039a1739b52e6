// StepChannelServer and StepChannelClient (actors/step_channel.h).
#include "actors/step_channel.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "actors/bulk_socket.h"
#include "actors/caller_jobs.h"
#include "actors/master_protocol.h"
#include "actors/socket_acceptor.h"
#include "actors/spinning_scheduler.h"
#include "actors/task_actors.h"
#include "actors/task_services.h"
#include "actors/wire.h"
#include "kernels/gpu_runtime.h"

namespace actorflow {
namespace {

using bulk_internal::Clock;
using bulk_internal::ConnectWithin;
using bulk_internal::ReadFull;
using bulk_internal::WaitReady;
using bulk_internal::WriteFull;

constexpr uint32_t kStepMagic = 0x54534641;  // "AFST" in a little-endian dump
constexpr uint32_t kStepFrame = 1;
constexpr uint32_t kAnswerFrame = 2;
constexpr uint32_t kWelcomeFrame = 3;  // empty: the server took the connection
constexpr size_t kPrefixBytes = 16;  // magic, kind, payload bytes
// A connection's thread checks this often whether its server is stopping while the
// step it waits for runs on.
constexpr auto kStopCheck = std::chrono::milliseconds(100);
// A failed connect sends steps over CAF for this long before the channel tries again.
constexpr auto kRetryAfter = std::chrono::seconds(1);
constexpr int64_t kMaxConnectMs = 2000;
// The tag of the servers' host-local sockets (actors/socket_acceptor.h).
constexpr char kStepLocalName[] = "step";

// `value` as a whole frame of `kind` in *out. False when it does not serialize.
template <class T>
bool EncodeFrame(caf::actor_system& system, uint32_t kind, const T& value, std::vector<char>* out) {
  out->assign(kPrefixBytes, '\0');
  caf::binary_serializer sink{system, *out};
  // CAF's inspectors take a mutable reference; saving does not change the value.
  if (sink(const_cast<T&>(value))) return false;
  const uint64_t payload = out->size() - kPrefixBytes;
  std::memcpy(out->data(), &kStepMagic, 4);
  std::memcpy(out->data() + 4, &kind, 4);
  std::memcpy(out->data() + 8, &payload, 8);
  return true;
}

bool WriteFrame(int fd, std::vector<char>& frame, Clock::time_point deadline) {
  return WriteFull(fd, {iovec{frame.data(), frame.size()}}, deadline, -1);
}

enum class FrameRead { kOk, kClosed, kMalformed };

// Reads the rest of a frame whose first byte is `first`, within `deadline`, into
// *payload. kClosed: the peer went away (or the deadline passed) mid-frame.
FrameRead ReadRestOfFrame(int fd, char first, uint32_t kind, uint64_t max_bytes,
                          Clock::time_point deadline, std::vector<char>* payload) {
  char prefix[kPrefixBytes];
  prefix[0] = first;
  if (!ReadFull(fd, prefix + 1, kPrefixBytes - 1, &deadline)) return FrameRead::kClosed;
  uint32_t magic, got_kind;
  uint64_t bytes;
  std::memcpy(&magic, prefix, 4);
  std::memcpy(&got_kind, prefix + 4, 4);
  std::memcpy(&bytes, prefix + 8, 8);
  if (magic != kStepMagic || got_kind != kind || bytes > max_bytes) return FrameRead::kMalformed;
  payload->resize(bytes);
  if (bytes > 0 && !ReadFull(fd, payload->data(), bytes, &deadline)) return FrameRead::kClosed;
  return FrameRead::kOk;
}

// Whether a read on fd would not block: a byte is there, or the peer is gone.
bool HasInput(int fd) {
  char c;
  ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

// The step connections of this process whose clients are stepping: serving a step,
// or waiting for the next one for less than kActiveGap.
constexpr auto kActiveGap = std::chrono::milliseconds(1);
std::atomic<int>& ActiveConnections() {
  static std::atomic<int> count{0};
  return count;
}

// Parses a whole payload into *value; false when it does not parse or has bytes left.
template <class T>
bool DecodePayload(caf::actor_system& system, const std::vector<char>& payload, T* value) {
  caf::binary_deserializer source{system, payload};
  return !source(*value) && source.remaining() == 0;
}

class StepChannelServerImpl;

// The servers of this process by endpoint, for the clients of this process: a step
// for one of them needs no socket (StepChannelClient::Run). A server leaves before it
// stops, once the steps its clients are running have returned.
struct InProcessServers {
  std::mutex mu;
  std::condition_variable left;  // a step run here returned
  std::map<std::string, StepChannelServerImpl*> by_endpoint;
  std::map<StepChannelServerImpl*, int> running;  // steps run here, per server
};
InProcessServers& InProcess() {
  static InProcessServers* servers = new InProcessServers;  // never destroyed
  return *servers;
}

class StepChannelServerImpl : public StepChannelServer {
 public:
  StepChannelServerImpl(caf::actor_system& system, std::string task_name,
                        StepChannelOptions options)
      : system_(system), task_name_(std::move(task_name)), options_(options) {}

  ~StepChannelServerImpl() override {
    stopping_.store(true, std::memory_order_release);
    {
      InProcessServers& in_process = InProcess();
      std::unique_lock<std::mutex> lock(in_process.mu);
      in_process.by_endpoint.erase(endpoint_);
      // Their Await sees stopping_ within kStopCheck.
      in_process.left.wait(lock, [&] { return in_process.running[this] == 0; });
      in_process.running.erase(this);
    }
    acceptor_.reset();  // wakes every read, joins every connection's thread
  }

  Status Listen(const std::string& host) {
    SocketAcceptorOptions ao;
    ao.what = "step channel of " + task_name_;
    ao.max_connections = options_.max_connections;
    ao.accept_thread_name = "af.step.accept";
    ao.connection_thread_name = "af.step.conn";
    ao.local_name = kStepLocalName;
    AF_ASSIGN_OR_RETURN(acceptor_,
                        SocketAcceptor::Listen(host, ao, [this](int fd) { ServeConnection(fd); }));
    endpoint_ = acceptor_->endpoint();
    InProcessServers& in_process = InProcess();
    std::lock_guard<std::mutex> lock(in_process.mu);
    in_process.by_endpoint[endpoint_] = this;
    return Status::OK();
  }

  // A step of a client in this process, run on its thread. *stopped: the server
  // stopped while it ran (the answer is then Cancelled).
  RemoteStepResult RunInProcess(RemoteStep step, bool* stopped) {
    RemoteStepResult result = RunStep(std::move(step));
    *stopped = stopping_.load(std::memory_order_acquire);
    if (!*stopped) in_process_steps_.fetch_add(1, std::memory_order_relaxed);
    return result;
  }

  void Serve(std::shared_ptr<TaskServices> services) override {
    std::lock_guard<std::mutex> lock(mu_);
    services_ = std::move(services);
  }
  uint16_t port() const override { return acceptor_->port(); }
  int64_t steps() const override { return steps_.load(std::memory_order_relaxed); }
  int64_t in_process_steps() const override {
    return in_process_steps_.load(std::memory_order_relaxed);
  }
  int64_t refused() const override { return refused_.load(std::memory_order_relaxed); }
  int64_t local_connections() const override { return acceptor_->local_connections(); }

 private:
  // One step after another until the client closes the connection, a frame is
  // malformed, or the server stops.
  void ServeConnection(int fd) {
    // Counted from here on, except while its client pauses.
    ActiveConnections().fetch_add(1, std::memory_order_relaxed);
    struct Uncount {
      ~Uncount() { ActiveConnections().fetch_sub(1, std::memory_order_relaxed); }
    } uncount;
    std::vector<char> in;
    std::vector<char> out(kPrefixBytes, '\0');

    const uint64_t none = 0;
    std::memcpy(out.data(), &kStepMagic, 4);
    std::memcpy(out.data() + 4, &kWelcomeFrame, 4);
    std::memcpy(out.data() + 8, &none, 8);
    if (!WriteFrame(fd, out, Clock::now() + std::chrono::milliseconds(options_.write_timeout_ms))) {
      return;
    }
    for (;;) {
      char first = 0;
      // A client's next step often follows its answer at once: poll for it a while,
      // but only while this process serves no more active connections than half its
      // cores. Each has a client thread that computes between its steps (often on
      // these cores: an in-process cluster's clients are in this very process), and
      // a thread polling for its next step would take the core it computes on.
      if (ActiveConnections().load(std::memory_order_relaxed) * 2 <= PollingCores()) {
        SpinUntil([fd] { return HasInput(fd); }, std::chrono::microseconds(options_.spin_us));
      }
      // Active until its client pauses longer than kActiveGap; then the wait is
      // open-ended (an idle client) and Stop shuts it down.
      auto active_until = Clock::now() + kActiveGap;
      bool got_first = ReadFull(fd, &first, 1, &active_until);
      if (!got_first) {
        // Past the gap (or at the connection's end, which the read below sees at
        // once); a byte that came just after the gap is read below too.
        const bool paused = !HasInput(fd);
        if (paused) ActiveConnections().fetch_sub(1, std::memory_order_relaxed);
        got_first = ReadFull(fd, &first, 1, nullptr);
        if (paused) ActiveConnections().fetch_add(1, std::memory_order_relaxed);
      }
      if (!got_first) return;
      const auto deadline = Clock::now() + std::chrono::milliseconds(options_.frame_timeout_ms);
      FrameRead read =
          ReadRestOfFrame(fd, first, kStepFrame, options_.max_frame_bytes, deadline, &in);
      RemoteStep step;
      if (read == FrameRead::kOk && !DecodePayload(system_, in, &step)) {
        read = FrameRead::kMalformed;
      }
      if (read != FrameRead::kOk) {
        refused_.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      RemoteStepResult result = RunStep(std::move(step));
      // A stopping task answers nothing: its clients see the connection end, as they
      // would see its process end.
      if (stopping_.load(std::memory_order_acquire)) return;
      if (!EncodeFrame(system_, kAnswerFrame, result, &out)) {
        RemoteStepResult failed;
        failed.status = Internal(task_name_ + " could not serialize the step's answer");
        EncodeFrame(system_, kAnswerFrame, failed, &out);
      }
      // Counted before it is written: a client that has its answer sees it counted.
      steps_.fetch_add(1, std::memory_order_relaxed);
      const auto write_by = Clock::now() + std::chrono::milliseconds(options_.write_timeout_ms);
      if (!WriteFrame(fd, out, write_by)) return;
    }
  }

  // The step as the front would pass it on (actors/task_actors.cc), but sent to the
  // master by this thread and answered through a StepReply.
  RemoteStepResult RunStep(RemoteStep step) {
    RemoteStepResult result;
    MasterActor master;
    const uint64_t session_id = step.session_id;
    const int64_t timeout_ms = step.timeout_in_ms;
    Status found = FindMaster(session_id, &master);
    if (!found.ok()) {
      result.status = std::move(found);
      return result;
    }
    auto req = std::make_shared<StepRequest>();
    Status taken = TakeRemoteStep(std::move(step), options_.limits, req.get());
    if (!taken.ok()) {
      result.status = std::move(taken);
      return result;
    }
    req->reply = std::make_shared<StepReply>();
    std::shared_ptr<StepReply> reply = req->reply;
    auto message = caf::make_message(step_atom::value, std::move(req));
    auto target = caf::actor_cast<caf::strong_actor_ptr>(master);
    auto is_answered = [&reply] { return reply->ready.load(std::memory_order_acquire); };
    if (options_.run_on_connection_thread) {
      CallerJobs caller(system_);
      target->enqueue(nullptr, caf::make_message_id(), std::move(message), &caller);
      caller.RunHeld(is_answered);
    } else {
      target->enqueue(nullptr, caf::make_message_id(), std::move(message), nullptr);
    }
    if (!Await(*reply, timeout_ms)) {
      result.status = stopping_.load(std::memory_order_acquire)
                          ? Cancelled(task_name_ + " stopped while the step ran")
                          : Internal("the master of session " + std::to_string(session_id) +
                                     " on " + task_name_ +
                                     " did not answer within the step's deadline plus 10 s");
      return result;
    }
    result.status = reply->status;
    result.outputs = std::move(reply->outputs);
    for (Tensor& t : result.outputs) {
      if (!t.IsOnDevice()) continue;
      auto host = ToHostTensor(t);
      if (!host.ok()) {
        result.status = host.status();
        result.outputs.clear();
        return result;
      }
      t = std::move(host).value();
    }
    RunMetadata& meta = reply->metadata;
    result.executed_nodes = std::move(meta.executed_nodes);
    result.step_stats = std::move(meta.step_stats);
    result.transfers = std::move(meta.transfers);
    result.transfer_stats = std::move(meta.transfer_stats);
    result.clock_offsets = std::move(meta.clock_offsets);
    return result;
  }

  Status FindMaster(uint64_t session_id, MasterActor* master) {
    std::shared_ptr<TaskServices> services;
    {
      std::lock_guard<std::mutex> lock(mu_);
      services = services_;
    }
    if (!services) return Unavailable(task_name_ + " is still starting");
    caf::strong_actor_ptr found;
    {
      std::lock_guard<std::mutex> lock(services->mu);
      auto it = services->masters.find(session_id);
      if (it != services->masters.end()) found = it->second.lock();
    }
    if (!found) {
      return FailedPrecondition("session " + std::to_string(session_id) + " is not open on " +
                                task_name_);
    }
    *master = caf::actor_cast<MasterActor>(found);
    return Status::OK();
  }

  // Polls, then parks, until the reply is ready; false when the server stops first
  // or the master misses the step's deadline (> 0) by 10 s (it enforces the deadline
  // itself: this only guards against a master that is gone).
  bool Await(StepReply& reply, int64_t timeout_ms) {
    if (SpinUntil([&] { return reply.ready.load(std::memory_order_acquire); },
                  std::chrono::microseconds(options_.spin_us))) {
      return true;
    }
    const auto give_up = timeout_ms > 0
                             ? Clock::now() + std::chrono::milliseconds(timeout_ms + 10000)
                             : Clock::time_point::max();
    std::unique_lock<std::mutex> lock(reply.mu);
    while (!reply.done) {
      if (stopping_.load(std::memory_order_acquire) || Clock::now() >= give_up) return false;
      reply.cv.wait_for(lock, kStopCheck);
    }
    return true;
  }

  caf::actor_system& system_;
  const std::string task_name_;
  const StepChannelOptions options_;
  std::mutex mu_;
  std::shared_ptr<TaskServices> services_;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> steps_{0};
  std::atomic<int64_t> in_process_steps_{0};
  std::atomic<int64_t> refused_{0};
  std::string endpoint_;  // the key in InProcess()
  std::unique_ptr<SocketAcceptor> acceptor_;  // last: its threads use the members above
};

}  // namespace

// Runs `step` on the server of this process at `endpoint`, if there is one.
bool RunOnServerInProcess(const std::string& endpoint, const std::string& target,
                          const RemoteStep& step, RemoteStepResult* result) {
  InProcessServers& in_process = InProcess();
  StepChannelServerImpl* server = nullptr;
  {
    std::lock_guard<std::mutex> lock(in_process.mu);
    auto it = in_process.by_endpoint.find(endpoint);
    if (it == in_process.by_endpoint.end()) return false;
    server = it->second;
    ++in_process.running[server];
  }
  bool stopped = false;
  *result = server->RunInProcess(step, &stopped);
  {
    std::lock_guard<std::mutex> lock(in_process.mu);
    --in_process.running[server];
  }
  in_process.left.notify_all();
  if (stopped) {
    // As a client across processes sees it: the task went away mid-step.
    *result = RemoteStepResult();
    result->status =
        Unavailable("lost the master at " + target + ": its task stopped while the step ran");
  }
  return true;
}

StatusOr<std::unique_ptr<StepChannelServer>> StepChannelServer::Listen(
    caf::actor_system& system, const std::string& host, const std::string& task_name,
    StepChannelOptions options) {
  auto server = std::make_unique<StepChannelServerImpl>(system, task_name, options);
  AF_RETURN_IF_ERROR(server->Listen(host));
  return std::unique_ptr<StepChannelServer>(std::move(server));
}

// ---------------------------------------------------------------------------------
// Client

struct StepChannelClient::Impl {
  caf::actor_system& system;
  std::string endpoint;
  std::string target;
  StepChannelOptions options;
  int64_t connect_ms;
  std::mutex mu;
  std::vector<int> idle;  // connected, no step in flight
  std::set<int> busy;     // a step in flight; CloseAll shuts these down
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

  // A connection for one step, or -1 (closed, or no connection: use CAF).
  int Take() {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (closed) return -1;
      if (!idle.empty()) {
        int fd = idle.back();
        idle.pop_back();
        busy.insert(fd);
        return fd;
      }
      if (Clock::now() < retry_at) return -1;
    }
    const auto connect_by = Clock::now() + std::chrono::milliseconds(connect_ms);
    int fd = ConnectWithin(endpoint, connect_by, -1, options.host_local ? kStepLocalName : "");
    if (fd >= 0 && !Welcomed(fd, connect_by)) {
      close(fd);
      fd = -1;
    }
    std::lock_guard<std::mutex> lock(mu);
    if (fd < 0) {
      retry_at = Clock::now() + kRetryAfter;
      return -1;
    }
    if (closed) {
      close(fd);
      return -1;
    }
    busy.insert(fd);
    return fd;
  }

  // Whether the server took the connection (its welcome frame came by `deadline`):
  // one it turned away (too many open) is closed unread, and a step sent on it could
  // not be told from one lost to a failing server.
  bool Welcomed(int fd, Clock::time_point deadline) {
    char first = 0;
    std::vector<char> payload;
    return ReadFull(fd, &first, 1, &deadline) &&
           ReadRestOfFrame(fd, first, kWelcomeFrame, 0, deadline, &payload) == FrameRead::kOk;
  }

  // Ends the step on `fd`: kept for the next step when `reuse` (its stream is at a
  // frame boundary), else closed.
  void Give(int fd, bool reuse) {
    std::lock_guard<std::mutex> lock(mu);
    busy.erase(fd);
    if (reuse && !closed) {
      idle.push_back(fd);
    } else {
      close(fd);
    }
  }

  bool Closed() {
    std::lock_guard<std::mutex> lock(mu);
    return closed;
  }

  // Waits until fd has a byte to read (true) or the step ends first (false, with
  // *status): the deadline passed, or the watch reports the server lost.
  bool AwaitAnswer(int fd, Clock::time_point deadline, const Watch& watch, Status* status) {
    auto readable = [fd] { return HasInput(fd); };
    // As an in-process session: a client whose last answer outlasted the poll parks
    // at once, leaving the core to the task that computes it.
    const int64_t last_wait_us = last_answer_us.load(std::memory_order_relaxed);
    const auto sent = Clock::now();
    if (SpinUntil(readable, std::chrono::microseconds(
                                last_wait_us <= options.spin_us ? options.spin_us : 0))) {
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
      if (WaitReady(fd, POLLIN, &slice_end)) return true;
      if (readable()) return true;  // an error or hang-up, which poll reports too
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
}

void StepChannelClient::CloseAll() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->closed = true;
  for (int fd : impl_->idle) close(fd);
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
  std::vector<char> frame;
  if (!EncodeFrame(c.system, kStepFrame, step, &frame)) return Outcome::kNotSent;
  if (frame.size() - kPrefixBytes > c.options.max_frame_bytes) return Outcome::kNotSent;
  const int fd = c.Take();
  if (fd < 0) return Outcome::kNotSent;
  const auto write_by =
      std::min(deadline, Clock::now() + std::chrono::milliseconds(c.options.write_timeout_ms));
  if (!WriteFrame(fd, frame, write_by)) {
    // Not whole: the server never runs it. A connection the server closed while it
    // was idle (a restarted server) ends here too.
    c.Give(fd, false);
    return Outcome::kNotSent;
  }
  Status ended;
  const auto sent_at = Clock::now();
  const bool answered = c.AwaitAnswer(fd, deadline, watch, &ended);
  c.last_answer_us.store(
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - sent_at).count(),
      std::memory_order_relaxed);
  if (!answered) {
    c.Give(fd, false);  // its answer may still come: the stream is no longer usable
    *result = RemoteStepResult();
    result->status = c.Closed() ? Cancelled("the session ended while the step ran") : ended;
    return Outcome::kAnswered;
  }
  std::vector<char> payload;
  char first = 0;
  FrameRead read = FrameRead::kClosed;
  const auto read_by = Clock::now() + std::chrono::milliseconds(c.options.frame_timeout_ms);
  if (ReadFull(fd, &first, 1, &read_by)) {
    read = ReadRestOfFrame(fd, first, kAnswerFrame, c.options.max_frame_bytes, read_by, &payload);
  }
  *result = RemoteStepResult();
  if (read == FrameRead::kOk && DecodePayload(c.system, payload, result)) {
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
