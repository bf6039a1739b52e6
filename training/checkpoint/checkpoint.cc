#include "training/checkpoint/checkpoint.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <set>
#include <utility>

#include "graph/ops.h"
#include "graph/scope.h"
#include "training/checkpoint/checkpoint_file.h"
#include "training/checkpoint/checkpoint_format.h"
#include "training/optimizers/partitioned_variable.h"

namespace actorflow {

using checkpoint_file::DurableFile;
using checkpoint_file::JoinPath;

namespace {

constexpr char kTempMarker[] = ".tmp.";

// ".<name>.tmp.<pid>.<n>": hidden, and never "ckpt-<step>.json", so no reader takes it
// for a checkpoint; the pid lets a later Save tell a dead writer's leftovers.
std::string TempPath(const std::string& dir, const std::string& name) {
  static std::atomic<uint64_t> counter{0};
  return JoinPath(dir, "." + name + kTempMarker + std::to_string(::getpid()) + "." +
                           std::to_string(counter.fetch_add(1)));
}

// Removes the temporary files of a failed Save.
class TempFiles {
 public:
  ~TempFiles() {
    for (const auto& path : paths_) checkpoint_file::RemoveFile(path);
  }
  void Add(const std::string& path) { paths_.push_back(path); }
  void Forget(const std::string& path) {
    paths_.erase(std::remove(paths_.begin(), paths_.end(), path), paths_.end());
  }

