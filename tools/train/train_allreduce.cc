#include "tools/train/train_allreduce.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/cluster/local_cluster.h"
#include "actors/cluster/server.h"
#include "actors/cluster/session_factory.h"
#include "actors/sim/sim_cluster_spec.h"
#include "tools/cli/cli_common.h"
#include "tools/train/train_cluster.h"
#include "tools/train/train_flags.h"
#include "training/distributed/allreduce_training.h"

namespace actorflow {
namespace cli {

namespace {

// The CPU devices of --devices ("cpu=N"; empty: 1), each a member of the group.
StatusOr<int> MemberCpusPerTask(const std::string& devices) {
  if (devices.empty()) return 1;
  AF_ASSIGN_OR_RETURN(auto counts, ParseDeviceCounts(devices));
  for (const auto& [type, count] : counts) {
    if (type != "CPU" && count > 0) {
      return InvalidArgument("--devices " + devices +
                             ": --mode allreduce runs its members on CPU devices (cpu=N)");
    }
  }
  auto cpu = counts.find("CPU");
  return cpu == counts.end() ? 1 : std::max(1, cpu->second);
}

}  // namespace

Status CheckAllReduceFlags(const TrainCommandOptions& options) {
  if (options.cluster.rfind("sim:", 0) == 0) {
    if (options.replicas_to_aggregate != 0 || options.task >= 0) {
      return InvalidArgument("--replicas-to-aggregate and --task do not apply to --mode "
                             "allreduce");
    }
    return ParseSimClusterSpec(options.cluster).status().WithContext("--cluster");
  }
  if (!IsLocalCluster(options.cluster)) {
    // A cluster file: this process is worker --task of --job (read with the file).
    if (options.task < 0) {
      return InvalidArgument("--cluster " + options.cluster +
                             ": a cluster file needs --task I (this process's worker index)");
    }
    if (options.replicas_to_aggregate != 0) {
      return InvalidArgument("--replicas-to-aggregate does not apply to --mode allreduce");
    }
    AF_RETURN_IF_ERROR(MemberCpusPerTask(options.devices).status());
    return Status::OK();
  }
  AF_ASSIGN_OR_RETURN(auto shape, ParseLocalClusterFlag(options.cluster));
  if (shape.size() != 1 || shape.count("worker") == 0) {
    return InvalidArgument("--cluster " + options.cluster +
                           ": --mode allreduce takes only a 'worker' job (local:worker=W); its "
                           "workers hold the variables, no ps task does");
  }
  if (options.replicas_to_aggregate != 0 || options.task >= 0) {
    return InvalidArgument("--replicas-to-aggregate and --task do not apply to --mode "
                           "allreduce (every worker of the local cluster joins every step's "
                           "all-reduce)");
  }
  AF_RETURN_IF_ERROR(MemberCpusPerTask(options.devices).status());
  if (!(options.bucket_mb > 0)) {
    return InvalidArgument("--bucket-mb " + std::to_string(options.bucket_mb) + ": must be > 0");
  }
  return Status::OK();
}

Status TrainAllReduceOnCluster(const TrainCommandOptions& options, const DNNModelSpec& spec,
                               const LabeledData& train, const LabeledData& test,
                               std::ostream& out, std::ostream& progress) {
  AF_RETURN_IF_ERROR(CheckAllReduceFlags(options));
  AF_ASSIGN_OR_RETURN(const int cpus, MemberCpusPerTask(options.devices));
  // The members' tasks: a local cluster's servers, all in this process; or, for a
  // cluster file, this process's own server for its task, the others elsewhere.
  std::unique_ptr<LocalCluster> cluster;
  std::unique_ptr<Server> own;
  std::string job = "worker";
  int tasks = 0;
  std::vector<std::string> targets;
  if (IsLocalCluster(options.cluster)) {
    AF_ASSIGN_OR_RETURN(auto shape, ParseLocalClusterFlag(options.cluster));
    tasks = shape.at("worker");
    AF_ASSIGN_OR_RETURN(cluster, LocalCluster::Start({{"worker", tasks}}, cpus));
    for (int t = 0; t < tasks; ++t) {
      AF_ASSIGN_OR_RETURN(std::string target, cluster->Target("worker", t));
      targets.push_back(target);
    }
  } else {
    AF_ASSIGN_OR_RETURN(ClusterSpec spec_file, LoadClusterFile(options.cluster));
    job = options.job;
    tasks = spec_file.num_tasks(job);
    if (options.task >= tasks) {
      return InvalidArgument("--task " + std::to_string(options.task) + ": job " + job + " of " +
                             options.cluster + " has " + std::to_string(tasks) + " task(s)");
    }
    ServerOptions server;
    server.cluster = spec_file;
    server.task = TaskId{job, options.task};
    server.cpus = cpus;
    AF_ASSIGN_OR_RETURN(own, Server::Start(server));
    targets.assign(tasks, own->target());  // only this task's is ever used
  }
  const int workers = tasks * cpus;

  AllReduceTrainingOptions ar;
  ar.spec = spec;
  ar.seed = options.seed;
  ar.batch_size = options.batch;
  ar.epochs = ClusterEpochs(options, train.features.dim(0));
  ar.optimizer = options.optimizer;
  ar.learning_rate = options.learning_rate;
  ar.bucket_bytes = static_cast<int64_t>(std::llround(options.bucket_mb * 1024 * 1024));
  ar.timeout_ms = options.timeout_ms > 0 ? options.timeout_ms : 24 * 3600 * 1000;
  ar.log = [&progress](const std::string& line) {
    progress << line << "\n";
    progress.flush();
  };
  // Member r = cpus * task + cpu: a task's members are sessions on its own master.
  for (int task = 0; task < tasks; ++task) {
    SessionOptions session;
    session.target = targets[task];
    for (int cpu = 0; cpu < cpus; ++cpu) {
      if (own != nullptr && task == options.task) {
        ar.local_workers.push_back(static_cast<int>(ar.devices.size()));
      }
      ar.devices.push_back("/job:" + job + "/replica:0/task:" + std::to_string(task) +
                           "/device:CPU:" + std::to_string(cpu));
      ar.session_factories.push_back(SessionFactoryFor(session));
    }
  }
  ar.progress = [&progress](int worker, int64_t step, int64_t planned, double loss) {
    const int64_t tenth = std::max<int64_t>(planned / 10, 1);
    if (step % tenth != 0 && step != planned) return;
    char line[160];
    std::snprintf(line, sizeof(line), "worker %d: step %lld/%lld, loss %.4f", worker,
                  static_cast<long long>(step), static_cast<long long>(planned), loss);
    progress << line << "\n";
    progress.flush();
  };
  AF_ASSIGN_OR_RETURN(AllReduceTrainingResult result, TrainWithAllReduce(ar, train, test));
  // The workers this process ran (the others report in their own processes).
  std::vector<AllReduceWorkerReport> here;
  for (const AllReduceWorkerReport& w : result.workers) {
    if (ar.local_workers.empty() || std::find(ar.local_workers.begin(), ar.local_workers.end(),
                                              w.worker) != ar.local_workers.end()) {
      here.push_back(w);
    }
  }

  if (options.json) {
    nlohmann::ordered_json j = ResultJsonHead(result.eval, result.seconds);
    j["mode"] = "allreduce";
    j["workers"] = workers;
    j["tasks"] = tasks;
    j["epochs"] = ar.epochs;
    j["examples"] = result.eval.num_examples;
    j["buckets"] = result.buckets;
    j["bucket_mb"] = options.bucket_mb;
    j["replicas_identical"] = result.replicas_identical;
    j["weights_hash"] = result.weights_hash;
    nlohmann::ordered_json reports = nlohmann::ordered_json::array();
    for (const AllReduceWorkerReport& w : here) {
      reports.push_back({{"worker", w.worker}, {"steps", w.steps}, {"seconds", w.seconds}});
    }
    j["worker_reports"] = reports;
    out << j.dump() << "\n";
    out.flush();
    return Status::OK();
  }
  char line[200];
  for (const AllReduceWorkerReport& w : here) {
    std::snprintf(line, sizeof(line), "worker %d: %lld steps, %.2f s", w.worker,
                  static_cast<long long>(w.steps), w.seconds);
    out << line << "\n";
  }
  std::snprintf(line, sizeof(line),
                "all-reduce: %lld bucket(s) of up to %g MiB per step, replicas identical: %s, "
                "weights %s",
                static_cast<long long>(result.buckets), options.bucket_mb,
                result.replicas_identical ? "yes" : "NO", result.weights_hash.c_str());
  out << line << "\n" << TestAccuracyLine(result.eval, result.seconds) << "\n";
  out.flush();
  return Status::OK();
}

}  // namespace cli
}  // namespace actorflow
