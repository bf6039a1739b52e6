#include "tools/train/train_datasets.h"

#include <atomic>
#include <memory>
#include <utility>
#include <vector>

#include "tools/cli/cli_common.h"
#include "training/data/idx_file_dataset.h"
#include "training/data/image_augmentation.h"
#include "training/data/tfrecord_dataset.h"

namespace actorflow {
namespace cli {
namespace {

constexpr int64_t kFashionMnistSide = 28;

// [N, S, S, 1] images and [N] labels as the flat rows the classifiers read.
StatusOr<CsvData> AsRows(LabeledImages images) {
  const int64_t n = images.images.dim(0);
  const int64_t pixels = images.images.NumElements() / (n > 0 ? n : 1);
  CsvData rows;
  AF_ASSIGN_OR_RETURN(rows.features, images.images.Reshaped(Shape{n, pixels}));
  rows.labels = std::move(images.labels);
  for (int64_t i = 0; i < pixels; ++i) rows.feature_names.push_back("pixel_" + std::to_string(i));
  return rows;
}

// Every record of the split's shards, parsed and stacked. With skip_corrupt, damaged
// records are left out and their number said on `err`.
StatusOr<LabeledImages> LoadImageRecords(const std::string& dir, const std::string& split,
                                         bool skip_corrupt, std::ostream& err) {
  AF_ASSIGN_OR_RETURN(std::vector<std::string> files,
                      MatchingFiles(dir + "/" + split + "*.tfrecord"));
  // Read round-robin, one record per shard in turn: shards written example i to shard
  // i mod N (`actorflow convert`) come back in their original order.
  TFRecordDatasetOptions reading;
  reading.cycle_length = static_cast<int64_t>(files.size());
  reading.skip_corrupt_records = skip_corrupt;
  reading.skipped_records = std::make_shared<std::atomic<int64_t>>(0);
  AF_ASSIGN_OR_RETURN(std::shared_ptr<const Dataset> records, TFRecordDataset(files, reading));
  ImageExampleOptions image;
  image.height = image.width = kFashionMnistSide;
  // One batch holds the whole split: the stacking is the loading.
  std::shared_ptr<const Dataset> all =
      ParseImageExamples(records, image, /*num_parallel_calls=*/2)->Batch(int64_t{1} << 40);
  AF_RETURN_IF_ERROR(all->status());
  Element batch;
  Status read = all->MakeIterator()->GetNext(&batch);
  if (read.code() == Code::kOutOfRange) {
    return InvalidArgument(dir + "/" + split + "*.tfrecord: the files hold no record");
  }
  AF_RETURN_IF_ERROR(read.WithContext(dir + "/" + split + "*.tfrecord"));
  if (const int64_t skipped = reading.skipped_records->load(); skipped > 0) {
    err << dir << "/" << split << "*.tfrecord: skipped " << skipped
        << " damaged record(s) (--skip-corrupt-records)\n";
  }
  LabeledImages images;
  images.images = std::move(batch[0]);
  images.labels = std::move(batch[1]);
  return images;
}

StatusOr<LabeledImages> LoadFashionMnistSplit(const TrainCommandOptions& options,
                                              const std::string& split, std::ostream& err) {
  const std::string dir =
      options.data_dir.empty() ? kFashionMnistDefaultDir : ResolveUserPath(options.data_dir);
  if (options.data_format == "idx") return LoadFashionMnist(dir, split);
  return LoadImageRecords(dir, split, options.skip_corrupt_records, err);
}

}  // namespace

InputFn ImageTrainingInput(const CsvData& data, int64_t side, int64_t batch, uint64_t seed,
                           int64_t epochs, bool augment) {
  return [&data, side, batch, seed, epochs, augment]() -> StatusOr<std::shared_ptr<const Dataset>> {
    const int64_t rows = data.labels.NumElements();
    AF_ASSIGN_OR_RETURN(Tensor images, data.features.Reshaped(Shape{rows, side, side, 1}));
    AF_ASSIGN_OR_RETURN(auto slices, Dataset::FromTensorSlices({images, data.labels}));
    std::shared_ptr<const Dataset> shuffled = slices->Shuffle(rows, seed);
    if (augment) {
      ImageAugmentation options;
      options.flip_left_right = true;
      options.crop_padding = 2;
      options.seed = seed;
      shuffled = AugmentImages(shuffled, options);
    }
    const Shape flat{side * side};
    auto flatten = [flat](Element e) -> StatusOr<Element> {
      AF_ASSIGN_OR_RETURN(e[0], e[0].Reshaped(flat));
      return e;
    };
    // Batch before Repeat: every pass is whole and reshuffled with the seed.
    return shuffled->Map(flatten, {DType::kFloat32, DType::kInt32}, {flat, Shape({})})
        ->Batch(batch)
        ->Repeat(epochs > 0 ? epochs : -1)
        ->Prefetch(2);
  };
}

int64_t NamedDatasetImageSide(const std::string& dataset) {
  return dataset == "fashion-mnist" ? kFashionMnistSide : 0;
}

StatusOr<TrainingData> LoadNamedDataset(const TrainCommandOptions& options, std::ostream& err) {
  if (options.dataset != "fashion-mnist") {
    return InvalidArgument("--dataset " + options.dataset + ": valid are " + kNamedDatasets);
  }
  if (options.data_format != "idx" && options.data_format != "tfrecord") {
    return InvalidArgument("--data-format " + options.data_format + ": valid are idx, tfrecord");
  }
  if (!options.train_path.empty() || !options.test_path.empty() || !options.label.empty()) {
    return InvalidArgument("--dataset " + options.dataset +
                           " reads its own files: drop --train, --test and --label (or drop "
                           "--dataset to train on CSV files)");
  }
  TrainingData data;
  const std::string dir = options.data_dir.empty() ? kFashionMnistDefaultDir : options.data_dir;
  data.train_path = dir + " (" + options.data_format + ", train)";
  data.test_path = dir + " (" + options.data_format + ", test)";
  data.label_column = "label";
  AF_ASSIGN_OR_RETURN(LabeledImages train, LoadFashionMnistSplit(options, "train", err));
  AF_ASSIGN_OR_RETURN(data.train, AsRows(std::move(train)));
  AF_ASSIGN_OR_RETURN(LabeledImages test, LoadFashionMnistSplit(options, "test", err));
  AF_ASSIGN_OR_RETURN(data.test, AsRows(std::move(test)));
  return data;
}

}  // namespace cli
}  // namespace actorflow
