#include "training/estimators/word2vec.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <numeric>
#include <optional>
#include <sstream>
#include <unordered_set>
#include <utility>

#include "graph/cooperative.h"
#include "graph/ops.h"
#include "graph/sampled_ops.h"
#include "graph/scope.h"
#include "graph/sparse_ops.h"
#include "training/data/char_text.h"
#include "training/estimators/model_dir.h"
#include "training/optimizers/optimizer.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

constexpr int kLossWindow = 100;  // steps averaged for first_loss and loss
constexpr int kNearestWords = 8;
constexpr int kNeighbours = 5;

std::string PsDevice(int task) { return "/job:ps/task:" + std::to_string(task); }

// One worker's graph; the scope owns it.
struct Word2VecWorkerGraph {
  Scope root = Scope::NewRootScope();
};

Status BuildWorkerGraph(const Word2VecOptions& o, int64_t vocab, int worker,
                        Word2VecWorkerGraph* g) {
  const Scope& root = g->root;
  const bool on_ps = o.num_ps > 0;
  const Scope embedding_scope = on_ps ? root.WithDevice(PsDevice(0)) : root;
  const Scope nce_scope = on_ps ? root.WithDevice(PsDevice(1 % o.num_ps)) : root;
  const Scope compute =
      on_ps ? root.WithDevice("/job:worker/task:" + std::to_string(worker)) : root;
  const int64_t d = o.embedding_dim;
  const int64_t seed = static_cast<int64_t>(o.seed);
  AF_ASSIGN_OR_RETURN(
      Output embeddings,
      CreateVariable(embedding_scope, "embeddings",
                     RandomUniform(embedding_scope, Shape{vocab, d}, DType::kFloat32, seed, -1, 1)));
  AF_ASSIGN_OR_RETURN(
      Output nce_weights,
      CreateVariable(nce_scope, "nce_weights",
                     TruncatedNormal(nce_scope, Shape{vocab, d}, DType::kFloat32, seed + 1, 0,
                                     1.0 / std::sqrt(static_cast<double>(d)))));
  AF_ASSIGN_OR_RETURN(Output nce_biases, CreateVariable(nce_scope, "nce_biases",
                                                        Fill(nce_scope, Shape{vocab}, 0.0f)));
  const Output inputs = Placeholder(compute.WithOpName("inputs"), DType::kInt32, Shape{o.batch});
  const Output labels =
      Placeholder(compute.WithOpName("labels"), DType::kInt64, Shape{o.batch, 1});
  const Output embedded = EmbeddingLookup(compute, {embeddings}, inputs);
  const NceLossResult nce = NceLoss(compute, {nce_weights}, {nce_biases}, labels, embedded,
                                    o.num_sampled, vocab, seed + 2 + worker);
  const Output loss = Mean(compute.WithOpName("loss"), nce.loss);
  Identity(compute.WithOpName("sampled"), nce.sampled);
  if (worker == 0) {  // what serving.json names
    const Output words = Placeholder(compute.WithOpName("serving/words"), DType::kInt32, Shape{-1});
    const Output vectors = EmbeddingLookup(compute, {embeddings}, words);
    const Output norms = Sqrt(compute, Maximum(compute, Sum(compute, Square(compute, vectors), 1,
                                                            /*keep_dims=*/true),
                                               1e-12f));
    Div(compute.WithOpName("serving/embedding"), vectors, norms);
  }
  AF_ASSIGN_OR_RETURN(std::unique_ptr<Optimizer> optimizer,
                      MakeOptimizer(o.optimizer, o.learning_rate));
  AF_RETURN_IF_ERROR(optimizer->Minimize(compute.WithOpName("train"), loss).status());
  GlobalVariablesInitializer(compute.WithOpName("init"));
  return root.status();
}

// The (center, context) pairs of ids[begin, end), context positions wrapping around
// within the shard, in order: center c with offsets -w..-1, 1..w.
class SkipGramPairs {
 public:
  // Starts at pair `first` (the pairs of earlier steps, when resuming).
  SkipGramPairs(const std::vector<int32_t>& ids, int64_t begin, int64_t end, int64_t window,
                int64_t first)
      : ids_(ids), begin_(begin), length_(end - begin), window_(window),
        position_((first / (2 * window)) % length_), offset_index_(first % (2 * window)) {}

