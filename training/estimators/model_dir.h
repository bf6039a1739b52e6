// The model directory of the between-graph trainers (word2vec, wide & deep) given as
// `actorflow train --checkpoint-dir DIR`:
//
//   DIR/ckpt-<step>.*, DIR/latest   the chief's variables (training/checkpoint/checkpoint.h);
//                                   a partitioned table is one tensor, whatever its shards
//   DIR/serving_graph.json          the chief's graph (graph/graph_json.h)
//   DIR/serving.json                {"model": "word2vec", "graph": "serving_graph.json",
//                                    "inputs": {"words": "serving/words"},
//                                    "outputs": {"embedding": "serving/embedding"}}
//
// Training in a directory that has a checkpoint resumes from it (the variables and the
// global step); `actorflow export --checkpoint-dir DIR` turns serving.json into a
// servable: the graph pruned to the outputs, its variables frozen from the latest
// checkpoint (training/serving/servable.h).
//
//   AF_ASSIGN_OR_RETURN(ChiefCheckpoints checkpoints, ChiefCheckpoints::Create(graph, dir));
//   ... open the chief's session over `graph` ...
//   AF_ASSIGN_OR_RETURN(int64_t step, checkpoints.RestoreOrInitialize(chief, "init"));
//   ... train `n` steps ...
//   AF_RETURN_IF_ERROR(checkpoints.Save(chief, step + n, *graph, serving));
//
// Thread safety: a ChiefCheckpoints is used by the thread that drives the chief.
#ifndef ACTORFLOW_TRAINING_ESTIMATORS_MODEL_DIR_H_
#define ACTORFLOW_TRAINING_ESTIMATORS_MODEL_DIR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "graph/graph.h"
#include "graph/status.h"
#include "kernels/session.h"

namespace actorflow {

class Saver;

inline constexpr char kServingSpecFile[] = "serving.json";
inline constexpr char kServingGraphFile[] = "serving_graph.json";

// What serving.json says: the model's kind and its signature's inputs and outputs,
// client names to graph nodes.
struct ServingSpec {
  std::string model;
  std::map<std::string, std::string> inputs;
  std::map<std::string, std::string> outputs;
};

class ChiefCheckpoints {
 public:
  // Adds a Saver over every variable of `chief_graph` (before any session opens it).
  // An empty `dir`: nothing is saved and RestoreOrInitialize only initializes.
  static StatusOr<ChiefCheckpoints> Create(Graph* chief_graph, const std::string& dir);
  ChiefCheckpoints(ChiefCheckpoints&&) noexcept;
  ChiefCheckpoints& operator=(ChiefCheckpoints&&) noexcept;
  ~ChiefCheckpoints();

  // Restores the directory's latest intact checkpoint and returns its global step;
  // without one (or without a directory) runs `init_op` and returns 0. Errors: the
  // directory's (FailedPrecondition when its manifests were lost) and Restore's (a
  // checkpoint of another model names the variables that differ, e.g. an embedding
  // table of another dimension).
  StatusOr<int64_t> RestoreOrInitialize(Session* chief, const std::string& init_op);

  // Writes checkpoint ckpt-<global_step>, then serving_graph.json (`graph`) and
  // serving.json (`serving`), each by rename. Does nothing without a directory.
  Status Save(Session* chief, int64_t global_step, const Graph& graph,
              const ServingSpec& serving);

  const std::string& dir() const { return dir_; }

 private:
  ChiefCheckpoints(std::string dir, std::unique_ptr<Saver> saver);
  std::string dir_;
  std::unique_ptr<Saver> saver_;
};

// serving.json's text and its parse; InvalidArgument naming `path` for malformed
// JSON or a missing field.
std::string ServingSpecToJson(const ServingSpec& spec);
StatusOr<ServingSpec> ParseServingSpec(const std::string& text, const std::string& path);
// DIR/serving.json read and parsed; NotFound naming it when it is missing.
StatusOr<ServingSpec> ReadServingSpec(const std::string& dir);

// Writes `text` to `path` through a temporary file beside it and a rename (readers
// see the old file or the new one). Unavailable naming the path on failure.
Status WriteFileByRename(const std::string& path, const std::string& text);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_ESTIMATORS_MODEL_DIR_H_
