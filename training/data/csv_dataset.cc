#include "training/data/csv_dataset.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <string_view>
#include <system_error>
#include <utility>

#include "training/data/dataset_transforms.h"

namespace actorflow {
namespace {

// One field of a line: its text without surrounding blanks, and the 1-based character
// column where that text starts (where it would start, for a blank field).
struct Field {
  std::string_view text;
  int64_t column = 1;
};

std::vector<Field> SplitFields(std::string_view line) {
  std::vector<Field> fields;
  size_t start = 0;
  while (true) {
    size_t end = line.find(',', start);
    if (end == std::string_view::npos) end = line.size();
    size_t b = start;
    size_t e = end;
    while (b < e && (line[b] == ' ' || line[b] == '\t')) ++b;
    while (e > b && (line[e - 1] == ' ' || line[e - 1] == '\t')) --e;
    fields.push_back(Field{line.substr(b, e - b), static_cast<int64_t>(b) + 1});
    if (end == line.size()) break;
    start = end + 1;
  }
  return fields;
}

std::optional<float> ParseFloat(std::string_view text) {
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  if (text.empty()) return std::nullopt;
  float value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

// "2", "+2", "2.0" and "2e0" are the label 2; "2.5", "3e9" and "nan" are not labels.
std::optional<int32_t> ParseLabel(std::string_view text) {
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  if (text.empty()) return std::nullopt;
  int32_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc() && ptr == text.data() + text.size()) return value;
  double d = 0;
  auto [dptr, dec] = std::from_chars(text.data(), text.data() + text.size(), d);
  if (dec != std::errc() || dptr != text.data() + text.size()) return std::nullopt;
  if (!std::isfinite(d) || d != std::floor(d) || d < std::numeric_limits<int32_t>::min() ||
      d > std::numeric_limits<int32_t>::max()) {
    return std::nullopt;
  }
  return static_cast<int32_t>(d);
}

std::string JoinColumnNames(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
  return s;
}

// The parser shared by LoadCsv and CsvDataset: reads a file row by row.
class CsvReader {
 public:
  // Opens the file and reads the header (or the first row, to count the columns).
  static StatusOr<std::unique_ptr<CsvReader>> Open(const std::string& path,
                                                   const CsvOptions& options) {
    std::unique_ptr<CsvReader> reader(new CsvReader(path));
    reader->in_.open(path, std::ios::in | std::ios::binary);
    if (!reader->in_.is_open()) {
      return NotFound(path + ": cannot open the CSV file (does it exist and is it readable?)");
    }
    AF_RETURN_IF_ERROR(reader->ReadColumns(options));
    return reader;
  }

  int num_features() const { return static_cast<int>(column_names_.size()) - 1; }

  std::vector<std::string> feature_names() const {
    std::vector<std::string> names = column_names_;
    names.erase(names.begin() + label_index_);
    return names;
  }

  // Parses the next row into features[0, num_features()) and *label. OutOfRange at
  // the end of the file. After an error the row is skipped: the next call reads on.
  Status ReadRow(float* features, int32_t* label) {
    std::string line;
    if (pending_) {
      line = std::move(*pending_);
      pending_.reset();
      row_line_ = pending_line_number_;
    } else if (!NextLine(&line)) {
      return EndOfSequence();
    } else {
      row_line_ = line_number_;
    }
    const std::vector<Field> fields = SplitFields(line);
    const size_t num_columns = column_names_.size();
    if (fields.size() < num_columns) {
      const size_t k = fields.size();
      return RowError(static_cast<int64_t>(line.size()) + 1, k,
                      "missing: the row has " + std::to_string(k) + " fields but " +
                          columns_source_ + " has " + std::to_string(num_columns) + " columns");
    }
    if (fields.size() > num_columns) {
      return RowError(fields[num_columns].column, num_columns,
                      "extra field: the row has " + std::to_string(fields.size()) +
                          " fields but " + columns_source_ + " has " +
                          std::to_string(num_columns) + " columns");
    }
    int f = 0;
    for (size_t i = 0; i < num_columns; ++i) {
      const Field& field = fields[i];
      if (static_cast<int>(i) == label_index_) {
        std::optional<int32_t> value = ParseLabel(field.text);
        if (!value) {
          return RowError(field.column, i,
                          "label '" + std::string(field.text) +
                              "' is not an integer class index (int32)");
        }
        *label = *value;
        continue;
      }
      std::optional<float> value = ParseFloat(field.text);
      if (!value) {
        return RowError(field.column, i,
                        field.text.empty() ? std::string("empty value, expected a number")
                                           : "'" + std::string(field.text) +
                                                 "' is not a number (float32)");
      }
      features[f++] = *value;
    }
    return Status::OK();
  }

 private:
  explicit CsvReader(std::string path) : path_(std::move(path)) {}

  // The next non-blank line without its line end; false at the end of the file.
  bool NextLine(std::string* line) {
    while (std::getline(in_, *line)) {
      ++line_number_;
      if (!line->empty() && line->back() == '\r') line->pop_back();
      if (line->find_first_not_of(" \t") != std::string::npos) return true;
    }
    return false;
  }

