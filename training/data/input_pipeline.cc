#include "training/data/input_pipeline.h"

#include <utility>

namespace actorflow {
namespace {

// The runner of `queue`: `enqueue` run by num_threads threads, its close and cancel
// ops added next to it.
QueueRunner MakeRunner(const Scope& scope, const std::string& name, const Queue& queue,
                       const Node* enqueue, int num_threads, int64_t max_runs) {
  const Node* close = QueueClose(scope.WithOpName("close"), queue);
  const Node* cancel = QueueClose(scope.WithOpName("cancel"), queue, true);
  if (enqueue == nullptr || close == nullptr || cancel == nullptr) return QueueRunner();
  QueueRunnerDef def;
  def.name = name;
  def.enqueue_ops.assign(static_cast<size_t>(std::max(1, num_threads)), enqueue->name());
  def.close_op = close->name();
  def.cancel_op = cancel->name();
  def.max_runs = max_runs;
  return QueueRunner(std::move(def));
}

BatchQueue MakeBatch(const Scope& scope, const std::vector<Output>& tensors,
                     const BatchOptions& options, bool shuffle) {
  if (!scope.ok()) return {};
  auto fail = [&](const std::string& message) {
    scope.UpdateStatus(InvalidArgument(options.name + ": " + message));
    return BatchQueue();
  };
  if (tensors.empty()) return fail("no tensors to batch");
  if (options.batch_size < 1) return fail("batch_size must be >= 1");
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!tensors[i].valid()) return fail("tensor " + std::to_string(i) + " is invalid");
    if (!tensors[i].shape().IsFullyDefined()) {
      return fail("tensor " + std::to_string(i) + " (" + tensors[i].name() + ") has shape " +
                  tensors[i].shape().ToString() + ": batching needs fully defined shapes");
    }
    dtypes.push_back(tensors[i].dtype());
    shapes.push_back(tensors[i].shape());
  }
  Scope s = scope.NewSubScope(options.name);
  BatchQueue out;
  out.queue = shuffle ? RandomShuffleQueue(s.WithOpName("queue"), dtypes, shapes,
                                           options.capacity, options.min_after_dequeue,
                                           options.seed)
                      : FIFOQueue(s.WithOpName("queue"), dtypes, shapes, options.capacity);
  std::vector<Input> inputs(tensors.begin(), tensors.end());
  const Node* enqueue = QueueEnqueue(s.WithOpName("enqueue"), out.queue, inputs);
  out.runner = MakeRunner(s, options.name, out.queue, enqueue, options.num_threads, -1);
  out.components = QueueDequeueMany(s.WithOpName("dequeue"), out.queue, options.batch_size);
  if (!scope.ok()) return {};
  return out;
}

}  // namespace

FilenameProducer FilenameInputProducer(const Scope& scope, const std::vector<std::string>& filenames,
                                       int64_t epochs, bool shuffle, int64_t seed,
                                       int64_t capacity) {
  if (!scope.ok()) return {};
  if (filenames.empty()) {
    scope.UpdateStatus(InvalidArgument("FilenameInputProducer: no filenames"));
    return {};
  }
  if (epochs < 1) {
    scope.UpdateStatus(InvalidArgument("FilenameInputProducer: epochs must be >= 1, got " +
                                       std::to_string(epochs)));
    return {};
  }
  Scope s = scope.NewSubScope("filename_queue");
  FilenameProducer out;
  out.filenames = filenames;
  out.queue = shuffle ? RandomShuffleQueue(s.WithOpName("queue"), {DType::kInt32}, {Shape{}},
                                           capacity, 0, seed)
                      : FIFOQueue(s.WithOpName("queue"), {DType::kInt32}, {Shape{}}, capacity);
  std::vector<int32_t> indices(filenames.size());
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<int32_t>(i);
  const Node* enqueue =
      QueueEnqueueMany(s.WithOpName("enqueue"), out.queue, {Tensor::FromVector(indices)});
  // One thread, one pass over the files per run: `epochs` runs, then the queue closes.
  out.runner = MakeRunner(s, "filename_queue", out.queue, enqueue, 1, epochs);
  if (!scope.ok()) return {};
  return out;
}

BatchQueue ShuffleBatch(const Scope& scope, const std::vector<Output>& tensors,
                        const BatchOptions& options) {
  return MakeBatch(scope, tensors, options, true);
}

BatchQueue Batch(const Scope& scope, const std::vector<Output>& tensors,
                 const BatchOptions& options) {
  return MakeBatch(scope, tensors, options, false);
}

}  // namespace actorflow
