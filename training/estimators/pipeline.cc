// The pipelined mlp of pipeline.h: variables once, then each stage's work groups
// built in an order that respects both the data (F_m on stage s needs F_m on s-1,
// B_m on s needs B_m on s+1) and each stage's schedule.

#include "training/estimators/pipeline.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <utility>

#include "graph/gradients.h"
#include "graph/math_ops.h"
#include "graph/ops.h"
#include "placement/device_name.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

using model_parallel_internal::OnDevice;

// One dense layer's shared variables and where it runs.
struct PipelineLayer {
  std::string name;  // "hiddenlayer_<i>" or "logits"
  int stage = 0;
  Activation activation = Activation::kNone;
  Output kernel;  // [fan_in, units]
  Output bias;    // [units]
  int64_t fan_in = 0;
  int64_t units = 0;
  // The kernel packed for the micro-batches' products (PackMatMulOperand), as the
  // forward's right operand and, transposed, the backward's; made by the stage's first
  // group that needs each, once per step. Invalid when the products use MatMul.
  Output packed;
  Output packed_transposed;
};

// Whether the pipeline's micro-batch products use packed kernels: with more than one
// micro-batch (one product per kernel and step gains nothing from packing) and on a
// device whose type is CPU or left to placement (the packed ops have CPU kernels only).
bool PacksKernels(const std::string& device, int micro_batches) {
  if (micro_batches <= 1) return false;
  StatusOr<DeviceSpec> spec = ParseDeviceSpec(device);
  return spec.ok() && (!spec->type || *spec->type == "CPU");
}

// The nodes added to the graph since `first_id` that a schedule orders: all but the
// sources without any input (literal Consts, which carry no control inputs).
std::vector<const Node*> NodesSince(const Graph& graph, int first_id) {
  std::vector<const Node*> nodes;
  for (int id = first_id; id < graph.num_nodes(); ++id) {
    const Node* node = graph.node(id);
    if (node->num_inputs() == 0 && node->control_inputs().empty()) continue;
    nodes.push_back(node);
  }
  return nodes;
}

class PipelineBuilder {
 public:
  PipelineBuilder(const Scope& scope, const Output& x, const Output& labels,
                  const PipelineParams& params)
      : scope_(scope), dnn_(scope.NewSubScope("dnn")), x_(x), labels_(labels), params_(params) {}

  StatusOr<PipelinedMlp> Build() {
    AF_ASSIGN_OR_RETURN(const int64_t num_features,
                        model_parallel_internal::FeatureCount(x_, "pipelined mlp"));
    AF_RETURN_IF_ERROR(MakeLayers(num_features));
    stages_ = static_cast<int>(result_.stage_devices.size());
    const int m_count = params_.micro_batches;
    stage_out_.assign(stages_, std::vector<Output>(m_count));
    input_grad_.assign(stages_, std::vector<Output>(m_count));
    for (auto* per_layer : {&layer_in_, &layer_sum_, &layer_out_, &layer_dz_}) {
      per_layer->assign(layers_.size(), std::vector<Output>(m_count));
    }
    losses_.assign(m_count, Output());
    var_grads_.assign(result_.variables.size(), Output());
    result_.nodes.assign(stages_, std::vector<std::vector<std::vector<std::string>>>(
                                      m_count, std::vector<std::vector<std::string>>(2)));
    result_.weight_gradient_nodes.assign(stages_, {});
    AF_RETURN_IF_ERROR(BuildSchedule());
    return Finish();
  }

 private:
  Status MakeLayers(int64_t num_features) {
    const ModelParallelParams& model = params_.model;
    const int layers = static_cast<int>(model.hidden_units.size()) + 1;
    const int used = std::min<int>(layers, static_cast<int>(params_.devices.size()));
    for (int s = 0; s < used; ++s) result_.stage_devices.push_back(params_.devices[s]);
    if (!params_.variables.empty() &&
        params_.variables.size() != static_cast<size_t>(2 * layers)) {
      return InvalidArgument("pipelined mlp: " + std::to_string(params_.variables.size()) +
                             " variables given for " + std::to_string(layers) +
                             " layers; give a kernel and a bias per layer");
    }
    int64_t fan_in = num_features;
    for (int i = 0; i < layers; ++i) {
      const bool logits = i + 1 == layers;
      const int64_t units = logits ? model.n_classes : model.hidden_units[i];
      if (units < 1) {
        return InvalidArgument("pipelined mlp: layer " + std::to_string(i) + " has " +
                               std::to_string(units) + " units; give every layer at least 1");
      }
      PipelineLayer layer;
      layer.name = logits ? "logits" : "hiddenlayer_" + std::to_string(i);
      layer.stage = i * used / layers;  // as SpreadDevice spreads the layer split
      layer.activation = logits ? Activation::kNone : model.activation;
      layer.fan_in = fan_in;
      layer.units = units;
      if (!params_.variables.empty()) {
        layer.kernel = params_.variables[2 * i];
        layer.bias = params_.variables[2 * i + 1];
      } else {
        AF_RETURN_IF_ERROR(MakeVariables(layer, i, fan_in, units));
      }
      result_.variables.push_back(layer.kernel);
      result_.variables.push_back(layer.bias);
      layers_.push_back(layer);
      fan_in = units;
    }
    return Status();
  }

