#include "training/data/image_augmentation.h"

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "training/data/dataset_transforms.h"

namespace actorflow {
namespace {

class AugmentDataset : public Dataset {
 public:
  AugmentDataset(std::shared_ptr<const Dataset> input, ImageAugmentation options,
                 int image_component)
      : Dataset(input->output_dtypes(), input->output_shapes()),
        input_(std::move(input)),
        options_(options),
        image_component_(image_component) {}

  std::string DebugString() const override {
    return "AugmentImages(flip=" + std::string(options_.flip_left_right ? "true" : "false") +
           ", crop_padding=" + std::to_string(options_.crop_padding) +
           ", seed=" + std::to_string(options_.seed) + ") <- " + input_->DebugString();
  }

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext& ctx) const override {
    return std::make_unique<AugmentIterator>(
        input_->MakeIterator(ctx),
        std::static_pointer_cast<const AugmentDataset>(weak_from_this().lock()),
        SplitMix64(options_.seed) ^ SplitMix64(~ctx.epoch));
  }

 private:
  class AugmentIterator : public Iterator {
   public:
    AugmentIterator(std::unique_ptr<Iterator> input,
                    std::shared_ptr<const AugmentDataset> dataset, uint64_t pass_seed)
        : input_(std::move(input)), dataset_(std::move(dataset)), pass_seed_(pass_seed) {}

    Status GetNext(Element* out) override {
      Element e;
      AF_RETURN_IF_ERROR(input_->GetNext(&e));
      // One draw per element, counted whether or not the element is good, so that an
      // error does not shift the draws of the elements after it.
      const uint64_t draw = SplitMix64(pass_seed_ ^ SplitMix64(next_index_++));
      const ImageAugmentation& o = dataset_->options_;
      Tensor& image = e[static_cast<size_t>(dataset_->image_component_)];
      if (image.dtype() != DType::kFloat32 || image.rank() != 3) {
        return InvalidArgument("AugmentImages: the image is " + image.DebugString() +
                               ", expected float32 [H, W, C]");
      }
      const bool flip = o.flip_left_right && (draw & 1) != 0;
      const uint64_t span = static_cast<uint64_t>(2 * o.crop_padding + 1);
      const int64_t top = static_cast<int64_t>((draw >> 1) % span);
      const int64_t left = static_cast<int64_t>((draw >> 32) % span);
      if (flip || o.crop_padding > 0) image = AugmentImage(image, flip, o.crop_padding, top, left);
      *out = std::move(e);
      return Status::OK();
    }

   private:
    std::unique_ptr<Iterator> input_;
    std::shared_ptr<const AugmentDataset> dataset_;
    uint64_t pass_seed_;
    uint64_t next_index_ = 0;
  };

  std::shared_ptr<const Dataset> input_;
  ImageAugmentation options_;
  int image_component_;
};

}  // namespace

Tensor AugmentImage(const Tensor& image, bool flip, int64_t padding, int64_t top,
                    int64_t left) {
  const int64_t h = image.dim(0), w = image.dim(1), c = image.dim(2);
  Tensor out(DType::kFloat32, image.shape());
  const float* in = image.data<float>();
  float* o = out.data<float>();
  // Output pixel (y, x) is padded pixel (y + top, x + left), i.e. input pixel
  // (y + top - padding, x + left - padding), zero outside; flipped, x reads w-1-x.
  for (int64_t y = 0; y < h; ++y) {
    const int64_t sy = y + top - padding;
    for (int64_t x = 0; x < w; ++x) {
      const int64_t sx = (flip ? w - 1 - x : x) + left - padding;
      float* dst = o + (y * w + x) * c;
      if (sy < 0 || sy >= h || sx < 0 || sx >= w) {
        std::memset(dst, 0, static_cast<size_t>(c) * sizeof(float));
      } else {
        std::memcpy(dst, in + (sy * w + sx) * c, static_cast<size_t>(c) * sizeof(float));
      }
    }
  }
  return out;
}

std::shared_ptr<const Dataset> AugmentImages(std::shared_ptr<const Dataset> input,
                                             const ImageAugmentation& options,
                                             int image_component) {
  if (input == nullptr) {
    return ErrorDataset(InvalidArgument("AugmentImages: no input dataset"), {}, {});
  }
  if (!input->status().ok()) {
    return ErrorDataset(input->status(), input->output_dtypes(), input->output_shapes());
  }
  std::string bad;
  if (image_component < 0 || image_component >= input->num_components()) {
    bad = "image_component " + std::to_string(image_component) + " of an element of " +
          std::to_string(input->num_components()) + " components";
  } else if (input->output_dtypes()[image_component] != DType::kFloat32 ||
             (!input->output_shapes()[image_component].unknown_rank() &&
              input->output_shapes()[image_component].rank() != 3)) {
    bad = "component " + std::to_string(image_component) + " is " +
          ElementSpecString({input->output_dtypes()[image_component]},
                            {input->output_shapes()[image_component]}) +
          ", expected float32 [H, W, C]";
  } else if (options.crop_padding < 0) {
    bad = "crop_padding must be >= 0, got " + std::to_string(options.crop_padding);
  }
  if (!bad.empty()) {
    return ErrorDataset(InvalidArgument("AugmentImages: " + bad), input->output_dtypes(),
                        input->output_shapes());
  }
  return std::make_shared<AugmentDataset>(std::move(input), options, image_component);
}

}  // namespace actorflow
