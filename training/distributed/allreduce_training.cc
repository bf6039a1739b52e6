#include "training/distributed/allreduce_training.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "graph/ops.h"
#include "graph/steady_clock.h"
#include "training/data/data_shard.h"
#include "training/distributed/allreduce_membership.h"
#include "training/distributed/allreduce_optimizer.h"
#include "training/distributed/worker_model.h"
#include "training/estimators/dnn_model.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

using End = AllReduceMembership::End;

// One worker's replica in one membership epoch: its graph and session.
struct Replica {
  AllReduceReplicaGraph graph;
  std::unique_ptr<Session> session;
  RunOptions run;
};

Status Run(Replica& r, const FeedList& feeds, const std::vector<std::string>& fetches,
           const std::vector<std::string>& targets, std::vector<Tensor>* out) {
  return r.session->Run(r.run, feeds, fetches, targets, out, nullptr);
}

Status BuildReplica(const AllReduceTrainingOptions& options, int w,
                    const AllReduceMembership::Epoch& epoch, Replica* replica) {
  AF_ASSIGN_OR_RETURN(replica->graph, BuildAllReduceReplicaGraph(options, w, epoch.members,
                                                                 epoch.number, epoch.root));
  AF_ASSIGN_OR_RETURN(replica->session, options.session_factories[w](replica->graph.graph.get()));
  replica->run.timeout_in_ms = options.timeout_ms;
  return Status::OK();
}

// The global step; initializes the variables first where they are not (a fresh
// task), never where they live (a survivor's task keeps its values).
StatusOr<int64_t> InitializedGlobalStep(Replica& r) {
  std::vector<Tensor> out;
  Status read = Run(r, {}, {"global_step"}, {}, &out);
  if (read.code() == Code::kFailedPrecondition) {
    AF_RETURN_IF_ERROR(Run(r, {}, {}, {"init"}, nullptr));
    read = Run(r, {}, {"global_step"}, {}, &out);
  }
  AF_RETURN_IF_ERROR(read);
  return out[0].data<int64_t>()[0];
}

// Whether worker `w`'s own task answers a trivial step.
bool TaskAnswers(const AllReduceTrainingOptions& options, int w) {
  Scope root = Scope::NewRootScope();
  Identity(root.WithDevice(options.devices[w]).WithOpName("probe"), Const(root, 1.0f));
  auto session = options.session_factories[w](root.graph());
  if (!session.ok()) return false;
  RunOptions quick;
  quick.timeout_in_ms = 2000;
  return (*session)->Run(quick, {}, {"probe"}, {}, nullptr, nullptr).ok();
}

struct WorkerRun {
  const AllReduceTrainingOptions& options;
  const LabeledData& train;
  AllReduceMembership& membership;
  std::mutex& progress_mu;
  int64_t planned;  // global steps of the whole run
};

// Worker `w`'s part of one epoch: how it left it, and the error that made it leave.
End RunEpoch(WorkerRun& run, int w, const AllReduceMembership::Epoch& epoch, Replica* replica,
             AllReduceWorkerReport* report, Status* error) {
  const AllReduceTrainingOptions& options = run.options;
  const int rank = epoch.Rank(w);
  if (rank == epoch.root && epoch.number > 0 && options.log) {
    std::string members;
    for (int m : epoch.members) members += (members.empty() ? "" : ", ") + std::to_string(m);
    options.log("membership epoch " + std::to_string(epoch.number) + ": workers " + members);
  }
  auto failed = [&](const Status& s) {
    *error = s.WithContext("worker " + std::to_string(w));
    return TaskAnswers(options, w) ? End::kFailed : End::kSelfLost;
  };
  *replica = Replica();
  if (Status s = BuildReplica(options, w, epoch, replica); !s.ok()) return failed(s);
  if (Status s = InitializedGlobalStep(*replica).status(); !s.ok()) return failed(s);
  if (Status s = Run(*replica, {}, {}, {"broadcast"}, nullptr); !s.ok()) return failed(s);
  StatusOr<int64_t> start = InitializedGlobalStep(*replica);
  if (!start.ok()) return failed(start.status());
  ShardOptions shard;
  shard.batch_size = options.batch_size;
  shard.seed = options.seed;
  shard.worker = rank;
  shard.num_workers = static_cast<int>(epoch.members.size());
  StatusOr<ShardedBatches> batches = ShardedBatches::Create(run.train.features, run.train.labels, shard);
  if (!batches.ok()) return failed(batches.status());
  batches->Skip(*start % batches->steps_per_epoch());
  Batch batch;
  for (int64_t step = *start + 1; step <= run.planned; ++step) {
    if (rank == epoch.root) run.membership.EndForJoiners(epoch.number);
    if (!run.membership.MayStart(w, epoch.number, step)) return End::kStopped;
    batches->Next(&batch);
    std::vector<Tensor> out;
    Status s = Run(*replica, {{kDNNFeatures, batch.features}, {kDNNLabels, batch.labels}},
                   {kDNNLoss}, {"train"}, &out);
    if (!s.ok()) return failed(s.WithContext("step " + std::to_string(step)));
    ++report->steps;
    if (options.progress) {
      std::lock_guard<std::mutex> lock(run.progress_mu);
      options.progress(w, step, run.planned, out[0].data<float>()[0]);
    }
  }
  return End::kFinished;
}