  // Layer i's kernel [fan_in, units] and bias [units], as Dense makes them, so that
  // the weights start like the unpipelined mlp's.
  Status MakeVariables(PipelineLayer& layer, int i, int64_t fan_in, int64_t units) {
    const Scope s = OnDevice(dnn_, result_.stage_devices[layer.stage]).NewSubScope(layer.name);
    const double stddev = std::sqrt(2.0 / static_cast<double>(fan_in + units));
    Output initial = TruncatedNormal(s, Shape{fan_in, units}, DType::kFloat32,
                                     ModelLayerSeed(params_.model.seed, i), 0.0, stddev);
    AF_ASSIGN_OR_RETURN(layer.kernel, CreateVariable(s, "kernel", initial));
    AF_ASSIGN_OR_RETURN(layer.bias,
                        CreateVariable(s, "bias", Tensor(DType::kFloat32, Shape{units})));
    return Status();
  }

  // Builds every stage's groups in schedule order, taking on each pass every group
  // whose data inputs exist. A schedule that could never finish stops the loop.
  Status BuildSchedule() {
    std::vector<std::vector<PipelineWork>> orders;
    for (int s = 0; s < stages_; ++s) {
      orders.push_back(PipelineOrder(params_.schedule, s, stages_, params_.micro_batches));
    }
    std::vector<size_t> next(stages_, 0);
    std::vector<Output> barrier(stages_);
    std::vector<std::vector<bool>> forward_done(stages_,
                                                std::vector<bool>(params_.micro_batches));
    std::vector<std::vector<bool>> backward_done = forward_done;
    for (bool progress = true; progress;) {
      progress = false;
      for (int s = 0; s < stages_; ++s) {
        while (next[s] < orders[s].size()) {
          const PipelineWork work = orders[s][next[s]];
          const int m = work.micro_batch;
          const bool ready = work.backward ? (s + 1 == stages_ || backward_done[s + 1][m])
                                           : (s == 0 || forward_done[s - 1][m]);
          if (!ready) break;
          const Scope device = OnDevice(dnn_, result_.stage_devices[s]);
          const Scope group = barrier[s].valid() ? device.WithControlDependencies({barrier[s]})
                                                 : device;
          const int first_id = scope_.graph()->num_nodes();
          AF_RETURN_IF_ERROR(work.backward ? Backward(group, s, m) : Forward(group, s, m));
          std::vector<Output> members;
          for (const Node* node : NodesSince(*scope_.graph(), first_id)) {
            result_.nodes[s][m][work.backward ? 1 : 0].push_back(node->name());
            members.push_back(Output(node, 0));
          }
          const std::string tag = std::string(work.backward ? "B" : "F") + std::to_string(m);
          barrier[s] = Output(NoOp(device.WithOpName("stage_" + std::to_string(s) +
                                                     "/after_" + tag)
                                       .WithControlDependencies(members)),
                              0);
          (work.backward ? backward_done : forward_done)[s][m] = true;
          ++next[s];
          progress = true;
          if (next[s] == orders[s].size()) {  // after the stage's last backward
            const int weights_id = scope_.graph()->num_nodes();
            AF_RETURN_IF_ERROR(
                WeightGradients(device.WithControlDependencies({barrier[s]}), s));
            for (const Node* node : NodesSince(*scope_.graph(), weights_id)) {
              result_.weight_gradient_nodes[s].push_back(node->name());
            }
          }
        }
      }
    }
    for (int s = 0; s < stages_; ++s) {
      if (next[s] < orders[s].size()) {
        return Internal("pipeline schedule " +
                        std::string(PipelineScheduleName(params_.schedule)) + " stalls on stage " +
                        std::to_string(s) + " (" + result_.stage_devices[s] + ")");
      }
    }
    if (!scope_.ok()) return scope_.status();
    return Status();
  }

