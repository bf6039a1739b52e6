#include "training/data/tfrecord_dataset.h"

#include <glob.h>

#include <cstdio>
#include <utility>

#include "training/data/decode_raw.h"
#include "training/data/tfrecord.h"

namespace actorflow {
namespace {

// The records of one file.
class TFRecordFileDataset : public Dataset {
 public:
  TFRecordFileDataset(std::string path, TFRecordDatasetOptions options)
      : Dataset({kByteDType}, {Shape{Shape::kUnknownDim}}),
        path_(std::move(path)),
        options_(std::move(options)) {}

  std::string DebugString() const override { return "TFRecordFile(" + path_ + ")"; }

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext&) const override {
    return std::make_unique<FileIterator>(path_, options_);
  }

 private:
  class FileIterator : public Iterator {
   public:
    FileIterator(std::string path, TFRecordDatasetOptions options)
        : path_(std::move(path)), options_(std::move(options)) {}

    Status GetNext(Element* out) override {
      if (done_) return OutOfRange("End of sequence");
      if (!reader_) {
        TFRecordReaderOptions reader_options;
        reader_options.skip_corrupt_records = options_.skip_corrupt_records;
        StatusOr<std::unique_ptr<TFRecordReader>> opened =
            TFRecordReader::Open(path_, reader_options);
        if (!opened.ok()) {
          done_ = true;  // the error stands for the file; the next call ends it
          return opened.status();
        }
        reader_ = std::move(*opened);
      }
      std::string record;
      Status s = reader_->ReadRecord(&record);
      const int64_t skipped = reader_->skipped_records();
      if (options_.skipped_records && skipped > counted_) {
        options_.skipped_records->fetch_add(skipped - counted_);
      }
      counted_ = skipped;
      if (!s.ok()) return s;
      *out = Element{BytesToTensor(record)};
      return Status::OK();
    }

   private:
    std::string path_;
    TFRecordDatasetOptions options_;
    std::unique_ptr<TFRecordReader> reader_;  // opened by the first GetNext
    int64_t counted_ = 0;                     // skipped records already added to the shared counter
    bool done_ = false;
  };

  std::string path_;
  TFRecordDatasetOptions options_;
};

// Several files, through Interleave over their indices.
class TFRecordDatasetImpl : public Dataset {
 public:
  TFRecordDatasetImpl(std::vector<std::string> files, const TFRecordDatasetOptions& options,
                      std::shared_ptr<const Dataset> interleaved)
      : Dataset(interleaved->output_dtypes(), interleaved->output_shapes(), interleaved->status()),
        files_(std::move(files)),
        cycle_length_(options.cycle_length),
        block_length_(options.block_length),
        interleaved_(std::move(interleaved)) {}

  std::string DebugString() const override {
    std::string s = "TFRecord(" + std::to_string(files_.size()) + " files: " + files_[0];
    if (files_.size() > 1) s += ", ...";
    return s + "; cycle_length=" + std::to_string(cycle_length_) +
           ", block_length=" + std::to_string(block_length_) + ")";
  }

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext& ctx) const override {
    return interleaved_->MakeIterator(ctx);
  }

 private:
  std::vector<std::string> files_;
  int64_t cycle_length_;
  int64_t block_length_;
  std::shared_ptr<const Dataset> interleaved_;
};

}  // namespace

StatusOr<std::shared_ptr<const Dataset>> TFRecordDataset(std::vector<std::string> files,
                                                         TFRecordDatasetOptions options) {
  if (files.empty()) return InvalidArgument("TFRecordDataset: no files given");
  if (options.cycle_length < 1 || options.block_length < 1) {
    return InvalidArgument("TFRecordDataset: cycle_length and block_length must be >= 1, got " +
                           std::to_string(options.cycle_length) + " and " +
                           std::to_string(options.block_length));
  }
  for (const std::string& file : files) {
    std::FILE* f = std::fopen(file.c_str(), "rb");
    if (f == nullptr) return NotFound("TFRecordDataset: cannot open " + file);
    std::fclose(f);
  }
  std::vector<int64_t> indices(files.size());
  for (size_t i = 0; i < files.size(); ++i) indices[i] = static_cast<int64_t>(i);
  AF_ASSIGN_OR_RETURN(std::shared_ptr<const Dataset> file_indices,
                      Dataset::FromTensorSlices({Tensor::FromVector(indices)}));
  auto shared_files = std::make_shared<const std::vector<std::string>>(files);
  Dataset::InterleaveFn open_file =
      [shared_files, options](Element index) -> StatusOr<std::shared_ptr<const Dataset>> {
    AF_ASSIGN_OR_RETURN(int64_t i, index.at(0).scalar<int64_t>());
    return std::shared_ptr<const Dataset>(
        std::make_shared<TFRecordFileDataset>(shared_files->at(static_cast<size_t>(i)), options));
  };
  std::shared_ptr<const Dataset> interleaved =
      file_indices->Interleave(std::move(open_file), {kByteDType}, {Shape{Shape::kUnknownDim}},
                               options.cycle_length, options.block_length);
  return std::shared_ptr<const Dataset>(
      std::make_shared<TFRecordDatasetImpl>(std::move(files), options, std::move(interleaved)));
}

