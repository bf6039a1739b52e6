// The datasets behind Dataset's transformations (training/data/dataset.h). Callers use
// Dataset::Shuffle, Batch, ... which validate the arguments and handle invalid inputs;
// these constructors assume that was done.
//
// Precondition for every function: input->status().ok() and the arguments are valid
// (sizes >= 1, count >= -1, fn set, one dtype and shape per output component).
#ifndef ACTORFLOW_TRAINING_DATA_DATASET_TRANSFORMS_H_
#define ACTORFLOW_TRAINING_DATA_DATASET_TRANSFORMS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "graph/shape.h"
#include "graph/status.h"
#include "training/data/dataset.h"

namespace actorflow {

// OutOfRange("End of sequence"): what every iterator returns at the end.
Status EndOfSequence();

// Each shape with `batch_dim` prepended: [2] -> [batch_dim,2]; unknown rank stays.
std::vector<Shape> BatchedShapes(const std::vector<Shape>& shapes, int64_t batch_dim);

std::shared_ptr<const Dataset> NewShuffleDataset(std::shared_ptr<const Dataset> input,
                                                 int64_t buffer_size, uint64_t seed);
std::shared_ptr<const Dataset> NewBatchDataset(std::shared_ptr<const Dataset> input,
                                               int64_t batch_size, bool drop_remainder);
std::shared_ptr<const Dataset> NewRepeatDataset(std::shared_ptr<const Dataset> input,
                                                int64_t count);
std::shared_ptr<const Dataset> NewMapDataset(std::shared_ptr<const Dataset> input,
                                             Dataset::MapFn fn, std::vector<DType> output_dtypes,
                                             std::vector<Shape> output_shapes);
// In prefetch_dataset.cc.
std::shared_ptr<const Dataset> NewPrefetchDataset(std::shared_ptr<const Dataset> input,
                                                  int64_t buffer_size);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DATA_DATASET_TRANSFORMS_H_