// Worker `w`'s whole run: epoch after epoch while it is a member; when its own task
// is lost (elastic), it waits for the task to answer and joins again.
Status RunAllReduceWorker(WorkerRun& run, int w, Replica* replica, AllReduceWorkerReport* report) {
  const AllReduceTrainingOptions& options = run.options;
  const auto start = std::chrono::steady_clock::now();
  const int64_t wait_ms = std::max<int64_t>(options.timeout_ms, options.rejoin_timeout_ms);
  int64_t after = -1;
  while (true) {
    StatusOr<AllReduceMembership::Epoch> epoch = run.membership.WaitForEpoch(w, after, wait_ms);
    if (epoch.status().code() == Code::kOutOfRange) break;  // the run ended without it
    AF_RETURN_IF_ERROR(epoch.status());
    after = epoch->number;
    Status error;
    const End how = RunEpoch(run, w, *epoch, replica, report, &error);
    run.membership.ReportEnd(w, epoch->number, how);
    if (how == End::kFinished) break;
    if (how == End::kStopped) continue;
    if (!options.elastic) return error;
    if (options.log) options.log("worker " + std::to_string(w) + " left epoch " +
                                 std::to_string(epoch->number) + ": " + error.ToString());
    if (how != End::kSelfLost) continue;
    *replica = Replica();
    const auto lost_at = std::chrono::steady_clock::now();
    while (!TaskAnswers(options, w)) {
      if (SecondsSince(lost_at) * 1000 > options.rejoin_timeout_ms) return error;
      std::this_thread::sleep_for(std::chrono::milliseconds(options.rejoin_poll_ms));
    }
    if (options.log) {
      options.log("worker " + std::to_string(w) +
                  " answers again: it joins at the next membership epoch");
    }
    run.membership.RequestJoin(w);
  }
  report->seconds = SecondsSince(start);
  return Status::OK();
}

std::string WeightsHash(const std::vector<std::string>& names, const std::vector<Tensor>& values) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  auto mix = [&hash](const unsigned char* bytes, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      hash ^= bytes[i];
      hash *= 0x100000001b3ULL;
    }
  };
  for (size_t i = 0; i < names.size(); ++i) {
    mix(reinterpret_cast<const unsigned char*>(names[i].data()), names[i].size());
    mix(static_cast<const unsigned char*>(values[i].raw_data()), values[i].TotalBytes());
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

bool SameBytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
}

StatusOr<EvalResult> EvaluateReplica(Replica& r, const LabeledData& test) {
  AF_ASSIGN_OR_RETURN(EvalResult result,
                      EvaluateInBatches(test.features, test.labels, 256,
                                        [&r](const FeedList& feeds, std::vector<Tensor>* out) {
                                          return Run(r, feeds, {kDNNExampleLoss, kDNNClassIds},
                                                     {}, out);
                                        }));
  std::vector<Tensor> step;
  AF_RETURN_IF_ERROR(Run(r, {}, {"global_step"}, {}, &step));
  result.global_step = step[0].data<int64_t>()[0];
  return result;
}

}  // namespace

StatusOr<AllReduceReplicaGraph> BuildAllReduceReplicaGraph(const AllReduceTrainingOptions& options,
                                                           int worker,
                                                           const std::vector<int>& members,
                                                           int64_t epoch, int root) {
  Scope scope = Scope::NewRootScope();
  const Scope s = scope.WithDevice(options.devices[worker]);
  AllReduceReplicaGraph replica;
  AF_ASSIGN_OR_RETURN(replica.model,
                      BuildDNNModel(s, options.spec, options.seed, {}, {}, worker));
  AF_ASSIGN_OR_RETURN(Output step, CreateGlobalStep(s));
  AF_ASSIGN_OR_RETURN(std::unique_ptr<Optimizer> inner,
                      MakeOptimizer(options.optimizer, options.learning_rate));
  AllReduceOptions all_reduce;
  // A new epoch's group has a key of its own: its executions count from 0 on every
  // member, whatever the last epoch left behind.
  all_reduce.group.key = "allreduce_training/epoch" + std::to_string(epoch);
  for (int m : members) all_reduce.group.devices.push_back(options.devices[m]);
  all_reduce.bucket_bytes = options.bucket_bytes;
  all_reduce.algorithm = options.algorithm;
  AllReduceOptimizer optimizer(std::move(inner), all_reduce);
  AF_RETURN_IF_ERROR(optimizer.Minimize(s.WithOpName("train"), replica.model.loss, step).status());
  AF_RETURN_IF_ERROR(
      BroadcastGlobalVariables(s.WithOpName("broadcast"), all_reduce.group, root).status());
  GlobalVariablesInitializer(scope.WithOpName("init"));
  AF_RETURN_IF_ERROR(scope.status());
  replica.buckets = static_cast<int64_t>(optimizer.buckets().size());
  for (const Output& v : replica.model.variables) replica.variables.push_back(v.node->name());
  replica.graph = scope.graph_ptr();
  return replica;
}

