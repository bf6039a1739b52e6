// Conv2D benchmark: one forward+backward of a 3x3 SAME stride-1 convolution through
// the CPU kernels, as a training step computes it:
//   y  = Conv2D(x, w)                          x [N,H,W,C], w [3,3,C,O], y [N,H,W,O]
//   dx = Conv2DBackpropInput(sizes(x), w, dy)  dy [N,H,W,O] (pseudo-random)
//   dw = Conv2DBackpropFilter(x, sizes(w), dy)
// Each kernel is built once through KernelRegistry from a graph of Placeholders and
// Consts (as the executor builds it) and computed directly with a KernelContext, so
// the figures are the kernels' own (output allocation included, no executor).
//
// Cases:
//   digits1  the digits cnn's (`actorflow train --model cnn`, training/
//            model_parallel_cnn.cc) first conv at its default --batch 32:
//            x [32,8,8,1] -> 8 channels
//   digits2  its second conv (after the 2x2 SAME max pool): x [32,4,4,8] -> 16 channels
//   wide     a wider layer: x [8,32,32,64] -> 64 channels
// (The cnn has two towers, so one training step runs each digits conv twice.)
//
// A sample is the mean of `inner` forward+backwards, `inner` chosen once per case so
// that a sample lasts >= --min-sample-ms; the case's figures are min/median/max over
// --reps samples, after warm-up. OpenBLAS is set to 1 thread (also run with
// OPENBLAS_NUM_THREADS=1 so that its pool never starts more).
//
// Usage: conv_bench [--case digits1|digits2|wide|all] [--reps N] [--min-sample-ms M]
//                   [--json]
//   --json  one JSON line per case: {"case", "ms_median", "ms_min", "ms_max", "reps",
//           "inner", "flops", "gflops_median", "input", "filter", "threads",
//           "kernel_ms_median": {"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"}}
//           (each kernel's median ms per pass, timed around its Compute)
// Build with -c opt: `bazel build -c opt //tools/bench:conv_bench`;
// tools/bench/conv_vs_torch.py sets the figures beside PyTorch's.
#include <cblas.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/graph.h"
#include "graph/tensor.h"
#include "kernels/kernel.h"
#include "kernels/resource.h"
#include "tools/bench/bench_util.h"
#include "tools/cli/blas_core.h"

namespace actorflow {
namespace {

using bench::MakeNode;

constexpr char kProgram[] = "conv_bench";

struct ConvCase {
  const char* name;
  int64_t batch, height, width, in_channels, out_channels, kernel;
};

const ConvCase kCases[] = {
    {"digits1", 32, 8, 8, 1, 8, 3},
    {"digits2", 32, 4, 4, 8, 16, 3},
    {"wide", 8, 32, 32, 64, 64, 3},
};

// Multiply-adds x 2 of the forward pass; each backprop costs the same again.
double ForwardBackwardFlops(const ConvCase& c) {
  const double forward = 2.0 * c.batch * c.height * c.width * c.kernel * c.kernel *
                         c.in_channels * c.out_channels;
  return 3.0 * forward;
}

Tensor RandomTensor(const Shape& shape, std::mt19937* rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Tensor t(DType::kFloat32, shape);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.NumElements(); ++i) p[i] = dist(*rng);
  return t;
}

Tensor SizesOf(const Shape& shape) {
  std::vector<int32_t> dims(shape.dims().begin(), shape.dims().end());
  return Tensor::FromVector(dims);
}

// The three kernels of one case, built once, with their inputs.
class ConvStep {
 public:
  explicit ConvStep(const ConvCase& c) {
    x_shape_ = Shape{c.batch, c.height, c.width, c.in_channels};
    w_shape_ = Shape{c.kernel, c.kernel, c.in_channels, c.out_channels};
    const Shape y_shape{c.batch, c.height, c.width, c.out_channels};
    std::mt19937 rng(7);
    x_ = RandomTensor(x_shape_, &rng);
    w_ = RandomTensor(w_shape_, &rng);
    dy_ = RandomTensor(y_shape, &rng);
    x_sizes_ = SizesOf(x_shape_);
    w_sizes_ = SizesOf(w_shape_);
    auto placeholder = [](const char* name, const Shape& shape) {
      return MakeNode(name, "Placeholder", {}, {{"dtype", DType::kFloat32}, {"shape", shape}});
    };
    const AttrMap conv_attrs = {{"strides", std::vector<int64_t>{1, 1, 1, 1}},
                                {"padding", std::string("SAME")}};
    graph_ = bench::ValueOrDie(
        Graph::FromNodeDefs({
            placeholder("x", x_shape_),
            placeholder("w", w_shape_),
            placeholder("dy", y_shape),
            MakeNode("x_sizes", "Const", {}, {{"value", x_sizes_}}),
            MakeNode("w_sizes", "Const", {}, {{"value", w_sizes_}}),
            MakeNode("conv", "Conv2D", {"x", "w"}, conv_attrs),
            MakeNode("conv_input_grad", "Conv2DBackpropInput", {"x_sizes", "w", "dy"},
                     conv_attrs),
            MakeNode("conv_filter_grad", "Conv2DBackpropFilter", {"x", "w_sizes", "dy"},
                     conv_attrs),
        }),
        kProgram, std::string("building the graph of case ") + c.name);
    for (const char* name : {"conv", "conv_input_grad", "conv_filter_grad"}) {
      const Node* node = graph_->FindNode(name);
      nodes_.push_back(node);
      kernels_.push_back(bench::ValueOrDie(KernelRegistry::Global().CreateKernel(*node, kDeviceCpu),
                                           kProgram, node->Describe() + ": creating its kernel"));
    }
  }

