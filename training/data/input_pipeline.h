// Queue-based input pipelines (TensorFlow 1.x's readers and batching): a filename
// queue, a reader that turns files into records, and a shuffling batch queue, each
// queue kept filled by a QueueRunner (training/data/queue_runner.h).
//
//   Scope input = root.WithDevice("/job:worker/task:0");
//   FilenameProducer files = FilenameInputProducer(input, {"iris_training.csv"}, /*epochs=*/50);
//   std::vector<Output> row = CsvReaderRead(input, files.filenames, files.queue,
//       {kFloat32, kFloat32, kFloat32, kFloat32, kInt32}, /*skip_header_lines=*/1);
//   Output features = ConcatV2(...row[0..3] reshaped to [1]..., 0);        // float32 [4]
//   BatchQueue batch = ShuffleBatch(input, {features, row[4]}, {.batch_size = 32,
//                                   .capacity = 200, .min_after_dequeue = 100});
//   // batch.components: float32 [32,4], int32 [32]; train on them.
//   Coordinator coord;
//   StartQueueRunners(session, &coord, {files.runner, batch.runner});
//
// The end of the data flows down the pipeline as OutOfRange: the filename runner
// stops after `epochs` passes and closes its queue; the reader then fails with
// OutOfRange, the batch runner ends and closes the batch queue; the consumer's
// DequeueMany drains what is left in whole batches and then gets OutOfRange (a final
// partial batch is dropped, as in TensorFlow without allow_smaller_final_batch).
//
// Errors are recorded in the scope (the builder convention): components without a
// fully defined shape, a batch size < 1, min_after_dequeue >= capacity.
// Thread safety: as Scope.
#ifndef ACTORFLOW_TRAINING_DATA_INPUT_PIPELINE_H_
#define ACTORFLOW_TRAINING_DATA_INPUT_PIPELINE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "graph/ops.h"
#include "graph/scope.h"
#include "training/data/queue_runner.h"

namespace actorflow {

// TensorFlow's string_input_producer: a queue of file indices (int32 [], indices
// into `filenames`: tensors hold numbers only) filled with every file once per epoch.
struct FilenameProducer {
  Queue queue;
  QueueRunner runner;
  std::vector<std::string> filenames;
};

// epochs >= 1 passes over `filenames`; shuffle hands files out in a random order
// (a RandomShuffleQueue seeded with `seed`). Node names start with the scope's name
// scope and "filename_queue".
FilenameProducer FilenameInputProducer(const Scope& scope, const std::vector<std::string>& filenames,
                                       int64_t epochs, bool shuffle = false, int64_t seed = 0,
                                       int64_t capacity = 32);

struct BatchOptions {
  int64_t batch_size = 32;
  int64_t capacity = 1000;
  // ShuffleBatch only: elements kept behind so that batches are well mixed.
  int64_t min_after_dequeue = 0;
  int64_t seed = 0;
  int num_threads = 1;     // enqueue threads of the runner
  std::string name = "batch";  // name scope of the nodes and the runner's name
};

struct BatchQueue {
  std::vector<Output> components;  // each [batch_size, element shape...]
  Queue queue;
  QueueRunner runner;
};

// TensorFlow's shuffle_batch: enqueues `tensors` (one element per run) into a
// RandomShuffleQueue and dequeues batch_size of them at once.
BatchQueue ShuffleBatch(const Scope& scope, const std::vector<Output>& tensors,
                        const BatchOptions& options);
// TensorFlow's batch: the same with a FIFOQueue (elements in arrival order).
BatchQueue Batch(const Scope& scope, const std::vector<Output>& tensors,
                 const BatchOptions& options);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DATA_INPUT_PIPELINE_H_
