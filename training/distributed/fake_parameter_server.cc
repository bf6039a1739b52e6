#include "training/distributed/fake_parameter_server.h"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "kernels/ps/shard_config.h"
#include "kernels/ps/shard_optimizer.h"
#include "kernels/ps/shard_results.h"
#include "kernels/ps/shard_worker_protocol.h"

namespace actorflow {
namespace {

constexpr int64_t kNoDeadline = ParameterShardState::kNoDeadline;
// As the real client: a call gives up this long after its deadline, by which the
// shard has answered it (DeadlineExceeded, saying what it waited for).
constexpr int64_t kGiveUpAfterMs = 250;

}  // namespace

// A worker's connection: the worker's side of the protocol is the real one
// (kernels/ps/shard_worker_protocol.h, over the one shard); the server plays the
// shard.
class FakeParameterServer::Client : public ParameterClient {
 public:
  explicit Client(std::shared_ptr<FakeParameterServer> server)
      : server_(std::move(server)), protocol_(WorkerOptions(server_->options_)) {}
  ~Client() override {
    if (protocol_.worker() >= 0) server_->Disconnect(this, protocol_.worker());
  }

  Status Register(int worker) override {
    const int total = server_->options_.total_replicas;
    if (worker < 0 || worker >= total) {
      return InvalidArgument("worker " + std::to_string(worker) + " is not one of the " +
                             std::to_string(total) + " workers (total_replicas)");
    }
    if (protocol_.worker() >= 0 && protocol_.worker() != worker) {
      return FailedPrecondition("this client is already registered as worker " +
                                std::to_string(protocol_.worker()) + "; use one client per worker");
    }
    AF_RETURN_IF_ERROR(server_->Register(this, worker));
    protocol_.JoinedAs(worker);
    return Status::OK();
  }
  Status Initialize(const std::map<std::string, Tensor>& initial_values) override {
    AF_ASSIGN_OR_RETURN(InitializationPlan plan, protocol_.PlanInitialization(initial_values));
    AF_RETURN_IF_ERROR(server_->InitializeShard(plan.names[0], plan.values[0]));
    protocol_.Initialized(plan);
    return Status::OK();
  }
  StatusOr<ParameterSnapshot> Pull(int64_t timeout_ms) override {
    for (PullRound round = protocol_.StartPull(); !round.shards.empty();
         round = protocol_.NextPullRound()) {
      AF_ASSIGN_OR_RETURN(ShardPullReply reply, server_->PullShard(round.min_version, timeout_ms));
      AF_RETURN_IF_ERROR(protocol_.AddPullReply(0, reply));
    }
    return protocol_.snapshot();
  }
  StatusOr<PushResult> Push(const ParameterSnapshot& base,
                            const std::map<std::string, Tensor>& gradients,
                            int64_t timeout_ms) override {
    return PushImpl(base, gradients, timeout_ms, nullptr);
  }
  StatusOr<PushResult> PushAndPull(const ParameterSnapshot& base,
                                   const std::map<std::string, Tensor>& gradients,
                                   int64_t timeout_ms, ParameterSnapshot* next) override {
    AF_ASSIGN_OR_RETURN(PushResult pushed, PushImpl(base, gradients, timeout_ms, next));
    if (next->shard_versions.empty()) {
      // The reply carried no values (the push failed): pull as usual.
      AF_ASSIGN_OR_RETURN(*next, Pull(timeout_ms));
    }
    return pushed;
  }
  StatusOr<ParameterStats> Stats(int64_t) override { return server_->Stats(); }
  StatusOr<ParameterSnapshot> Snapshot(int64_t version, int64_t timeout_ms) override {
    return server_->Snapshot(version, timeout_ms);
  }
  Status Restore(const std::map<std::string, Tensor>& values, int64_t version,
                 int64_t) override {
    return server_->Restore(values, version);
  }
  Status AdvanceGlobalStep(int64_t at_least, int64_t) override {
    return server_->AdvanceGlobalStep(at_least);
  }

 private:
  // One shard holds every variable (ParameterServerOptions names no ps tasks).
  static ShardWorkerOptions WorkerOptions(const ParameterServerOptions& options) {
    ShardWorkerOptions worker;
    worker.num_shards = 1;
    worker.mode = options.mode;
    worker.catch_up = SyncCatchUp::kPullShardsBehind;
    worker.assign = [](const std::map<std::string, int64_t>& bytes,
                       int) -> StatusOr<std::map<std::string, int>> {
      std::map<std::string, int> shard_of;
      for (const auto& [name, size] : bytes) shard_of[name] = 0;
      return shard_of;
    };
    return worker;
  }