  // One forward+backward; checks every output's shape. Adds each kernel's seconds to
  // kernel_s[0..2] (Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter).
  void Run(double kernel_s[3]) {
    const Tensor y = Compute(0, {x_, w_}, &kernel_s[0]);
    const Tensor dx = Compute(1, {x_sizes_, w_, dy_}, &kernel_s[1]);
    const Tensor dw = Compute(2, {x_, w_sizes_, dy_}, &kernel_s[2]);
    if (y.shape() != dy_.shape() || dx.shape() != x_shape_ || dw.shape() != w_shape_) {
      bench::Die(kProgram, "forward+backward",
                 Internal("unexpected output shapes " + y.shape().ToString() + ", " +
                          dx.shape().ToString() + ", " + dw.shape().ToString()));
    }
  }

 private:
  Tensor Compute(int k, std::vector<Tensor> inputs, double* seconds) {
    KernelContext ctx(nodes_[k], std::move(inputs), &resources_, ++step_);
    const auto start = bench::Clock::now();
    kernels_[k]->Compute(&ctx);
    *seconds += bench::SecondsSince(start);
    if (!ctx.status().ok()) bench::Die(kProgram, nodes_[k]->Describe(), ctx.status());
    return std::move(ctx.outputs()[0]);
  }

  Shape x_shape_, w_shape_;
  Tensor x_, w_, dy_, x_sizes_, w_sizes_;
  std::unique_ptr<Graph> graph_;
  std::vector<const Node*> nodes_;  // owned by graph_
  std::vector<std::unique_ptr<Kernel>> kernels_;
  ResourceManager resources_;
  int64_t step_ = 0;
};

struct CaseResult {
  bench::Stats ms;  // per forward+backward
  // Median ms per pass of Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter.
  double kernel_ms[3] = {0, 0, 0};
  int inner = 0;
};

CaseResult BenchCase(const ConvCase& c, int reps, double min_sample_ms) {
  ConvStep step(c);
  // Warm-up: page faults, OpenBLAS's buffers, caches; then size a sample.
  double unused[3] = {0, 0, 0};
  for (int i = 0; i < 3; ++i) step.Run(unused);
  const auto start = bench::Clock::now();
  step.Run(unused);
  const double one_ms = std::max(1e3 * bench::SecondsSince(start), 1e-4);
  CaseResult r;
  r.inner = std::max(1, static_cast<int>(min_sample_ms / one_ms + 0.5));
  std::vector<double> samples;
  std::vector<double> kernel_samples[3];
  for (int s = 0; s < reps; ++s) {
    double kernel_s[3] = {0, 0, 0};
    const auto t0 = bench::Clock::now();
    for (int i = 0; i < r.inner; ++i) step.Run(kernel_s);
    samples.push_back(1e3 * bench::SecondsSince(t0) / r.inner);
    for (int k = 0; k < 3; ++k) kernel_samples[k].push_back(1e3 * kernel_s[k] / r.inner);
  }
  r.ms = bench::Summarize(samples);
  for (int k = 0; k < 3; ++k) r.kernel_ms[k] = bench::Summarize(kernel_samples[k]).median;
  return r;
}

int Main(int argc, char** argv) {
  std::string which = "all";
  int reps = 21;
  double min_sample_ms = 2.0;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--case" && has_value) {
      which = argv[++i];
    } else if (arg == "--reps" && has_value) {
      reps = std::atoi(argv[++i]);
    } else if (arg == "--min-sample-ms" && has_value) {
      min_sample_ms = std::atof(argv[++i]);
    } else if (arg == "--json") {
      json = true;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--case digits1|digits2|wide|all] [--reps N] "
                   "[--min-sample-ms M] [--json]\n",
                   kProgram);
      return 2;
    }
  }
  if (reps < 1 || min_sample_ms < 0) {
    std::fprintf(stderr, "%s: --reps must be >= 1 and --min-sample-ms >= 0\n", kProgram);
    return 2;
  }
  std::vector<ConvCase> cases;
  for (const ConvCase& c : kCases) {
    if (which == "all" || which == c.name) cases.push_back(c);
  }
  if (cases.empty()) {
    std::fprintf(stderr, "%s: unknown --case '%s': valid are digits1, digits2, wide, all\n",
                 kProgram, which.c_str());
    return 2;
  }
  openblas_set_num_threads(1);
  if (!json) {
    std::printf("Conv2D 3x3 SAME stride 1, forward + backprop input + backprop filter, "
                "float32, %d OpenBLAS thread(s)\n",
                openblas_get_num_threads());
    std::printf("%-8s %-16s %-14s %6s %28s %8s   %s\n", "case", "input NHWC", "filter HWIO",
                "inner", "ms min / median / max", "GFLOP/s",
                "median ms: forward / backprop input / backprop filter");
  }
  for (const ConvCase& c : cases) {
    const CaseResult r = BenchCase(c, reps, min_sample_ms);
    const double flops = ForwardBackwardFlops(c);
    const double gflops = flops / (r.ms.median * 1e-3) / 1e9;
    const std::vector<int64_t> input = {c.batch, c.height, c.width, c.in_channels};
    const std::vector<int64_t> filter = {c.kernel, c.kernel, c.in_channels, c.out_channels};
    if (json) {
      nlohmann::json line = {{"case", c.name},           {"ms_median", r.ms.median},
                             {"ms_min", r.ms.min},       {"ms_max", r.ms.max},
                             {"reps", reps},             {"inner", r.inner},
                             {"flops", flops},           {"gflops_median", gflops},
                             {"input", input},           {"filter", filter},
                             {"threads", openblas_get_num_threads()},
                             {"kernel_ms_median",
                              {{"Conv2D", r.kernel_ms[0]},
                               {"Conv2DBackpropInput", r.kernel_ms[1]},
                               {"Conv2DBackpropFilter", r.kernel_ms[2]}}}};
      std::printf("%s\n", line.dump().c_str());
    } else {
      char in_text[64], filter_text[64];
      std::snprintf(in_text, sizeof(in_text), "%lldx%lldx%lldx%lld",
                    static_cast<long long>(c.batch), static_cast<long long>(c.height),
                    static_cast<long long>(c.width), static_cast<long long>(c.in_channels));
      std::snprintf(filter_text, sizeof(filter_text), "%lldx%lldx%lldx%lld",
                    static_cast<long long>(c.kernel), static_cast<long long>(c.kernel),
                    static_cast<long long>(c.in_channels),
                    static_cast<long long>(c.out_channels));
      std::printf("%-8s %-16s %-14s %6d %28s %8.2f   %.4f / %.4f / %.4f\n", c.name, in_text,
                  filter_text, r.inner, bench::Triple(r.ms, "%.4f").c_str(), gflops,
                  r.kernel_ms[0], r.kernel_ms[1], r.kernel_ms[2]);
    }
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace actorflow

int main(int argc, char** argv) {
  // Before any thread: OpenBLAS's kernels for this CPU (tools/cli/blas_core.h).
  actorflow::cli::RestartWithBetterBlasCore(argv);
  return actorflow::Main(argc, argv);
}
