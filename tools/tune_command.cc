#include "tools/tune_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <mutex>
#include <set>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "actors/cluster/local_cluster.h"
#include "actors/cluster/remote_session.h"
#include "actors/scheduler/spinning_scheduler.h"
#include "placement/cluster_spec.h"
#include "tools/cli/blas_core.h"
#include "tools/train/train_data.h"
#include "tools/train/train_flags.h"
#include "training/estimators/dnn_classifier.h"

namespace actorflow {
namespace cli {
namespace {

const char* const kTunable[] = {"lr", "hidden", "optimizer", "batch", "steps",
                                "epochs", "seed", "normalize", "classes"};

std::string TunableList() {
  std::string out;
  for (const char* name : kTunable) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

StatusOr<int64_t> ParseInt(const std::string& name, const std::string& value, int64_t min) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size() || v < min) {
    return InvalidArgument("grid parameter " + name + "='" + value + "': expected an integer >= " +
                           std::to_string(min));
  }
  return static_cast<int64_t>(v);
}

// The train options of one configuration: the base with the grid's values.
StatusOr<TrainCommandOptions> ApplyConfig(const TrainCommandOptions& base, const GridConfig& config) {
  TrainCommandOptions o = base;
  for (const auto& [name, value] : config) {
    if (name == "lr") {
      char* end = nullptr;
      o.learning_rate = std::strtod(value.c_str(), &end);
      if (end != value.c_str() + value.size() || !(o.learning_rate > 0)) {
        return InvalidArgument("grid parameter lr='" + value + "': expected a number > 0");
      }
    } else if (name == "hidden") {
      AF_RETURN_IF_ERROR(ParseHiddenUnits(value, "grid parameter hidden").status());
      o.hidden = value;
    } else if (name == "optimizer") {
      AF_RETURN_IF_ERROR(MakeOptimizer(value, 0.01).status().WithContext("grid parameter optimizer"));
      o.optimizer = value;
    } else if (name == "batch") {
      AF_ASSIGN_OR_RETURN(o.batch, ParseInt(name, value, 1));
    } else if (name == "steps") {
      AF_ASSIGN_OR_RETURN(o.steps, ParseInt(name, value, 1));
    } else if (name == "epochs") {
      AF_ASSIGN_OR_RETURN(o.epochs, ParseInt(name, value, 1));
    } else if (name == "seed") {
      AF_ASSIGN_OR_RETURN(int64_t seed, ParseInt(name, value, 0));
      o.seed = static_cast<uint64_t>(seed);
    } else if (name == "classes") {
      AF_ASSIGN_OR_RETURN(o.classes, ParseInt(name, value, 2));
    } else if (name == "normalize") {
      if (value != "true" && value != "false" && value != "1" && value != "0") {
        return InvalidArgument("grid parameter normalize='" + value + "': expected true or false");
      }
      o.normalize = value == "true" || value == "1";
    } else {
      return InvalidArgument("grid parameter '" + name + "' is not a tunable actorflow train "
                             "option (tunable: " + TunableList() + ")");
    }
  }
  return o;
}

// What `actorflow train` checks before reading a file, for one configuration.
Status CheckTrial(const TrainCommandOptions& o, const GridConfig& config) {
  return CheckModelAndTrainingFlags(o).WithContext("configuration " + ConfigString(config));
}

// Trains one configuration on `target` and returns its test accuracy.
StatusOr<double> TrainOne(const TrainCommandOptions& o, const TrainingData& data,
                          const std::string& target,
                          const std::shared_ptr<ClientRuntime>& runtime) {
  AF_ASSIGN_OR_RETURN(const int64_t classes, ResolveClasses(data, o.classes));
  AF_ASSIGN_OR_RETURN(DNNClassifierOptions model, ClassifierOptionsFromFlags(o, data, classes));
  SessionOptions session;
  session.target = target;
  session.client_runtime = runtime;
  model.session_factory = SessionFactoryFor(session);
  AF_ASSIGN_OR_RETURN(std::unique_ptr<DNNClassifier> classifier,
                      DNNClassifier::Create(std::move(model)));
  AF_RETURN_IF_ERROR(
      classifier->Train(TrainingInput(data.train, o.batch, o.seed, o.epochs), MaxTrainSteps(o))
          .status());
  AF_ASSIGN_OR_RETURN(EvalResult eval, classifier->Evaluate(EvaluationInput(data.test)));
  return eval.accuracy;
}

nlohmann::ordered_json ResultJson(const TrialResult& r, const std::vector<std::string>& tasks) {
  nlohmann::ordered_json j;
  nlohmann::ordered_json params = nlohmann::ordered_json::object();
  for (const auto& [name, value] : r.params) params[name] = value;
  j["params"] = params;
  j["accuracy"] = r.accuracy;
  j["seconds"] = r.seconds;
  j["task"] = r.slot >= 0 && r.slot < static_cast<int>(tasks.size()) ? tasks[r.slot] : "";
  if (!r.status.ok()) j["error"] = r.status.ToString();
  return j;
}

}  // namespace

StatusOr<TuneReport> RunTune(const TuneCommandOptions& options, std::ostream* progress) {
  AF_ASSIGN_OR_RETURN(std::vector<GridParam> params, ParseGrid(options.grid));
  const std::vector<GridConfig> configs = ExpandGrid(params);
  std::vector<TrainCommandOptions> trials;
  for (const GridConfig& c : configs) {
    AF_ASSIGN_OR_RETURN(TrainCommandOptions o, ApplyConfig(options.train, c));
    AF_RETURN_IF_ERROR(CheckTrial(o, c));
    trials.push_back(std::move(o));
  }
  AF_ASSIGN_OR_RETURN(TrainingData data, LoadTrainingData(options.train));

  // The workers: tasks of a local cluster started here, or of a cluster file.
  std::unique_ptr<LocalCluster> local;
  ClusterSpec spec;
  if (IsLocalCluster(options.cluster)) {
    AF_ASSIGN_OR_RETURN(auto shape, ParseLocalClusterFlag(options.cluster));
    if (!shape.count("worker")) {
      return InvalidArgument("--cluster " + options.cluster +
                             ": tune trains on the 'worker' job, e.g. local:worker=2");
    }
    // Each configuration computes on one core of this process.
    UseOneBlasThreadUnlessConfigured();
    AF_ASSIGN_OR_RETURN(local, LocalCluster::Start(shape));
    spec = local->spec();
  } else {
    AF_ASSIGN_OR_RETURN(spec, LoadClusterFile(options.cluster));
  }
  const int workers = spec.num_tasks("worker");
  if (workers < 1) return InvalidArgument("--cluster " + options.cluster + " has no 'worker' job");
  TuneReport report;
  std::vector<std::string> targets;
  for (int i = 0; i < workers; ++i) {
    AF_ASSIGN_OR_RETURN(TaskAddress address, spec.Address(TaskId{"worker", i}));
    targets.push_back("actorflow://" + address.ToString());
    report.tasks.push_back("/job:worker/task:" + std::to_string(i));
  }

  // How long a task may take to clear the previous configuration's variables.
  constexpr int64_t kResetTimeoutMs = 10000;
  // One client runtime for every trial: threads and connections to the tasks are
  // made once, not per configuration.
  const std::shared_ptr<ClientRuntime> runtime = NewClientRuntime();
  std::mutex out_mu;
  int finished = 0;
  const auto start = std::chrono::steady_clock::now();
  report.results = RunGridSearch(configs, workers, [&](size_t index, const GridConfig& c, int slot) {
    // A trial's thread computes (its graph, its input pipeline, and on a local
    // cluster its steps too): it counts as a busy core, so that the scheduler's idle
    // threads do not poll on the core another trial computes on.
    BusyThreadScope computing;
    const auto trial_start = std::chrono::steady_clock::now();
    // A task keeps its variables across sessions: each configuration starts on a
    // task cleared of the previous one's.
    Status reset = ResetTask(targets[slot], {}, kResetTimeoutMs, runtime);
    StatusOr<double> accuracy = reset.ok() ? TrainOne(trials[index], data, targets[slot], runtime)
                                           : StatusOr<double>(reset);
    if (progress != nullptr) {
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - trial_start).count();
      std::lock_guard<std::mutex> lock(out_mu);
      char line[128];
      std::snprintf(line, sizeof(line), "%.4f (%.2f s)", accuracy.ok() ? *accuracy : 0.0, s);
      *progress << "[" << ++finished << "/" << configs.size() << "] " << ConfigString(c) << " on "
                << report.tasks[slot] << ": "
                << (accuracy.ok() ? "accuracy " + std::string(line) : accuracy.status().ToString())
                << "\n";
      progress->flush();
    }
    return accuracy;
  });
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  report.best = BestResult(report.results);
  return report;
}

