// The pipelined mlp of pipeline.h: schedules as orders, micro-batch sizes and bad
// batches; training that matches the unpipelined layer split weight for weight
// under both schedules; traced steps whose per-device order is the schedule's, with
// each stage's weight gradients once per batch after its last backward; the bubble
// measured from a trace.

#include "training/estimators/pipeline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>

#include "actors/cluster/session_factory.h"
#include "graph/ops.h"
#include "graph/status_testing.h"
#include "graph/test_files.h"
#include "training/data/csv_dataset.h"
#include "training/optimizers/optimizer.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kBatch = 128;
constexpr int kFeatures = 64;  // the 8x8 digits
// Weights after training may differ from the unpipelined ones by float summation
// order only: |pipelined - unpipelined| <= kTolerance * (1 + |unpipelined|).
constexpr double kTolerance = 1e-5;

std::string Cpu(int i) {
  return "/job:localhost/replica:0/task:0/device:CPU:" + std::to_string(i);
}

std::vector<std::string> Cpus(int n) {
  std::vector<std::string> devices;
  for (int i = 0; i < n; ++i) devices.push_back(Cpu(i));
  return devices;
}

// The first `rows` digits, pixels scaled from 0..16 to 0..1.
FeedList DigitsBatch(int64_t rows) {
  StatusOr<CsvData> data = LoadCsv(TestDataFile("digits_training.csv"));
  EXPECT_TRUE(data.ok()) << data.status();
  if (!data.ok()) return {};
  Tensor features(DType::kFloat32, Shape{rows, kFeatures});
  Tensor labels(DType::kInt32, Shape{rows});
  for (int64_t i = 0; i < rows * kFeatures; ++i) {
    features.data<float>()[i] = data->features.data<float>()[i] / 16.0f;
  }
  for (int64_t i = 0; i < rows; ++i) labels.data<int32_t>()[i] = data->labels.data<int32_t>()[i];
  return {{"features", features}, {"labels", labels}};
}

struct Trained {
  std::vector<double> losses;                    // per step
  std::map<std::string, Tensor> weights;         // variable name -> value after training
  std::vector<NodeExecStats> last_step_stats;    // the last step, traced
  PipelinedMlp pipeline;                         // empty for the unpipelined run
};