 private:
  std::vector<std::string> paths_;
};

// The test hook's byte count, if the environment variable is set.
StatusOr<std::optional<uint64_t>> CrashAfterBytes() {
  const char* value = std::getenv(kCheckpointCrashEnvVar);
  if (value == nullptr) return std::optional<uint64_t>();
  char* end = nullptr;
  errno = 0;
  unsigned long long n = std::strtoull(value, &end, 10);
  if (*value == '\0' || *value == '-' || *end != '\0' || errno != 0) {
    return InvalidArgument(std::string(kCheckpointCrashEnvVar) + "='" + value +
                           "' is not a non-negative integer");
  }
  return std::optional<uint64_t>(n);
}

Status KillSelf() {
  ::raise(SIGKILL);
  return Internal("the checkpoint crash hook could not kill its process");
}

// Appends `size` bytes, first dying by SIGKILL when that would pass `crash_after`
// bytes of the file (after writing up to exactly that many).
Status AppendOrCrash(DurableFile* file, const void* data, size_t size,
                     const std::optional<uint64_t>& crash_after) {
  if (crash_after && file->bytes_written() + size > *crash_after) {
    AF_RETURN_IF_ERROR(file->Append(data, *crash_after - file->bytes_written()));
    return KillSelf();
  }
  return file->Append(data, size);
}

Status WriteTempFile(const std::string& path, const std::string& text, TempFiles* temps) {
  AF_ASSIGN_OR_RETURN(DurableFile file, DurableFile::Create(path));
  temps->Add(path);
  AF_RETURN_IF_ERROR(file.Append(text.data(), text.size()));
  return file.SyncAndClose();
}

// Points "latest" at `basename`: temporary file, fsync, rename, directory fsync.
Status UpdateLatest(const std::string& dir, const std::string& basename) {
  TempFiles temps;
  const std::string temp = TempPath(dir, kLatestCheckpointFile);
  AF_RETURN_IF_ERROR(WriteTempFile(temp, basename + "\n", &temps));
  AF_RETURN_IF_ERROR(checkpoint_file::Rename(temp, JoinPath(dir, kLatestCheckpointFile)));
  temps.Forget(temp);
  return checkpoint_file::SyncDirectory(dir);
}

// Deletes the lowest-step checkpoints beyond `max_to_keep`, never `keep_step`: the
// manifest first, so that a crash in between leaves an orphan data file, not a
// checkpoint without data.
Status Prune(const std::string& dir, int max_to_keep, int64_t keep_step) {
  if (max_to_keep <= 0) return Status::OK();
  AF_ASSIGN_OR_RETURN(std::vector<std::string> names, checkpoint_file::ListDirectory(dir));
  std::vector<int64_t> steps = CheckpointStepsWithSuffix(names, kCheckpointManifestSuffix);
  size_t excess = steps.size() > static_cast<size_t>(max_to_keep) ? steps.size() - max_to_keep : 0;
  for (size_t i = 0; i < steps.size() && excess > 0; ++i) {
    if (steps[i] == keep_step) continue;
    const std::string prefix = JoinPath(dir, CheckpointBasename(steps[i]));
    Status s = checkpoint_file::RemoveFile(prefix + kCheckpointManifestSuffix);
    if (s.ok()) s = checkpoint_file::RemoveFile(prefix + kCheckpointDataSuffix);
    if (!s.ok()) return s.WithContext("deleting old checkpoint '" + prefix + "'");
    --excess;
  }
  return checkpoint_file::SyncDirectory(dir);
}

// Best effort: removes what interrupted Saves and Prunes left behind: temporary files
// of Saves whose process no longer exists (killed mid-write; files of live processes,
// this one included, are left alone), and data files without a manifest (a Save
// killed between its two renames, a Prune killed between its two unlinks), which no
// reader can use. Runs before a Save writes, so that leftovers go even when that Save
// fails, and again after it.
void RemoveOrphans(const std::string& dir) {
  auto listed = checkpoint_file::ListDirectory(dir);
  if (!listed.ok()) return;
  const std::vector<std::string>& names = *listed;
  const std::vector<int64_t> complete = CheckpointStepsWithSuffix(names, kCheckpointManifestSuffix);
  for (int64_t step : CheckpointStepsWithSuffix(names, kCheckpointDataSuffix)) {
    if (std::binary_search(complete.begin(), complete.end(), step)) continue;
    checkpoint_file::RemoveFile(JoinPath(dir, CheckpointBasename(step) + kCheckpointDataSuffix));
  }
  for (const auto& name : names) {
    if (name.empty() || name[0] != '.') continue;
    size_t marker = name.rfind(kTempMarker);
    if (marker == std::string::npos) continue;
    size_t pid_begin = marker + sizeof(kTempMarker) - 1;
    size_t pid_end = name.find('.', pid_begin);
    if (pid_end == std::string::npos || pid_end == pid_begin) continue;
    std::string pid_text = name.substr(pid_begin, pid_end - pid_begin);
    if (pid_text.find_first_not_of("0123456789") != std::string::npos || pid_text.size() > 9) continue;
    pid_t pid = static_cast<pid_t>(std::stol(pid_text));
    if (pid <= 0 || pid == ::getpid()) continue;
    if (::kill(pid, 0) != 0 && errno == ESRCH) checkpoint_file::RemoveFile(JoinPath(dir, name));
  }
  checkpoint_file::SyncDirectory(dir);
}

// "a, b, c", at most 20 items then "... (N more)".
std::string JoinList(const std::vector<std::string>& items, const std::string& separator = ", ") {
  constexpr size_t kMaxItems = 20;
  std::string text;
  for (size_t i = 0; i < items.size() && i < kMaxItems; ++i) {
    text += (i == 0 ? "" : separator) + items[i];
  }
  if (items.size() > kMaxItems) {
    text += separator + "... (" + std::to_string(items.size() - kMaxItems) + " more)";
  }
  return text;
}

// A checkpoint argument (prefix or directory) as a prefix.
StatusOr<std::string> ResolveCheckpoint(const std::string& checkpoint) {
  if (checkpoint.empty()) return InvalidArgument("the checkpoint path is empty");
  if (checkpoint_file::IsDirectory(checkpoint)) return LatestCheckpoint(checkpoint);
  return checkpoint;
}

}  // namespace

Saver::Saver(SaverOptions options, std::vector<SavedVariable> variables, std::string restore_op)
    : options_(std::move(options)), variables_(std::move(variables)), restore_op_(std::move(restore_op)) {
  for (const auto& v : variables_) {
    for (const auto& part : v.parts) var_names_.push_back(part.node);
  }
}

StatusOr<std::unique_ptr<Saver>> Saver::Create(Graph* graph, SaverOptions options) {
  if (graph == nullptr) return InvalidArgument("Saver::Create: the graph is null");
  const std::vector<std::string> names =
      options.var_names.empty() ? graph->GetCollection(kVariablesCollection) : options.var_names;
  if (names.empty()) {
    return InvalidArgument("Saver::Create: no variables to save (SaverOptions.var_names is empty "
                           "and so is the graph's \"" + std::string(kVariablesCollection) +
                           "\" collection)");
  }
  auto partitionings = GetVariablePartitionings(*graph);
  if (!partitionings.ok()) return partitionings.status().WithContext("Saver::Create");
  std::map<std::string, const VariablePartitioning*> partitioning_of;  // part -> whole
  for (const VariablePartitioning& p : *partitionings) {
    for (const std::string& part : p.parts) partitioning_of[part] = &p;
  }
  std::vector<SavedVariable> variables;
  std::set<std::string> seen;
  std::set<std::string> saved_whole;  // partitioned variables already added
  for (const auto& name : names) {
    const Node* node = graph->FindNode(name);
    if (node == nullptr) return NotFound("Saver::Create: variable '" + name + "' is not a node of the graph");
    if (node->op() != "Variable") {
      return InvalidArgument("Saver::Create: " + node->Describe() + " is not a Variable");
    }
    if (!seen.insert(name).second) {
      return InvalidArgument("Saver::Create: variable '" + name + "' is listed twice");
    }
    auto whole = partitioning_of.find(name);
    if (whole == partitioning_of.end()) {
      variables.push_back({name, node->output_dtype(0), node->output_shape(0),
                           {{name, node->output_shape(0), ""}}});
      continue;
    }
    const VariablePartitioning& p = *whole->second;
    if (!saved_whole.insert(p.name).second) continue;
    SavedVariable v{p.name, p.dtype, p.shape, {}};
    for (size_t k = 0; k < p.parts.size(); ++k) v.parts.push_back({p.parts[k], p.part_shapes[k], ""});
    variables.push_back(std::move(v));
  }

  // "save", else "save_1", ...: the first name scope none of whose nodes exist yet.
  std::string scope_name = "save";
  auto taken = [&](const std::string& prefix) {
    if (graph->FindNode(prefix + "/restore_all") != nullptr) return true;
    for (const auto& v : variables) {
      for (const auto& part : v.parts) {
        if (graph->FindNode(prefix + "/" + part.node + "/value") != nullptr ||
            graph->FindNode(prefix + "/" + part.node + "/Assign") != nullptr) {
          return true;
        }
      }
    }
    return false;
  };
  for (int i = 1; taken(scope_name); ++i) scope_name = "save_" + std::to_string(i);

  Scope root = Scope::ForGraph(graph).NewSubScope(scope_name);
  std::vector<Output> assigns;
  for (auto& v : variables) {
    for (auto& part : v.parts) {
      Output var(graph->FindNode(part.node));
      // The variable's device as well as its colocation: a master connects to the
      // tasks a step's nodes request, and a restore may be a fresh session's first step.
      Scope var_scope =
          root.NewSubScope(part.node).ColocateWith(var).WithDevice(var.node->requested_device());
      Output value = Placeholder(var_scope.WithOpName("value"), v.dtype, part.shape);
      assigns.push_back(Assign(var_scope.WithOpName("Assign"), var, value));
      if (!root.ok()) return root.status().WithContext("Saver::Create");
      part.placeholder = value.name();
    }
  }
  const Node* restore = NoOp(root.WithOpName("restore_all").WithControlDependencies(assigns));
  if (!root.ok() || restore == nullptr) return root.status().WithContext("Saver::Create");
  return std::unique_ptr<Saver>(new Saver(std::move(options), std::move(variables), restore->name()));
}

StatusOr<std::string> Saver::Save(Session* session, const std::string& dir, int64_t global_step) {
  if (session == nullptr) return InvalidArgument("Saver::Save: the session is null");
  const std::string prefix = JoinPath(dir, CheckpointBasename(global_step));
  if (checkpoint_file::IsRegularFile(prefix + kCheckpointManifestSuffix)) {
    return AlreadyExists("Saver::Save: checkpoint '" + prefix + "' already exists (global step " +
                         std::to_string(global_step) +
                         " was saved before; advance the step or save into another directory)");
  }

  std::vector<Tensor> values;
  Status fetched = session->Run({}, var_names_, {}, &values);
  if (!fetched.ok()) return fetched.WithContext("Saver::Save: fetching the variables");
  std::vector<std::pair<std::string, Tensor>> tensors;
  size_t i = 0;  // into values: one per part, in var_names_ order
  for (const SavedVariable& v : variables_) {
    std::vector<Tensor> parts;
    for (const SavedPart& part : v.parts) {
      if (i >= values.size() || values[i].dtype() != v.dtype || values[i].shape() != part.shape) {
        return Internal("Saver::Save: the session returned " +
                        (i < values.size() ? values[i].DebugString() : std::string("nothing")) +
                        " for variable '" + part.node + "', declared " + DTypeName(v.dtype) +
                        part.shape.ToString());
      }
      parts.push_back(values[i++]);
    }
    if (parts.size() == 1) {
      tensors.emplace_back(v.name, parts.front());
    } else {
      auto whole = ConcatAlongDim0(parts);
      if (!whole.ok()) return whole.status().WithContext("Saver::Save: variable '" + v.name + "'");
      tensors.emplace_back(v.name, std::move(whole).value());
    }
  }
  return WriteCheckpointTensors(dir, global_step, tensors, options_.max_to_keep);
}

StatusOr<std::string> WriteCheckpointTensors(
    const std::string& dir, int64_t global_step,
    const std::vector<std::pair<std::string, Tensor>>& tensors, int max_to_keep) {
  AF_RETURN_IF_ERROR(CheckCheckpointStep(global_step).WithContext("saving into '" + dir + "'"));
  AF_ASSIGN_OR_RETURN(std::optional<uint64_t> crash_after, CrashAfterBytes());
  AF_RETURN_IF_ERROR(checkpoint_file::CreateDirectories(dir));
  const std::string basename = CheckpointBasename(global_step);
  const std::string prefix = JoinPath(dir, basename);
  const std::string manifest_path = prefix + kCheckpointManifestSuffix;
  const std::string data_path = prefix + kCheckpointDataSuffix;
  if (checkpoint_file::IsRegularFile(manifest_path)) {
    return AlreadyExists("checkpoint '" + prefix + "' already exists (global step " +
                         std::to_string(global_step) +
                         " was saved before; advance the step or save into another directory)");
  }
  for (const auto& [name, tensor] : tensors) {
    if (!tensor.IsInitialized()) {
      return InvalidArgument("checkpoint '" + prefix + "': tensor '" + name + "' has no value");
    }
    Status finite = CheckFiniteValues(name, tensor);
    if (!finite.ok()) return finite.WithContext("checkpoint '" + prefix + "' not saved");
  }
  RemoveOrphans(dir);
  const CheckpointManifest manifest = BuildManifest(global_step, tensors);

  TempFiles temps;
  const std::string data_temp = TempPath(dir, basename + kCheckpointDataSuffix);
  {
    auto created = DurableFile::Create(data_temp);
    if (!created.ok()) return created.status().WithContext("Saver::Save: checkpoint directory '" + dir + "'");
    DurableFile data = std::move(created).value();
    temps.Add(data_temp);
    for (const auto& [name, tensor] : tensors) {
      AF_RETURN_IF_ERROR(AppendOrCrash(&data, tensor.raw_data(), tensor.TotalBytes(), crash_after));
    }
    if (crash_after) AF_RETURN_IF_ERROR(KillSelf());
    AF_RETURN_IF_ERROR(data.SyncAndClose());
  }
  const std::string manifest_temp = TempPath(dir, basename + kCheckpointManifestSuffix);
  AF_RETURN_IF_ERROR(WriteTempFile(manifest_temp, ManifestToJsonText(manifest), &temps));

  // The data file first: a manifest must never be visible without its data.
  AF_RETURN_IF_ERROR(checkpoint_file::Rename(data_temp, data_path));
  temps.Forget(data_temp);
  temps.Add(data_path);  // an orphan without its manifest if the next rename fails
  AF_RETURN_IF_ERROR(checkpoint_file::Rename(manifest_temp, manifest_path));
  temps.Forget(manifest_temp);
  temps.Forget(data_path);
  AF_RETURN_IF_ERROR(checkpoint_file::SyncDirectory(dir));

  Status s = UpdateLatest(dir, basename);
  if (s.ok()) s = Prune(dir, max_to_keep, global_step);
  if (!s.ok()) return s.WithContext("Saver::Save: checkpoint '" + prefix + "' was written, but");
  RemoveOrphans(dir);
  return prefix;
}

Status Saver::Restore(Session* session, const std::string& checkpoint) {
  if (session == nullptr) return InvalidArgument("Saver::Restore: the session is null");
  AF_ASSIGN_OR_RETURN(std::string prefix, ResolveCheckpoint(checkpoint));
  AF_ASSIGN_OR_RETURN(auto tensors, ReadCheckpoint(prefix));
  // Every difference is collected first, so that a checkpoint of another model is
  // reported with all the variables that differ.
  std::vector<std::string> missing;     // "no tensor for variable 'x'"
  std::vector<std::string> mismatched;  // "variable 'x' has shape ... but ..."
  std::set<std::string> restored;
  FeedList feeds;
  for (const SavedVariable& v : variables_) {
    restored.insert(v.name);
    auto it = tensors.find(v.name);
    if (it == tensors.end()) {
      missing.push_back("no tensor for variable '" + v.name + "'");
      continue;
    }
    const Tensor& t = it->second;
    if (t.dtype() != v.dtype) {
      mismatched.push_back("variable '" + v.name + "' is " + DTypeName(v.dtype) +
                           " in the graph but " + DTypeName(t.dtype()));
      continue;
    }
    if (t.shape() != v.shape) {
      mismatched.push_back("variable '" + v.name + "' has shape " + v.shape.ToString() +
                           " in the graph but " + t.shape().ToString());
      continue;
    }
    if (v.parts.size() == 1) {
      feeds.emplace_back(v.parts.front().placeholder, t);
      continue;
    }
    int64_t row = 0;
    for (const SavedPart& part : v.parts) {
      auto rows = SliceAlongDim0(t, row, part.shape.dim(0));
      if (!rows.ok()) return rows.status().WithContext("Saver::Restore: variable '" + v.name + "'");
      feeds.emplace_back(part.placeholder, std::move(rows).value());
      row += part.shape.dim(0);
    }
  }
  if (!missing.empty() || !mismatched.empty()) {
    std::vector<std::string> extra;  // only the checkpoint has them
    for (const auto& [name, tensor] : tensors) {
      if (restored.count(name) == 0) extra.push_back("'" + name + "'");
    }
    const Code code = mismatched.empty() ? Code::kNotFound : Code::kInvalidArgument;
    if (missing.size() + mismatched.size() == 1 && extra.empty()) {
      // One difference: the message of that one variable.
      if (!missing.empty()) {
        return Status(code, "Saver::Restore: checkpoint '" + prefix + "' has " + missing.front());
      }
      return Status(code, "Saver::Restore: " + mismatched.front() + " in checkpoint '" + prefix + "'");
    }
    std::vector<std::string> problems = mismatched;
    problems.insert(problems.end(), missing.begin(), missing.end());
    if (!extra.empty()) {
      problems.push_back("the checkpoint has variables the graph lacks: " + JoinList(extra));
    }
    return Status(code, "Saver::Restore: checkpoint '" + prefix +
                            "' does not match the graph (a checkpoint of another model?): " +
                            JoinList(problems, "; "));
  }
  Status s = session->Run(feeds, {}, {restore_op_}, nullptr);
  if (!s.ok()) return s.WithContext("Saver::Restore: assigning the variables from '" + prefix + "'");
  return Status::OK();
}

StatusOr<std::map<std::string, Tensor>> ReadCheckpoint(const std::string& checkpoint) {
  AF_ASSIGN_OR_RETURN(std::string prefix, ResolveCheckpoint(checkpoint));
  AF_ASSIGN_OR_RETURN(CheckpointManifest manifest, ReadManifestFile(prefix));
  return ReadCheckpointTensors(manifest, prefix + kCheckpointDataSuffix);
}

StatusOr<int64_t> ReadCheckpointGlobalStep(const std::string& checkpoint) {
  AF_ASSIGN_OR_RETURN(std::string prefix, ResolveCheckpoint(checkpoint));
  AF_ASSIGN_OR_RETURN(CheckpointManifest manifest, ReadManifestFile(prefix));
  return manifest.global_step;
}

}  // namespace actorflow
