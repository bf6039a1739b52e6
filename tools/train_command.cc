#include "tools/train_command.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <memory>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/session_factory.h"
#include "tools/in_graph_train.h"
#include "tools/progress_bar.h"
#include "tools/run_command.h"
#include "tools/train_cluster.h"
#include "training/csv_dataset.h"
#include "training/dnn_classifier.h"

namespace actorflow {
namespace cli {
namespace {

constexpr char kWorkspace[] = "actorflow";
constexpr char kDataDir[] = "examples/data/";

bool FileExists(const std::string& path) { return std::ifstream(path).is_open(); }

// "10,10" -> {10, 10}. Sizes < 1 are left to ValidateModelSpec, which names the layer.
StatusOr<std::vector<int64_t>> ParseHiddenUnits(const std::string& text) {
  const std::string usage =
      "--hidden '" + text + "': expected comma-separated layer sizes >= 1, e.g. 10,10";
  std::vector<int64_t> units;
  size_t start = 0;
  while (true) {
    const size_t end = std::min(text.find(',', start), text.size());
    std::string field = text.substr(start, end - start);
    field.erase(0, field.find_first_not_of(" \t"));
    field.erase(field.find_last_not_of(" \t") + 1);
    if (field.empty()) return InvalidArgument(usage);
    size_t used = 0;
    long long value = 0;
    try {
      value = std::stoll(field, &used);
    } catch (const std::exception&) {
      return InvalidArgument(usage);
    }
    if (used != field.size()) return InvalidArgument(usage);
    units.push_back(value);
    if (end == text.size()) break;
    start = end + 1;
  }
  DNNModelSpec probe;  // only the hidden units are checked here
  probe.feature_columns = NumericColumns({"x"});
  probe.hidden_units = units;
  Status valid = ValidateModelSpec(probe);
  if (!valid.ok()) return InvalidArgument("--hidden: " + valid.message());
  return units;
}

// Everything that can be judged without reading a file.
Status CheckFlags(const TrainCommandOptions& options) {
  AF_RETURN_IF_ERROR(ParseHiddenUnits(options.hidden).status());
  if (options.classes != 0 && options.classes < 2) {
    return InvalidArgument("--classes " + std::to_string(options.classes) +
                           ": a classifier needs at least 2 classes");
  }
  if (options.batch < 1) {
    return InvalidArgument("--batch " + std::to_string(options.batch) + ": must be >= 1");
  }
  if (options.steps < 1) {
    return InvalidArgument("--steps " + std::to_string(options.steps) + ": must be >= 1");
  }
  if (options.epochs < 0) {
    return InvalidArgument("--epochs " + std::to_string(options.epochs) + ": must be >= 1");
  }
  if (options.timeout_ms < 0) {
    return InvalidArgument("--timeout-ms " + std::to_string(options.timeout_ms) +
                           ": must be >= 0 (0 = no deadline)");
  }
  if (!options.devices.empty()) AF_RETURN_IF_ERROR(ParseDeviceCounts(options.devices).status());
  Status optimizer = MakeOptimizer(options.optimizer, options.learning_rate).status();
  if (!optimizer.ok()) {
    // A name that works with a sane rate means the rate is what is wrong.
    const bool name_ok = MakeOptimizer(options.optimizer, 0.01).ok();
    return InvalidArgument((name_ok ? "--lr: " : "--optimizer: ") + optimizer.message());
  }
  return CheckClusterFlags(options);
}

// The name of the last column in the header line of `path`.
StatusOr<std::string> LastColumnName(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in.is_open() || !std::getline(in, line)) return NotFound(path + ": cannot read the header");
  if (!line.empty() && line.back() == '\r') line.pop_back();
  std::string name = line.substr(line.rfind(',') == std::string::npos ? 0 : line.rfind(',') + 1);
  name.erase(0, name.find_first_not_of(" \t"));
  name.erase(name.find_last_not_of(" \t") + 1);
  return name;
}

// "path:LINE" of data row `row` (0-based) of a CSV file with a header, counting lines
// as the loader does (blank lines hold no row); "path: data row N" if unreadable.
std::string DataRowLocation(const std::string& path, int64_t row) {
  std::ifstream in(path);
  std::string line;
  int64_t line_number = 0;
  int64_t rows_seen = -1;  // the header is not a data row
  while (std::getline(in, line)) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (rows_seen++ == row) return path + ":" + std::to_string(line_number);
  }
  return path + ": data row " + std::to_string(row + 1);
}

// Every label of `data` (read from `path`) in [0, classes); `why` says where classes
// came from.
Status CheckLabels(const CsvData& data, const std::string& path, int64_t classes,
                   const std::string& why) {
  const int32_t* labels = data.labels.data<int32_t>();
  for (int64_t i = 0; i < data.labels.NumElements(); ++i) {
    if (labels[i] < 0 || labels[i] >= classes) {
      return InvalidArgument(DataRowLocation(path, i) + ": label " + std::to_string(labels[i]) +
                             " is outside [0, " + std::to_string(classes) + ") (" + why + ")");
    }
  }
  return Status::OK();
}

struct Data {
  std::string train_path;
  std::string test_path;
  std::string label_column;
  CsvData train;
  CsvData test;
  int64_t classes = 0;
};

StatusOr<Data> LoadData(const TrainCommandOptions& options) {
  Data data;
  if (options.train_path.empty()) {
    AF_ASSIGN_OR_RETURN(data.train_path, FindBundledData("iris_training.csv"));
  } else {
    data.train_path = ResolveUserPath(options.train_path);
  }
  if (options.test_path.empty()) {
    AF_ASSIGN_OR_RETURN(data.test_path, FindBundledData("iris_test.csv"));
  } else {
    data.test_path = ResolveUserPath(options.test_path);
  }
  CsvOptions csv;
  csv.label_column = options.label;
  AF_ASSIGN_OR_RETURN(data.train, LoadCsv(data.train_path, csv));
  AF_ASSIGN_OR_RETURN(data.test, LoadCsv(data.test_path, csv));
  if (options.label.empty()) {
    AF_ASSIGN_OR_RETURN(data.label_column, LastColumnName(data.train_path));
  } else {
    data.label_column = options.label;
  }
  if (data.train.labels.NumElements() == 0) {
    return InvalidArgument(data.train_path + ": no data rows to train on");
  }
  if (data.test.feature_names != data.train.feature_names) {
    const auto& a = data.train.feature_names;
    const auto& b = data.test.feature_names;
    size_t i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
    return InvalidArgument(data.test_path + ": its feature columns differ from " + data.train_path +
                           "'s at column " + std::to_string(i + 1) + " ('" +
                           (i < b.size() ? b[i] : "<none>") + "' instead of '" +
                           (i < a.size() ? a[i] : "<none>") + "')");
  }
  std::string why = "--classes " + std::to_string(options.classes);
  data.classes = options.classes;
  if (data.classes == 0) {
    const int32_t* labels = data.train.labels.data<int32_t>();
    const int32_t max_label = *std::max_element(labels, labels + data.train.labels.NumElements());
    data.classes = std::max<int64_t>(int64_t{max_label} + 1, 2);
    why = std::to_string(data.classes) + " classes from " + data.train_path +
          "'s largest label; set --classes to change";
  }
  AF_RETURN_IF_ERROR(CheckLabels(data.train, data.train_path, data.classes, why));
  AF_RETURN_IF_ERROR(CheckLabels(data.test, data.test_path, data.classes, why));
  return data;
}

// The --json line: the keys train_command.h promises first, then details.
nlohmann::ordered_json ResultJson(const EvalResult& eval, const TrainResult& train, double seconds,
                                  int64_t classes, const std::string& checkpoint_dir) {
  nlohmann::ordered_json j;
  j["accuracy"] = eval.accuracy;
  j["loss"] = eval.loss;
  j["global_step"] = eval.global_step;
  j["seconds"] = seconds;
  j["steps"] = train.steps;
  j["train_loss"] = train.last_loss;
  j["examples"] = eval.num_examples;
  j["classes"] = classes;
  if (!checkpoint_dir.empty()) j["checkpoint_dir"] = checkpoint_dir;
  return j;
}

Status Train(const TrainCommandOptions& options, std::ostream& out, bool interactive) {
  AF_ASSIGN_OR_RETURN(Data data, LoadData(options));

  DNNClassifierOptions model;
  if (options.normalize) {
    AF_ASSIGN_OR_RETURN(model.feature_columns,
                        NormalizedNumericColumns(data.train.feature_names, data.train.features));
  } else {
    model.feature_columns = NumericColumns(data.train.feature_names);
  }
  AF_ASSIGN_OR_RETURN(model.hidden_units, ParseHiddenUnits(options.hidden));
  model.n_classes = data.classes;
  if (!options.cluster.empty()) {
    DNNModelSpec spec;
    spec.feature_columns = model.feature_columns;
    spec.hidden_units = model.hidden_units;
    spec.n_classes = model.n_classes;
    spec.activation = model.activation;
    spec.label_column = data.label_column;
    return TrainOnCluster(options, spec, {data.train.features, data.train.labels},
                          {data.test.features, data.test.labels}, out);
  }
  model.optimizer = options.optimizer;
  model.learning_rate = options.learning_rate;
  model.seed = options.seed;
  model.label_column = data.label_column;
  model.timeout_in_ms = options.timeout_ms;
  if (!options.checkpoint_dir.empty()) model.model_dir = ResolveUserPath(options.checkpoint_dir);
  SessionOptions session_options;  // target "": the actor runtime
  if (!options.devices.empty()) {
    // With a GPU, nodes without a requested device default to /gpu:0.
    AF_ASSIGN_OR_RETURN(session_options.device_count, ParseDeviceCounts(options.devices));
  }
  model.session_factory = [session_options](const Graph* graph) {
    return NewSession(graph, session_options);
  };

  const auto start = std::chrono::steady_clock::now();
  AF_ASSIGN_OR_RETURN(std::unique_ptr<DNNClassifier> classifier,
                      DNNClassifier::Create(std::move(model)));

  const int64_t rows = data.train.labels.NumElements();
  const int64_t batches_per_epoch = (rows + options.batch - 1) / options.batch;
  const int64_t total_steps =
      options.epochs > 0 ? options.epochs * batches_per_epoch : options.steps;
  const int64_t repeat = options.epochs > 0 ? options.epochs : -1;
  const CsvData& train = data.train;
  InputFn train_input = [&train, &options, rows,
                         repeat]() -> StatusOr<std::shared_ptr<const Dataset>> {
    AF_ASSIGN_OR_RETURN(auto slices, Dataset::FromTensorSlices({train.features, train.labels}));
    // Batch before Repeat: every pass is whole and reshuffled with the seed.
    return slices->Shuffle(rows, options.seed)->Batch(options.batch)->Repeat(repeat);
  };
  ProgressBar bar(out, total_steps, interactive);
  StatusOr<TrainResult> trained =
      classifier->Train(train_input, options.epochs > 0 ? -1 : options.steps,
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

  if (options.json) {
    out << ResultJson(eval, *trained, seconds, data.classes, options.checkpoint_dir).dump() << "\n";
  } else {
    char line[256];
    const int64_t correct = static_cast<int64_t>(eval.accuracy * eval.num_examples + 0.5);
    std::snprintf(
        line, sizeof(line), "test accuracy %.4f (%lld/%lld), loss %.4f, global step %lld, %.2f s",
        eval.accuracy, static_cast<long long>(correct), static_cast<long long>(eval.num_examples),
        eval.loss, static_cast<long long>(eval.global_step), seconds);
    if (!options.checkpoint_dir.empty())
      out << "checkpoint saved in " << options.checkpoint_dir << "\n";
    out << line << "\n";
  }
  out.flush();
  return Status::OK();
}

}  // namespace

StatusOr<std::string> FindBundledData(const std::string& file) {
  std::vector<std::string> candidates;
  if (const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY")) {
    candidates.push_back(std::string(workspace) + "/" + kDataDir + file);
  }
  if (const char* runfiles = std::getenv("RUNFILES_DIR")) {
    candidates.push_back(std::string(runfiles) + "/" + kWorkspace + "/" + kDataDir + file);
  }
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    candidates.push_back(std::string(exe, static_cast<size_t>(n)) + ".runfiles/" + kWorkspace +
                         "/" + kDataDir + file);
  }
  candidates.push_back(kDataDir + file);  // `bazel run`'s runfiles tree, or the repo root
  for (const std::string& path : candidates) {
    if (FileExists(path)) return path;
  }
  std::string tried;
  for (const std::string& path : candidates) tried += (tried.empty() ? "" : ", ") + path;
  return NotFound("bundled data file " + file + " not found (looked at " + tried +
                  "): run from the repository root or pass the file explicitly");
}

