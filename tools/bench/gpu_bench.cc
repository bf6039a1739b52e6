// GPU benchmarks, for a machine with a GPU (built with --config=cuda; see
// TOOLCHAIN.md for running a binary built here on such a machine):
//   1. MatMul: the MatMul op in the actor runtime (variables on /gpu:0, the product
//      as a target, one step per product) against bare cuBLAS (the same sgemm queued
//      back to back, then one stream synchronization), n = 1024..8192, in TFLOP/s;
//   2. MLP 784-4096-4096-10, batch 256, plain SGD on /gpu:0 fed from host memory
//      each step, in samples/s;
//   3. host<->device copies: the runtime's staged copy (pageable tensor -> pinned
//      -> device, and device -> pinned -> tensor) against a bare cudaMemcpyAsync
//      from/to pinned memory, in GB/s, 4 MiB .. 256 MiB.
// Each figure is min / median / max over repetitions. Prints one JSON line at the
// end. Without a GPU it says so and exits 0.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/runtime/local_session.h"
#include "graph/gradients.h"
#include "graph/ops.h"
#include "graph/scope.h"
#include "kernels/cuda/gpu_device.h"
#include "kernels/cuda/gpu_kernel.h"
#include "kernels/cuda/gpu_launch.h"
#include "tools/bench/bench_util.h"

