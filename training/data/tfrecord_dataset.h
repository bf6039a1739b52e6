// TFRecord files as a Dataset source, and their image records (TensorFlow's MNIST
// convert_to_records.py layout, training/data/parse_example.h) as (image, label)
// elements: how training reads `train*.tfrecord` shards.
//
//   AF_ASSIGN_OR_RETURN(std::vector<std::string> files, MatchingFiles(dir + "/train*.tfrecord"));
//   AF_ASSIGN_OR_RETURN(auto records, TFRecordDataset(files));
//   auto train = ParseImageExamples(records)->Shuffle(10000, 7)->Batch(64)->Repeat();
//   // elements (float32 [64,28,28,1], int32 [64])
//
// A TFRecordDataset element is one record: (kByteDType [len]), the record's bytes one
// per int32 element (graph/ has no string dtype; training/data/decode_raw.h). Files are
// streamed (training/data/tfrecord.h): each iterator opens them again, one record in
// memory per open file. A damaged record is an error from the GetNext that reaches it
// (DataLoss naming the file and the record's offset); calling again goes on after it
// where the file allows, or with the next file (TFRecordReader's contract).
//
// Thread safety: as Dataset's; the skipped-records counter is atomic.
#ifndef ACTORFLOW_TRAINING_DATA_TFRECORD_DATASET_H_
#define ACTORFLOW_TRAINING_DATA_TFRECORD_DATASET_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/status.h"
#include "training/data/dataset.h"
#include "training/data/parse_example.h"

namespace actorflow {

struct TFRecordDatasetOptions {
  // Skip (and count) records with a bad data CRC and cut-short tails instead of
  // returning an error for them (training/data/tfrecord.h says exactly what is skipped).
  bool skip_corrupt_records = false;
  // When set, every skipped record adds one (from any iterator).
  std::shared_ptr<std::atomic<int64_t>> skipped_records;
  // Files read at once, block_length records from each in turn (Dataset::Interleave's
  // order); 1 reads the files one after another, in the order given.
  int64_t cycle_length = 1;
  int64_t block_length = 1;
};

// The records of `files`. InvalidArgument for no files or a cycle_length or
// block_length < 1; NotFound naming a file that cannot be opened now (a file that
// vanishes later is an error from the GetNext that opens it).
StatusOr<std::shared_ptr<const Dataset>> TFRecordDataset(
    std::vector<std::string> files, TFRecordDatasetOptions options = TFRecordDatasetOptions());

// `records` (a TFRecordDataset, or any dataset of (kByteDType [len])) mapped through
// ParseExample: one component per spec entry, float32 / int64 of the entry's shape,
// bytes as kByteDType of the entry's shape + [?]. A record that does not parse is an
// error from GetNext ("Map: ParseExample: feature 'label' ..."), and so is a bad spec;
// the next GetNext goes on. num_parallel_calls > 1 parses on that many threads
// (Dataset::Map). Error (in status()): `records` has another element spec.
std::shared_ptr<const Dataset> ParseExamples(const std::shared_ptr<const Dataset>& records,
                                             FeatureSpec spec, int num_parallel_calls = 1);

// `records` mapped through ParseImageExample: elements (float32 [height, width, depth]
// in [0, 1], int32 []), with errors as ParseExamples'. Error (in status()): `records`
// has another element spec, or a size in `options` is < 1.
std::shared_ptr<const Dataset> ParseImageExamples(
    const std::shared_ptr<const Dataset>& records,
    const ImageExampleOptions& options = ImageExampleOptions(), int num_parallel_calls = 1);

// The files matching a glob pattern ("/data/train*.tfrecord"), sorted by name.
// NotFound naming the pattern when nothing matches.
StatusOr<std::vector<std::string>> MatchingFiles(const std::string& pattern);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DATA_TFRECORD_DATASET_H_