void PrintTuneTable(const TuneReport& report, std::ostream& out) {
  if (report.results.empty()) return;
  std::vector<std::string> header;
  for (const auto& [name, value] : report.results[0].params) header.push_back(name);
  header.insert(header.end(), {"accuracy", "seconds", "task"});
  std::vector<std::vector<std::string>> rows;
  for (const TrialResult& r : report.results) {
    std::vector<std::string> row;
    for (const auto& [name, value] : r.params) row.push_back(value);
    char acc[32], sec[32];
    std::snprintf(acc, sizeof(acc), "%.4f", r.accuracy);
    std::snprintf(sec, sizeof(sec), "%.2f", r.seconds);
    row.push_back(r.status.ok() ? acc : "failed");
    row.push_back(sec);
    row.push_back(r.slot >= 0 ? report.tasks[r.slot] : "");
    if (!r.status.ok()) row.back() += "  " + r.status.ToString();
    rows.push_back(std::move(row));
  }
  std::vector<size_t> width(header.size());
  for (size_t i = 0; i < header.size(); ++i) {
    width[i] = header[i].size();
    for (const auto& row : rows) width[i] = std::max(width[i], row[i].size());
  }
  auto print = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t i = 0; i < cells.size(); ++i) {
      std::string cell = cells[i];
      if (i + 1 < cells.size()) cell.resize(width[i] + 2, ' ');
      line += cell;
    }
    out << line << "\n";
  };
  print(header);
  for (const auto& row : rows) print(row);
  if (report.best >= 0) {
    const TrialResult& b = report.results[report.best];
    char line[160];
    std::snprintf(line, sizeof(line), " (accuracy %.4f, %.2f s on %s)", b.accuracy, b.seconds,
                  report.tasks[b.slot].c_str());
    out << "best: " << ConfigString(b.params) << line << "\n";
  } else {
    out << "best: none (every configuration failed)\n";
  }
}

