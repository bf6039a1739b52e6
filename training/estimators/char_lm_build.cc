// BuildCharLm (char_lm.h): a character language model's graph, whole, cut into
// stages over devices (the LSTM's layers, the Transformer's blocks), pipelined in
// micro-batches through those stages, or replicated into towers beside variables on
// parameter-server devices. Every placement builds the same variables under the same
// names, so checkpoints move between them.
#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/ops.h"
#include "graph/shape_ops.h"
#include "training/estimators/char_lm.h"
#include "training/estimators/layer_classes.h"
#include "training/estimators/model_parallel.h"
#include "training/estimators/sequence_layers.h"
#include "training/optimizers/optimizer.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

using model_parallel_internal::OnDevice;
using model_parallel_internal::SpreadDevice;

// The scope of stage s's nodes for one part.
using StageScope = std::function<Scope(int stage)>;

Output ShapeConst(const Scope& s, std::vector<int32_t> dims) {
  return Const(s, Tensor::FromVector(dims));
}

// "name" for part 0, "name_<k>" after: the names of one part's own sub-scopes (the
// layers name their later calls the same way).
std::string PartName(const std::string& name, int part) {
  return part == 0 ? name : name + "_" + std::to_string(part);
}

// The model's layers, made once and called once per part (a micro-batch or a tower):
// the first call creates the variables on its scope's device, later calls reuse them.
class CharLmNetwork {
 public:
  explicit CharLmNetwork(const CharLmSpec& spec)
      : spec_(spec),
        lstm_model_(spec.model == "char-lstm"),
        embedding_("embedding",
                   {static_cast<int64_t>(spec.vocabulary.size()),
                    lstm_model_ ? spec.embedding_dim : spec.width, 1.0,
                    static_cast<int64_t>(spec.seed)}),
        final_norm_("final_norm"),
        output_("output", {static_cast<int64_t>(spec.vocabulary.size()), Activation::kNone,
                           static_cast<int64_t>(spec.seed) + 99}) {
    const int64_t seed = static_cast<int64_t>(spec.seed);
    if (lstm_model_) {
      for (size_t l = 0; l < spec.lstm_units.size(); ++l) {
        lstm_.emplace_back("lstm_" + std::to_string(l),
                           layers::RecurrentOptions{spec.lstm_units[l], 1.0f,
                                                    seed + 10 + static_cast<int64_t>(l)});
      }
    } else {
      for (int64_t k = 0; k < spec.blocks; ++k) {
        blocks_.emplace_back("block_" + std::to_string(k),
                             layers::TransformerBlockOptions{spec.heads, 0, /*causal=*/true,
                                                             seed + 10 + k});
      }
    }
  }

  // The LSTM's layers or the Transformer's blocks.
  int stages() const {
    return static_cast<int>(lstm_model_ ? spec_.lstm_units.size() : spec_.blocks);
  }

  // One part's ids int32 [b, T] -> logits [b * T, vocabulary].
  StatusOr<Output> Logits(const StageScope& stage, const Output& inputs, int part) {
    AF_ASSIGN_OR_RETURN(Output embedded, embedding_(stage(0), inputs));
    const int last = stages() - 1;
    Output hidden;
    int64_t width = 0;
    if (lstm_model_) {
      std::vector<Output> steps =
          Unpack(stage(0).NewSubScope(PartName("steps", part)), embedded, spec_.seq_len, 1);
      for (int l = 0; l <= last; ++l) {
        AF_ASSIGN_OR_RETURN(layers::RecurrentOutputs out, lstm_[static_cast<size_t>(l)](stage(l), steps));
        steps = std::move(out.outputs);
      }
      width = spec_.lstm_units.back();
      const Scope s = stage(last).NewSubScope(PartName("lstm_outputs", part));
      hidden = Reshape(s, Pack(s, steps, 1), ShapeConst(s, {-1, static_cast<int32_t>(width)}));
    } else {
      if (!positions_) {
        const Scope init = stage(0).NewSubScope("positions_init");
        AF_ASSIGN_OR_RETURN(
            positions_, CreateVariable(stage(0), "positions",
                                       TruncatedNormal(init, Shape{spec_.seq_len, spec_.width},
                                                       DType::kFloat32,
                                                       static_cast<int64_t>(spec_.seed) + 5, 0.0,
                                                       0.02)));
      }
      Output x = Add(stage(0).NewSubScope(PartName("add_positions", part)), embedded, *positions_);
      for (int k = 0; k <= last; ++k) {
        AF_ASSIGN_OR_RETURN(x, blocks_[static_cast<size_t>(k)](stage(k), x));
      }
      AF_ASSIGN_OR_RETURN(x, final_norm_(stage(last), x));
      width = spec_.width;
      const Scope s = stage(last).NewSubScope(PartName("transformer_outputs", part));
      hidden = Reshape(s, x, ShapeConst(s, {-1, static_cast<int32_t>(width)}));
    }
    return output_(stage(last), hidden);
  }

 private:
  const CharLmSpec& spec_;
  const bool lstm_model_;
  layers::Embedding embedding_;
  std::vector<layers::LSTM> lstm_;
  std::vector<layers::TransformerBlock> blocks_;
  std::optional<Output> positions_;
  layers::LayerNormalization final_norm_;
  layers::Dense output_;
};

