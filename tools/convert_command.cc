#include "tools/convert_command.h"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <system_error>
#include <vector>

#include <CLI/CLI.hpp>

#include "tools/train/train_datasets.h"
#include "training/data/example.h"
#include "training/data/idx_file_dataset.h"
#include "training/data/tfrecord.h"

namespace actorflow {
namespace cli {
namespace {

// "train-00002-of-00004.tfrecord".
std::string ShardName(const std::string& split, int64_t shard, int64_t shards) {
  char name[64];
  std::snprintf(name, sizeof(name), "%s-%05lld-of-%05lld.tfrecord", split.c_str(),
                static_cast<long long>(shard), static_cast<long long>(shards));
  return name;
}

// Writes one split's images (float32 [N, H, W, 1] in [0, 1]) and labels as shards.
Status WriteSplit(const LabeledImages& data, const std::string& split, const std::string& dir,
                  int64_t shards, std::ostream& out) {
  std::vector<std::unique_ptr<TFRecordWriter>> writers;
  for (int64_t s = 0; s < shards; ++s) {
    AF_ASSIGN_OR_RETURN(std::unique_ptr<TFRecordWriter> w,
                        TFRecordWriter::Create(dir + "/" + ShardName(split, s, shards)));
    writers.push_back(std::move(w));
  }
  const int64_t n = data.images.dim(0);
  const int64_t h = data.images.dim(1), w = data.images.dim(2);
  const float* pixels = data.images.data<float>();
  const int32_t* labels = data.labels.data<int32_t>();
  std::string raw(static_cast<size_t>(h * w), '\0');
  for (int64_t i = 0; i < n; ++i) {
    // The pixels were bytes / 255: round back to the byte they were.
    for (int64_t p = 0; p < h * w; ++p) {
      raw[static_cast<size_t>(p)] =
          static_cast<char>(static_cast<uint8_t>(pixels[i * h * w + p] * 255.0f + 0.5f));
    }
    AF_RETURN_IF_ERROR(
        writers[static_cast<size_t>(i % shards)]->Write(EncodeImageExample(h, w, 1, labels[i], raw)));
  }
  for (auto& writer : writers) AF_RETURN_IF_ERROR(writer->Close());
  out << split << ": " << n << " records in " << shards << " shard(s) in " << dir << "\n";
  return Status::OK();
}

Status Convert(const ConvertCommandOptions& options, std::ostream& out) {
  const std::string dir = ResolveUserPath(options.out_dir);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir, ec)) {
    return FailedPrecondition("--out " + options.out_dir + ": cannot create the directory" +
                              (ec ? ": " + ec.message() : std::string()));
  }
  const std::string data_dir =
      options.data_dir.empty() ? kFashionMnistDefaultDir : ResolveUserPath(options.data_dir);
  for (const char* split : {"train", "test"}) {
    AF_ASSIGN_OR_RETURN(LabeledImages data, LoadFashionMnist(data_dir, split));
    AF_RETURN_IF_ERROR(WriteSplit(data, split, dir, options.shards, out));
  }
  out.flush();
  return Status::OK();
}

}  // namespace

int ConvertCommand(const ConvertCommandOptions& options, std::ostream& out, std::ostream& err) {
  return RunChecked(
      out, err,
      [&]() -> Status {
        if (options.dataset != "fashion-mnist") {
          return InvalidArgument("--dataset '" + options.dataset + "': valid are " +
                                 kNamedDatasets);
        }
        if (options.out_dir.empty()) return InvalidArgument("convert needs --out DIR");
        if (options.shards < 1 || options.shards > 99999) {
          return InvalidArgument("--shards " + std::to_string(options.shards) +
                                 ": expected 1 to 99999");
        }
        return Status::OK();
      },
      [&] { return Convert(options, out); });
}

Subcommand AddConvertSubcommand(CLI::App* parent) {
  auto options = std::make_shared<ConvertCommandOptions>();
  CLI::App* app = parent->add_subcommand(
      "convert", "Write a named dataset as TFRecord shards of tf.train.Example records");
  app->add_option("--dataset", options->dataset, std::string("One of: ") + kNamedDatasets)
      ->required();
  app->add_option("--data-dir", options->data_dir,
                  "Where the dataset's files are (default: where its Debian package puts them)");
  app->add_option("--out", options->out_dir, "Directory for the shards")->required();
  app->add_option("--shards", options->shards, "Shards per split")->capture_default_str();
  return Subcommand{app, [options]() { return ConvertCommand(*options, std::cout, std::cerr); }};
}

}  // namespace cli
}  // namespace actorflow