int TrainCommand(const TrainCommandOptions& options, std::ostream& out, std::ostream& err,
                 bool interactive) {
  try {
    Status usage = CheckFlags(options);
    if (!usage.ok()) {
      PrintError(err, usage);
      return kExitUsageError;
    }
    Status status = Train(options, out, interactive);
    if (!status.ok()) {
      out.flush();
      PrintError(err, status);
      return kExitRuntimeError;
    }
    return kExitOk;
  } catch (const std::exception& e) {
    PrintError(err, Internal(std::string("unexpected exception: ") + e.what()));
    return kExitRuntimeError;
  }
}

Subcommand AddTrainSubcommand(CLI::App* parent) {
  auto options = std::make_shared<TrainCommandOptions>();
  CLI::App* app = parent->add_subcommand(
      "train", "Train a DNN classifier on a CSV file and print its test accuracy");
  app->add_option("--train", options->train_path, "Training CSV (default: bundled Iris)");
  app->add_option("--test", options->test_path, "Test CSV (default: bundled Iris)");
  app->add_option("--label", options->label, "Label column (default: the last one)");
  app->add_option("--hidden", options->hidden, "Hidden layer sizes, e.g. 10,10")
      ->capture_default_str();
  app->add_option("--classes", options->classes, "Number of classes (default: max label + 1)");
  app->add_option("--optimizer", options->optimizer, "sgd, momentum, adam or adagrad")
      ->capture_default_str();
  app->add_option("--lr", options->learning_rate, "Learning rate")->capture_default_str();
  app->add_option("--batch", options->batch, "Batch size")->capture_default_str();
  app->add_option("--steps", options->steps, "Training steps")->capture_default_str();
  app->add_option("--epochs", options->epochs, "Passes over the training set (overrides --steps)");
  app->add_option("--seed", options->seed, "Seed of the weights and the shuffle")
      ->capture_default_str();
  app->add_flag("--normalize", options->normalize, "Z-score features with training statistics");
  app->add_option("--checkpoint-dir", options->checkpoint_dir,
                  "Save a checkpoint and model.json here (resume from it if present)");
  // Range-checked in TrainCommand, whose messages are shorter than CLI11's.
  app->add_option("--timeout-ms", options->timeout_ms, "Deadline of each step in ms (0 = none)")
      ->capture_default_str();
  app->add_flag("--json", options->json, "End with one line of JSON");
  app->add_option("--devices", options->devices,
                  "Devices of the local session: cpu=N[,gpu=M] (default: 1 CPU, every GPU)");
  app->add_option("--cluster", options->cluster,
                  "Data-parallel: local:ps=P,worker=W (in this process) or a cluster JSON file");
  app->add_option("--job", options->job, "With a cluster file: this process's job")
      ->capture_default_str();
  app->add_option("--task", options->task, "With a cluster file: this process's worker index");
  app->add_option("--mode", options->mode, "sync, async or ssp:S (bounded staleness S)")
      ->capture_default_str();
  app->add_option("--replicas-to-aggregate", options->replicas_to_aggregate,
                  "sync: gradients averaged per update (default: every worker)");
  app->add_option("--max-restarts", options->max_restarts,
                  "Cluster file: restarts after a lost ps task before giving up (default 3)")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--checkpoint-every", options->checkpoint_every,
                  "Cluster file, chief: coordinated checkpoint every N global steps")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--reconnect-timeout-ms", options->reconnect_timeout_ms,
                  "Cluster file: how long to retry a lost ps task or wait for lost workers "
                  "(default 30000)")
      ->check(CLI::PositiveNumber);
  // --replication in-graph runs tools/in_graph_train.h instead.
  return WithReplicationFlag(Subcommand{app, [options]() {
                               return TrainCommand(*options, std::cout, std::cerr,
                                                   isatty(STDOUT_FILENO) != 0);
                             }},
                             options);
}

}  // namespace cli
}  // namespace actorflow
