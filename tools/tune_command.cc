#include "tools/tune_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <mutex>
#include <set>

#include <nlohmann/json.hpp>

#include "actors/local_cluster.h"
#include "actors/session_factory.h"
#include "placement/cluster_spec.h"
#include "tools/task_reset.h"
#include "training/csv_dataset.h"
#include "training/dnn_classifier.h"

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

// "10,10" -> {10, 10}.
StatusOr<std::vector<int64_t>> ParseHidden(const std::string& text) {
  std::vector<int64_t> units;
  size_t start = 0;
  while (true) {
    const size_t end = std::min(text.find(',', start), text.size());
    AF_ASSIGN_OR_RETURN(int64_t n, ParseInt("hidden", text.substr(start, end - start), 1));
    units.push_back(n);
    if (end == text.size()) break;
    start = end + 1;
  }
  return units;
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
      AF_RETURN_IF_ERROR(ParseHidden(value).status());
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
  Status s;
  if (o.batch < 1) {
    s = InvalidArgument("batch " + std::to_string(o.batch) + " must be >= 1");
  } else if (o.steps < 1) {
    s = InvalidArgument("steps " + std::to_string(o.steps) + " must be >= 1");
  } else if (o.epochs < 0) {
    s = InvalidArgument("epochs " + std::to_string(o.epochs) + " must be >= 0");
  } else if (o.classes != 0 && o.classes < 2) {
    s = InvalidArgument("classes " + std::to_string(o.classes) + " must be >= 2");
  } else if (o.timeout_ms < 0) {
    s = InvalidArgument("--timeout-ms must be >= 0");
  } else if (!ParseHidden(o.hidden).ok()) {
    s = ParseHidden(o.hidden).status();
  } else {
    s = MakeOptimizer(o.optimizer, o.learning_rate).status();
  }
  return s.WithContext("configuration " + ConfigString(config));
}

struct TuneData {
  CsvData train;
  CsvData test;
  int64_t max_label = 1;
};

StatusOr<TuneData> LoadData(const TrainCommandOptions& o) {
  std::string train_path, test_path;
  if (o.train_path.empty()) {
    AF_ASSIGN_OR_RETURN(train_path, FindBundledData("iris_training.csv"));
  } else {
    train_path = ResolveUserPath(o.train_path);
  }
  if (o.test_path.empty()) {
    AF_ASSIGN_OR_RETURN(test_path, FindBundledData("iris_test.csv"));
  } else {
    test_path = ResolveUserPath(o.test_path);
  }
  CsvOptions csv;
  csv.label_column = o.label;
  TuneData d;
  AF_ASSIGN_OR_RETURN(d.train, LoadCsv(train_path, csv));
  AF_ASSIGN_OR_RETURN(d.test, LoadCsv(test_path, csv));
  if (d.train.labels.NumElements() == 0) return InvalidArgument(train_path + ": no data rows");
  if (d.train.feature_names != d.test.feature_names) {
    return InvalidArgument(test_path + ": its feature columns differ from " + train_path + "'s");
  }
  const int32_t* labels = d.train.labels.data<int32_t>();
  d.max_label = *std::max_element(labels, labels + d.train.labels.NumElements());
  return d;
}