  // `next` (push-and-pull) becomes the snapshot the reply carries, or stays empty.
  StatusOr<PushResult> PushImpl(const ParameterSnapshot& base,
                                const std::map<std::string, Tensor>& gradients,
                                int64_t timeout_ms, ParameterSnapshot* next) {
    AF_ASSIGN_OR_RETURN(PushPlan plan, protocol_.PlanPush(base, gradients, next != nullptr));
    std::vector<ShardPushReply> replies;
    for (ShardPushArgs& args : plan.args) {
      AF_ASSIGN_OR_RETURN(ShardPushReply reply, server_->PushShard(std::move(args), timeout_ms));
      replies.push_back(std::move(reply));
    }
    AF_ASSIGN_OR_RETURN(PushResult result, ShardWorkerProtocol::PushResultOf(replies));
    if (next != nullptr) *next = protocol_.SnapshotFromPushReplies(base, plan, replies);
    return result;
  }

  friend class FakeParameterServer;
  std::shared_ptr<FakeParameterServer> server_;
  ShardWorkerProtocol protocol_;  // the worker's side; numbers its pushes
};

std::shared_ptr<FakeParameterServer> FakeParameterServer::Create(
    const ParameterServerOptions& options) {
  return std::shared_ptr<FakeParameterServer>(new FakeParameterServer(
      options, ParameterShardState::Create("fake ps shard 'parameters/model'",
                                           ShardConfigFrom(options))));
}

FakeParameterServer::FakeParameterServer(const ParameterServerOptions& options,
                                         StatusOr<std::unique_ptr<ParameterShardState>> shard)
    : options_(options), config_status_(shard.status()) {
  if (shard.ok()) shard_ = std::move(shard).value();
}

std::unique_ptr<ParameterClient> FakeParameterServer::NewClient() {
  return std::make_unique<Client>(shared_from_this());
}

int64_t FakeParameterServer::pushes_received() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pushes_received_;
}

int64_t FakeParameterServer::NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t FakeParameterServer::DeadlineFor(int64_t timeout_ms) {
  return timeout_ms > 0 ? NowMs() + timeout_ms : kNoDeadline;
}

void FakeParameterServer::Deliver(ParameterShardState::Replies* out) {
  const bool any = !out->pulls.empty() || !out->pushes.empty();
  for (ShardPullReply& r : out->pulls) pull_replies_[r.id] = std::move(r);
  for (ShardPushReply& r : out->pushes) {
    if (values_wanted_.erase(r.id) > 0 && r.status.ok()) shard_->FillValues(&r);
    push_replies_[r.id] = std::move(r);
  }
  *out = {};
  if (any) answered_.notify_all();
}

template <typename Reply>
Reply FakeParameterServer::Await(Lock& lock, std::map<RequestId, Reply>* slots, RequestId id,
                                 int64_t deadline) {
  const int64_t give_up = deadline == kNoDeadline ? kNoDeadline : deadline + kGiveUpAfterMs;
  for (;;) {
    auto answer = slots->find(id);
    if (answer != slots->end()) {
      Reply reply = std::move(answer->second);
      slots->erase(answer);
      return reply;
    }
    if (NowMs() >= give_up) {
      shard_->Cancel(id);
      values_wanted_.erase(id);
      Reply reply;
      reply.id = id;
      reply.status = DeadlineExceeded(shard_->name() + " did not answer within " +
                                      std::to_string(kGiveUpAfterMs) +
                                      " ms of the request's deadline");
      return reply;
    }
    // The sweep of the actor: by the earliest deadline of every parked request.
    const int64_t wake = std::min(shard_->NextDeadline(), give_up);
    if (wake == kNoDeadline) {
      answered_.wait(lock);
    } else {
      answered_.wait_until(
          lock, std::chrono::steady_clock::time_point(std::chrono::milliseconds(wake)));
    }
    const int64_t now = NowMs();
    if (shard_->NextDeadline() <= now) {
      ParameterShardState::Replies out;
      shard_->Expire(now, &out);
      Deliver(&out);
    }
  }
}

Status FakeParameterServer::Register(const Client* client, int worker) {
  if (!shard_) return config_status_;
  std::lock_guard<std::mutex> lock(mu_);
  auto claimed = client_of_.find(worker);
  if (claimed != client_of_.end() && claimed->second != client && shard_->IsLiveMember(worker)) {
    // Elastic membership admits one client per task: the first one keeps it.
    return AlreadyExists(shard_->name() + ": worker " + std::to_string(worker) +
                         " is already a live member of this elastic training; a second "
                         "client claiming task " + std::to_string(worker) + " is refused");
  }
  ParameterShardState::Replies out;
  Status status = shard_->Join(worker, &out);
  if (status.ok()) client_of_[worker] = client;
  Deliver(&out);
  return status;
}

void FakeParameterServer::Disconnect(const Client* client, int worker) {
  if (!shard_) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto claimed = client_of_.find(worker);
  if (claimed == client_of_.end() || claimed->second != client) return;  // registered again
  client_of_.erase(claimed);
  ParameterShardState::Replies out;
  shard_->WorkerLost(worker, &out, "its client was destroyed");
  Deliver(&out);
}

Status FakeParameterServer::InitializeShard(const std::vector<std::string>& names,
                                            const std::vector<Tensor>& values) {
  if (!shard_) return config_status_;
  std::lock_guard<std::mutex> lock(mu_);
  ParameterShardState::Replies out;
  Status status = shard_->Initialize(names, values, &out);
  Deliver(&out);
  return status;
}

