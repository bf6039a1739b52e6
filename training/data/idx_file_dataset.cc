#include "training/data/idx_file_dataset.h"

#include <sys/stat.h>

#include <array>
#include <new>
#include <utility>

namespace actorflow {
namespace {

constexpr int64_t kFashionMnistImageSide = 28;

bool IsDirectory(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

bool IsRegularFile(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

bool IsIntegerType(IdxElementType type) {
  return type != IdxElementType::kFloat32 && type != IdxElementType::kFloat64;
}

// float32 [N, rows, cols, 1] from uint8 [N, rows, cols]: the trailing channel dim
// adds no bytes, so the pixels map one to one.
Tensor ScaledImages(const IdxArray& images) {
  std::array<float, 256> scaled;
  for (int pixel = 0; pixel < 256; ++pixel) scaled[pixel] = static_cast<float>(pixel) / 255.0f;
  Tensor out = Tensor::Uninitialized(
      DType::kFloat32, Shape{images.shape.dim(0), images.shape.dim(1), images.shape.dim(2), 1});
  float* values = out.data<float>();
  for (size_t i = 0; i < images.data.size(); ++i) values[i] = scaled[images.data[i]];
  return out;
}

const char* const kInstallHint =
    "install the Debian package dataset-fashion-mnist (tools/setup.sh does), or pass the "
    "directory that holds the Fashion-MNIST files";

}  // namespace

StatusOr<LabeledImages> LoadIdxImagesAndLabels(const std::string& images_path,
                                               const std::string& labels_path,
                                               const IdxReadOptions& options) {
  AF_ASSIGN_OR_RETURN(IdxArray images, ReadIdxFile(images_path, options));
  if (images.shape.rank() != 3) {
    return InvalidArgument(images_path + ": images must have 3 dims [N, rows, cols], but the file's "
                           "dims are " + images.shape.ToString());
  }
  if (images.type != IdxElementType::kUInt8) {
    return Unimplemented(images_path + ": images of " + IdxElementTypeName(images.type) +
                         " are not supported: pixels must be uint8 (0..255) to scale to [0, 1]");
  }
  AF_ASSIGN_OR_RETURN(IdxArray labels, ReadIdxFile(labels_path, options));
  if (labels.shape.rank() != 1) {
    return InvalidArgument(labels_path + ": labels must have 1 dim [N], but the file's dims are " +
                           labels.shape.ToString());
  }
  if (!IsIntegerType(labels.type)) {
    return InvalidArgument(labels_path + ": labels must be integers, but the file holds " +
                           IdxElementTypeName(labels.type));
  }
  if (images.shape.dim(0) != labels.shape.dim(0)) {
    return InvalidArgument(images_path + " holds " + std::to_string(images.shape.dim(0)) +
                           " images but " + labels_path + " holds " +
                           std::to_string(labels.shape.dim(0)) +
                           " labels: the files do not belong together");
  }
  try {
    LabeledImages result;
    result.images = ScaledImages(images);
    result.labels = IdxArrayToTensor(labels);
    return result;
  } catch (const std::bad_alloc&) {
    return ResourceExhausted(images_path + ": cannot allocate tensors for " +
                             images.shape.ToString() + " images");
  }
}

StatusOr<std::shared_ptr<const Dataset>> IdxImagesAndLabelsDataset(
    const std::string& images_path, const std::string& labels_path,
    const IdxReadOptions& options) {
  AF_ASSIGN_OR_RETURN(LabeledImages loaded,
                      LoadIdxImagesAndLabels(images_path, labels_path, options));
  return Dataset::FromTensorSlices({std::move(loaded.images), std::move(loaded.labels)});
}

StatusOr<IdxFilePair> FashionMnistPaths(const std::string& data_dir, const std::string& split) {
  std::string prefix;
  if (split == "train") {
    prefix = "train";
  } else if (split == "test") {
    prefix = "t10k";
  } else {
    return InvalidArgument("Fashion-MNIST has no split \"" + split +
                           "\": use \"train\" or \"test\"");
  }
  const std::string dir = data_dir.empty() ? kFashionMnistDefaultDir : data_dir;
  if (!IsDirectory(dir)) {
    return NotFound("Fashion-MNIST directory " + dir + " does not exist: " + kInstallHint);
  }
  auto find = [&](const std::string& name) -> StatusOr<std::string> {
    const std::string unzipped = dir + "/" + name;
    if (IsRegularFile(unzipped + ".gz")) return unzipped + ".gz";
    if (IsRegularFile(unzipped)) return unzipped;
    return NotFound("Fashion-MNIST file " + unzipped + ".gz is missing (and not there unzipped " +
                    "either): " + kInstallHint);
  };
  IdxFilePair pair;
  AF_ASSIGN_OR_RETURN(pair.images, find(prefix + "-images-idx3-ubyte"));
  AF_ASSIGN_OR_RETURN(pair.labels, find(prefix + "-labels-idx1-ubyte"));
  return pair;
}

StatusOr<LabeledImages> LoadFashionMnist(const std::string& data_dir, const std::string& split) {
  AF_ASSIGN_OR_RETURN(IdxFilePair paths, FashionMnistPaths(data_dir, split));
  AF_ASSIGN_OR_RETURN(LabeledImages loaded, LoadIdxImagesAndLabels(paths.images, paths.labels));
  if (loaded.images.dim(1) != kFashionMnistImageSide ||
      loaded.images.dim(2) != kFashionMnistImageSide) {
    return InvalidArgument(paths.images + ": Fashion-MNIST images are 28x28, but these are " +
                           std::to_string(loaded.images.dim(1)) + "x" +
                           std::to_string(loaded.images.dim(2)));
  }
  const int32_t* labels = loaded.labels.data<int32_t>();
  for (int64_t i = 0; i < loaded.labels.NumElements(); ++i) {
    if (labels[i] < 0 || labels[i] >= kFashionMnistNumClasses) {
      return InvalidArgument(paths.labels + ": label " + std::to_string(labels[i]) +
                             " at index " + std::to_string(i) + " is outside [0, " +
                             std::to_string(kFashionMnistNumClasses) + ")");
    }
  }
  return loaded;
}

StatusOr<std::shared_ptr<const Dataset>> FashionMnistDataset(const std::string& data_dir,
                                                             const std::string& split) {
  AF_ASSIGN_OR_RETURN(LabeledImages loaded, LoadFashionMnist(data_dir, split));
  return Dataset::FromTensorSlices({std::move(loaded.images), std::move(loaded.labels)});
}

}  // namespace actorflow