// Variables to the ps devices in turn, a node that requests a device to it (a
// gradient beside its forward node, which may be another tower's), everything else
// to `tower` (nodes that update a variable stay with it: graph/scope.h).
Scope::DeviceFunction TowerDevices(const std::vector<std::string>& ps, const std::string& tower,
                                   std::shared_ptr<size_t> next_ps) {
  return [ps, tower, next_ps](const NodeDef& def) {
    if (def.op == "Variable" && !ps.empty()) return ps[(*next_ps)++ % ps.size()];
    if (!def.device.empty()) return def.device;
    return tower;
  };
}

// `parts` outputs joined on their first dimension, or the one output when there is
// one; named `name`.
Output JoinParts(const Scope& scope, const std::string& name, const std::vector<Output>& parts) {
  if (parts.size() == 1) return Identity(scope.WithOpName(name), parts[0]);
  return ConcatV2(scope.WithOpName(name), {parts.begin(), parts.end()}, 0);
}

}  // namespace

int CharLmParts(const CharLmPlacement& placement) {
  return std::max({1, placement.micro_batches, static_cast<int>(placement.tower_devices.size())});
}

Status CheckCharLmPlacement(const CharLmSpec& spec, const CharLmPlacement& placement) {
  if (placement.micro_batches < 1) {
    return InvalidArgument("char LM: --pipeline " + std::to_string(placement.micro_batches) +
                           " micro-batches; it needs at least 1");
  }
  if (placement.micro_batches > 1 && placement.stage_devices.size() < 2) {
    return InvalidArgument("char LM: --pipeline " + std::to_string(placement.micro_batches) +
                           " needs the model split over at least 2 devices (--split layer "
                           "--devices cpu=N), it has " +
                           std::to_string(placement.stage_devices.size()));
  }
  if (!placement.tower_devices.empty() && !placement.stage_devices.empty()) {
    return InvalidArgument("char LM: data parallelism (towers) and a model split do not "
                           "combine; use one of them");
  }
  const size_t stages = spec.model == "char-lstm" ? spec.lstm_units.size()
                                                  : static_cast<size_t>(spec.blocks);
  if (placement.stage_devices.size() > stages) {
    return InvalidArgument("char LM: " + spec.model + " has " + std::to_string(stages) +
                           (spec.model == "char-lstm" ? " layers" : " blocks") + " to split over " +
                           std::to_string(placement.stage_devices.size()) +
                           " devices; give at most that many devices");
  }
  return Status::OK();
}

Status BuildCharLm(const Scope& root, const CharLmSpec& spec, double learning_rate,
                   const CharLmPlacement& placement) {
  AF_RETURN_IF_ERROR(ValidateCharLmSpec(spec));
  AF_RETURN_IF_ERROR(CheckCharLmPlacement(spec, placement));
  const int parts = CharLmParts(placement);
  const bool towers = !placement.tower_devices.empty();
  CharLmNetwork network(spec);
  auto next_ps = std::make_shared<size_t>(0);
  // Tower t's nodes on its device, the variables on the ps devices.
  auto tower_root = [&](int t) {
    return root.WithDeviceFunction(TowerDevices(
        placement.ps_devices, placement.tower_devices[static_cast<size_t>(t)], next_ps));
  };
  // The feeds beside the first stage (or tower), the joined outputs, the loss and the
  // optimizer's own nodes beside the last (or the first tower; Adam's step counters
  // then live on a ps device too).
  const Scope feed = towers ? OnDevice(root, placement.tower_devices[0])
                            : OnDevice(root, SpreadDevice(placement.stage_devices, 0,
                                                          network.stages()));
  const Scope head = towers ? tower_root(0)
                            : OnDevice(root, SpreadDevice(placement.stage_devices,
                                                          network.stages() - 1,
                                                          network.stages()));
  const Output inputs =
      Placeholder(feed.WithOpName("inputs"), DType::kInt32, Shape{-1, spec.seq_len});
  const Output targets =
      Placeholder(feed.WithOpName("targets"), DType::kInt32, Shape{-1, spec.seq_len});
  std::vector<Output> logits_parts;
  std::vector<Output> loss_parts;
  for (int part = 0; part < parts; ++part) {
    const Scope part_root = towers ? tower_root(part) : root;
    const StageScope stage = [&](int s) {
      if (towers) return part_root;
      return OnDevice(part_root, SpreadDevice(placement.stage_devices, s, network.stages()));
    };
    const Scope cut = stage(0).NewSubScope(PartName("part", part));
    const Output part_inputs = parts == 1 ? inputs : EvenSplitPart(cut, inputs, part, parts);
    const Output part_targets = parts == 1 ? targets : EvenSplitPart(cut, targets, part, parts);
    AF_ASSIGN_OR_RETURN(Output logits, network.Logits(stage, part_inputs, part));
    const Scope loss_scope = stage(network.stages() - 1).NewSubScope(PartName("cross_entropy", part));
    const Output labels = Reshape(loss_scope, part_targets, ShapeConst(loss_scope, {-1}));
    loss_parts.push_back(SparseSoftmaxCrossEntropyWithLogits(loss_scope, logits, labels).loss);
    logits_parts.push_back(logits);
  }
  JoinParts(head, "logits", logits_parts);
  const Output losses = JoinParts(head, "losses", loss_parts);
  const Output loss = Mean(head.WithOpName("loss"), losses);
  if (learning_rate > 0) {
    AF_ASSIGN_OR_RETURN(std::unique_ptr<Optimizer> adam, MakeOptimizer("adam", learning_rate));
    AF_RETURN_IF_ERROR(adam->Minimize(head.WithOpName("train"), loss).status());
  }
  GlobalVariablesInitializer(root.WithOpName("init"));
  return root.status();
}

}  // namespace actorflow
