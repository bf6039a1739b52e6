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
#include <string>
#include <vector>

#include "graph/shape.h"
#include "graph/status.h"
#include "training/data/dataset.h"

namespace actorflow {

// One step of splitmix64: a well-mixed 64-bit value of x, the same on every platform.
// What the seeded transformations derive their draws from.
uint64_t SplitMix64(uint64_t x);

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
// In parallel_map_dataset.cc; num_parallel_calls >= 1.
std::shared_ptr<const Dataset> NewParallelMapDataset(std::shared_ptr<const Dataset> input,
                                                     Dataset::MapFn fn,
                                                     std::vector<DType> output_dtypes,
                                                     std::vector<Shape> output_shapes,
                                                     int num_parallel_calls);
// In interleave_dataset.cc; 0 <= index < num_shards; cycle and block length >= 1.
std::shared_ptr<const Dataset> NewShardDataset(std::shared_ptr<const Dataset> input,
                                               int64_t num_shards, int64_t index);
std::shared_ptr<const Dataset> NewInterleaveDataset(std::shared_ptr<const Dataset> input,
                                                    Dataset::InterleaveFn fn,
                                                    std::vector<DType> output_dtypes,
                                                    std::vector<Shape> output_shapes,
                                                    int64_t cycle_length, int64_t block_length);
// OK when `element` has exactly `dtypes` and shapes compatible with `shapes`;
// otherwise InvalidArgument, prefixed by `who` ("Map"), saying what came and what the
// dataset declares.
Status CheckMapResult(const Element& element, const std::vector<DType>& dtypes,
                      const std::vector<Shape>& shapes, const std::string& who = "Map");
// In prefetch_dataset.cc.
std::shared_ptr<const Dataset> NewPrefetchDataset(std::shared_ptr<const Dataset> input,
                                                  int64_t buffer_size);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DATA_DATASET_TRANSFORMS_H_
