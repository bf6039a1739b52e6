#include "tools/in_graph_train.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <functional>
#include <iostream>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/local_cluster.h"
#include "actors/session_factory.h"
#include "placement/cluster_spec.h"
#include "tools/progress_bar.h"
#include "training/csv_dataset.h"
#include "training/in_graph_classifier.h"

namespace actorflow {
namespace cli {
namespace {

constexpr char kInGraph[] = "in-graph";
constexpr char kBetweenGraph[] = "between-graph";
// Flags of between-graph training that in-graph replication has no use for.
const char* const kBetweenGraphOnlyFlags[] = {"--mode", "--replicas-to-aggregate", "--job",
                                               "--task"};

// Where the towers and variables go, and the session that reaches them. Owns the
// local cluster, if any, which must outlive the session.
struct Placement {
  std::unique_ptr<LocalCluster> cluster;
  InGraphReplication replication;
  std::string target;  // "" with device_count CPU = towers
  std::string description;
};

StatusOr<Placement> PlaceReplicas(const std::string& cluster) {
  Placement p;
  if (cluster.empty()) {
    p.replication.ps_devices = {"/cpu:0"};
    p.replication.tower_devices = {"/cpu:0", "/cpu:1"};
    p.description = "2 towers on 2 CPU devices of this process";
    return p;
  }
  int ps = 0;
  int workers = 0;
  if (cluster.rfind("local:", 0) == 0) {
    auto shape = ParseLocalClusterShape(cluster);
    if (!shape.ok()) return InvalidArgument("--cluster: " + shape.status().message());
    for (const auto& [job, count] : *shape) {
      if (job != "ps" && job != "worker") {
        return InvalidArgument("--cluster " + cluster + ": job '" + job +
                               "' has no role in in-graph replication (use ps and worker)");
      }
    }
    ps = shape->count("ps") ? shape->at("ps") : 0;
    workers = shape->count("worker") ? shape->at("worker") : 0;
    if (ps < 1 || workers < 1) {
      return InvalidArgument("--cluster " + cluster + ": in-graph replication needs ps=P and "
                             "worker=W, both >= 1");
    }
    AF_ASSIGN_OR_RETURN(p.cluster, LocalCluster::Start(*shape));
    AF_ASSIGN_OR_RETURN(p.target, p.cluster->Target("worker", 0));
  } else {
    AF_ASSIGN_OR_RETURN(ClusterSpec spec, ClusterSpec::FromFile(ResolveUserPath(cluster)));
    ps = spec.num_tasks("ps");
    workers = spec.num_tasks("worker");
    if (ps < 1 || workers < 1) {
      return InvalidArgument("--cluster " + cluster + ": in-graph replication needs jobs 'ps' and "
                             "'worker' with at least one task each");
    }
    AF_ASSIGN_OR_RETURN(TaskAddress master, spec.Address(TaskId{"worker", 0}));
    p.target = "actorflow://" + master.ToString();
  }
  for (int k = 0; k < ps; ++k) p.replication.ps_devices.push_back("/job:ps/task:" + std::to_string(k));
  for (int i = 0; i < workers; ++i) {
    p.replication.tower_devices.push_back("/job:worker/task:" + std::to_string(i));
  }
  p.description = std::to_string(workers) + " towers on the worker tasks, variables on " +
                  std::to_string(ps) + " ps task(s)";
  return p;
}

// "10,10" -> {10, 10}; sizes are checked by ValidateModelSpec.
StatusOr<std::vector<int64_t>> ParseHidden(const std::string& text) {
  std::vector<int64_t> units;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string field = text.substr(start, end - start);
    size_t used = 0;
    try {
      units.push_back(std::stoll(field, &used));
    } catch (const std::exception&) {
      used = 0;
    }
    if (field.empty() || used != field.size()) {
      return InvalidArgument("--hidden '" + text + "': expected comma-separated layer sizes >= 1");
    }
    start = end + 1;
  }
  return units;
}

Status CheckFlags(const TrainCommandOptions& o) {
  if (o.batch < 1) return InvalidArgument("--batch " + std::to_string(o.batch) + ": must be >= 1");
  if (o.steps < 1) return InvalidArgument("--steps " + std::to_string(o.steps) + ": must be >= 1");
  if (o.epochs < 0) return InvalidArgument("--epochs " + std::to_string(o.epochs) + ": must be >= 1");
  if (o.classes != 0 && o.classes < 2) {
    return InvalidArgument("--classes " + std::to_string(o.classes) + ": needs at least 2");
  }
  if (o.timeout_ms < 0) return InvalidArgument("--timeout-ms: must be >= 0 (0 = no deadline)");
  AF_ASSIGN_OR_RETURN(std::vector<int64_t> hidden, ParseHidden(o.hidden));
  DNNModelSpec probe;
  probe.feature_columns = NumericColumns({"x"});
  probe.hidden_units = hidden;
  Status valid = ValidateModelSpec(probe);
  if (!valid.ok()) return InvalidArgument("--hidden: " + valid.message());
  Status optimizer = MakeOptimizer(o.optimizer, o.learning_rate).status();
  if (!optimizer.ok()) return InvalidArgument("--optimizer/--lr: " + optimizer.message());
  return Status::OK();
}

// The last name in the header line of `path` (the default label column).
std::string LastColumnName(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  const size_t comma = line.rfind(',');
  std::string name = line.substr(comma == std::string::npos ? 0 : comma + 1);
  name.erase(0, name.find_first_not_of(" \t"));
  name.erase(name.find_last_not_of(" \t") + 1);
  return name;
}

// The training and test files, their label column and the number of classes.
struct Data {
  CsvData train;
  CsvData test;
  std::string label_column;
  int64_t classes = 0;
};

StatusOr<Data> LoadData(const TrainCommandOptions& o) {
  std::string train_path = o.train_path.empty() ? "" : ResolveUserPath(o.train_path);
  std::string test_path = o.test_path.empty() ? "" : ResolveUserPath(o.test_path);
  if (train_path.empty()) {
    AF_ASSIGN_OR_RETURN(train_path, FindBundledData("iris_training.csv"));
  }
  if (test_path.empty()) {
    AF_ASSIGN_OR_RETURN(test_path, FindBundledData("iris_test.csv"));
  }
  CsvOptions csv;
  csv.label_column = o.label;
  Data data;
  AF_ASSIGN_OR_RETURN(data.train, LoadCsv(train_path, csv));
  AF_ASSIGN_OR_RETURN(data.test, LoadCsv(test_path, csv));
  data.label_column = o.label.empty() ? LastColumnName(train_path) : o.label;
  if (data.train.labels.NumElements() == 0) return InvalidArgument(train_path + ": no data rows");
  if (data.test.feature_names != data.train.feature_names) {
    return InvalidArgument(test_path + ": its feature columns differ from " + train_path + "'s");
  }
  const int32_t* labels = data.train.labels.data<int32_t>();
  const int32_t max_label = *std::max_element(labels, labels + data.train.labels.NumElements());
  data.classes = o.classes != 0 ? o.classes : std::max<int64_t>(int64_t{max_label} + 1, 2);
  for (const auto& [file, set] : {std::make_pair(train_path, &data.train),
                                  std::make_pair(test_path, &data.test)}) {
    const int32_t* y = set->labels.data<int32_t>();
    for (int64_t i = 0; i < set->labels.NumElements(); ++i) {
      if (y[i] < 0 || y[i] >= data.classes) {
        return InvalidArgument(file + ": data row " + std::to_string(i + 1) + ": label " +
                               std::to_string(y[i]) + " is outside [0, " +
                               std::to_string(data.classes) + ")");
      }
    }
  }
  return data;
}

Status Train(const TrainCommandOptions& o, const std::string& cluster, std::ostream& out,
             bool interactive) {
  AF_ASSIGN_OR_RETURN(Data data, LoadData(o));
  AF_ASSIGN_OR_RETURN(Placement placement, PlaceReplicas(cluster));
  const int64_t towers = static_cast<int64_t>(placement.replication.tower_devices.size());

  InGraphClassifierOptions options;
  DNNClassifierOptions& model = options.model;
  if (o.normalize) {
    AF_ASSIGN_OR_RETURN(model.feature_columns,
                        NormalizedNumericColumns(data.train.feature_names, data.train.features));
  } else {
    model.feature_columns = NumericColumns(data.train.feature_names);
  }
  AF_ASSIGN_OR_RETURN(model.hidden_units, ParseHidden(o.hidden));
  model.n_classes = data.classes;
  model.optimizer = o.optimizer;
  model.learning_rate = o.learning_rate;
  model.seed = o.seed;
  model.label_column = data.label_column;
  model.timeout_in_ms = o.timeout_ms;
  if (!o.checkpoint_dir.empty()) model.model_dir = ResolveUserPath(o.checkpoint_dir);
  const std::string target = placement.target;
  const int cpus = static_cast<int>(towers);
  model.session_factory = [target, cpus](const Graph* graph) {
    SessionOptions session;
    session.target = target;
    if (target.empty()) session.device_count = {{"CPU", cpus}};
    return NewSession(graph, session);
  };
  options.replication = placement.replication;
  out << "in-graph replication: " << placement.description << "\n";

  const auto start = std::chrono::steady_clock::now();
  AF_ASSIGN_OR_RETURN(std::unique_ptr<InGraphClassifier> classifier,
                      InGraphClassifier::Create(std::move(options)));
  const int64_t rows = data.train.labels.NumElements();
  const int64_t step_rows = o.batch * towers;
  const int64_t total_steps =
      o.epochs > 0 ? o.epochs * ((rows + step_rows - 1) / step_rows) : o.steps;
  const int64_t repeat = o.epochs > 0 ? o.epochs : -1;
  const CsvData& train = data.train;
  const uint64_t seed = o.seed;
  InputFn train_input = [&train, rows, step_rows, repeat,
                         seed]() -> StatusOr<std::shared_ptr<const Dataset>> {
    AF_ASSIGN_OR_RETURN(auto slices, Dataset::FromTensorSlices({train.features, train.labels}));
    return slices->Shuffle(rows, seed)->Batch(step_rows)->Repeat(repeat);
  };
  ProgressBar bar(out, total_steps, interactive);
  StatusOr<TrainResult> trained =
      classifier->Train(train_input, o.epochs > 0 ? -1 : o.steps,
                        [&bar](const TrainProgress& p) { bar.Update(p.step, p.loss); });
  bar.Finish();
  AF_RETURN_IF_ERROR(trained.status());
  const CsvData& test = data.test;
  InputFn test_input = [&test]() -> StatusOr<std::shared_ptr<const Dataset>> {
    AF_ASSIGN_OR_RETURN(auto slices, Dataset::FromTensorSlices({test.features, test.labels}));
    return slices->Batch(256);
  };
  AF_ASSIGN_OR_RETURN(EvalResult eval, classifier->Evaluate(test_input));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (o.json) {
    nlohmann::ordered_json j;
    j["accuracy"] = eval.accuracy;
    j["loss"] = eval.loss;
    j["global_step"] = eval.global_step;
    j["seconds"] = seconds;
    j["steps"] = trained->steps;
    j["train_loss"] = trained->last_loss;
    j["examples"] = eval.num_examples;
    j["classes"] = data.classes;
    j["replication"] = kInGraph;
    j["towers"] = towers;
    j["ps_tasks"] = placement.replication.ps_devices.size();
    if (!o.checkpoint_dir.empty()) j["checkpoint_dir"] = o.checkpoint_dir;
    out << j.dump() << "\n";
  } else {
    char line[256];
    const int64_t correct = static_cast<int64_t>(eval.accuracy * eval.num_examples + 0.5);
    std::snprintf(line, sizeof(line),
                  "test accuracy %.4f (%lld/%lld), loss %.4f, global step %lld, %.2f s",
                  eval.accuracy, static_cast<long long>(correct),
                  static_cast<long long>(eval.num_examples), eval.loss,
                  static_cast<long long>(eval.global_step), seconds);
    if (!o.checkpoint_dir.empty()) out << "checkpoint saved in " << o.checkpoint_dir << "\n";
    out << line << "\n";
  }
  out.flush();
  return Status::OK();
}

}  // namespace

int InGraphTrainCommand(const TrainCommandOptions& options, const std::string& cluster,
                        std::ostream& out, std::ostream& err, bool interactive) {
  try {
    Status usage = CheckFlags(options);
    if (!usage.ok()) {
      PrintError(err, usage);
      return kExitUsageError;
    }
    Status status = Train(options, cluster, out, interactive);
    if (!status.ok()) {
      out.flush();
      PrintError(err, status);
      return status.code() == Code::kInvalidArgument && status.message().rfind("--", 0) == 0
                 ? kExitUsageError
                 : kExitRuntimeError;
    }
    return kExitOk;
  } catch (const std::exception& e) {
    PrintError(err, Internal(std::string("unexpected exception: ") + e.what()));
    return kExitRuntimeError;
  }
}

Subcommand WithReplicationFlag(Subcommand train, std::shared_ptr<const TrainCommandOptions> options) {
  CLI::App* app = train.app;
  auto replication = std::make_shared<std::string>(kBetweenGraph);
  app->add_option("--replication", *replication,
                  "in-graph: one client, a tower per worker; between-graph: one client per worker")
      ->capture_default_str();
  // train declares --cluster for between-graph training; reuse it when it is there.
  auto own_cluster = std::make_shared<std::string>();
  if (app->get_option_no_throw("--cluster") == nullptr) {
    app->add_option("--cluster", *own_cluster, "local:ps=P,worker=W or a cluster JSON file");
  }
  std::function<int()> between_graph = std::move(train.main);
  train.main = [app, options, replication, own_cluster, between_graph]() {
    if (*replication == kBetweenGraph) return between_graph();
    if (*replication != kInGraph) {
      PrintError(std::cerr, InvalidArgument("--replication '" + *replication +
                                            "': expected in-graph or between-graph"));
      return kExitUsageError;
    }
    for (const char* flag : kBetweenGraphOnlyFlags) {
      const CLI::Option* given = app->get_option_no_throw(flag);
      if (given != nullptr && given->count() > 0) {
        PrintError(std::cerr, InvalidArgument(std::string(flag) +
                                              " is for between-graph training; --replication "
                                              "in-graph takes none"));
        return kExitUsageError;
      }
    }
    std::string cluster = *own_cluster;
    const CLI::Option* cluster_flag = app->get_option_no_throw("--cluster");
    if (cluster_flag != nullptr && !cluster_flag->results().empty()) {
      cluster = cluster_flag->results().back();
    }
    return InGraphTrainCommand(*options, cluster, std::cout, std::cerr,
                               isatty(STDOUT_FILENO) != 0);
  };
  return train;
}

}  // namespace cli
}  // namespace actorflow