  void Next(int32_t* center, int64_t* context) {
    const int64_t offset = offset_index_ < window_ ? offset_index_ - window_ : offset_index_ - window_ + 1;
    *center = ids_[begin_ + position_];
    *context = ids_[begin_ + ((position_ + offset) % length_ + length_) % length_];
    if (++offset_index_ == 2 * window_) {
      offset_index_ = 0;
      position_ = (position_ + 1) % length_;
    }
  }

 private:
  const std::vector<int32_t>& ids_;
  int64_t begin_, length_, window_;
  int64_t position_;
  int64_t offset_index_;
};

struct Word2VecWorkerStats {
  std::vector<double> losses;
  double bytes_pulled = 0, bytes_pushed = 0, rows_touched = 0;
  Status status;
};

// Runs `steps` steps of `worker`, whose text resumes after `done_steps` earlier ones.
void RunWord2VecWorker(const Word2VecOptions& o, const Corpus& corpus, int worker, int64_t steps,
                       int64_t done_steps, Session* session, Word2VecWorkerStats* stats) {
  const int64_t n = static_cast<int64_t>(corpus.ids.size());
  const int64_t begin = n * worker / o.num_workers;
  const int64_t end = n * (worker + 1) / o.num_workers;
  SkipGramPairs pairs(corpus.ids, begin, end, o.skip_window, done_steps * o.batch);
  RunOptions run_options;
  run_options.timeout_in_ms = o.timeout_ms;
  std::vector<int32_t> centers(o.batch);
  std::vector<int64_t> contexts(o.batch);
  for (int64_t step = 0; step < steps; ++step) {
    for (int64_t i = 0; i < o.batch; ++i) pairs.Next(&centers[i], &contexts[i]);
    const FeedList feeds = {{"inputs", Tensor::FromVector(centers)},
                            {"labels", Tensor::FromVector(contexts, Shape{o.batch, 1})}};
    RunMetadata meta;
    std::vector<Tensor> out;
    Status s = session->Run(run_options, feeds, {"loss", "sampled"}, {"train"}, &out, &meta);
    if (!s.ok()) {
      stats->status = s.WithContext("word2vec worker " + std::to_string(worker) + " step " +
                                    std::to_string(step));
      return;
    }
    stats->losses.push_back(out[0].data<float>()[0]);
    if (o.on_step) o.on_step(worker, step + 1, steps, stats->losses.back());
    std::unordered_set<int64_t> embedding_rows(centers.begin(), centers.end());
    std::unordered_set<int64_t> nce_rows(contexts.begin(), contexts.end());
    for (int64_t i = 0; i < out[1].NumElements(); ++i) nce_rows.insert(out[1].data<int64_t>()[i]);
    stats->rows_touched += static_cast<double>(embedding_rows.size() + nce_rows.size());
    AddPsTraffic(meta, &stats->bytes_pulled, &stats->bytes_pushed);
  }
}

double MeanOf(const std::vector<double>& v, size_t from, size_t to) {
  if (to <= from) return 0;
  return std::accumulate(v.begin() + from, v.begin() + to, 0.0) / static_cast<double>(to - from);
}

// The kNearestWords most frequent words longer than 3 letters, each to its
// kNeighbours nearest by cosine similarity (itself and UNK excluded).
std::map<std::string, std::vector<std::string>> NearestWords(const Corpus& corpus,
                                                             const Tensor& embeddings) {
  const int64_t vocab = embeddings.dim(0), d = embeddings.dim(1);
  std::vector<float> unit(embeddings.data<float>(), embeddings.data<float>() + vocab * d);
  for (int64_t r = 0; r < vocab; ++r) {
    double norm = 0;
    for (int64_t c = 0; c < d; ++c) norm += unit[r * d + c] * unit[r * d + c];
    const float scale = norm > 0 ? static_cast<float>(1 / std::sqrt(norm)) : 0.0f;
    for (int64_t c = 0; c < d; ++c) unit[r * d + c] *= scale;
  }
  std::map<std::string, std::vector<std::string>> nearest;
  for (int64_t w = 1; w < vocab && static_cast<int>(nearest.size()) < kNearestWords; ++w) {
    if (corpus.words[w].size() <= 3) continue;
    std::vector<std::pair<float, int64_t>> scored;
    for (int64_t r = 1; r < vocab; ++r) {
      if (r == w) continue;
      float dot = 0;
      for (int64_t c = 0; c < d; ++c) dot += unit[w * d + c] * unit[r * d + c];
      scored.emplace_back(-dot, r);
    }
    const size_t k = std::min<size_t>(kNeighbours, scored.size());
    std::partial_sort(scored.begin(), scored.begin() + k, scored.end());
    for (size_t i = 0; i < k; ++i) nearest[corpus.words[w]].push_back(corpus.words[scored[i].second]);
  }
  return nearest;
}

}  // namespace