  Status Forward(const Scope& group, int s, int m) {
    const Scope micro = group.NewSubScope("micro_" + std::to_string(m));
    // The micro-batch's rows are cut from the fed batch's row count at run time, so
    // one graph takes full batches and an epoch's short last batch alike.
    const int64_t parts = params_.micro_batches;
    Output h = s == 0 ? EvenSplitPart(micro.WithOpName("features"), x_, m, parts)
                      : stage_out_[s - 1][m];
    for (size_t i = 0; i < layers_.size(); ++i) {
      PipelineLayer& layer = layers_[i];
      if (layer.stage != s) continue;
      const Scope l = micro.NewSubScope(layer.name);
      layer_in_[i][m] = h;
      Output product;
      if (PacksKernels(result_.stage_devices[s], params_.micro_batches)) {
        if (!layer.packed.valid()) {
          layer.packed = PackMatMulOperand(group.NewSubScope("packed").NewSubScope(layer.name),
                                           layer.kernel);
        }
        product = PackedMatMul(l, h, layer.packed, layer.units);
      } else {
        product = MatMul(l, h, layer.kernel);
      }
      layer_sum_[i][m] = BiasAdd(l, product, layer.bias);
      h = Activate(l, layer.activation, layer_sum_[i][m]);
      layer_out_[i][m] = h;
    }
    stage_out_[s][m] = h;
    if (s + 1 == stages_) {
      // sum over the micro-batch's rows / the fed batch's rows: the micro-batches'
      // losses add up to the batch mean.
      if (!batch_rows_.valid()) {
        batch_rows_ = Cast(group.WithOpName("batch_rows"), Size(group, labels_), DType::kFloat32);
      }
      Output labels = EvenSplitPart(micro.WithOpName("labels"), labels_, m, parts);
      Output per_example = SparseSoftmaxCrossEntropyWithLogits(micro, h, labels).loss;
      losses_[m] = Div(micro.WithOpName("loss"), Sum(micro, per_example), batch_rows_);
    }
    return micro.status();
  }

  // The backward of micro-batch m on stage s without its weight gradients: each
  // layer's pre-activation gradient dz (kept for WeightGradients) and, down to the
  // stage's input, dh_in = dz kernel^T.
  Status Backward(const Scope& group, int s, int m) {
    const Scope micro =
        group.NewSubScope("micro_" + std::to_string(m)).NewSubScope("backward");
    const bool last_stage = s + 1 == stages_;
    Output upstream = last_stage ? Output() : input_grad_[s + 1][m];  // d stage output
    for (int i = static_cast<int>(layers_.size()) - 1; i >= 0; --i) {
      PipelineLayer& layer = layers_[i];
      if (layer.stage != s) continue;
      const Scope l = micro.NewSubScope(layer.name);
      Output dz;
      if (!upstream.valid()) {  // the logits layer: from the micro-batch's loss
        AF_ASSIGN_OR_RETURN(std::vector<Output> g, Gradients(l, {losses_[m]}, {layer_sum_[i][m]}));
        dz = g[0];
      } else if (layer.activation == Activation::kNone) {
        dz = upstream;
      } else {
        AF_ASSIGN_OR_RETURN(std::vector<Output> g,
                            Gradients(l, {layer_out_[i][m]}, {layer_sum_[i][m]}, {upstream}));
        dz = g[0];
      }
      if (!dz.valid()) {
        return Internal("pipelined mlp: no gradient reached " + layer_sum_[i][m].name());
      }
      layer_dz_[i][m] = dz;
      const bool stage_first = i == 0 || layers_[i - 1].stage != s;
      if (stage_first && s == 0) {
        upstream = Output();  // the features need no gradient
      } else if (PacksKernels(result_.stage_devices[s], params_.micro_batches)) {
        if (!layer.packed_transposed.valid()) {
          // Stage 0 packs in its first backward's group, when it waits for the stage
          // after it anyway; a later stage has nothing to do at the step's start until
          // its first forward arrives, and packs then (no barrier before it).
          const Scope pack = s == 0 ? group : OnDevice(dnn_, result_.stage_devices[s]);
          layer.packed_transposed = PackMatMulOperand(
              pack.NewSubScope("packed_transposed").NewSubScope(layer.name), layer.kernel,
              /*transpose=*/true);
        }
        upstream = PackedMatMul(l, dz, layer.packed_transposed, layer.fan_in);
      } else {
        upstream = MatMul(l, dz, layer.kernel, false, true);
      }
    }
    if (s > 0) input_grad_[s][m] = upstream;
    return micro.status();
  }

