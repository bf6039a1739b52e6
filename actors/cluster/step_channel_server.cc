// StepChannelServer (actors/cluster/step_channel.h): a SocketAcceptor whose connection
// threads hand each step to its session's master, and the in-process hand-off.
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "actors/scheduler/caller_jobs.h"
#include "actors/protocol/master_protocol.h"
#include "actors/transport/socket_acceptor.h"
#include "actors/scheduler/spinning_scheduler.h"
#include "actors/cluster/step_channel.h"
#include "actors/transport/shared_segments.h"
#include "actors/transport/step_frame.h"
#include "actors/transport/step_link.h"
#include "actors/transport/step_mailbox.h"
#include "actors/cluster/task_actors.h"
#include "actors/runtime/task_services.h"
#include "actors/protocol/wire.h"
#include "kernels/gpu_runtime.h"

namespace actorflow {
namespace {

using step_internal::Clock;
using step_internal::DecodePayload;
using step_internal::EncodeFrame;
using step_internal::FrameRead;
using step_internal::kAnswerFrame;
using step_internal::kStepFrame;
using step_internal::kStepLocalName;
using step_internal::kStepPrefixBytes;
using step_internal::kWelcomeFrame;
using step_internal::PutPrefix;
using step_internal::StepLink;
using step_internal::StepMailbox;

// A connection's thread checks this often whether its server is stopping while the
// step it waits for runs on.
constexpr auto kStopCheck = std::chrono::milliseconds(100);
// The most step bytes a connection keeps between its client's steps.
constexpr size_t kKeptStepBytes = size_t{64} << 20;

// The step connections of this process whose clients are stepping: serving a step,
// or waiting for the next one for less than kActiveGap.
constexpr auto kActiveGap = std::chrono::milliseconds(1);
std::atomic<int>& ActiveConnections() {
  static std::atomic<int> count{0};
  return count;
}

class StepChannelServerImpl;

}  // namespace

namespace step_internal {

// A server as the clients of this process reach it. Steps pin it while they run:
// its stop marks it stopped, then waits until no step runs on it. The pin is two
// atomics of this server's own, so in-process sessions on different tasks share
// no lock or cache line per step.
struct InProcessServer {
  StepChannelServerImpl* server = nullptr;  // valid while pinned and not stopped
  std::atomic<bool> stopped{false};
  std::atomic<int> running{0};
  std::mutex mu;                 // guards the stop's wait
  std::condition_variable left;  // a step ended after the stop began

  // True when the step may run (then Unpin after it).
  bool Pin() {
    running.fetch_add(1, std::memory_order_seq_cst);
    if (!stopped.load(std::memory_order_seq_cst)) return true;
    Unpin();
    return false;
  }
  void Unpin() {
    // seq_cst pairs with Stop: either this sees `stopped` and wakes it, or Stop
    // sees this step's count gone.
    if (running.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
        stopped.load(std::memory_order_seq_cst)) {
      std::lock_guard<std::mutex> lock(mu);
      left.notify_all();
    }
  }
  // Returns once no step runs on the server and none will start.
  void Stop() {
    stopped.store(true, std::memory_order_seq_cst);
    std::unique_lock<std::mutex> lock(mu);
    left.wait(lock, [&] { return running.load(std::memory_order_seq_cst) == 0; });
  }
};

}  // namespace step_internal

namespace {

using step_internal::InProcessServer;

// The servers of this process by endpoint, for the clients of this process: a step
// for one of them needs no socket (StepChannelClient::Run). A client looks its
// server up once and keeps it (InProcessServerCache). A server leaves before it
// stops, once the steps its clients are running have returned.
struct InProcessServers {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<InProcessServer>> by_endpoint;
};
InProcessServers& InProcess() {
  static InProcessServers* servers = new InProcessServers;  // never destroyed
  return *servers;
}

std::shared_ptr<InProcessServer> FindInProcess(const std::string& endpoint) {
  InProcessServers& in_process = InProcess();
  std::lock_guard<std::mutex> lock(in_process.mu);
  auto it = in_process.by_endpoint.find(endpoint);
  return it == in_process.by_endpoint.end() ? nullptr : it->second;
}

class StepChannelServerImpl : public StepChannelServer {
 public:
  StepChannelServerImpl(caf::actor_system& system, std::string task_name,
                        StepChannelOptions options)
      : system_(system), task_name_(std::move(task_name)), options_(options) {}

