#include "tools/train/char_lm_command.h"

#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "actors/cluster/session_factory.h"
#include "kernels/chrome_trace.h"
#include "tools/train/graph_cluster_flag.h"
#include "tools/train/train_flags.h"
#include "tools/train/train_summaries.h"
#include "training/estimators/char_lm.h"
#include "training/estimators/pipeline.h"

namespace actorflow {
namespace cli {
namespace {

StatusOr<CharLmOptions> CharLmOptionsOf(const TrainCommandOptions& flags) {
  CharLmOptions o;
  o.spec.model = flags.model;
  o.spec.seq_len = flags.seq_len;
  o.spec.embedding_dim = flags.embedding_dim;
  if (flags.model == "char-lstm") {
    AF_ASSIGN_OR_RETURN(o.spec.lstm_units, ParseHiddenUnits(flags.hidden, "--hidden"));
  }
  o.spec.width = flags.width;
  o.spec.heads = flags.heads;
  o.spec.blocks = flags.blocks;
  o.spec.seed = flags.seed;
  o.batch = flags.batch;
  o.steps = flags.steps;
  o.learning_rate = flags.learning_rate;
  o.data_seed = flags.seed;
  o.eval_chars = flags.eval_chars;
  o.checkpoint_dir = ResolveUserPath(flags.checkpoint_dir);
  return o;
}

WorkerSessionFactory LocalSessions() {
  return [](const Graph* graph, int) { return NewSession(graph, SessionOptions()); };
}

// The LSTM's layers or the Transformer's blocks: what --split layer spreads.
int64_t Stages(const TrainCommandOptions& flags, const CharLmOptions& o) {
  return flags.model == "char-lstm" ? static_cast<int64_t>(o.spec.lstm_units.size())
                                    : o.spec.blocks;
}

// Where the model runs: the placement and the devices used (for the result).
struct CharLmRuntime {
  CharLmPlacement placement;
  std::vector<std::string> devices;
};

// The library trainer's options: --cluster's, or without one a local session over
// --devices (soft placement for --split layer: an op without a GPU kernel runs on a
// CPU).
StatusOr<GraphTrainerOptions> TrainerOptionsOf(const TrainCommandOptions& flags) {
  AF_ASSIGN_OR_RETURN(GraphTrainerOptions trainer,
                      GraphTrainerOptionsFromFlag(flags.cluster, flags.model, flags.timeout_ms));
  if (!flags.cluster.empty()) return trainer;
  AF_ASSIGN_OR_RETURN(trainer.session_options, LocalSessionOptions(flags.devices));
  trainer.session_options.allow_soft_placement = flags.split == "layer";
  return trainer;
}

// On a cluster: a tower per worker task, the variables over the ps tasks, the
// session on worker 0 (in-graph replication). Otherwise the local session's
// --devices, the stages spread over them with --split layer.
StatusOr<CharLmRuntime> RuntimeOn(const GraphCluster& cluster, const TrainCommandOptions& flags,
                                  const CharLmOptions& o, const SessionOptions& local_session) {
  CharLmRuntime runtime;
  if (!cluster.in_process) {
    runtime.placement.tower_devices = cluster.WorkerDevices();
    runtime.placement.ps_devices = cluster.PsDevices();
    runtime.devices = runtime.placement.tower_devices;
    return runtime;
  }
  const std::vector<std::string> local = LocalDeviceNames(local_session.device_count);
  if (flags.split == "layer") {
    if (local.size() < 2) {
      return InvalidArgument("--model " + flags.model + " --split layer needs at least 2 "
                             "devices; give more with --devices cpu=N");
    }
    // More devices than stages are left idle.
    const size_t used = std::min<size_t>(local.size(), static_cast<size_t>(Stages(flags, o)));
    runtime.placement.stage_devices.assign(local.begin(), local.begin() + used);
    runtime.placement.micro_batches = flags.pipeline > 0 ? static_cast<int>(flags.pipeline) : 1;
    runtime.devices = runtime.placement.stage_devices;
  } else {
    runtime.devices = {local.front()};
  }
  return runtime;
}

}  // namespace

Status CheckCharLmFlags(const TrainCommandOptions& flags) {
  const std::string model = "--model " + flags.model;
  if (flags.text_path.empty()) {
    return InvalidArgument(model + " needs --text FILE (a text file or a directory of them, "
                           "e.g. /usr/share/games/fortunes)");
  }
  if (flags.split != "none" && flags.split != "layer") {
    return InvalidArgument(model + " --split " + flags.split + ": its splits are none and "
                           "layer (the LSTM's layers or the Transformer's blocks over --devices)");
  }
  if (flags.pipeline > 0 && flags.split != "layer") {
    return InvalidArgument(model + " --pipeline needs --split layer (micro-batches flow "
                           "through the stages of the split)");
  }
  if (!flags.schedule.empty()) {
    return InvalidArgument(model + " --schedule: its micro-batches follow the dataflow; "
                           "--schedule is for --model mlp");
  }
  if (!flags.cluster.empty()) {
    if (flags.split != "none") {
      return InvalidArgument(model + " --cluster with --split " + flags.split +
                             ": data parallelism and a model split do not combine");
    }
    if (flags.mode != "sync") {
      return InvalidArgument(model + " --mode " + flags.mode +
                             ": its workers train synchronously, as towers of one graph "
                             "(--mode sync)");
    }
  }
  if (flags.optimizer != "adam") {
    return InvalidArgument(model + " --optimizer " + flags.optimizer + ": it trains with adam");
  }
  AF_ASSIGN_OR_RETURN(CharLmOptions o, CharLmOptionsOf(flags));
  o.spec.vocabulary = {U'a', U'b'};  // the text's is not read yet
  const Status valid = ValidateCharLmSpec(o.spec);
  if (!valid.ok()) return InvalidArgument(model + ": " + valid.message());
  if (o.batch < 1 || o.steps < 1 || o.eval_chars < 0 || !(o.learning_rate > 0)) {
    return InvalidArgument(model + ": --batch and --steps must be >= 1, --eval-chars >= 0 and "
                           "--lr positive");
  }
  return Status::OK();
}

Status TrainCharLmCommand(const TrainCommandOptions& flags, std::ostream& out,
                          std::ostream& progress) {
  AF_ASSIGN_OR_RETURN(CharLmOptions o, CharLmOptionsOf(flags));
  AF_ASSIGN_OR_RETURN(CharCorpus corpus, ReadCharCorpus(ResolveUserPath(flags.text_path)));
  progress << flags.model << ": " << corpus.train.size() << " training and "
           << corpus.validation.size() << " validation characters, vocabulary of "
           << corpus.vocabulary.size() << "\n";
  TrainSummaries summaries(ResolveUserPath(flags.logdir), o.batch, o.learning_rate, progress);
  if (summaries.enabled()) {
    o.on_step = [&summaries](int worker, int64_t step, int64_t planned, double loss) {
      summaries.Progress(worker, step, planned, loss);
    };
  }
  AF_ASSIGN_OR_RETURN(GraphTrainerOptions trainer, TrainerOptionsOf(flags));
  trainer.seed = flags.seed;
  CharLmRuntime runtime;
  CharLmResult r;
  AF_ASSIGN_OR_RETURN(GraphTrainerReport report,
                      TrainGraphWorkload(trainer, [&](const GraphCluster& cluster) -> Status {
    AF_ASSIGN_OR_RETURN(runtime, RuntimeOn(cluster, flags, o, trainer.session_options));
    o.placement = runtime.placement;
    // A pipeline's bubble is measured from a traced step.
    o.trace_step = !flags.trace_path.empty() || o.placement.micro_batches > 1;
    AF_ASSIGN_OR_RETURN(r, TrainCharLm(o, corpus, cluster.sessions));
    return Status::OK();
  }));
  summaries.End(0, r.global_step, {{"bits_per_char", static_cast<float>(r.bits_per_char)}});
  if (!flags.trace_path.empty()) {
    AF_RETURN_IF_ERROR(WriteChromeTrace(r.traced_step, ResolveUserPath(flags.trace_path)));
  }
  nlohmann::ordered_json j;
  j["model"] = flags.model;
  j["bits_per_char"] = r.bits_per_char;
  j["first_bits_per_char"] = r.first_bits_per_char;
  j["samples_per_second"] = r.samples_per_second;
  j["steps"] = r.steps;
  j["global_step"] = r.global_step;
  j["seconds"] = r.seconds;
  j["vocab_size"] = corpus.vocabulary.size();
  j["train_chars"] = corpus.train.size();
  j["validation_chars"] = corpus.validation.size();
  j["split"] = flags.split;
  j["devices"] = runtime.devices;
  j["cross_device_bytes_per_step"] = r.cross_device_bytes_per_step;
  if (o.placement.micro_batches > 1) {
    AF_ASSIGN_OR_RETURN(const double bubble,
                        MeasureBubbleFraction(r.traced_step.step_stats, runtime.devices));
    j["pipeline"] = o.placement.micro_batches;
    j["bubble_fraction"] = bubble;
    j["bubble_fraction_theory"] =
        TheoreticalBubbleFraction(static_cast<int>(runtime.devices.size()),
                                  o.placement.micro_batches);
  }
  if (!o.placement.tower_devices.empty()) {
    j["replication"] = "in-graph";
    j["towers"] = o.placement.tower_devices.size();
    j["ps_tasks"] = o.placement.ps_devices.size();
  }
  AddSimulationFields(report, &j);
  if (flags.json) {
    out << j.dump() << "\n";
    return Status::OK();
  }
  out << "validation bits per character " << r.bits_per_char << " (after 10 steps: "
      << r.first_bits_per_char << ") after " << r.steps << " steps, " << r.samples_per_second
      << " windows/s\n";
  return Status::OK();
}

Subcommand AddSampleSubcommand(CLI::App* parent) {
  struct Flags {
    std::string checkpoint_dir;
    SampleOptions sample;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* app = parent->add_subcommand(
      "sample", "Print text generated by a character model saved by `train --checkpoint-dir`");
  app->add_option("--checkpoint-dir", flags->checkpoint_dir,
                  "Model directory of train --model char-lstm|char-transformer")
      ->required();
  app->add_option("--length", flags->sample.length, "Characters to generate")
      ->capture_default_str();
  app->add_option("--seed", flags->sample.seed, "Seed of the draws")->capture_default_str();
  app->add_option("--prime", flags->sample.prime, "Text the generation continues");
  app->add_option("--temperature", flags->sample.temperature,
                  "Divides the logits before each draw (below 1: more conservative)")
      ->capture_default_str();
  return Subcommand{app, [flags]() {
                      return RunChecked(
                          std::cout, std::cerr, []() { return Status::OK(); },
                          [&]() -> Status {
                            AF_ASSIGN_OR_RETURN(
                                std::string text,
                                SampleCharLm(ResolveUserPath(flags->checkpoint_dir),
                                             flags->sample, LocalSessions()));
                            std::cout << text << "\n";
                            return Status::OK();
                          });
                    }};
}

}  // namespace cli
}  // namespace actorflow