std::string TuneReportJson(const TuneReport& report) {
  nlohmann::ordered_json j;
  j["results"] = nlohmann::ordered_json::array();
  for (const TrialResult& r : report.results) j["results"].push_back(ResultJson(r, report.tasks));
  j["best"] = report.best >= 0 ? ResultJson(report.results[report.best], report.tasks)
                               : nlohmann::ordered_json(nullptr);
  j["seconds"] = report.seconds;
  j["workers"] = report.tasks.size();
  return j.dump();
}

int TuneCommand(const TuneCommandOptions& options, std::ostream& out, std::ostream& err) {
  // Under --json stdout holds the JSON line alone; the lines and table go to stderr.
  std::ostream& text = options.json ? err : out;
  return CatchExceptions(err, [&]() {
    StatusOr<TuneReport> report = RunTune(options, &text);
    if (!report.ok()) {
      return ReportError(err, report.status(),
                         report.status().code() == Code::kInvalidArgument ? kExitUsageError
                                                                          : kExitRuntimeError);
    }
    PrintTuneTable(*report, text);
    text.flush();
    if (options.json) out << TuneReportJson(*report) << "\n";
    out.flush();
    for (const TrialResult& r : report->results) {
      if (!r.status.ok()) {
        return ReportError(err, r.status.WithContext("configuration " + ConfigString(r.params)),
                           kExitRuntimeError);
      }
    }
    return kExitOk;
  });
}

Subcommand AddTuneSubcommand(CLI::App* parent) {
  auto options = std::make_shared<TuneCommandOptions>();
  CLI::App* app = parent->add_subcommand(
      "tune", "Grid-search hyperparameters, one network per worker task, in parallel");
  app->add_option("--cluster", options->cluster, "local:worker=W, or a cluster spec FILE")
      ->capture_default_str();
  app->add_option("--grid", options->grid, "e.g. 'lr=0.01|0.1;hidden=10,10|32'")->required();
  AddModelAndDataFlags(app, &options->train);
  AddTimeoutMsOption(app, &options->train.timeout_ms)->capture_default_str();
  app->add_flag("--json", options->json, "End with one line of JSON");
  return Subcommand{app, [options]() { return TuneCommand(*options, std::cout, std::cerr); }};
}

}  // namespace cli
}  // namespace actorflow
