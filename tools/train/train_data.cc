#include "tools/train/train_data.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <vector>

#include "tools/cli/cli_common.h"
#include "tools/train/train_datasets.h"

namespace actorflow {
namespace cli {
namespace {

constexpr char kWorkspace[] = "actorflow";
constexpr char kDataDir[] = "examples/data/";

bool FileExists(const std::string& path) { return std::ifstream(path).is_open(); }

// A --train or --test value: the bundled file when empty.
StatusOr<std::string> DataFilePath(const std::string& flag, const std::string& bundled) {
  if (flag.empty()) return FindBundledData(bundled);
  return ResolveUserPath(flag);
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

StatusOr<TrainingData> LoadTrainingData(const TrainCommandOptions& options) {
  if (!options.dataset.empty()) return LoadNamedDataset(options);
  TrainingData data;
  AF_ASSIGN_OR_RETURN(data.train_path, DataFilePath(options.train_path, "iris_training.csv"));
  AF_ASSIGN_OR_RETURN(data.test_path, DataFilePath(options.test_path, "iris_test.csv"));
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
  return data;
}

StatusOr<int64_t> ResolveClasses(const TrainingData& data, int64_t classes) {
  std::string why = "--classes " + std::to_string(classes);
  if (classes <= 0) {
    const int32_t* labels = data.train.labels.data<int32_t>();
    const int32_t max_label = *std::max_element(labels, labels + data.train.labels.NumElements());
    classes = std::max<int64_t>(int64_t{max_label} + 1, 2);
    why = std::to_string(classes) + " classes from " + data.train_path +
          "'s largest label; set --classes to change";
  }
  AF_RETURN_IF_ERROR(CheckLabels(data.train, data.train_path, classes, why));
  AF_RETURN_IF_ERROR(CheckLabels(data.test, data.test_path, classes, why));
  return classes;
}

InputFn TrainingInput(const CsvData& data, int64_t batch, uint64_t seed, int64_t epochs) {
  const int64_t rows = data.labels.NumElements();
  const int64_t repeat = epochs > 0 ? epochs : -1;
  return [&data, rows, batch, seed, repeat]() -> StatusOr<std::shared_ptr<const Dataset>> {
    AF_ASSIGN_OR_RETURN(auto slices, Dataset::FromTensorSlices({data.features, data.labels}));
    // Batch before Repeat: every pass is whole and reshuffled with the seed.
    return slices->Shuffle(rows, seed)->Batch(batch)->Repeat(repeat);
  };
}

InputFn EvaluationInput(const CsvData& data) {
  return [&data]() -> StatusOr<std::shared_ptr<const Dataset>> {
    AF_ASSIGN_OR_RETURN(auto slices, Dataset::FromTensorSlices({data.features, data.labels}));
    return slices->Batch(256);
  };
}

}  // namespace cli
}  // namespace actorflow