StatusOr<AllReduceTrainingResult> TrainWithAllReduce(const AllReduceTrainingOptions& options,
                                                     const LabeledData& train,
                                                     const LabeledData& test) {
  const int workers = static_cast<int>(options.devices.size());
  if (workers == 0) return InvalidArgument("all-reduce training needs at least one worker device");
  if (options.session_factories.size() != options.devices.size()) {
    return InvalidArgument("all-reduce training needs one session factory per worker device (" +
                           std::to_string(options.session_factories.size()) + " for " +
                           std::to_string(workers) + ")");
  }
  if (options.batch_size < 1 || options.epochs < 1) {
    return InvalidArgument("batch size " + std::to_string(options.batch_size) + " and epochs " +
                           std::to_string(options.epochs) + ": both must be >= 1");
  }
  if (train.features.dim(0) < workers * options.batch_size) {
    return InvalidArgument(std::to_string(train.features.dim(0)) +
                           " training rows are fewer than the workers × batch size (" +
                           std::to_string(workers) + " × " +
                           std::to_string(options.batch_size) + ")");
  }
  std::vector<int> local = options.local_workers;
  if (local.empty()) {
    for (int w = 0; w < workers; ++w) local.push_back(w);
  } else if (options.elastic && static_cast<int>(local.size()) < workers) {
    return InvalidArgument("elastic all-reduce training runs every worker in this process; "
                           "it cannot have workers elsewhere");
  }
  for (int w : local) {
    if (w < 0 || w >= workers) {
      return InvalidArgument("local worker " + std::to_string(w) + " is not one of the " +
                             std::to_string(workers) + " workers");
    }
  }
  const auto start = std::chrono::steady_clock::now();
  AllReduceMembership membership(workers, options.elastic ? options.min_workers : workers);
  std::mutex progress_mu;
  WorkerRun run{options, train, membership, progress_mu,
                StepsPerEpoch(train.features.dim(0), workers, options.batch_size) * options.epochs};
  std::vector<Replica> replicas(workers);
  AllReduceTrainingResult result;
  result.workers.resize(workers);
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) result.workers[w].worker = w;
  for (int w : local) {
    threads.emplace_back([&, w] {
      result.workers[w].status = RunAllReduceWorker(run, w, &replicas[w], &result.workers[w]);
    });
  }
  for (std::thread& t : threads) t.join();
  result.final_members = membership.last_members();
  // This process's replicas among the last members (all of them when it runs all).
  std::vector<int> here;
  for (int w : result.final_members) {
    if (std::find(local.begin(), local.end(), w) != local.end()) here.push_back(w);
  }
  if (here.empty()) return Internal("no replica of this process is left to report on");
  for (int w : here) AF_RETURN_IF_ERROR(result.workers[w].status);
  result.seconds = SecondsSince(start);
  result.membership_epochs = membership.epochs();
  result.workers_lost = membership.losses();
  result.workers_joined = membership.joins();
  Replica& chief = replicas[here.front()];
  result.buckets = chief.graph.buckets;
  const std::vector<std::string>& names = chief.graph.variables;
  std::vector<Tensor> chief_values;
  AF_RETURN_IF_ERROR(Run(chief, {}, names, {}, &chief_values));
  result.weights_hash = WeightsHash(names, chief_values);
  result.replicas_identical = true;
  for (int w : here) {
    std::vector<Tensor> other;
    AF_RETURN_IF_ERROR(Run(replicas[w], {}, names, {}, &other));
    for (size_t i = 0; i < names.size(); ++i) {
      result.replicas_identical = result.replicas_identical && SameBytes(chief_values[i], other[i]);
    }
  }
  AF_ASSIGN_OR_RETURN(result.eval, EvaluateReplica(chief, test));
  return result;
}

}  // namespace actorflow
