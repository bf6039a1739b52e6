// Checkpoints (TensorFlow 1.x's tf.train.Saver): save a graph's variables through a
// Session into a directory, restore them, find the newest checkpoint, and read one
// without a graph (tools, prediction). The file format is in
// training/checkpoint/checkpoint_format.h.
//
//   auto saver = Saver::Create(graph, {});           // every variable, keep 5
//   session->Run({}, {}, {"init"}, nullptr);
//   ... train ...
//   auto prefix = (*saver)->Save(session.get(), "/models/run1", step);  // ".../ckpt-<step>"
//   // later, in a fresh session over the same graph (no init needed):
//   (*saver)->Restore(session.get(), "/models/run1");  // the directory's latest
//
// Durability and atomicity: Save writes the data file and the manifest under
// temporary names (".ckpt-<step>.data.tmp.<pid>.<n>", never taken for a checkpoint)
// in the directory, fsyncs each, renames the data file, then the manifest (the
// manifest's presence is what makes a checkpoint exist), fsyncs the directory, then
// replaces "latest" atomically (temporary file, fsync, rename, directory fsync), and
// only then deletes old checkpoints. A crash at any point leaves every earlier
// checkpoint intact and "latest" naming a complete checkpoint. What a crash leaves
// behind (temporary files of a dead writer, data files without a manifest) is
// removed by the next Save into the directory.
//
// Restore is all or nothing: the checkpoint is read and verified (manifest, every
// checksum, every variable present with the graph's dtype and shape) before any
// variable is assigned, in one Run.
//
// Test hook: when the environment variable ACTORFLOW_CHECKPOINT_TEST_CRASH_AFTER_BYTES
// is N (a non-negative integer), Save writes the first N bytes of the data file (all of
// it if smaller) and then kills its own process with SIGKILL.
//
// Thread safety: a Saver may be used from several threads once created, but two Saves
// into one directory must not run at the same time (the pruning of one could count
// the other's checkpoint); Create adds nodes to the graph and needs exclusive access
// to it, as Graph::AddNode does.
#ifndef ACTORFLOW_TRAINING_CHECKPOINT_CHECKPOINT_H_
#define ACTORFLOW_TRAINING_CHECKPOINT_CHECKPOINT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "kernels/session.h"

namespace actorflow {

inline constexpr char kCheckpointCrashEnvVar[] = "ACTORFLOW_CHECKPOINT_TEST_CRASH_AFTER_BYTES";

struct SaverOptions {
  // How many checkpoints Save leaves in the directory: after writing one it deletes
  // the complete checkpoints with the lowest global steps beyond this many (never the
  // one just written). <= 0 keeps every checkpoint.
  int max_to_keep = 5;
  // The Variable nodes to save and restore, by name. Empty: every variable in the
  // graph's kVariablesCollection (optimizer slots and global_step included).
  std::vector<std::string> var_names;
};

class Saver {
 public:
  // Adds, under "save/" (or "save_1/", ... when taken), one Placeholder
  // "save/<var>/value" [var shape] and one Assign "save/<var>/Assign" per variable,
  // and the NoOp "save/restore_all" that runs every Assign. Errors: NotFound for a
  // name that is not a node; InvalidArgument for a node that is not a Variable, a
  // duplicate name, or no variable at all; GetVariablePartitionings' errors; builder
  // errors naming the node.
  //
  // Partitioned variables (training/optimizers/partitioned_variable.h, their optimizer slots
  // included): a listed part stands for its whole variable, which is checkpointed as
  // one tensor under its whole name (the parts joined along dimension 0 on Save, the
  // tensor split into the graph's parts on Restore), so a checkpoint restores into any
  // number of shards, or into an unpartitioned variable of that name and shape.
  static StatusOr<std::unique_ptr<Saver>> Create(Graph* graph, SaverOptions options);

  // Fetches the variables through `session` (one Run, so the values are a consistent
  // snapshot) and writes checkpoint "ckpt-<global_step>" into `dir` (created with its
  // parents). Returns the checkpoint's path prefix "<dir>/ckpt-<global_step>".
  // Errors: the session's (e.g. FailedPrecondition for an uninitialized variable);
  // InvalidArgument naming the variable when a float variable holds a NaN or an
  // infinity (nothing is written);
  // PermissionDenied or Unavailable naming `dir` when it cannot be created or written;
  // AlreadyExists when `dir` has a checkpoint of this step (replacing it in place
  // could not be crash-safe: advance the step or use another directory). An error
  // before the manifest is in place adds no checkpoint and leaves "latest" unchanged;
  // one after it (updating "latest", deleting old checkpoints) says the checkpoint was
  // written.
  StatusOr<std::string> Save(Session* session, const std::string& dir, int64_t global_step);