// Trains one configuration on `target` and returns its test accuracy.
StatusOr<double> TrainOne(const TrainCommandOptions& o, const TuneData& data,
                          const std::string& target) {
  DNNClassifierOptions model;
  if (o.normalize) {
    AF_ASSIGN_OR_RETURN(model.feature_columns,
                        NormalizedNumericColumns(data.train.feature_names, data.train.features));
  } else {
    model.feature_columns = NumericColumns(data.train.feature_names);
  }
  AF_ASSIGN_OR_RETURN(model.hidden_units, ParseHidden(o.hidden));
  model.n_classes = o.classes > 0 ? o.classes : std::max<int64_t>(data.max_label + 1, 2);
  model.optimizer = o.optimizer;
  model.learning_rate = o.learning_rate;
  model.seed = o.seed;
  model.timeout_in_ms = o.timeout_ms;
  model.session_factory = [target](const Graph* graph) {
    SessionOptions options;
    options.target = target;
    return NewSession(graph, options);
  };
  AF_ASSIGN_OR_RETURN(std::unique_ptr<DNNClassifier> classifier,
                      DNNClassifier::Create(std::move(model)));
  const CsvData& train = data.train;
  const int64_t rows = train.labels.NumElements();
  const int64_t repeat = o.epochs > 0 ? o.epochs : -1;
  InputFn train_input = [&train, &o, rows, repeat]() -> StatusOr<std::shared_ptr<const Dataset>> {
    AF_ASSIGN_OR_RETURN(auto slices, Dataset::FromTensorSlices({train.features, train.labels}));
    return slices->Shuffle(rows, o.seed)->Batch(o.batch)->Repeat(repeat);
  };
  AF_RETURN_IF_ERROR(classifier->Train(train_input, o.epochs > 0 ? -1 : o.steps).status());
  const CsvData& test = data.test;
  InputFn test_input = [&test]() -> StatusOr<std::shared_ptr<const Dataset>> {
    AF_ASSIGN_OR_RETURN(auto slices, Dataset::FromTensorSlices({test.features, test.labels}));
    return slices->Batch(256);
  };
  AF_ASSIGN_OR_RETURN(EvalResult eval, classifier->Evaluate(test_input));
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
  AF_ASSIGN_OR_RETURN(TuneData data, LoadData(options.train));

  // The workers: tasks of a local cluster started here, or of a cluster file.
  std::unique_ptr<LocalCluster> local;
  ClusterSpec spec;
  if (options.cluster.rfind("local:", 0) == 0) {
    AF_ASSIGN_OR_RETURN(auto shape, ParseLocalClusterShape(options.cluster));
    if (!shape.count("worker")) {
      return InvalidArgument("--cluster " + options.cluster +
                             ": tune trains on the 'worker' job, e.g. local:worker=2");
    }
    AF_ASSIGN_OR_RETURN(local, LocalCluster::Start(shape));
    spec = local->spec();
  } else {
    AF_ASSIGN_OR_RETURN(spec, ClusterSpec::FromFile(ResolveUserPath(options.cluster)));
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

  std::mutex out_mu;
  int finished = 0;
  const auto start = std::chrono::steady_clock::now();
  report.results = RunGridSearch(configs, workers, [&](size_t index, const GridConfig& c, int slot) {
    const auto trial_start = std::chrono::steady_clock::now();
    // A task keeps its variables across sessions: each configuration starts on a
    // task cleared of the previous one's.
    Status reset = ResetTask(targets[slot]);
    StatusOr<double> accuracy =
        reset.ok() ? TrainOne(trials[index], data, targets[slot]) : StatusOr<double>(reset);
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
  try {
    StatusOr<TuneReport> report = RunTune(options, &out);
    if (!report.ok()) {
      PrintError(err, report.status());
      return report.status().code() == Code::kInvalidArgument ? kExitUsageError
                                                               : kExitRuntimeError;
    }
    PrintTuneTable(*report, out);
    if (options.json) out << TuneReportJson(*report) << "\n";
    out.flush();
    for (const TrialResult& r : report->results) {
      if (!r.status.ok()) {
        PrintError(err, r.status.WithContext("configuration " + ConfigString(r.params)));
        return kExitRuntimeError;
      }
    }
    return kExitOk;
  } catch (const std::exception& e) {
    PrintError(err, Internal(std::string("unexpected exception: ") + e.what()));
    return kExitRuntimeError;
  }
}

Subcommand AddTuneSubcommand(CLI::App* parent) {
  auto options = std::make_shared<TuneCommandOptions>();
  TrainCommandOptions& t = options->train;
  CLI::App* app = parent->add_subcommand(
      "tune", "Grid-search hyperparameters, one network per worker task, in parallel");
  app->add_option("--cluster", options->cluster, "local:worker=W, or a cluster spec FILE")
      ->capture_default_str();
  app->add_option("--grid", options->grid, "e.g. 'lr=0.01|0.1;hidden=10,10|32'")->required();
  app->add_option("--train", t.train_path, "Training CSV (default: bundled Iris)");
  app->add_option("--test", t.test_path, "Test CSV (default: bundled Iris)");
  app->add_option("--label", t.label, "Label column (default: the last one)");
  app->add_option("--hidden", t.hidden, "Hidden layer sizes, e.g. 10,10")->capture_default_str();
  app->add_option("--classes", t.classes, "Number of classes (default: max label + 1)");
  app->add_option("--optimizer", t.optimizer, "sgd, momentum, adam or adagrad")
      ->capture_default_str();
  app->add_option("--lr", t.learning_rate, "Learning rate")->capture_default_str();
  app->add_option("--batch", t.batch, "Batch size")->capture_default_str();
  app->add_option("--steps", t.steps, "Training steps")->capture_default_str();
  app->add_option("--epochs", t.epochs, "Passes over the training set (overrides --steps)");
  app->add_option("--seed", t.seed, "Seed of the weights and the shuffle")->capture_default_str();
  app->add_flag("--normalize", t.normalize, "Z-score features with training statistics");
  app->add_option("--timeout-ms", t.timeout_ms, "Deadline of each step in ms (0 = none)")
      ->capture_default_str();
  app->add_flag("--json", options->json, "End with one line of JSON");
  return Subcommand{app, [options]() { return TuneCommand(*options, std::cout, std::cerr); }};
}

}  // namespace cli
}  // namespace actorflow