  ~StepChannelServerImpl() override {
    stopping_.store(true, std::memory_order_release);
    if (in_process_ != nullptr) {
      {
        InProcessServers& in_process = InProcess();
        std::lock_guard<std::mutex> lock(in_process.mu);
        auto it = in_process.by_endpoint.find(endpoint_);
        if (it != in_process.by_endpoint.end() && it->second == in_process_) {
          in_process.by_endpoint.erase(it);
        }
      }
      // Steps running here see stopping_ in their Await within kStopCheck.
      in_process_->Stop();
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
    in_process_ = std::make_shared<InProcessServer>();
    in_process_->server = this;
    InProcessServers& in_process = InProcess();
    std::lock_guard<std::mutex> lock(in_process.mu);
    in_process.by_endpoint[endpoint_] = in_process_;
    return Status::OK();
  }

  // A step of a client in this process, run on its thread. *stopped: the server
  // stopped while it ran (RunOnServerInProcess then answers Unavailable).
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
  int64_t shared_memory_connections() const override {
    return shared_memory_connections_.load(std::memory_order_relaxed);
  }

 private:
  // One step after another until the client closes the connection, a frame is
  // malformed, or the server stops.
  void ServeConnection(int fd) {
    // Counted from here on, except while its client pauses.
    ActiveConnections().fetch_add(1, std::memory_order_relaxed);
    struct Uncount {
      ~Uncount() { ActiveConnections().fetch_sub(1, std::memory_order_relaxed); }
    } uncount;
    // A host-local client gets the connection's mailbox with the welcome (its file
    // passed, the slots' size as the payload) and both ends use it from then on.
    std::unique_ptr<StepMailbox> mailbox;
    if (options_.shared_memory && bulk_internal::IsUnixSocket(fd)) mailbox = StepMailbox::Create();
    std::vector<char> in;
    GatheredBytes out;  // the welcome, then each answer (its tensors' bytes stay in `result`)
    out.head.assign(kStepPrefixBytes, '\0');
    const uint64_t slot_bytes = mailbox ? mailbox->slot_bytes() : 0;
    PutPrefix(kWelcomeFrame, mailbox ? sizeof(slot_bytes) : 0, out.head.data());
    if (mailbox) {
      const char* size = reinterpret_cast<const char*>(&slot_bytes);
      out.head.insert(out.head.end(), size, size + sizeof(slot_bytes));
    }
    if (!bulk_internal::WriteFull(
            fd, out.Pieces(), Clock::now() + std::chrono::milliseconds(options_.write_timeout_ms),
            -1, mailbox ? mailbox->fd() : -1)) {
      return;
    }
    if (mailbox) shared_memory_connections_.fetch_add(1, std::memory_order_relaxed);
    // A socket poll reads the prefix alone (no more: a client may send its next frame
    // right behind this one), so a frame that is there takes two reads. With a
    // mailbox a poll reads memory.
    StepLink link(fd, std::move(mailbox), kStepPrefixBytes);
    for (;;) {
      // A client's next step often follows its answer at once: poll for it a while,
      // but only while this process serves no more active connections than half its
      // cores. Each has a client thread that computes between its steps (often on
      // these cores: an in-process cluster's clients are in this very process), and
      // a thread polling for its next step would take the core it computes on.
      bool arrived = false;
      if (ActiveConnections().load(std::memory_order_relaxed) * 2 <= PollingCores()) {
        arrived = SpinUntil([&link] { return link.Poll(); },
                            std::chrono::microseconds(options_.spin_us), link.poll_cost());
      }
      if (!arrived && !AwaitInput(link)) return;
      const auto deadline = Clock::now() + std::chrono::milliseconds(options_.frame_timeout_ms);
      FrameRead read = link.Finish(kStepFrame, options_.max_frame_bytes, deadline, &in);
      RemoteStep step;
      if (read == FrameRead::kOk && !DecodePayload(system_, in, &step)) {
        read = FrameRead::kMalformed;
      }
      // Kept for the next step (its pages stay faulted in), but not a rare huge one.
      if (in.capacity() > kKeptStepBytes) std::vector<char>().swap(in);
      if (read != FrameRead::kOk) {
        if (read == FrameRead::kMalformed) refused_.fetch_add(1, std::memory_order_relaxed);
        return;  // a client that went away mid-frame is not counted
      }
      RemoteStepResult result = RunStep(std::move(step));
      // A stopping task answers nothing: its clients see the connection end, as they
      // would see its process end.
      if (stopping_.load(std::memory_order_acquire)) return;
      if (!EncodeFrame(system_, kAnswerFrame, result, &out)) {
        result = RemoteStepResult();
        result.status = Internal(task_name_ + " could not serialize the step's answer");
        EncodeFrame(system_, kAnswerFrame, result, &out);
      }
      // Counted before it is written: a client that has its answer sees it counted.
      steps_.fetch_add(1, std::memory_order_relaxed);
      const auto write_by = Clock::now() + std::chrono::milliseconds(options_.write_timeout_ms);
      if (!link.Send(out, write_by)) return;
      out.blocks.clear();  // they point into this step's result
    }
  }

  // Waits for the next frame, however long its client pauses: false when the wait
  // failed. Active until its client pauses longer than kActiveGap (a frame that
  // came just after the gap still counts it active: the park's last poll takes it);
  // then the wait is open-ended (an idle client, not counted active) and Stop shuts
  // the socket down, which ends the wait as the connection's end.
  bool AwaitInput(StepLink& link) {
    auto active_until = Clock::now() + kActiveGap;
    if (link.Park(&active_until)) return true;
    ActiveConnections().fetch_sub(1, std::memory_order_relaxed);
    const bool ready = link.Park(nullptr);
    ActiveConnections().fetch_add(1, std::memory_order_relaxed);
    return ready;
  }

  // The step as the front would pass it on (actors/cluster/task_actors.cc), but sent to the
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
    result = MakeRemoteStepResult(reply->status, std::move(reply->outputs),
                                  std::move(reply->metadata));
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
  std::atomic<int64_t> shared_memory_connections_{0};
  std::string endpoint_;  // the key in InProcess()
  std::shared_ptr<InProcessServer> in_process_;  // this server there, once listening
  std::unique_ptr<SocketAcceptor> acceptor_;  // last: its threads use the members above
};

}  // namespace

namespace step_internal {

bool RunOnServerInProcess(const std::string& endpoint, const std::string& target,
                          const RemoteStep& step, RemoteStepResult* result,
                          InProcessServerCache* cache) {
  std::shared_ptr<InProcessServer> entry = cache->Get();
  if (entry == nullptr || !entry->Pin()) {
    // The first step, or the server kept is stopping: a server listening there now.
    entry = FindInProcess(endpoint);
    cache->Set(entry);
    if (entry == nullptr || !entry->Pin()) return false;
  }
  bool stopped = false;
  *result = entry->server->RunInProcess(step, &stopped);
  entry->Unpin();
  if (stopped) {
    // As a client across processes sees it: the task went away mid-step.
    *result = RemoteStepResult();
    result->status =
        Unavailable("lost the master at " + target + ": its task stopped while the step ran");
  }
  return true;
}

}  // namespace step_internal

StatusOr<std::unique_ptr<StepChannelServer>> StepChannelServer::Listen(
    caf::actor_system& system, const std::string& host, const std::string& task_name,
    StepChannelOptions options) {
  auto server = std::make_unique<StepChannelServerImpl>(system, task_name, options);
  AF_RETURN_IF_ERROR(server->Listen(host));
  return std::unique_ptr<StepChannelServer>(std::move(server));
}

}  // namespace actorflow
