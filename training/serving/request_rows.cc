#include "training/serving/request_rows.h"

#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

namespace actorflow {

using Json = nlohmann::json;

namespace {

// Counts the rows of a request body (see CountRequestRows) as nlohmann's SAX parser
// walks it: depth 1 is the body object, depth 2 its values.
class RowCounter : public nlohmann::json_sax<Json> {
 public:
  int64_t rows() const { return rows_; }

  bool null() override { return Value(); }
  bool boolean(bool) override { return Value(); }
  bool number_integer(number_integer_t) override { return Value(); }
  bool number_unsigned(number_unsigned_t) override { return Value(); }
  bool number_float(number_float_t, const string_t&) override { return Value(); }
  bool string(string_t&) override { return Value(); }
  bool binary(binary_t&) override { return Value(); }
  bool start_object(std::size_t) override { return Open(false); }
  bool end_object() override { return Close(); }
  bool start_array(std::size_t) override { return Open(true); }
  bool end_array() override { return Close(); }
  bool key(string_t& key) override {
    if (depth_ == 1) {
      top_key_ = key == "instances" || key == "examples" || key == "inputs" ? key : "";
    }
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  // Whether the container or value now starting is a row: an element of the counted
  // top-level list, or of a list under "inputs" given as an object.
  void CountElement() {
    if (top_key_.empty()) return;
    if (depth_ == 2 && top_is_array_) ++current_;
    if (depth_ == 3 && top_key_ == "inputs" && !top_is_array_ && in_key_array_) ++current_;
  }
  bool Value() {
    CountElement();
    return true;
  }
  bool Open(bool array) {
    CountElement();
    ++depth_;
    if (depth_ == 2) {
      top_is_array_ = array;
      current_ = 0;
    }
    if (depth_ == 3) {
      in_key_array_ = array;
      if (top_key_ == "inputs" && !top_is_array_) current_ = 0;
    }
    return true;
  }
  bool Close() {
    if (depth_ == 2 || (depth_ == 3 && top_key_ == "inputs" && !top_is_array_)) {
      rows_ = std::max(rows_, current_);
    }
    --depth_;
    return true;
  }

  int depth_ = 0;
  std::string top_key_;     // the counted key being read ("" for others)
  bool top_is_array_ = false;
  bool in_key_array_ = false;
  int64_t current_ = 0;
  int64_t rows_ = 0;
};

}  // namespace

int64_t CountRequestRows(std::string_view body) {
  RowCounter counter;
  // The same depth limit as ParseJsonText is not needed: the counter keeps no stack.
  if (!Json::sax_parse(body.begin(), body.end(), &counter)) return -1;
  return counter.rows();
}

}  // namespace actorflow