StatusOr<ShardPullReply> FakeParameterServer::PullShard(int64_t min_version, int64_t timeout_ms) {
  if (!shard_) return config_status_;
  Lock lock(mu_);
  const RequestId id = next_id_++;
  const int64_t deadline = DeadlineFor(timeout_ms);
  ParameterShardState::Replies out;
  shard_->Pull(id, min_version, deadline, &out);
  Deliver(&out);
  return Await(lock, &pull_replies_, id, deadline);
}

StatusOr<ShardPushReply> FakeParameterServer::PushShard(ShardPushArgs push, int64_t timeout_ms) {
  if (!shard_) return config_status_;
  Lock lock(mu_);
  ++pushes_received_;
  const RequestId id = next_id_++;
  const int64_t deadline = DeadlineFor(timeout_ms);
  if (push.return_values) values_wanted_.insert(id);
  ParameterShardState::Replies out;
  shard_->Push(id, push, deadline, &out);
  Deliver(&out);
  return Await(lock, &push_replies_, id, deadline);
}

StatusOr<ParameterStats> FakeParameterServer::Stats() {
  if (!shard_) return config_status_;
  std::lock_guard<std::mutex> lock(mu_);
  return StatsOfShards({shard_->GetStats()});
}

StatusOr<ParameterSnapshot> FakeParameterServer::Snapshot(int64_t version, int64_t timeout_ms) {
  if (!shard_) return config_status_;
  const bool sync = options_.mode == UpdateMode::kSync;
  if (!sync && version >= 0) {
    return InvalidArgument("a snapshot at a chosen version (" + std::to_string(version) +
                           ") needs sync mode: async cuts are taken where the shards are");
  }
  Lock lock(mu_);
  ParameterShardState::Replies out;
  if (!sync) {
    shard_->Hold(true, &out);  // new pushes wait, unapplied, until the cut is read
    Deliver(&out);
  }
  StatusOr<ParameterSnapshot> cut = SnapshotAtLocked(lock, version, timeout_ms);
  if (!sync) {
    shard_->Hold(false, &out);  // applies the held pushes in order
    Deliver(&out);
  }
  return cut;
}

StatusOr<ParameterSnapshot> FakeParameterServer::SnapshotAtLocked(Lock& lock, int64_t version,
                                                                  int64_t timeout_ms) {
  int64_t at = version;
  if (version < 0) {
    const ShardStats s = shard_->GetStats();
    if (!s.initialized) {
      return FailedPrecondition(shard_->name() + " holds no initialized variables: nothing to " +
                                "snapshot (restore or initialize it first)");
    }
    at = s.version;
    if (options_.mode == UpdateMode::kSync && s.variables == 0) at = 0;
  }
  const RequestId id = next_id_++;
  const int64_t deadline = DeadlineFor(timeout_ms);
  ParameterShardState::Replies out;
  shard_->SnapshotAt(id, at, deadline, &out);
  Deliver(&out);
  ShardPullReply r = Await(lock, &pull_replies_, id, deadline);
  AF_RETURN_IF_ERROR(r.status);
  ParameterSnapshot snapshot;
  snapshot.shard_versions = {r.version};
  if (!r.names.empty()) snapshot.global_step = r.version;
  for (size_t i = 0; i < r.names.size() && i < r.values.size(); ++i) {
    snapshot.values[r.names[i]] = r.values[i];
  }
  for (size_t i = 0; i < r.slot_names.size() && i < r.slot_values.size(); ++i) {
    snapshot.slots[r.slot_names[i]] = r.slot_values[i];
  }
  return snapshot;
}

Status FakeParameterServer::Restore(const std::map<std::string, Tensor>& values,
                                    int64_t version) {
  if (!shard_) return config_status_;
  std::map<std::string, Tensor> variables;
  std::map<std::string, std::string> slot_of;  // slot name -> variable
  ShardOptimizer::SplitVariablesAndSlots(values, options_.optimizer, &variables, &slot_of);
  std::vector<std::string> names, slot_names;
  std::vector<Tensor> tensors, slot_values;
  for (const auto& [name, value] : variables) {
    names.push_back(name);
    tensors.push_back(value);
  }
  for (const auto& [slot, var] : slot_of) {
    slot_names.push_back(slot);
    slot_values.push_back(values.at(slot));
  }
  std::lock_guard<std::mutex> lock(mu_);
  ParameterShardState::Replies out;
  Status status = shard_->Restore(names, tensors, slot_names, slot_values, version, &out);
  Deliver(&out);
  return status;
}

Status FakeParameterServer::AdvanceGlobalStep(int64_t at_least) {
  if (!shard_) return config_status_;
  std::lock_guard<std::mutex> lock(mu_);
  ParameterShardState::Replies out;
  shard_->RaiseVersion(at_least, &out);
  Deliver(&out);
  return Status::OK();
}

}  // namespace actorflow