Status ValidateWord2VecOptions(const Word2VecOptions& o) {
  auto at_least = [](const std::string& name, int64_t value, int64_t min) -> Status {
    if (value >= min) return Status::OK();
    return InvalidArgument("word2vec: " + name + " must be >= " + std::to_string(min) +
                           ", got " + std::to_string(value));
  };
  AF_RETURN_IF_ERROR(at_least("vocab_size", o.vocab_size, 2));
  AF_RETURN_IF_ERROR(at_least("embedding_dim", o.embedding_dim, 1));
  AF_RETURN_IF_ERROR(at_least("num_sampled", o.num_sampled, 1));
  AF_RETURN_IF_ERROR(at_least("skip_window", o.skip_window, 1));
  AF_RETURN_IF_ERROR(at_least("batch", o.batch, 1));
  AF_RETURN_IF_ERROR(at_least("steps", o.steps, 1));
  AF_RETURN_IF_ERROR(at_least("num_ps", o.num_ps, 0));
  AF_RETURN_IF_ERROR(at_least("num_workers", o.num_workers, 1));
  if (o.num_workers > 1 && o.num_ps == 0) {
    return InvalidArgument("word2vec: " + std::to_string(o.num_workers) +
                           " workers need ps tasks to share the tables (num_ps >= 1)");
  }
  AF_RETURN_IF_ERROR(MakeOptimizer(o.optimizer, o.learning_rate).status());
  return Status::OK();
}

StatusOr<Corpus> CorpusFromText(const std::string& text, int64_t vocab_size) {
  std::vector<std::string> words;
  std::string word;
  for (char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c < 128 && std::isalpha(c)) {
      word.push_back(static_cast<char>(std::tolower(c)));
    } else if (!word.empty()) {
      words.push_back(std::move(word));
      word.clear();
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  if (words.size() < 2) {
    return InvalidArgument("word2vec: the text has " + std::to_string(words.size()) +
                           " words; at least 2 are needed");
  }
  std::unordered_map<std::string, std::pair<int64_t, int64_t>> seen;  // count, first
  for (size_t i = 0; i < words.size(); ++i) {
    auto [it, inserted] = seen.emplace(words[i], std::make_pair(int64_t{0}, static_cast<int64_t>(i)));
    ++it->second.first;
  }
  std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> ranked(seen.begin(), seen.end());
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    if (a.second.first != b.second.first) return a.second.first > b.second.first;
    return a.second.second < b.second.second;
  });
  Corpus corpus;
  corpus.words.push_back("UNK");
  corpus.counts.push_back(0);
  for (const auto& [w, count_first] : ranked) {
    if (static_cast<int64_t>(corpus.words.size()) >= vocab_size) break;
    corpus.index[w] = static_cast<int32_t>(corpus.words.size());
    corpus.words.push_back(w);
    corpus.counts.push_back(count_first.first);
  }
  corpus.ids.reserve(words.size());
  for (const std::string& w : words) {
    auto it = corpus.index.find(w);
    corpus.ids.push_back(it == corpus.index.end() ? 0 : it->second);
    if (it == corpus.index.end()) ++corpus.counts[0];
  }
  return corpus;
}

StatusOr<Corpus> ReadCorpus(const std::string& path, int64_t vocab_size) {
  StatusOr<std::vector<std::string>> files = ListTextFiles(path);
  if (!files.ok()) return NotFound("word2vec: " + files.status().message());
  std::string text;
  for (const std::string& file : *files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return NotFound("word2vec: cannot read '" + file + "'");
    std::ostringstream content;
    content << in.rdbuf();
    text += content.str();
    text += '\n';
  }
  return CorpusFromText(text, vocab_size);
}