namespace actorflow {
namespace {

constexpr char kProgram[] = "gpu_bench";
constexpr int kRepeats = 5;

std::unique_ptr<ActorSession> GpuSession(const Graph* graph) {
  SessionOptions options;
  options.device_count = {{"CPU", 1}, {"GPU", 1}};
  options.allow_soft_placement = true;
  return bench::ValueOrDie(NewActorSession(graph, options), kProgram, "session");
}

void Check(const Status& s, const std::string& what) {
  if (!s.ok()) bench::Die(kProgram, what, s);
}

void Check(const gpu::GpuError& e, const std::string& what) {
  if (!e.ok()) bench::Die(kProgram, what, Internal(e.message()));
}

// Seconds per product: `iters` products per sample.
nlohmann::json MatMulCase(gpu::GpuDevice* device, int64_t n) {
  const int iters = n >= 4096 ? 5 : 20;
  const double flops = 2.0 * n * n * n;
  // Bare cuBLAS on device buffers.
  auto a = bench::ValueOrDie(gpu::AllocateDeviceTensor(device, DType::kFloat32, Shape{n, n}),
                             kProgram, "alloc");
  auto b = bench::ValueOrDie(gpu::AllocateDeviceTensor(device, DType::kFloat32, Shape{n, n}),
                             kProgram, "alloc");
  auto c = bench::ValueOrDie(gpu::AllocateDeviceTensor(device, DType::kFloat32, Shape{n, n}),
                             kProgram, "alloc");
  Check(gpu::Fill(device, gpu::ElemType::kFloat32, a.raw_data(), n * n, 0.5), "fill");
  Check(gpu::Fill(device, gpu::ElemType::kFloat32, b.raw_data(), n * n, 0.25), "fill");
  std::vector<double> bare;
  for (int r = 0; r < kRepeats + 1; ++r) {
    const auto start = bench::Clock::now();
    for (int i = 0; i < iters; ++i) {
      Check(gpu::MatMul(device, gpu::ElemType::kFloat32, false, false, n, n, n, a.raw_data(),
                        b.raw_data(), c.raw_data()),
            "cublas");
    }
    Check(gpu::Synchronize(device), "sync");
    if (r > 0) bare.push_back(flops * iters / bench::SecondsSince(start) / 1e12);  // warm-up
  }

  // The op in the actor runtime: one step per product, variables on the GPU.
  Scope root = Scope::NewRootScope();
  Scope gpu = root.WithDevice("/gpu:0");
  auto va = Variable(gpu.WithOpName("a"), Shape{n, n}, DType::kFloat32);
  auto vb = Variable(gpu.WithOpName("b"), Shape{n, n}, DType::kFloat32);
  Assign(gpu.WithOpName("a_init"), va, Fill(gpu, Shape{n, n}, 0.5f));
  Assign(gpu.WithOpName("b_init"), vb, Fill(gpu, Shape{n, n}, 0.25f));
  MatMul(gpu.WithOpName("c"), va, vb);
  Check(root.status(), "graph");
  auto session = GpuSession(root.graph());
  Check(session->Run({}, {}, {"a_init", "b_init"}, nullptr), "init");
  std::vector<double> op;
  for (int r = 0; r < kRepeats + 1; ++r) {
    const auto start = bench::Clock::now();
    for (int i = 0; i < iters; ++i) Check(session->Run({}, {}, {"c"}, nullptr), "step");
    if (r > 0) op.push_back(flops * iters / bench::SecondsSince(start) / 1e12);
  }
  const bench::Stats s_bare = bench::Summarize(bare);
  const bench::Stats s_op = bench::Summarize(op);
  std::printf("matmul n=%-5lld bare cuBLAS %s TFLOP/s   op %s TFLOP/s   (%.0f%%)\n",
              static_cast<long long>(n), bench::Triple(s_bare, "%.1f").c_str(),
              bench::Triple(s_op, "%.1f").c_str(), 100.0 * s_op.median / s_bare.median);
  return {{"n", n}, {"bare_tflops", bench::StatsJson(s_bare)}, {"op_tflops", bench::StatsJson(s_op)}};
}

nlohmann::json MlpCase() {
  constexpr int64_t kBatch = 256;
  const std::vector<int64_t> sizes = {784, 4096, 4096, 10};
  Scope root = Scope::NewRootScope();
  Scope gpu = root.WithDevice("/gpu:0");
  auto x = Placeholder(root.WithOpName("x"), DType::kFloat32, Shape{kBatch, 784});
  auto labels = Placeholder(root.WithOpName("labels"), DType::kInt32, Shape{kBatch});
  Output h = x;
  std::vector<Output> vars, inits;
  for (size_t l = 0; l + 1 < sizes.size(); ++l) {
    const Shape ws{sizes[l], sizes[l + 1]};
    auto w = Variable(gpu.WithOpName("w" + std::to_string(l)), ws, DType::kFloat32);
    auto b = Variable(gpu.WithOpName("b" + std::to_string(l)), Shape{sizes[l + 1]},
                      DType::kFloat32);
    inits.push_back(Assign(gpu, w,
                           TruncatedNormal(gpu, ws, DType::kFloat32, static_cast<int64_t>(l + 1),
                                           /*mean=*/0.0, /*stddev=*/0.02)));
    inits.push_back(Assign(gpu, b, Fill(gpu, Shape{sizes[l + 1]}, 0.0f)));
    vars.push_back(w);
    vars.push_back(b);
    h = BiasAdd(gpu, MatMul(gpu, h, w), b);
    if (l + 2 < sizes.size()) h = Relu(gpu, h);
  }
  auto loss = Mean(gpu.WithOpName("loss"), SparseSoftmaxCrossEntropyWithLogits(gpu, h, labels).loss);
  auto grads = bench::ValueOrDie(Gradients(gpu, {loss}, vars), kProgram, "gradients");
  std::vector<Output> updates;
  for (size_t i = 0; i < vars.size(); ++i) {
    updates.push_back(ApplyGradientDescent(gpu, vars[i], 0.01f, grads[i]));
  }
  NoOp(root.WithOpName("init").WithControlDependencies(inits));
  NoOp(root.WithOpName("train").WithControlDependencies(updates));
  Check(root.status(), "graph");
  auto session = GpuSession(root.graph());
  Check(session->Run({}, {}, {"init"}, nullptr), "init");
  std::vector<float> xs(kBatch * 784);
  std::vector<int32_t> ys(kBatch);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i % 255) / 255.0f;
  for (int64_t i = 0; i < kBatch; ++i) ys[i] = static_cast<int32_t>(i % 10);
  const FeedList feeds = {{"x", Tensor::FromVector(xs, Shape{kBatch, 784})},
                          {"labels", Tensor::FromVector(ys)}};
  constexpr int kSteps = 50;
  std::vector<double> samples;
  for (int r = 0; r < kRepeats + 1; ++r) {
    const auto start = bench::Clock::now();
    for (int i = 0; i < kSteps; ++i) Check(session->Run(feeds, {}, {"train"}, nullptr), "step");
    if (r > 0) samples.push_back(kSteps * kBatch / bench::SecondsSince(start));
  }
  const bench::Stats s = bench::Summarize(samples);
  std::printf("mlp 784-4096-4096-10 b256 sgd: %s samples/s\n", bench::Triple(s, "%.0f").c_str());
  return {{"samples_per_s", bench::StatsJson(s)}};
}

nlohmann::json CopyCase(gpu::GpuDevice* device, size_t bytes) {
  const int64_t n = static_cast<int64_t>(bytes / sizeof(float));
  Tensor host(DType::kFloat32, Shape{n});
  auto dev = bench::ValueOrDie(gpu::AllocateDeviceTensor(device, DType::kFloat32, Shape{n}),
                               kProgram, "alloc");
  void* pinned = nullptr;
  Check(gpu::AllocatePinned(device, bytes, &pinned), "pinned");
  std::vector<double> bare_h2d, bare_d2h, runtime_h2d, runtime_d2h;
  for (int r = 0; r < kRepeats + 1; ++r) {
    auto start = bench::Clock::now();
    Check(gpu::CopyHostToDevice(device, dev.raw_data(), pinned, bytes), "h2d");
    Check(gpu::Synchronize(device), "sync");
    const double t_bare_h2d = bench::SecondsSince(start);
    start = bench::Clock::now();
    Check(gpu::CopyDeviceToHost(device, pinned, dev.raw_data(), bytes), "d2h");
    Check(gpu::Synchronize(device), "sync");
    const double t_bare_d2h = bench::SecondsSince(start);
    start = bench::Clock::now();
    Tensor staged = bench::ValueOrDie(gpu::CopyToDevice(device, host), kProgram, "stage");
    Check(gpu::Synchronize(device), "sync");
    const double t_h2d = bench::SecondsSince(start);
    start = bench::Clock::now();
    Tensor back = bench::ValueOrDie(gpu::QueueCopyToHost(device, staged), kProgram, "unstage");
    Check(gpu::Synchronize(device), "sync");
    const double t_d2h = bench::SecondsSince(start);
    if (r == 0) continue;  // warm-up: first-touch of pinned and device blocks
    bare_h2d.push_back(bytes / t_bare_h2d / 1e9);
    bare_d2h.push_back(bytes / t_bare_d2h / 1e9);
    runtime_h2d.push_back(bytes / t_h2d / 1e9);
    runtime_d2h.push_back(bytes / t_d2h / 1e9);
  }
  gpu::FreePinned(device, pinned, bytes);
  nlohmann::json j = {{"bytes", bytes},
                      {"bare_h2d_gbs", bench::StatsJson(bench::Summarize(bare_h2d))},
                      {"runtime_h2d_gbs", bench::StatsJson(bench::Summarize(runtime_h2d))},
                      {"bare_d2h_gbs", bench::StatsJson(bench::Summarize(bare_d2h))},
                      {"runtime_d2h_gbs", bench::StatsJson(bench::Summarize(runtime_d2h))}};
  std::printf("copy %4zu MiB  H2D bare %s GB/s runtime %s GB/s   D2H bare %s GB/s runtime %s GB/s\n",
              bytes >> 20, bench::Triple(bench::Summarize(bare_h2d), "%.1f").c_str(),
              bench::Triple(bench::Summarize(runtime_h2d), "%.1f").c_str(),
              bench::Triple(bench::Summarize(bare_d2h), "%.1f").c_str(),
              bench::Triple(bench::Summarize(runtime_d2h), "%.1f").c_str());
  return j;
}

int Main() {
  const gpu::GpuProbe& probe = gpu::ProbeGpus();
  std::printf("%s\n", probe.description.c_str());
  if (probe.count == 0) {
    std::printf("gpu_bench: nothing to measure without a GPU\n");
    return 0;
  }
  gpu::GpuError error;
  gpu::GpuDevice* device = gpu::GetGpuDevice(0, &error);
  Check(error, "device");
  Check(gpu::MakeCurrent(device), "device");
  nlohmann::json result;
  result["device"] = probe.description;
  for (int64_t n : {1024, 2048, 4096, 8192}) result["matmul"].push_back(MatMulCase(device, n));
  result["mlp"] = MlpCase();
  for (size_t mib : {4, 64, 256}) result["copy"].push_back(CopyCase(device, mib << 20));
  std::printf("%s\n", result.dump().c_str());
  return 0;
}

}  // namespace
}  // namespace actorflow

int main() { return actorflow::Main(); }
