// Image augmentation in the input pipeline: random left-right flips and random crops
// after zero padding (the CIFAR/Fashion-MNIST recipe), drawn so that a run is
// reproducible: the draws of element k in pass `epoch` (IteratorContext, which
// Repeat advances) depend only on (seed, epoch, k), never on thread timing.
//
//   auto train = AugmentImages(images, {.flip_left_right = true, .crop_padding = 2,
//                                       .seed = 7})->Shuffle(10000, 7)->Batch(100);
//
// Thread safety: as every Dataset (training/data/dataset.h).
#ifndef ACTORFLOW_TRAINING_DATA_IMAGE_AUGMENTATION_H_
#define ACTORFLOW_TRAINING_DATA_IMAGE_AUGMENTATION_H_

#include <cstdint>
#include <memory>

#include "graph/tensor.h"
#include "training/data/dataset.h"

namespace actorflow {

struct ImageAugmentation {
  // Each image mirrored (columns reversed) with probability 1/2.
  bool flip_left_right = false;
  // > 0: the image is padded with crop_padding zero pixels on every side and a
  // window of its own size is cut at a uniformly drawn offset in
  // [0, 2 * crop_padding] along each of H and W.
  int64_t crop_padding = 0;
  uint64_t seed = 0;
};

// Component `image_component` of each element, float32 [H, W, C], augmented; the
// other components pass unchanged. Error (in status()): the component is not declared
// float32 of rank 3 (unknown dims are fine), or crop_padding < 0. An element whose
// image is not float32 [H, W, C] is an InvalidArgument from GetNext.
std::shared_ptr<const Dataset> AugmentImages(std::shared_ptr<const Dataset> input,
                                             const ImageAugmentation& options,
                                             int image_component = 0);

// The augmentation of one image with the draws (flip, crop offsets) given: what the
// dataset applies, exposed for tests. Precondition: image is float32 [H, W, C],
// 0 <= top, left <= 2 * padding.
Tensor AugmentImage(const Tensor& image, bool flip, int64_t padding, int64_t top, int64_t left);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DATA_IMAGE_AUGMENTATION_H_