// `steps` SGD steps on one batch of `rows` digits in a session of `devices` CPUs;
// micro_batches 0 builds the unpipelined layer split (model_parallel.h), otherwise
// the pipeline, built for batches of `built_rows` (0: `rows`).
StatusOr<Trained> Train(std::vector<int64_t> hidden, int devices, int micro_batches,
                        PipelineSchedule schedule, int steps, int64_t rows = kBatch,
                        int64_t built_rows = 0) {
  Scope root = Scope::NewRootScope();
  Output x = Placeholder(root.WithOpName("features"), DType::kFloat32, Shape{-1, kFeatures});
  Output labels = Placeholder(root.WithOpName("labels"), DType::kInt32, Shape{-1});
  ModelParallelParams model;
  model.hidden_units = std::move(hidden);
  model.n_classes = 10;
  model.seed = 7;
  AF_ASSIGN_OR_RETURN(std::unique_ptr<Optimizer> sgd, MakeOptimizer("sgd", 0.5));
  Trained trained;
  std::vector<Output> variables;
  if (micro_batches == 0) {
    ModelPlacement placement;
    placement.split = ModelSplit::kLayer;
    placement.devices = Cpus(devices);
    AF_ASSIGN_OR_RETURN(SplitModel net, BuildMlp(root, x, model, placement));
    const Scope head = root.WithDevice(net.head_device);
    Output loss = Mean(head.WithOpName("loss"),
                       SparseSoftmaxCrossEntropyWithLogits(head, net.logits, labels).loss);
    AF_RETURN_IF_ERROR(sgd->Minimize(root.WithOpName("train"), loss).status());
    variables = net.variables;
  } else {
    PipelineParams params;
    params.model = model;
    params.batch_rows = built_rows == 0 ? rows : built_rows;
    params.micro_batches = micro_batches;
    params.schedule = schedule;
    params.devices = Cpus(devices);
    AF_ASSIGN_OR_RETURN(trained.pipeline, BuildPipelinedMlp(root, x, labels, params));
    AF_RETURN_IF_ERROR(
        sgd->ApplyGradients(root.WithOpName("train"), trained.pipeline.grads_and_vars, Output())
            .status());
    variables = trained.pipeline.variables;
  }
  GlobalVariablesInitializer(root.WithOpName("init"));
  AF_RETURN_IF_ERROR(root.status());

  SessionOptions options;
  options.device_count["CPU"] = devices;
  AF_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, NewSession(root.graph(), options));
  AF_RETURN_IF_ERROR(session->Run({}, {}, {"init"}, nullptr));
  const FeedList feeds = DigitsBatch(rows);
  for (int step = 0; step < steps; ++step) {
    RunOptions run_options;
    RunMetadata metadata;
    const bool last = step + 1 == steps;
    if (last) run_options.trace_level = RunOptions::TraceLevel::kFullTrace;
    std::vector<Tensor> out;
    AF_RETURN_IF_ERROR(
        session->Run(run_options, feeds, {"loss"}, {"train"}, &out, last ? &metadata : nullptr));
    trained.losses.push_back(out[0].ElementAsDouble(0));
    if (last) trained.last_step_stats = metadata.step_stats;
  }
  std::vector<std::string> names;
  for (const Output& v : variables) names.push_back(v.name());
  std::vector<Tensor> values;
  AF_RETURN_IF_ERROR(session->Run(feeds, names, {}, &values));
  for (size_t i = 0; i < names.size(); ++i) trained.weights[names[i]] = values[i];
  AF_RETURN_IF_ERROR(session->Close());
  return trained;
}

// max over every weight of |a - b| / (1 + |b|).
double MaxRelativeDifference(const Trained& a, const Trained& b) {
  double worst = 0.0;
  EXPECT_EQ(a.weights.size(), b.weights.size());
  for (const auto& [name, value] : b.weights) {
    auto it = a.weights.find(name);
    EXPECT_TRUE(it != a.weights.end()) << name;
    if (it == a.weights.end()) continue;
    EXPECT_EQ(it->second.NumElements(), value.NumElements()) << name;
    for (int64_t i = 0; i < value.NumElements(); ++i) {
      const double reference = value.ElementAsDouble(i);
      worst = std::max(worst, std::abs(it->second.ElementAsDouble(i) - reference) /
                                  (1.0 + std::abs(reference)));
    }
  }
  return worst;
}

TEST(PipelineTest, SchedulesOrderEachStagesWork) {
  const PipelineWork f0{0, false}, f1{1, false}, f2{2, false}, f3{3, false};
  const PipelineWork b0{0, true}, b1{1, true}, b2{2, true}, b3{3, true};
  EXPECT_THAT(PipelineOrder(PipelineSchedule::kGPipe, 1, 4, 4),
              ElementsAre(f0, f1, f2, f3, b0, b1, b2, b3));
  // 1F1B: K-1-s warm-up forwards, then forward and backward in turn.
  EXPECT_THAT(PipelineOrder(PipelineSchedule::k1F1B, 0, 4, 4),
              ElementsAre(f0, f1, f2, f3, b0, b1, b2, b3));
  EXPECT_THAT(PipelineOrder(PipelineSchedule::k1F1B, 2, 4, 4),
              ElementsAre(f0, f1, b0, f2, b1, f3, b2, b3));
  EXPECT_THAT(PipelineOrder(PipelineSchedule::k1F1B, 3, 4, 4),
              ElementsAre(f0, b0, f1, b1, f2, b2, f3, b3));
  // Fewer micro-batches than warm-up slots: all forwards first.
  EXPECT_THAT(PipelineOrder(PipelineSchedule::k1F1B, 0, 4, 2), ElementsAre(f0, f1, b0, b1));
}

