// Numeric gradient checks of the convolution and pooling rules (graph/gradient_rules.cc):
// Conv2D with respect to its input and its filter, MaxPool and AvgPool, over strides 1
// and 2, SAME and VALID padding, batch and channels above 1, against central
// differences (kernels/gradient_check_util.h, with known and unknown input shapes).
// MaxPool inputs are distinct values 0.3 apart, so no window has a tie that a step of
// the central difference could flip.
#include <cstdint>
#include <string>
#include <vector>

#include "graph/ops.h"
#include "graph/scope.h"
#include "gtest/gtest.h"
#include "kernels/gradient_check_util.h"

namespace actorflow {
namespace {

using gradient_check::GradientsMatch;
using gradient_check::Rng;
using gradient_check::ShapesOf;
using Ints = std::vector<int64_t>;

struct Window {
  int64_t k_h, k_w, stride_h, stride_w;
};

std::string Describe(const std::string& op, const std::vector<Tensor>& inputs,
                     const Window& w, const std::string& padding) {
  return op + "(" + ShapesOf(inputs) + ", window " + std::to_string(w.k_h) + "x" +
         std::to_string(w.k_w) + ", strides " + std::to_string(w.stride_h) + "x" +
         std::to_string(w.stride_w) + ", " + padding + ")";
}

TEST(ConvGradientCheckTest, Conv2DMatchesCentralDifferencesForInputAndFilter) {
  Rng rng(41);
  const std::vector<std::pair<Shape, Window>> cases = {
      {{1, 4, 4, 1}, {3, 3, 1, 1}}, {{2, 5, 5, 2}, {3, 3, 2, 2}},
      {{2, 5, 4, 3}, {2, 3, 1, 2}}, {{1, 6, 6, 2}, {1, 1, 2, 2}},
      {{2, 4, 5, 2}, {4, 2, 2, 1}}, {{2, 3, 4, 3}, {1, 1, 1, 1}}};
  for (const auto& [input, w] : cases) {
    for (const char* padding : {"SAME", "VALID"}) {
      const int64_t out_channels = rng.Int(1, 3);
      const std::vector<Tensor> inputs = {rng.Uniform(input),
                                          rng.Uniform({w.k_h, w.k_w, input.dim(3), out_channels})};
      const Ints strides = {1, w.stride_h, w.stride_w, 1};
      const std::string pad = padding;
      EXPECT_TRUE(GradientsMatch(Describe("Conv2D", inputs, w, pad), inputs,
                                 [strides, pad](const Scope& s, const std::vector<Output>& x) {
                                   return Conv2D(s, x[0], x[1], strides, pad);
                                 }));
    }
  }
}

TEST(ConvGradientCheckTest, PoolingMatchesCentralDifferences) {
  Rng rng(42);
  const std::vector<std::pair<Shape, Window>> cases = {
      {{1, 4, 4, 1}, {2, 2, 2, 2}}, {{2, 5, 5, 2}, {2, 2, 2, 2}},
      {{2, 5, 4, 3}, {3, 3, 1, 1}}, {{1, 7, 6, 2}, {3, 2, 2, 1}}};
  for (const auto& [input, w] : cases) {
    for (const char* padding : {"SAME", "VALID"}) {
      const Ints ksize = {1, w.k_h, w.k_w, 1};
      const Ints strides = {1, w.stride_h, w.stride_w, 1};
      const std::string pad = padding;
      const std::vector<Tensor> distinct = {rng.Distinct(input)};
      EXPECT_TRUE(
          GradientsMatch(Describe("MaxPool", distinct, w, pad), distinct,
                         [ksize, strides, pad](const Scope& s, const std::vector<Output>& x) {
                           return MaxPool(s, x[0], ksize, strides, pad);
                         }));
      const std::vector<Tensor> uniform = {rng.Uniform(input)};
      EXPECT_TRUE(
          GradientsMatch(Describe("AvgPool", uniform, w, pad), uniform,
                         [ksize, strides, pad](const Scope& s, const std::vector<Output>& x) {
                           return AvgPool(s, x[0], ksize, strides, pad);
                         }));
    }
  }
}

// Gradients() through a small network: conv -> relu -> max pool -> conv -> avg pool.
TEST(ConvGradientCheckTest, StackedConvolutionAndPoolingMatchCentralDifferences) {
  Rng rng(43);
  const std::vector<Tensor> inputs = {rng.Uniform({2, 6, 6, 2}), rng.Uniform({3, 3, 2, 3}),
                                      rng.Uniform({2, 2, 3, 2})};
  EXPECT_TRUE(GradientsMatch(
      "conv-relu-maxpool-conv-avgpool", inputs, [](const Scope& s, const std::vector<Output>& x) {
        const Output h = Relu(s, Conv2D(s, x[0], x[1], {1, 1, 1, 1}, "SAME"));
        const Output p = MaxPool(s, h, {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
        const Output c = Conv2D(s, p, x[2], {1, 1, 1, 1}, "SAME");
        return AvgPool(s, c, {1, 2, 2, 1}, {1, 1, 1, 1}, "SAME");
      }));
}

}  // namespace
}  // namespace actorflow
