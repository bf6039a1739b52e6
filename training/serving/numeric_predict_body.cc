#include "training/serving/numeric_predict_body.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <system_error>

#include "graph/tensor.h"

namespace actorflow {
namespace {

// Deeper lists go the general way (it allows 32 levels and names the culprit).
constexpr size_t kMaxRank = 8;

// Integers up to 2^53 are exact as doubles, so converting the double gives the dtype
// what converting nlohmann's int64 does; beyond, the two roundings could differ.
constexpr int64_t kMaxExactInteger = int64_t{1} << 53;

// 10^0 ... 10^22: the powers of ten a double holds exactly.
constexpr double kPowersOfTen[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// A recursive-descent reader of the body's one shape. Every Read* returns false as
// soon as the text leaves that shape (the caller then gives up on the whole body).
class Scanner {
 public:
  explicit Scanner(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

  bool AtEnd() {
    SkipSpace();
    return p_ == end_;
  }

  bool Consume(char c) {
    SkipSpace();
    if (p_ == end_ || *p_ != c) return false;
    ++p_;
    return true;
  }

  // A string of printable ASCII without escapes (others: the general way, which
  // checks UTF-8 and decodes escapes).
  bool ReadPlainString(std::string_view* out) {
    if (!Consume('"')) return false;
    const char* start = p_;
    while (p_ != end_ && *p_ != '"') {
      const unsigned char c = static_cast<unsigned char>(*p_);
      if (c == '\\' || c < 0x20 || c >= 0x80) return false;
      ++p_;
    }
    if (p_ == end_) return false;
    *out = std::string_view(start, static_cast<size_t>(p_ - start));
    ++p_;
    return true;
  }

  // Nested lists of numbers: appends the numbers to `values` and checks that every
  // list at a depth has as many entries as the first one there and that every number
  // sits at the same depth. `dims` gets the shape.
  bool ReadNestedNumbers(int64_t max_rows, std::vector<int64_t>* dims,
                         std::vector<double>* values) {
    values_ = values;
    max_rows_ = max_rows;
    if (!ReadValue(0)) return false;
    dims->assign(dims_, dims_ + leaf_depth_);
    return true;
  }

 private:
  void SkipSpace() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  bool ReadValue(size_t depth) {
    SkipSpace();
    if (p_ != end_ && *p_ == '[') {
      ++p_;
      if (depth == kMaxRank || (leaf_depth_ != kUnset && depth >= leaf_depth_)) return false;
      int64_t count = 0;
      do {
        if (depth == 0 && count == max_rows_) return false;
        if (!ReadValue(depth + 1)) return false;  // also refuses an empty list
        ++count;
      } while (Consume(','));
      if (!Consume(']')) return false;
      if (dims_[depth] == kUnsetDim) dims_[depth] = count;
      return dims_[depth] == count;
    }
    if (leaf_depth_ == kUnset) leaf_depth_ = depth;
    if (depth != leaf_depth_) return false;
    double value = 0;
    if (!ReadNumber(&value)) return false;
    values_->push_back(value);
    return true;
  }

  // A number of JSON's grammar, as the general reader gives it: an integer token as
  // its exact value (so "-0" is 0, as nlohmann's integer), others correctly rounded.
  // Decimals of up to 2^53 in their digits and a power of ten within 10^±22 take
  // Clinger's fast path (both operands are exact doubles, so one IEEE multiplication
  // or division rounds correctly: what every correct reader does first); the rest
  // std::from_chars, which rounds as strtod does. Out-of-range ones are refused.
  bool ReadNumber(double* out) {
    const char* start = p_;
    const bool negative = p_ != end_ && *p_ == '-';
    if (negative) ++p_;
    if (p_ == end_ || !IsDigit(*p_)) return false;
    uint64_t mantissa = 0;  // the digits read, while fewer than 19 (no overflow)
    int digits = 0;
    auto take_digit = [&] {
      if (digits < 19) mantissa = mantissa * 10 + static_cast<uint64_t>(*p_ - '0');
      ++digits;
      ++p_;
    };
    if (*p_ == '0') {
      ++p_;
    } else {
      while (p_ != end_ && IsDigit(*p_)) take_digit();
    }
    bool integer = true;
    int fraction_digits = 0;
    if (p_ != end_ && *p_ == '.') {
      integer = false;
      ++p_;
      if (p_ == end_ || !IsDigit(*p_)) return false;
      for (; p_ != end_ && IsDigit(*p_); ++fraction_digits) take_digit();
    }
    int exponent = 0;
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      integer = false;
      ++p_;
      const bool negative_exponent = p_ != end_ && *p_ == '-';
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ == end_ || !IsDigit(*p_)) return false;
      for (; p_ != end_ && IsDigit(*p_); ++p_) {
        if (exponent < 100000) exponent = exponent * 10 + (*p_ - '0');
      }
      if (negative_exponent) exponent = -exponent;
    }
    const bool exact_mantissa = digits < 19 && mantissa <= static_cast<uint64_t>(kMaxExactInteger);
    if (integer) {
      if (!exact_mantissa) return false;
      const double magnitude = static_cast<double>(mantissa);
      *out = negative && mantissa != 0 ? -magnitude : magnitude;
      return true;
    }
    const int power = exponent - fraction_digits;
    if (exact_mantissa && power >= -22 && power <= 22) {
      double value = static_cast<double>(mantissa);
      value = power < 0 ? value / kPowersOfTen[-power] : value * kPowersOfTen[power];
      *out = negative ? -value : value;
      return true;
    }
    const auto read = std::from_chars(start, p_, *out);
    return read.ec == std::errc() && read.ptr == p_ && std::isfinite(*out);
  }

  static constexpr size_t kUnset = SIZE_MAX;
  static constexpr int64_t kUnsetDim = -1;

  const char* p_;
  const char* end_;
  std::vector<double>* values_ = nullptr;
  int64_t max_rows_ = 0;  // entries of the outer list at most
  int64_t dims_[kMaxRank] = {kUnsetDim, kUnsetDim, kUnsetDim, kUnsetDim,
                             kUnsetDim, kUnsetDim, kUnsetDim, kUnsetDim};
  size_t leaf_depth_ = kUnset;
};

template <typename T>
bool FillFinite(const std::vector<double>& values, Tensor* tensor) {
  T* out = tensor->data<T>();
  for (size_t i = 0; i < values.size(); ++i) {
    out[i] = static_cast<T>(values[i]);
    if (!std::isfinite(out[i])) return false;  // beyond float's range
  }
  return true;
}

}  // namespace

std::optional<NumericPredictBody> ScanNumericPredictBody(std::string_view text,
                                                         int64_t max_rows) {
  Scanner scan(text);
  NumericPredictBody body;
  bool named = false;
  bool valued = false;
  if (!scan.Consume('{')) return std::nullopt;
  do {
    std::string_view key;
    if (!scan.ReadPlainString(&key) || !scan.Consume(':')) return std::nullopt;
    if (key == "signature_name" && !named) {
      std::string_view name;
      if (!scan.ReadPlainString(&name)) return std::nullopt;
      body.signature_name = std::string(name);
      named = true;
    } else if ((key == "instances" || key == "inputs") && !valued) {
      body.row_format = key == "instances";
      std::vector<int64_t> dims;
      if (!scan.ReadNestedNumbers(max_rows, &dims, &body.values) || dims.empty()) {
        return std::nullopt;
      }
      body.shape = Shape(dims);
      valued = true;
    } else {
      return std::nullopt;  // another key, or one given twice
    }
  } while (scan.Consume(','));
  if (!scan.Consume('}') || !scan.AtEnd() || !valued) return std::nullopt;
  return body;
}

std::optional<PredictBody> NumericPredictInputs(const NumericPredictBody& body,
                                                const SignatureDef& signature) {
  if (signature.inputs.size() != 1) return std::nullopt;
  const auto& [key, info] = *signature.inputs.begin();
  if (info.dtype != DType::kFloat32 && info.dtype != DType::kFloat64) return std::nullopt;
  Tensor tensor(info.dtype, body.shape);
  // The shape first: a body the signature refuses is not copied.
  if (!CheckInputShape(key, info, tensor).ok()) return std::nullopt;
  const bool finite = info.dtype == DType::kFloat32 ? FillFinite<float>(body.values, &tensor)
                                                    : FillFinite<double>(body.values, &tensor);
  if (!finite) return std::nullopt;
  PredictBody parsed;
  parsed.signature_name = body.signature_name;
  parsed.row_format = body.row_format;
  parsed.inputs.emplace(key, std::move(tensor));
  return parsed;
}

}  // namespace actorflow