StatusOr<Word2VecResult> TrainWord2Vec(const Word2VecOptions& o, const Corpus& corpus,
                                       const WorkerSessionFactory& sessions) {
  AF_RETURN_IF_ERROR(ValidateWord2VecOptions(o));
  const int64_t vocab = static_cast<int64_t>(corpus.words.size());
  if (static_cast<int64_t>(corpus.ids.size()) < o.num_workers * 2) {
    return InvalidArgument("word2vec: a corpus of " + std::to_string(corpus.ids.size()) +
                           " words is too short for " + std::to_string(o.num_workers) +
                           " workers");
  }
  std::vector<std::unique_ptr<Word2VecWorkerGraph>> graphs;
  std::vector<std::unique_ptr<Session>> worker_sessions;
  std::optional<ChiefCheckpoints> checkpoints;
  for (int w = 0; w < o.num_workers; ++w) {
    graphs.push_back(std::make_unique<Word2VecWorkerGraph>());
    AF_RETURN_IF_ERROR(BuildWorkerGraph(o, vocab, w, graphs.back().get()));
    if (w == 0) {
      AF_ASSIGN_OR_RETURN(checkpoints,
                          ChiefCheckpoints::Create(graphs[0]->root.graph(), o.checkpoint_dir));
    }
    AF_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, sessions(graphs.back()->root.graph(), w));
    worker_sessions.push_back(std::move(session));
  }
  // The chief initializes (or restores) the tables before any worker trains.
  AF_ASSIGN_OR_RETURN(const int64_t restored_step,
                      checkpoints->RestoreOrInitialize(worker_sessions[0].get(), "init"));
  std::vector<Word2VecWorkerStats> stats(o.num_workers);
  const auto start = std::chrono::steady_clock::now();
  // Cooperative threads: on a simulated cluster the workers take turns.
  RunThreadsCooperatively("word2vec worker", o.num_workers, [&](int w) {
    const int64_t steps = o.steps / o.num_workers + (w < o.steps % o.num_workers ? 1 : 0);
    RunWord2VecWorker(o, corpus, w, steps, restored_step / o.num_workers, worker_sessions[w].get(),
                      &stats[w]);
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const Word2VecWorkerStats& s : stats) AF_RETURN_IF_ERROR(s.status);

  Word2VecResult result;
  result.seconds = seconds;
  double pulled = 0, pushed = 0, rows = 0;
  for (const Word2VecWorkerStats& s : stats) {
    const size_t n = s.losses.size();
    result.first_loss += MeanOf(s.losses, 0, std::min<size_t>(kLossWindow, n)) / o.num_workers;
    result.loss += MeanOf(s.losses, n - std::min<size_t>(kLossWindow, n), n) / o.num_workers;
    result.steps += static_cast<int64_t>(n);
    pulled += s.bytes_pulled;
    pushed += s.bytes_pushed;
    rows += s.rows_touched;
  }
  result.losses = stats[0].losses;
  const double steps = static_cast<double>(result.steps);
  result.bytes_pulled_per_step = pulled / steps;
  result.bytes_pushed_per_step = pushed / steps;
  result.rows_touched_per_step = rows / steps;
  result.dense_bytes_per_step = 2.0 * static_cast<double>(vocab) *
                                static_cast<double>(2 * o.embedding_dim + 1) * sizeof(float);
  result.words_per_second = steps * static_cast<double>(o.batch) /
                            static_cast<double>(2 * o.skip_window) / seconds;
  result.global_step = restored_step + result.steps;
  std::vector<Tensor> out;
  AF_RETURN_IF_ERROR(worker_sessions[0]->Run({}, {"embeddings"}, {}, &out));
  result.nearest = NearestWords(corpus, out[0]);
  if (!o.checkpoint_dir.empty()) {
    ServingSpec serving{"word2vec", {{"words", "serving/words"}}, {{"embedding", "serving/embedding"}}};
    AF_RETURN_IF_ERROR(checkpoints->Save(worker_sessions[0].get(), result.global_step,
                                         *graphs[0]->root.graph(), serving));
    std::string vocabulary;
    for (size_t id = 0; id < corpus.words.size(); ++id) {
      vocabulary += corpus.words[id] + "\t" + std::to_string(corpus.counts[id]) + "\n";
    }
    AF_RETURN_IF_ERROR(WriteFileByRename(o.checkpoint_dir + "/vocabulary.txt", vocabulary));
  }
  return result;
}

}  // namespace actorflow
