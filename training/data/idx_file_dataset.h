// Labeled image sets stored as a pair of IDX files (training/data/idx_file.h), as MNIST
// and Fashion-MNIST ship them: an images file of uint8 pixels [N, rows, cols] and a
// labels file of integer classes [N]. Loaded into the tensors training feeds: images
// float32 [N, rows, cols, 1] (NHWC with one channel, what Conv2D takes) scaled to
// [0, 1] as pixel / 255, and labels int32 [N].
//
// Contract: the pair is checked against each other before anything is returned: the
// images file must be rank 3 and uint8, the labels file rank 1 of an integer type, and
// both must count the same N. Every error names the file (or both files) at fault;
// the codes are idx_file.h's, plus InvalidArgument for a pair that disagrees and
// Unimplemented for pixels other than uint8.
//
// Fashion-MNIST: Debian's dataset-fashion-mnist package installs the four files in
// kFashionMnistDefaultDir. A missing directory or file is NotFound, with a message
// that names the path and says to install that package.
//
// Thread safety: the functions are reentrant; they share no state.
#ifndef ACTORFLOW_TRAINING_DATA_IDX_FILE_DATASET_H_
#define ACTORFLOW_TRAINING_DATA_IDX_FILE_DATASET_H_

#include <memory>
#include <string>

#include "graph/status.h"
#include "graph/tensor.h"
#include "training/data/dataset.h"
#include "training/data/idx_file.h"

namespace actorflow {

struct LabeledImages {
  Tensor images;  // float32 [N, rows, cols, 1], each value pixel / 255 in [0, 1]
  Tensor labels;  // int32 [N]
};

// Reads and checks an images file and its labels file (plain or gzipped).
StatusOr<LabeledImages> LoadIdxImagesAndLabels(const std::string& images_path,
                                               const std::string& labels_path,
                                               const IdxReadOptions& options = IdxReadOptions());

// A dataset over the pair: element i is (images[i] float32 [rows, cols, 1],
// labels[i] int32 []). The files are read (and checked) once, here; the dataset
// holds the tensors in memory.
StatusOr<std::shared_ptr<const Dataset>> IdxImagesAndLabelsDataset(
    const std::string& images_path, const std::string& labels_path,
    const IdxReadOptions& options = IdxReadOptions());

// --- Fashion-MNIST ---------------------------------------------------------------------

// Where Debian's dataset-fashion-mnist package puts the files.
inline constexpr char kFashionMnistDefaultDir[] = "/usr/share/datasets/fashion-mnist";
// Labels are 0..9 (T-shirt/top, Trouser, Pullover, Dress, Coat, Sandal, Shirt,
// Sneaker, Bag, Ankle boot).
inline constexpr int kFashionMnistNumClasses = 10;

struct IdxFilePair {
  std::string images;
  std::string labels;
};

// The files of `split` ("train": 60 000 images, "test": 10 000) in `data_dir` (empty:
// kFashionMnistDefaultDir): train-images-idx3-ubyte.gz and train-labels-idx1-ubyte.gz,
// or t10k-*. A file that is absent gzipped is looked for without ".gz".
// InvalidArgument for another split; NotFound when the directory or a file is missing.
StatusOr<IdxFilePair> FashionMnistPaths(const std::string& data_dir, const std::string& split);

// LoadIdxImagesAndLabels of FashionMnistPaths(data_dir, split), with the images
// checked to be 28x28 and every label to be in [0, kFashionMnistNumClasses)
// (InvalidArgument naming the file, and the index of the first bad label, otherwise).
StatusOr<LabeledImages> LoadFashionMnist(const std::string& data_dir, const std::string& split);

// IdxImagesAndLabelsDataset over LoadFashionMnist(data_dir, split).
StatusOr<std::shared_ptr<const Dataset>> FashionMnistDataset(const std::string& data_dir,
                                                             const std::string& split);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DATA_IDX_FILE_DATASET_H_
