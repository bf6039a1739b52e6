#include "tools/train/word2vec_command.h"

#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "tools/cli/cli_common.h"
#include "tools/train/graph_cluster_flag.h"
#include "tools/train/train_summaries.h"
#include "training/estimators/word2vec.h"

namespace actorflow {
namespace cli {
namespace {

Word2VecOptions Word2VecOptionsOf(const TrainCommandOptions& flags) {
  Word2VecOptions o;
  o.vocab_size = flags.vocab_size;
  o.embedding_dim = flags.embedding_dim;
  o.num_sampled = flags.num_sampled;
  o.skip_window = flags.skip_window;
  o.batch = flags.batch;
  o.steps = flags.steps;
  o.optimizer = flags.optimizer;
  o.learning_rate = flags.learning_rate;
  o.seed = flags.seed;
  o.timeout_ms = flags.timeout_ms;
  o.checkpoint_dir = ResolveUserPath(flags.checkpoint_dir);
  return o;
}

void PrintResult(const Word2VecResult& r, int64_t vocab, const GraphTrainerReport& report,
                 std::ostream& out, bool json) {
  if (json) {
    nlohmann::ordered_json j;
    j["model"] = "word2vec";
    j["loss"] = r.loss;
    j["first_loss"] = r.first_loss;
    j["bytes_pushed_per_step"] = r.bytes_pushed_per_step;
    j["bytes_pulled_per_step"] = r.bytes_pulled_per_step;
    j["dense_bytes_per_step"] = r.dense_bytes_per_step;
    j["rows_touched_per_step"] = r.rows_touched_per_step;
    j["nearest"] = r.nearest;
    j["steps"] = r.steps;
    j["global_step"] = r.global_step;
    j["seconds"] = r.seconds;
    j["words_per_second"] = r.words_per_second;
    j["vocab_size"] = vocab;
    AddSimulationFields(report, &j);
    out << j.dump() << "\n";
    return;
  }
  for (const auto& [word, neighbours] : r.nearest) {
    out << "nearest to " << word << ":";
    for (const std::string& n : neighbours) out << " " << n;
    out << "\n";
  }
  out << "bytes per step: " << r.bytes_pulled_per_step << " pulled, " << r.bytes_pushed_per_step
      << " pushed (dense: " << r.dense_bytes_per_step << "); " << r.rows_touched_per_step
      << " rows touched\n";
  out << "loss " << r.loss << " (first 100 steps: " << r.first_loss << ") after " << r.steps
      << " steps, " << r.words_per_second << " words/s\n";
}

}  // namespace

Status CheckWord2VecFlags(const TrainCommandOptions& flags) {
  if (flags.text_path.empty()) {
    return InvalidArgument("--model word2vec needs --text FILE (a text file or a directory of "
                           "them, e.g. /usr/share/games/fortunes)");
  }
  Word2VecOptions o = Word2VecOptionsOf(flags);
  if (!flags.cluster.empty() && flags.mode != "async") {
    return InvalidArgument("--model word2vec --mode " + flags.mode +
                           ": its workers train between-graph asynchronously (--mode async)");
  }
  AF_ASSIGN_OR_RETURN(GraphCluster shape, GraphClusterOfFlag(flags.cluster, "word2vec"));
  o.num_ps = shape.num_ps;
  o.num_workers = shape.num_workers;
  const Status valid = ValidateWord2VecOptions(o);
  if (!valid.ok()) return InvalidArgument("--model word2vec: " + valid.message());
  return Status::OK();
}

Status TrainWord2VecCommand(const TrainCommandOptions& flags, std::ostream& out,
                            std::ostream& progress) {
  Word2VecOptions o = Word2VecOptionsOf(flags);
  AF_ASSIGN_OR_RETURN(Corpus corpus,
                      ReadCorpus(ResolveUserPath(flags.text_path), o.vocab_size));
  progress << "word2vec: " << corpus.ids.size() << " words, vocabulary of "
           << corpus.words.size() << "\n";
  AF_ASSIGN_OR_RETURN(GraphTrainerOptions trainer,
                      GraphTrainerOptionsFromFlag(flags.cluster, "word2vec", flags.timeout_ms));
  TrainSummaries summaries(ResolveUserPath(flags.logdir), o.batch, o.learning_rate, progress);
  if (summaries.enabled()) {
    o.on_step = [&summaries](int worker, int64_t step, int64_t planned, double loss) {
      summaries.Progress(worker, step, planned, loss);
    };
  }
  trainer.seed = flags.seed;
  Word2VecResult result;
  AF_ASSIGN_OR_RETURN(GraphTrainerReport report,
                      TrainGraphWorkload(trainer, [&](const GraphCluster& cluster) -> Status {
    o.num_ps = cluster.num_ps;
    o.num_workers = cluster.num_workers;
    AF_ASSIGN_OR_RETURN(result, TrainWord2Vec(o, corpus, cluster.sessions));
    return Status::OK();
  }));
  summaries.End(0, result.global_step,
                {{"loss", static_cast<float>(result.loss)},
                 {"words_per_second", static_cast<float>(result.words_per_second)},
                 {"bytes_pulled_per_step", static_cast<float>(result.bytes_pulled_per_step)},
                 {"bytes_pushed_per_step", static_cast<float>(result.bytes_pushed_per_step)}});
  PrintResult(result, static_cast<int64_t>(corpus.words.size()), report, out, flags.json);
  return Status::OK();
}

}  // namespace cli
}  // namespace actorflow