  // Restores every variable from `checkpoint`: a path prefix from Save, or a directory
  // (its LatestCheckpoint). Tensors of the checkpoint that the graph does not have are
  // ignored (a prediction graph restores a training checkpoint). Errors (nothing is
  // assigned): NotFound when there is no such checkpoint or it lacks variables;
  // ReadCheckpoint's errors; InvalidArgument when a tensor's dtype or shape differs
  // from the graph's variable (expected vs found); the session's errors. A checkpoint
  // of another model names every variable that differs in one message: those it
  // lacks, those of another dtype or shape, and (then) those only it has.
  Status Restore(Session* session, const std::string& checkpoint);

  // The Variable nodes saved and restored (the parts of a partitioned variable
  // included), in the order Save fetches them.
  const std::vector<std::string>& var_names() const { return var_names_; }

 private:
  // One Variable node: fetched on Save, assigned from `placeholder` on Restore.
  struct SavedPart {
    std::string node;
    Shape shape;              // fully defined
    std::string placeholder;  // fed with the restored value
  };
  // One checkpoint tensor: a Variable node (one part, itself), or a partitioned
  // variable (training/optimizers/partitioned_variable.h) saved whole under its whole name, its
  // parts in order along dimension 0.
  struct SavedVariable {
    std::string name;
    DType dtype;
    Shape shape;  // the whole shape
    std::vector<SavedPart> parts;
  };
  Saver(SaverOptions options, std::vector<SavedVariable> variables, std::string restore_op);

  SaverOptions options_;
  std::vector<SavedVariable> variables_;
  std::vector<std::string> var_names_;
  std::string restore_op_;
};

// Writes `tensors` (names unique) as checkpoint "ckpt-<global_step>" of `dir`, with
// Save's durability, atomicity, "latest" update and pruning (max_to_keep as in
// SaverOptions); for writers without a graph (parameter servers' checkpoints).
// Returns the path prefix. Errors as Save's (AlreadyExists when the step exists).
StatusOr<std::string> WriteCheckpointTensors(
    const std::string& dir, int64_t global_step,
    const std::vector<std::pair<std::string, Tensor>>& tensors, int max_to_keep = 5);

// The checkpoint of a directory to resume from, and the newer ones passed over.
struct IntactCheckpoint {
  std::string prefix;  // "<dir>/ckpt-<step>"
  // One entry per newer checkpoint skipped because it failed verification, newest
  // first: "'<prefix>': <why>" (a checksum mismatch, a truncated data file, a lost
  // manifest, non-finite values).
  std::vector<std::string> skipped;
};

// The newest INTACT checkpoint of `dir`: candidates are the one "latest" names, then
// every complete checkpoint (one with a manifest) by descending step; each is read
// whole and verified (manifest, data size, checksums, finite values) and the first
// that passes is returned, with the ones that did not in `skipped`. Errors: NotFound
// when the directory or any checkpoint in it is missing; FailedPrecondition naming
// the directory and the files when it holds checkpoint data files but no manifest at
// all (the manifests were lost: not a fresh start); when no checkpoint is intact, the
// newest one's error (e.g. Internal "checksum mismatch") listing the others'; I/O
// errors (Unavailable, PermissionDenied) as they come.
StatusOr<IntactCheckpoint> FindLatestIntactCheckpoint(const std::string& dir);
// FindLatestIntactCheckpoint(dir)'s prefix; writes one warning line to stderr per
// skipped checkpoint, naming it and why. Every reader of "the latest checkpoint"
// (Saver::Restore of a directory, ReadCheckpoint, `actorflow predict`, the recovery
// supervisor) goes through this.
StatusOr<std::string> LatestCheckpoint(const std::string& dir);
// "<dir>/ckpt-<global_step>" when that checkpoint exists, records this global step
// and is intact (a checkpoint of this very step was written already); NotFound when
// it does not exist; its verification error when it is corrupted.
StatusOr<std::string> CheckpointAtStep(const std::string& dir, int64_t global_step);

// Reads a checkpoint without a graph: `checkpoint` is a path prefix or a directory
// (its latest). Returns name -> tensor, every tensor verified against its checksum.
// Errors: NotFound when there is no such checkpoint; InvalidArgument naming the
// manifest file (with line and column for malformed JSON) for a bad manifest;
// Internal with the tensor's name and "checksum mismatch" for corrupted data (see
// ReadCheckpointTensors in training/checkpoint/checkpoint_format.h).
StatusOr<std::map<std::string, Tensor>> ReadCheckpoint(const std::string& checkpoint);
// The global step recorded in a checkpoint's manifest (without reading its data).
StatusOr<int64_t> ReadCheckpointGlobalStep(const std::string& checkpoint);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_CHECKPOINT_CHECKPOINT_H_