namespace {

// An ErrorDataset of `dtypes` / `shapes` unless `records` holds records (kByteDType [?]).
std::shared_ptr<const Dataset> NotRecords(const std::shared_ptr<const Dataset>& records,
                                          const std::string& who, const std::vector<DType>& dtypes,
                                          const std::vector<Shape>& shapes) {
  if (records != nullptr && records->num_components() == 1 &&
      records->output_dtypes()[0] == kByteDType &&
      records->output_shapes()[0].IsCompatibleWith(Shape{Shape::kUnknownDim})) {
    return nullptr;
  }
  const std::string spec =
      records == nullptr ? "no dataset"
                         : ElementSpecString(records->output_dtypes(), records->output_shapes());
  return ErrorDataset(InvalidArgument(who + ": expected records (" +
                                      std::string(DTypeName(kByteDType)) + " [?]), got " + spec),
                      dtypes, shapes);
}

}  // namespace

std::shared_ptr<const Dataset> ParseExamples(const std::shared_ptr<const Dataset>& records,
                                             FeatureSpec spec, int num_parallel_calls) {
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  for (const FixedLenFeature& entry : spec) {
    const bool bytes = entry.type == FeatureType::kBytes;
    dtypes.push_back(bytes                               ? kByteDType
                     : entry.type == FeatureType::kInt64 ? DType::kInt64
                                                         : DType::kFloat32);
    if (entry.shape.unknown_rank()) {
      shapes.push_back(Shape::UnknownRank());  // ParseExample refuses it, naming the entry
      continue;
    }
    std::vector<int64_t> dims = entry.shape.dims();
    if (bytes) dims.push_back(Shape::kUnknownDim);  // the values' length
    shapes.emplace_back(std::move(dims));
  }
  if (auto error = NotRecords(records, "ParseExamples", dtypes, shapes)) return error;
  // A bad spec fails the first parse, naming the entry: ParseExample checks it.
  Dataset::MapFn parse = [spec = std::move(spec)](Element element) -> StatusOr<Element> {
    AF_ASSIGN_OR_RETURN(std::string record, TensorToBytes(element.at(0)));
    return ParseExample(record, spec);
  };
  return records->Map(std::move(parse), std::move(dtypes), std::move(shapes), num_parallel_calls);
}

std::shared_ptr<const Dataset> ParseImageExamples(const std::shared_ptr<const Dataset>& records,
                                                  const ImageExampleOptions& options,
                                                  int num_parallel_calls) {
  std::vector<DType> dtypes = {DType::kFloat32, DType::kInt32};
  std::vector<Shape> shapes = {Shape{options.height, options.width, options.depth}, Shape{}};
  if (auto error = NotRecords(records, "ParseImageExamples", dtypes, shapes)) return error;
  if (!shapes[0].CheckedNumElements().ok() || options.height < 1 || options.width < 1 ||
      options.depth < 1) {
    return ErrorDataset(
        InvalidArgument("ParseImageExamples: the image size " + shapes[0].ToString() +
                        " needs height, width and depth >= 1"),
        dtypes, shapes);
  }
  Dataset::MapFn parse = [options](Element element) -> StatusOr<Element> {
    AF_ASSIGN_OR_RETURN(std::string record, TensorToBytes(element.at(0)));
    return ParseImageExample(record, options);
  };
  return records->Map(std::move(parse), std::move(dtypes), std::move(shapes), num_parallel_calls);
}

StatusOr<std::vector<std::string>> MatchingFiles(const std::string& pattern) {
  glob_t matches{};
  const int result = glob(pattern.c_str(), 0, nullptr, &matches);
  std::vector<std::string> files;
  if (result == 0) {
    for (size_t i = 0; i < matches.gl_pathc; ++i) files.emplace_back(matches.gl_pathv[i]);
  }
  globfree(&matches);
  if (result == GLOB_NOMATCH || (result == 0 && files.empty())) {
    return NotFound("no files match " + pattern);
  }
  if (result != 0) return Internal("cannot list the files matching " + pattern);
  return files;
}

}  // namespace actorflow
