// The named datasets of `actorflow train --dataset NAME` (and `actorflow tune`):
// standard files read from --data-dir, so that no CSV is needed.
//
//   fashion-mnist  Fashion-MNIST (Debian's dataset-fashion-mnist package; --data-dir
//                  defaults to where it installs the files): 60 000 training and 10 000
//                  test images of 28x28 grayscale pixels scaled to [0, 1], 10 classes.
//                  --data-format idx (default) reads the package's gzipped IDX files;
//                  tfrecord reads the train*.tfrecord and test*.tfrecord shards of
//                  tf.train.Example records that `actorflow convert` writes (and
//                  TensorFlow's MNIST convert_to_records.py: height, width, depth, label
//                  int64, image_raw bytes).
//
// Thread safety: the functions are reentrant.
#ifndef ACTORFLOW_TOOLS_TRAIN_TRAIN_DATASETS_H_
#define ACTORFLOW_TOOLS_TRAIN_TRAIN_DATASETS_H_

#include <cstdint>
#include <iostream>
#include <ostream>
#include <string>

#include "graph/status.h"
#include "tools/train/train_command.h"
#include "tools/train/train_data.h"

namespace actorflow {
namespace cli {

// The named datasets, for --help and messages: "fashion-mnist".
inline constexpr char kNamedDatasets[] = "fashion-mnist";
// --lr-decay's default on Fashion-MNIST (see DefaultsOfDataset).
inline constexpr double kFashionLrDecay = 0.75;

// options.dataset's two splits as TrainingData: features float32 [N, H*W] (row-major
// pixels), labels int32 [N], feature names "pixel_0".."pixel_<H*W-1>", the label
// column "label". Errors: InvalidArgument for an unknown --dataset or --data-format,
// or --train/--test/--label given beside --dataset; the readers' errors, which name
// the file (a missing Fashion-MNIST directory names the package to install). With
// --skip-corrupt-records the number of records left out goes to `err`.
StatusOr<TrainingData> LoadNamedDataset(const TrainCommandOptions& options,
                                        std::ostream& err = std::cerr);

// The image side of a named dataset (28 for Fashion-MNIST); 0 for CSV data.
int64_t NamedDatasetImageSide(const std::string& dataset);

// The training batches of an image dataset (data.features [N, side*side]): the rows
// reshuffled with `seed` on every pass, with `augment` flipped and cropped at random
// as [side, side, 1] images (seeded: the same run gives the same batches), cut into
// batches of `batch` rows for `epochs` passes (<= 0: without end), and read ahead on
// another thread so that a step rarely waits. `data` must outlive the InputFn.
InputFn ImageTrainingInput(const CsvData& data, int64_t side, int64_t batch, uint64_t seed,
                           int64_t epochs, bool augment);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_TRAIN_TRAIN_DATASETS_H_