  Status ReadColumns(const CsvOptions& options) {
    std::string line;
    if (!NextLine(&line)) {
      return InvalidArgument(path_ + ": empty file: expected " +
                             (options.has_header ? "a header line" : "a row"));
    }
    const std::vector<Field> fields = SplitFields(line);
    if (options.has_header) {
      columns_source_ = "the header (line " + std::to_string(line_number_) + ")";
      for (const Field& field : fields) column_names_.emplace_back(field.text);
    } else {
      columns_source_ = "the first row (line " + std::to_string(line_number_) + ")";
      for (size_t i = 0; i < fields.size(); ++i) {
        column_names_.push_back("column_" + std::to_string(i + 1));
      }
      pending_ = std::move(line);
      pending_line_number_ = line_number_;
    }
    const std::string where = path_ + ":" + std::to_string(line_number_);
    if (column_names_.size() < 2) {
      return InvalidArgument(where + ": only " + std::to_string(column_names_.size()) +
                             " column (" + JoinColumnNames(column_names_) +
                             "): need at least one feature column and the label column");
    }
    if (options.label_column.empty()) {
      label_index_ = static_cast<int>(column_names_.size()) - 1;
      return Status::OK();
    }
    for (size_t i = 0; i < column_names_.size(); ++i) {
      if (column_names_[i] == options.label_column) {
        label_index_ = static_cast<int>(i);
        return Status::OK();
      }
    }
    return InvalidArgument(where + ": label column '" + options.label_column +
                           "' is not among the columns of " + columns_source_ + ": " +
                           JoinColumnNames(column_names_) +
                           "; set CsvOptions.label_column to one of them (empty = the last)");
  }

  // InvalidArgument "FILE:LINE:COLUMN: field K (NAME) at character COLUMN: problem";
  // `field` is 0-based.
  Status RowError(int64_t column, size_t field, const std::string& problem) const {
    const std::string name =
        field < column_names_.size() ? " (" + column_names_[field] + ")" : std::string();
    return InvalidArgument(path_ + ":" + std::to_string(row_line_) + ":" +
                           std::to_string(column) +
                           ": field " + std::to_string(field + 1) + name + " at character " +
                           std::to_string(column) + ": " + problem);
  }

  std::string path_;
  std::ifstream in_;
  int64_t line_number_ = 0;  // of the last line read
  std::vector<std::string> column_names_;
  std::string columns_source_;  // "the header (line 1)", for messages
  int label_index_ = 0;
  // Without a header: the first row, read to count the columns and not parsed yet.
  std::optional<std::string> pending_;
  int64_t pending_line_number_ = 0;
  int64_t row_line_ = 0;  // the line of the row being parsed
};

class CsvIterator : public Iterator {
 public:
  CsvIterator(std::string path, CsvOptions options, int num_features)
      : path_(std::move(path)), options_(std::move(options)), num_features_(num_features) {}

  Status GetNext(Element* out) override {
    if (!reader_) {
      if (!open_status_.ok()) return open_status_;
      StatusOr<std::unique_ptr<CsvReader>> reader = CsvReader::Open(path_, options_);
      if (reader.ok() && (*reader)->num_features() != num_features_) {
        reader = InvalidArgument(path_ + ": the file changed: it now has " +
                                 std::to_string((*reader)->num_features()) +
                                 " feature columns, but had " + std::to_string(num_features_) +
                                 " when the dataset was created");
      }
      if (!reader.ok()) {
        open_status_ = reader.status();
        return open_status_;
      }
      reader_ = std::move(reader).value();
    }
    Tensor features(DType::kFloat32, Shape{num_features_});
    int32_t label = 0;
    AF_RETURN_IF_ERROR(reader_->ReadRow(features.data<float>(), &label));
    *out = {std::move(features), Tensor::Scalar<int32_t>(label)};
    return Status::OK();
  }

 private:
  std::string path_;
  CsvOptions options_;
  int num_features_;
  std::unique_ptr<CsvReader> reader_;  // opened by the first GetNext
  Status open_status_;                 // why it could not be opened
};

class CsvDatasetImpl : public Dataset {
 public:
  CsvDatasetImpl(std::string path, CsvOptions options, int num_features)
      : Dataset({DType::kFloat32, DType::kInt32}, {Shape{num_features}, Shape{}}),
        path_(std::move(path)),
        options_(std::move(options)),
        num_features_(num_features) {}

  std::string DebugString() const override { return "Csv(" + path_ + ")"; }

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext&) const override {
    return std::make_unique<CsvIterator>(path_, options_, num_features_);
  }

 private:
  std::string path_;
  CsvOptions options_;
  int num_features_;
};

}  // namespace

StatusOr<CsvData> LoadCsv(const std::string& path, const CsvOptions& options) {
  AF_ASSIGN_OR_RETURN(std::unique_ptr<CsvReader> reader, CsvReader::Open(path, options));
  const int num_features = reader->num_features();
  std::vector<float> features;
  std::vector<int32_t> labels;
  std::vector<float> row(num_features);
  while (true) {
    int32_t label = 0;
    Status s = reader->ReadRow(row.data(), &label);
    if (s.code() == Code::kOutOfRange) break;
    AF_RETURN_IF_ERROR(s);
    features.insert(features.end(), row.begin(), row.end());
    labels.push_back(label);
  }
  const int64_t n = static_cast<int64_t>(labels.size());
  CsvData data;
  data.features = Tensor::FromVector(features, Shape{n, num_features});
  data.labels = Tensor::FromVector(labels, Shape{n});
  data.feature_names = reader->feature_names();
  return data;
}

StatusOr<std::shared_ptr<const Dataset>> CsvDataset(const std::string& path,
                                                    const CsvOptions& options) {
  AF_ASSIGN_OR_RETURN(std::unique_ptr<CsvReader> reader, CsvReader::Open(path, options));
  return std::shared_ptr<const Dataset>(
      std::make_shared<CsvDatasetImpl>(path, options, reader->num_features()));
}

}  // namespace actorflow
