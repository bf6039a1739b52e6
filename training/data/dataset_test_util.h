// Helpers shared by the dataset tests (dataset_test.cc, csv_dataset_test.cc,
// iterator_ops_test.cc).
#ifndef ACTORFLOW_TRAINING_DATA_DATASET_TEST_UTIL_H_
#define ACTORFLOW_TRAINING_DATA_DATASET_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "graph/tensor.h"
#include "graph/test_files.h"
#include "training/data/dataset.h"

namespace actorflow {

// int32 [n]: 0, 1, ..., n-1.
inline Tensor Range(int n) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return Tensor::FromVector(v);
}

inline std::shared_ptr<const Dataset> RangeDataset(int n) {
  auto ds = Dataset::FromTensorSlices({Range(n)});
  EXPECT_TRUE(ds.ok()) << ds.status();
  return *ds;
}

// Every element until OutOfRange; fails the test on any other error.
inline std::vector<Element> Drain(const Dataset& dataset) {
  std::vector<Element> elements;
  std::unique_ptr<Iterator> it = dataset.MakeIterator();
  while (true) {
    Element e;
    Status s = it->GetNext(&e);
    if (s.code() == Code::kOutOfRange) break;
    EXPECT_TRUE(s.ok()) << s;
    if (!s.ok()) break;
    elements.push_back(std::move(e));
  }
  return elements;
}

// Component 0 of each scalar element, as ints.
inline std::vector<int> Scalars(const std::vector<Element>& elements) {
  std::vector<int> out;
  for (const Element& e : elements) out.push_back(static_cast<int>(e[0].ElementAsDouble(0)));
  return out;
}

inline std::vector<double> Values(const Tensor& t) {
  std::vector<double> out;
  for (int64_t i = 0; i < t.NumElements(); ++i) out.push_back(t.ElementAsDouble(i));
  return out;
}

inline std::vector<int> Iota(int begin, int end) {
  std::vector<int> v(end - begin);
  std::iota(v.begin(), v.end(), begin);
  return v;
}

inline std::string DataPath(const std::string& file) { return TestDataFile(file); }

// Writes $TEST_TMPDIR/name and returns its path.
inline std::string WriteTempFile(const std::string& name, const std::string& contents) {
  const std::string path = TestTempPath(name);
  EXPECT_TRUE(WriteTestFile(path, contents)) << path;
  return path;
}

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DATA_DATASET_TEST_UTIL_H_