  // Stage s's weight gradients, once per batch after its last backward: each layer's
  // kernel gradient as one product of its micro-batches' inputs and dz's
  // concatenated (sum_m in_m^T dz_m = in^T dz), its bias gradient as dz's column sums.
  // Deferring them (the input/weight split of zero-bubble schedules) runs one
  // batch-sized product per kernel where per-micro-batch gradients would write a
  // kernel-sized matrix per micro-batch and add them up.
  Status WeightGradients(const Scope& group, int s) {
    const Scope weights = group.NewSubScope("weight_gradients");
    for (size_t i = 0; i < layers_.size(); ++i) {
      const PipelineLayer& layer = layers_[i];
      if (layer.stage != s) continue;
      const Scope l = weights.NewSubScope(layer.name);
      const Output in = Concatenated(l.NewSubScope("inputs"), layer_in_[i]);
      const Output dz = Concatenated(l.NewSubScope("dz"), layer_dz_[i]);
      var_grads_[2 * i] = MatMul(l.WithOpName("kernel_grad"), in, dz, true, false);
      var_grads_[2 * i + 1] = Sum(l.WithOpName("bias_grad"), dz, int64_t{0});
    }
    return weights.status();
  }

  static Output Concatenated(const Scope& scope, const std::vector<Output>& parts) {
    if (parts.size() == 1) return parts[0];
    return ConcatV2(scope, std::vector<Input>(parts.begin(), parts.end()), 0);
  }

  StatusOr<PipelinedMlp> Finish() {
    const Scope head = OnDevice(scope_, result_.stage_devices.back());
    Output loss = losses_[0];
    for (size_t m = 1; m < losses_.size(); ++m) {
      loss = Add(head.NewSubScope("loss_sum"), loss, losses_[m]);
    }
    result_.loss = Identity(head.WithOpName("loss"), loss);
    for (size_t v = 0; v < result_.variables.size(); ++v) {
      if (!var_grads_[v].valid()) {
        return Internal("pipelined mlp: no gradient reached " + result_.variables[v].name());
      }
      result_.grads_and_vars.emplace_back(var_grads_[v], result_.variables[v]);
    }
    if (!scope_.ok()) return scope_.status();
    return std::move(result_);
  }

  const Scope scope_;
  const Scope dnn_;
  const Output x_;
  const Output labels_;
  const PipelineParams& params_;
  int stages_ = 0;
  std::vector<PipelineLayer> layers_;
  // [stage][micro-batch]: the stage's output activation, and the gradient
  // of its input (what the previous stage's backward starts from).
  std::vector<std::vector<Output>> stage_out_, input_grad_;
  // [layer][micro-batch]: the layer's input, pre-activation sum (x kernel + bias),
  // output, and the loss's gradient of the sum.
  std::vector<std::vector<Output>> layer_in_, layer_sum_, layer_out_, layer_dz_;
  Output batch_rows_;  // float32 [], the rows fed, on the last stage
  std::vector<Output> losses_;                   // [micro-batch], float32 []
  std::vector<Output> var_grads_;  // [variable]: its gradient, from WeightGradients
  PipelinedMlp result_;
};

}  // namespace

StatusOr<PipelineSchedule> ParsePipelineSchedule(const std::string& name) {
  if (name == "gpipe") return PipelineSchedule::kGPipe;
  if (name == "1f1b") return PipelineSchedule::k1F1B;
  return InvalidArgument("unknown pipeline schedule '" + name + "'; use gpipe or 1f1b");
}

const char* PipelineScheduleName(PipelineSchedule schedule) {
  return schedule == PipelineSchedule::kGPipe ? "gpipe" : "1f1b";
}

Status CheckPipelineBatch(int64_t batch, int64_t micro_batches) {
  const std::string numbers = std::to_string(micro_batches) + " micro-batches, batch of " +
                              std::to_string(batch) + " rows";
  if (micro_batches < 1) {
    return InvalidArgument("pipeline: " + numbers + ": use at least 1 micro-batch");
  }
  if (micro_batches > batch) {
    return InvalidArgument("pipeline: " + numbers +
                           ": more micro-batches than rows; use at most " +
                           std::to_string(batch) + " micro-batches or a larger batch");
  }
  if (batch % micro_batches != 0) {
    return InvalidArgument("pipeline: " + numbers + ": the batch is not divisible by " +
                           std::to_string(micro_batches) +
                           "; pick a batch size that is a multiple of the micro-batches");
  }
  return Status();
}

