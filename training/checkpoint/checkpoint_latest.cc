// Finding the checkpoint to resume from in a directory: the newest one that reads
// back intact, skipping (and saying so) newer ones that fail verification, and
// refusing a directory whose data files lost their manifests rather than reporting
// "no checkpoint" (which a trainer takes for a fresh start from step 0).
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "training/checkpoint/checkpoint.h"
#include "training/checkpoint/checkpoint_file.h"
#include "training/checkpoint/checkpoint_format.h"

namespace actorflow {

using checkpoint_file::JoinPath;

namespace {

// The basename "latest" names, if it is a checkpoint's ("" otherwise).
std::string LatestFileBasename(const std::string& dir) {
  auto text = checkpoint_file::ReadFileToString(JoinPath(dir, kLatestCheckpointFile));
  if (!text.ok()) return "";
  std::string name = *text;
  while (!name.empty() && (name.back() == '\n' || name.back() == '\r' || name.back() == ' ')) {
    name.pop_back();
  }
  return ParseCheckpointBasename(name) ? name : "";
}

// Reads the whole checkpoint and verifies it (manifest, size, checksums, finite
// values): OK when a restore from it would succeed as far as the files go.
Status VerifyCheckpoint(const std::string& prefix) {
  AF_ASSIGN_OR_RETURN(CheckpointManifest manifest, ReadManifestFile(prefix));
  return ReadCheckpointTensors(manifest, prefix + kCheckpointDataSuffix).status();
}

// Errors that say something about one checkpoint's files (so an older one may be
// fine), as opposed to the directory or the disk (permissions, I/O), which are
// returned as they are.
bool IsCheckpointDefect(const Status& s) {
  return s.code() == Code::kInternal || s.code() == Code::kInvalidArgument ||
         s.code() == Code::kNotFound;
}

std::string JoinNames(const std::vector<std::string>& names) {
  constexpr size_t kMaxNames = 10;
  std::string text;
  for (size_t i = 0; i < names.size() && i < kMaxNames; ++i) text += (i ? ", " : "") + names[i];
  if (names.size() > kMaxNames) text += ", ... (" + std::to_string(names.size() - kMaxNames) + " more)";
  return text;
}

}  // namespace

StatusOr<IntactCheckpoint> FindLatestIntactCheckpoint(const std::string& dir) {
  if (!checkpoint_file::IsDirectory(dir)) {
    return NotFound("no checkpoint directory '" + dir + "'");
  }
  AF_ASSIGN_OR_RETURN(std::vector<std::string> names, checkpoint_file::ListDirectory(dir));
  std::vector<int64_t> complete = CheckpointStepsWithSuffix(names, kCheckpointManifestSuffix);
  const std::vector<int64_t> with_data = CheckpointStepsWithSuffix(names, kCheckpointDataSuffix);

  // Candidates, newest first: what "latest" names, then every complete checkpoint by
  // descending step.
  std::vector<std::string> candidates;
  const std::string named = LatestFileBasename(dir);
  if (!named.empty()) candidates.push_back(named);
  std::reverse(complete.begin(), complete.end());
  for (int64_t step : complete) {
    const std::string basename = CheckpointBasename(step);
    if (basename != named) candidates.push_back(basename);
  }

  IntactCheckpoint result;
  Status newest_error;
  for (const std::string& basename : candidates) {
    const std::string prefix = JoinPath(dir, basename);
    Status s;
    if (!checkpoint_file::IsRegularFile(prefix + kCheckpointManifestSuffix)) {
      if (!checkpoint_file::IsRegularFile(prefix + kCheckpointDataSuffix)) continue;
      // "latest" names it and its data is there: only the manifest went missing.
      s = FailedPrecondition("checkpoint '" + prefix + "' has its data file but its manifest '" +
                             prefix + kCheckpointManifestSuffix + "' is missing");
    } else {
      s = VerifyCheckpoint(prefix);
      if (!s.ok() && !IsCheckpointDefect(s)) return s;
    }
    if (s.ok()) {
      result.prefix = prefix;
      return result;
    }
    if (newest_error.ok()) newest_error = s;
    result.skipped.push_back("'" + prefix + "': " + s.message());
  }
  if (!newest_error.ok()) {
    // Not one checkpoint reads back intact: the newest one's error, with the others'.
    std::string others;
    for (size_t i = 1; i < result.skipped.size(); ++i) others += "; " + result.skipped[i];
    return Status(newest_error.code(),
                  newest_error.message() +
                      (others.empty() ? std::string()
                                      : " (no older checkpoint is intact either" + others + ")"));
  }
  if (!with_data.empty()) {
    std::vector<std::string> files;
    for (int64_t step : with_data) files.push_back(CheckpointBasename(step) + kCheckpointDataSuffix);
    return FailedPrecondition(
        "checkpoint directory '" + dir + "' has checkpoint data files (" + JoinNames(files) +
        ") but no checkpoint manifest (ckpt-<step>" + kCheckpointManifestSuffix +
        "): the manifests were lost, so these checkpoints cannot be restored. Put the "
        "manifests back, or move the data files away to start training from step 0");
  }
  return NotFound("no checkpoint in directory '" + dir + "'");
}

StatusOr<std::string> LatestCheckpoint(const std::string& dir) {
  AF_ASSIGN_OR_RETURN(IntactCheckpoint found, FindLatestIntactCheckpoint(dir));
  for (const std::string& skipped : found.skipped) {
    std::cerr << "warning: skipping checkpoint " << skipped << "; using '" << found.prefix
              << "' instead\n";
  }
  return found.prefix;
}

StatusOr<std::string> CheckpointAtStep(const std::string& dir, int64_t global_step) {
  // A writer asks whether this step is saved already: cheap when it is not (the usual
  // case), and verified when it is, so that a corrupted one is not taken for the cut.
  const std::string prefix = JoinPath(dir, CheckpointBasename(global_step));
  if (!checkpoint_file::IsRegularFile(prefix + kCheckpointManifestSuffix)) {
    return NotFound("no checkpoint of global step " + std::to_string(global_step) + " in '" +
                    dir + "'");
  }
  AF_ASSIGN_OR_RETURN(CheckpointManifest manifest, ReadManifestFile(prefix));
  if (manifest.global_step != global_step) {
    return NotFound("checkpoint " + prefix + " records global step " +
                    std::to_string(manifest.global_step) + ", not " +
                    std::to_string(global_step));
  }
  AF_RETURN_IF_ERROR(ReadCheckpointTensors(manifest, prefix + kCheckpointDataSuffix).status());
  return prefix;
}

}  // namespace actorflow
