#include "training/checkpoint/ps_checkpoint.h"

#include <utility>
#include <vector>

#include "training/checkpoint/checkpoint.h"
#include "training/checkpoint/checkpoint_format.h"

namespace actorflow {
namespace {

// The int64 scalar a model's own Saver checkpoints its global step as
// (training/optimizers/variables.h), so that a cut reads like any checkpoint of the model.
constexpr char kGlobalStepVariable[] = "global_step";

}  // namespace

StatusOr<PsCheckpointInfo> SavePsCheckpoint(ParameterClient* client, const std::string& dir,
                                            int64_t version, int64_t timeout_ms,
                                            int max_to_keep) {
  if (client == nullptr) return InvalidArgument("SavePsCheckpoint: the client is null");
  AF_ASSIGN_OR_RETURN(ParameterSnapshot cut, client->Snapshot(version, timeout_ms));
  PsCheckpointInfo info;
  info.global_step = cut.global_step;
  StatusOr<std::string> same = CheckpointAtStep(dir, cut.global_step);
  if (same.ok()) {
    info.prefix = *same;  // nothing trained since: that checkpoint is this cut
    return info;
  }
  std::vector<std::pair<std::string, Tensor>> tensors(cut.values.begin(), cut.values.end());
  // The slots go beside the variables, as ordinary tensors ("<var>/<suffix>"); a
  // restore tells them apart by that name.
  for (const auto& [name, slot] : cut.slots) {
    if (cut.values.count(name) != 0 || name == kGlobalStepVariable) {
      return InvalidArgument("SavePsCheckpoint: optimizer slot '" + name +
                             "' has the name of a variable; rename the variable (a name "
                             "'<var>/<slot>' is read back as a slot of <var>)");
    }
    tensors.emplace_back(name, slot);
  }
  if (cut.values.count(kGlobalStepVariable) == 0) {
    tensors.emplace_back(kGlobalStepVariable, Tensor::Scalar<int64_t>(cut.global_step));
  }
  AF_ASSIGN_OR_RETURN(info.prefix,
                      WriteCheckpointTensors(dir, cut.global_step, tensors, max_to_keep));
  return info;
}

StatusOr<PsCheckpointInfo> RestorePsCheckpoint(ParameterClient* client,
                                               const std::string& checkpoint, int64_t timeout_ms) {
  if (client == nullptr) return InvalidArgument("RestorePsCheckpoint: the client is null");
  // A directory stands for its latest checkpoint: resolved once, so that what is
  // read is what is reported.
  StatusOr<std::string> latest = LatestCheckpoint(checkpoint);
  const std::string prefix = latest.ok() ? *latest : checkpoint;
  AF_ASSIGN_OR_RETURN(auto values, ReadCheckpoint(prefix));
  // Variables and optimizer slots go to Restore together (it tells them apart by
  // their names); the global step travels as the shards' version, not as a variable.
  auto step_value = values.find(kGlobalStepVariable);
  if (step_value != values.end() && step_value->second.dtype() == DType::kInt64) {
    values.erase(step_value);
  }
  AF_ASSIGN_OR_RETURN(int64_t step, ReadCheckpointGlobalStep(prefix));
  Status restored = client->Restore(values, step, timeout_ms);
  if (!restored.ok()) {
    return restored.WithContext("restoring checkpoint '" + prefix + "' (global step " +
                                std::to_string(step) + ") into the parameter servers");
  }
  PsCheckpointInfo info;
  info.global_step = step;
  info.prefix = prefix;
  return info;
}

}  // namespace actorflow