std::vector<int64_t> MicroBatchSizes(int64_t rows, int64_t micro_batches) {
  std::vector<int64_t> sizes;
  for (int64_t m = 0; m < micro_batches; ++m) {
    sizes.push_back(rows / micro_batches + (m < rows % micro_batches ? 1 : 0));
  }
  return sizes;
}

std::vector<PipelineWork> PipelineOrder(PipelineSchedule schedule, int stage, int stages,
                                        int micro_batches) {
  std::vector<PipelineWork> order;
  const int warmup = schedule == PipelineSchedule::kGPipe
                         ? micro_batches
                         : std::min(stages - 1 - stage, micro_batches);
  int forward = 0;
  int backward = 0;
  for (; forward < warmup; ++forward) order.push_back({forward, false});
  while (forward < micro_batches) {
    order.push_back({forward++, false});
    order.push_back({backward++, true});
  }
  while (backward < micro_batches) order.push_back({backward++, true});
  return order;
}

StatusOr<PipelinedMlp> BuildPipelinedMlp(const Scope& scope, const Output& x,
                                         const Output& labels, const PipelineParams& params) {
  if (params.micro_batches < 1 || params.micro_batches > params.batch_rows) {
    return InvalidArgument("pipelined mlp: " + std::to_string(params.micro_batches) +
                           " micro-batches, batch of " + std::to_string(params.batch_rows) +
                           " rows: use between 1 micro-batch and one per row");
  }
  if (params.devices.empty()) {
    return InvalidArgument("pipelined mlp: no stage devices given; list one device per stage");
  }
  std::set<std::string> distinct(params.devices.begin(), params.devices.end());
  if (distinct.size() != params.devices.size()) {
    return InvalidArgument("pipelined mlp: the stage devices repeat a device; give each stage "
                           "its own device");
  }
  if (params.model.hidden_units.empty()) {
    return InvalidArgument("pipelined mlp: no hidden units given; it needs a hidden layer");
  }
  if (params.model.n_classes < 2) {
    return InvalidArgument("pipelined mlp: n_classes must be at least 2, got " +
                           std::to_string(params.model.n_classes));
  }
  if (!labels.valid()) return InvalidArgument("pipelined mlp: the labels are not valid");
  return PipelineBuilder(scope, x, labels, params).Build();
}

double TheoreticalBubbleFraction(int stages, int micro_batches) {
  return static_cast<double>(stages - 1) / static_cast<double>(micro_batches + stages - 1);
}

StatusOr<double> MeasureBubbleFraction(const std::vector<NodeExecStats>& step_stats,
                                       const std::vector<std::string>& devices) {
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> intervals;
  for (const std::string& device : devices) intervals[device];
  int64_t first = INT64_MAX;
  int64_t last = INT64_MIN;
  for (const NodeExecStats& s : step_stats) {
    auto it = intervals.find(s.device);
    if (it == intervals.end()) continue;
    it->second.emplace_back(s.start_micros, s.end_micros);
    first = std::min(first, s.start_micros);
    last = std::max(last, s.end_micros);
  }
  if (devices.empty() || first >= last) {
    return InvalidArgument("bubble fraction: the step's trace has no time span on the devices; "
                           "trace a step with RunOptions::kFullTrace");
  }
  double sum = 0.0;
  for (auto& [device, spans] : intervals) {
    if (spans.empty()) {
      return InvalidArgument("bubble fraction: no node ran on " + device +
                             " in the traced step; list only the pipeline's devices");
    }
    // The union of the node intervals: nodes of one device may overlap in time.
    std::sort(spans.begin(), spans.end());
    int64_t busy = 0;
    int64_t open = spans[0].first;
    int64_t close = spans[0].second;
    for (const auto& [start, end] : spans) {
      if (start > close) {
        busy += close - open;
        open = start;
        close = end;
      } else {
        close = std::max(close, end);
      }
    }
    busy += close - open;
    sum += 1.0 - static_cast<double>(busy) / static_cast<double>(last - first);
  }
  return sum / static_cast<double>(devices.size());
}

}  // namespace actorflow