TEST(PipelineTest, MicroBatchesAreAsEvenAsPossible) {
  EXPECT_THAT(MicroBatchSizes(10, 4), ElementsAre(3, 3, 2, 2));
  EXPECT_THAT(MicroBatchSizes(8, 4), ElementsAre(2, 2, 2, 2));
  EXPECT_THAT(MicroBatchSizes(3, 3), ElementsAre(1, 1, 1));
}

TEST(PipelineTest, BadBatchesAreInvalidArgumentsNamingBothNumbers) {
  ASSERT_OK(CheckPipelineBatch(128, 4));
  Status too_many = CheckPipelineBatch(4, 8);
  EXPECT_EQ(too_many.code(), Code::kInvalidArgument);
  EXPECT_THAT(too_many.message(), HasSubstr("8 micro-batches, batch of 4 rows"));
  Status uneven = CheckPipelineBatch(10, 4);
  EXPECT_EQ(uneven.code(), Code::kInvalidArgument);
  EXPECT_THAT(uneven.message(), HasSubstr("4 micro-batches, batch of 10 rows"));
  EXPECT_THAT(uneven.message(), HasSubstr("not divisible"));

  Scope root = Scope::NewRootScope();
  Output x = Placeholder(root.WithOpName("features"), DType::kFloat32, Shape{-1, kFeatures});
  Output labels = Placeholder(root.WithOpName("labels"), DType::kInt32, Shape{-1});
  PipelineParams params;
  params.model.hidden_units = {8};
  params.model.n_classes = 10;
  params.devices = Cpus(2);
  params.batch_rows = 6;
  params.micro_batches = 7;
  StatusOr<PipelinedMlp> built = BuildPipelinedMlp(root, x, labels, params);
  EXPECT_EQ(built.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(built.status().message(), HasSubstr("7 micro-batches, batch of 6 rows"));
  params.micro_batches = 2;
  params.devices = {Cpu(0), Cpu(0)};
  built = BuildPipelinedMlp(root, x, labels, params);
  EXPECT_EQ(built.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(built.status().message(), HasSubstr("repeat"));
}

TEST(PipelineTest, TrainsLikeTheUnpipelinedLayerSplitUnderBothSchedules) {
  struct Case {
    std::vector<int64_t> hidden;
    int devices;
  };
  for (const Case& c : {Case{{32}, 2}, Case{{32, 32, 32}, 4}}) {
    ASSERT_OK_AND_ASSIGN(Trained reference,
                         Train(c.hidden, c.devices, 0, PipelineSchedule::kGPipe, 5));
    EXPECT_LT(reference.losses.back(), reference.losses.front());
    for (PipelineSchedule schedule : {PipelineSchedule::kGPipe, PipelineSchedule::k1F1B}) {
      SCOPED_TRACE(std::string(PipelineScheduleName(schedule)) + " on " +
                   std::to_string(c.devices) + " devices");
      ASSERT_OK_AND_ASSIGN(Trained pipelined, Train(c.hidden, c.devices, 4, schedule, 5));
      EXPECT_EQ(pipelined.pipeline.stage_devices, Cpus(c.devices));
      for (size_t step = 0; step < reference.losses.size(); ++step) {
        EXPECT_NEAR(pipelined.losses[step], reference.losses[step],
                    kTolerance * (1.0 + reference.losses[step]))
            << "step " << step;
      }
      const double difference = MaxRelativeDifference(pipelined, reference);
      std::printf("max |w_pipelined - w| / (1 + |w|) after 5 steps, %s, K=%d, M=4: %.3g\n",
                  PipelineScheduleName(schedule), c.devices, difference);
      EXPECT_LE(difference, kTolerance);
    }
  }
}

TEST(PipelineTest, AnUnevenBatchTrainsLikeTheUnpipelinedLayerSplit) {
  // 126 rows in 4 micro-batches of 32, 32, 31, 31: the loss stays the batch mean.
  ASSERT_OK_AND_ASSIGN(Trained reference,
                       Train({32, 32, 32}, 4, 0, PipelineSchedule::kGPipe, 5, 126));
  ASSERT_OK_AND_ASSIGN(Trained pipelined,
                       Train({32, 32, 32}, 4, 4, PipelineSchedule::k1F1B, 5, 126));
  EXPECT_NEAR(pipelined.losses.front(), reference.losses.front(),
              kTolerance * (1.0 + reference.losses.front()));
  const double difference = MaxRelativeDifference(pipelined, reference);
  std::printf("max |w_pipelined - w| / (1 + |w|) after 5 steps, 1f1b, K=4, 126 rows, M=4: "
              "%.3g\n", difference);
  EXPECT_LE(difference, kTolerance);
}

TEST(PipelineTest, AShortLastBatchTrainsThroughTheGraphBuiltForFullBatches) {
  // Built for 128 rows in 8 micro-batches, fed 100: micro-batches of 13, 13, 13, 13,
  // 12, 12, 12, 12 cut at run time, the loss still the mean over the 100 rows.
  ASSERT_OK_AND_ASSIGN(Trained reference,
                       Train({32, 32}, 2, 0, PipelineSchedule::kGPipe, 5, 100));
  for (PipelineSchedule schedule : {PipelineSchedule::kGPipe, PipelineSchedule::k1F1B}) {
    SCOPED_TRACE(PipelineScheduleName(schedule));
    ASSERT_OK_AND_ASSIGN(Trained pipelined,
                         Train({32, 32}, 2, 8, schedule, 5, 100, kBatch));
    for (size_t step = 0; step < reference.losses.size(); ++step) {
      EXPECT_NEAR(pipelined.losses[step], reference.losses[step],
                  kTolerance * (1.0 + reference.losses[step]))
          << "step " << step;
    }
    const double difference = MaxRelativeDifference(pipelined, reference);
    std::printf("max |w_pipelined - w| / (1 + |w|) after 5 steps, %s, K=2, built for 128, "
                "fed 100, M=8: %.3g\n", PipelineScheduleName(schedule), difference);
    EXPECT_LE(difference, kTolerance);
  }
}

// The first start and the last end of a group's nodes in a traced step.
struct Window {
  int64_t first_start = INT64_MAX;
  int64_t last_end = INT64_MIN;
  int nodes = 0;
};

Window WindowOf(const std::vector<NodeExecStats>& stats, const std::vector<std::string>& group,
                const std::string& device) {
  Window w;
  for (const NodeExecStats& s : stats) {
    if (std::find(group.begin(), group.end(), s.node_name) == group.end()) continue;
    EXPECT_EQ(s.device, device) << s.node_name;
    w.first_start = std::min(w.first_start, s.start_micros);
    w.last_end = std::max(w.last_end, s.end_micros);
    ++w.nodes;
  }
  return w;
}

TEST(PipelineTest, TracedStepsRunEachDevicesGroupsInScheduleOrder) {
  constexpr int kMicro = 4;
  {
    ASSERT_OK_AND_ASSIGN(Trained gpipe, Train({32}, 2, kMicro, PipelineSchedule::kGPipe, 2));
    const auto& stage0 = gpipe.pipeline.nodes[0];
    const Window last_forward = WindowOf(gpipe.last_step_stats, stage0[kMicro - 1][0], Cpu(0));
    const Window first_backward = WindowOf(gpipe.last_step_stats, stage0[0][1], Cpu(0));
    ASSERT_GT(last_forward.nodes, 0);
    ASSERT_GT(first_backward.nodes, 0);
    // Every forward node of micro-batch M-1 on stage 0 ends before any backward node
    // of micro-batch 0 there starts.
    EXPECT_LE(last_forward.last_end, first_backward.first_start);
  }
  {
    ASSERT_OK_AND_ASSIGN(Trained one_f_one_b,
                         Train({32}, 2, kMicro, PipelineSchedule::k1F1B, 2));
    const auto& last_stage = one_f_one_b.pipeline.nodes[1];
    const auto& stats = one_f_one_b.last_step_stats;
    // Last stage: F0 B0 F1 B1 ...: B0 is done before F1 starts, and F1 before B1.
    const Window b0 = WindowOf(stats, last_stage[0][1], Cpu(1));
    const Window f1 = WindowOf(stats, last_stage[1][0], Cpu(1));
    const Window b1 = WindowOf(stats, last_stage[1][1], Cpu(1));
    ASSERT_GT(b0.nodes, 0);
    ASSERT_GT(f1.nodes, 0);
    EXPECT_LE(b0.last_end, f1.first_start);
    EXPECT_LE(f1.last_end, b1.first_start);
    // Stage 0 warms up with one forward: F0 F1 B0 F2 B1 ...
    const auto& first_stage = one_f_one_b.pipeline.nodes[0];
    const Window f1_first = WindowOf(stats, first_stage[1][0], Cpu(0));
    const Window b0_first = WindowOf(stats, first_stage[0][1], Cpu(0));
    const Window f2_first = WindowOf(stats, first_stage[2][0], Cpu(0));
    EXPECT_LE(f1_first.last_end, b0_first.first_start);
    EXPECT_LE(b0_first.last_end, f2_first.first_start);
  }
}

// The nodes of op `op` of a traced step among `group`'s nodes.
int OpsIn(const std::vector<NodeExecStats>& stats, const std::vector<std::string>& group,
          const std::string& op) {
  int count = 0;
  for (const NodeExecStats& s : stats) {
    if (s.op == op && std::find(group.begin(), group.end(), s.node_name) != group.end()) {
      ++count;
    }
  }
  return count;
}
int MatMulsIn(const std::vector<NodeExecStats>& stats, const std::vector<std::string>& group) {
  return OpsIn(stats, group, "MatMul");
}
int PackedMatMulsIn(const std::vector<NodeExecStats>& stats,
                    const std::vector<std::string>& group) {
  return OpsIn(stats, group, "PackedMatMul");
}

TEST(PipelineTest, EachStageComputesItsWeightGradientsOnceAfterItsLastBackward) {
  constexpr int kMicro = 4;
  // 64 -> 32 (stage 0) -> 10 (stage 1).
  ASSERT_OK_AND_ASSIGN(Trained run, Train({32}, 2, kMicro, PipelineSchedule::k1F1B, 2));
  const auto& stats = run.last_step_stats;
  for (int s = 0; s < 2; ++s) {
    SCOPED_TRACE("stage " + std::to_string(s));
    const std::vector<std::string>& weights = run.pipeline.weight_gradient_nodes[s];
    const Window w = WindowOf(stats, weights, Cpu(s));
    ASSERT_GT(w.nodes, 0);
    // Both schedules end a stage with the backward of its last micro-batch.
    const Window last_backward = WindowOf(stats, run.pipeline.nodes[s][kMicro - 1][1], Cpu(s));
    ASSERT_GT(last_backward.nodes, 0);
    EXPECT_LE(last_backward.last_end, w.first_start);
    // One kernel gradient per layer of the stage, one product for all micro-batches.
    EXPECT_EQ(MatMulsIn(stats, weights), 1);
    // A micro-batch's backward computes no kernel gradient: stage 0's first layer
    // needs none of its input either; stage 1 computes its input's gradient only, with
    // the kernel packed once (transposed) for all micro-batches, as their forwards'.
    std::vector<std::string> stage_nodes;
    for (int m = 0; m < kMicro; ++m) {
      for (int phase : {0, 1}) {
        const std::vector<std::string>& group = run.pipeline.nodes[s][m][phase];
        stage_nodes.insert(stage_nodes.end(), group.begin(), group.end());
        EXPECT_EQ(MatMulsIn(stats, group), 0) << (phase ? "B" : "F") << m;
      }
      EXPECT_EQ(PackedMatMulsIn(stats, run.pipeline.nodes[s][m][0]), 1) << "F" << m;
      EXPECT_EQ(PackedMatMulsIn(stats, run.pipeline.nodes[s][m][1]), s == 0 ? 0 : 1)
          << "B" << m;
    }
    EXPECT_EQ(OpsIn(stats, stage_nodes, "PackMatMulOperand"), s == 0 ? 1 : 2);
  }
}

TEST(PipelineTest, BubbleFractionIsTheIdleShareOfTheStepPerDevice) {
  // Device 0 busy over the whole span [0, 10] (two overlapping nodes), device 1 over
  // [5, 10]: idle 0 and 0.5, mean 0.25. Nodes of other devices are ignored.
  const std::vector<NodeExecStats> stats = {
      {"a", "MatMul", "d0", 0, 6, 1}, {"b", "MatMul", "d0", 4, 10, 2},
      {"c", "MatMul", "d1", 5, 10, 3}, {"z", "Send", "d2", 0, 100, 4}};
  ASSERT_OK_AND_ASSIGN(double bubble, MeasureBubbleFraction(stats, {"d0", "d1"}));
  EXPECT_DOUBLE_EQ(bubble, 0.25);
  EXPECT_EQ(MeasureBubbleFraction(stats, {"d0", "d3"}).status().code(),
            Code::kInvalidArgument);
  EXPECT_DOUBLE_EQ(TheoreticalBubbleFraction(2, 8), 1.0 / 9.0);
  EXPECT_DOUBLE_EQ(TheoreticalBubbleFraction(4, 4), 3.0 / 7.0);
}

TEST(PipelineTest, EightMicroBatchesBubbleIsMeasuredOnBothStages) {
  // Four 1024-wide layers: stage 0 gets hidden layers 0 and 1, stage 1 hidden layer 2
  // and the logits, about the same work each. One micro-batch leaves each stage idle
  // while the other works (theory: 1/2); eight leave (K-1)/(M+K-1) = 1/9. The measured
  // fractions come from wall-clock traces, so they are printed, not compared: how much
  // the bubble shrinks is the benchmark's figure (tools/bench/model_parallel_bench.py),
  // and on a loaded machine either run may wait for a core.
  ASSERT_OK_AND_ASSIGN(Trained whole,
                       Train({1024, 1024, 1024}, 2, 1, PipelineSchedule::kGPipe, 3));
  ASSERT_OK_AND_ASSIGN(double unpipelined, MeasureBubbleFraction(whole.last_step_stats, Cpus(2)));
  std::printf("bubble K=2 M=1: measured %.3f, theoretical %.3f\n", unpipelined,
              TheoreticalBubbleFraction(2, 1));
  EXPECT_GE(unpipelined, 0.0);
  EXPECT_LT(unpipelined, 1.0);
  for (PipelineSchedule schedule : {PipelineSchedule::kGPipe, PipelineSchedule::k1F1B}) {
    ASSERT_OK_AND_ASSIGN(Trained run, Train({1024, 1024, 1024}, 2, 8, schedule, 3));
    ASSERT_OK_AND_ASSIGN(double measured,
                         MeasureBubbleFraction(run.last_step_stats, Cpus(2)));
    std::printf("bubble K=2 M=8 %s: measured %.3f, theoretical %.3f\n",
                PipelineScheduleName(schedule), measured, TheoreticalBubbleFraction(2, 8));
    // Both stages ran nodes in the traced step (MeasureBubbleFraction refuses a device
    // with none), and neither idled through all of it.
    EXPECT_GE(measured, 0.0) << PipelineScheduleName(schedule);
    EXPECT_LT(measured, 1.0) << PipelineScheduleName(schedule);
  }
}

}  // namespace
}  // namespace actorflow
