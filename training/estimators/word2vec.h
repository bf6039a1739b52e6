// word2vec skip-gram (TensorFlow 1.x's basic word2vec): a vocabulary of the most
// frequent words of a text, an embedding table [vocabulary, dim] read with
// EmbeddingLookup, and NCE against num_sampled log-uniform negative words
// (graph/sampled_ops.h). Every table is read and updated by rows, so on a cluster a
// step moves only the rows of its batch's words and sampled words.
//
//   Word2VecOptions options;                       // vocabulary 50000, dim 128, NCE 64
//   auto corpus = ReadCorpus("/usr/share/games/fortunes", options.vocab_size);
//   auto result = TrainWord2Vec(options, *corpus, LocalSessions());
//   result->nearest["love"];                       // its 5 nearest words by cosine
//
// Training: the corpus's (center, context) pairs, every context word within
// skip_window of its center, in corpus order, batch of them at a time, by SGD on the
// mean NCE loss (or the named optimizer; sgd, adagrad and adam update only the rows a
// step touched). With num_workers W > 1 the corpus is cut into W contiguous shards
// and W workers train between-graph, asynchronously (each its own graph, the tables
// on the ps tasks), together `steps` steps: each worker runs steps / W of them, so
// the examples seen equal a single worker's run of `steps`.
//
// Serving: worker 0's graph also maps "serving/words" (int32 word ids [n]) to
// "serving/embedding" (their unit-length embeddings [n, dim]), the signature
// --checkpoint-dir's serving.json names ("words" -> "embedding").
//
// Thread safety: TrainWord2Vec runs the workers on threads of its own and returns
// when all are done; the other functions are pure.
#ifndef ACTORFLOW_TRAINING_ESTIMATORS_WORD2VEC_H_
#define ACTORFLOW_TRAINING_ESTIMATORS_WORD2VEC_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"
#include "kernels/session.h"
#include "training/estimators/worker_sessions.h"

namespace actorflow {

struct Word2VecOptions {
  int64_t vocab_size = 50000;  // including "UNK", word 0, for every rarer word
  int64_t embedding_dim = 128;
  int64_t num_sampled = 64;
  int64_t skip_window = 1;
  int64_t batch = 128;
  int64_t steps = 1000;
  std::string optimizer = "sgd";  // MakeOptimizer's names: sgd, momentum, adam, adagrad
  double learning_rate = 1.0;
  uint64_t seed = 1;
  // 0: every variable beside the computation (one process); else the tables go to
  // /job:ps/task:0..num_ps-1 (embeddings on task 0, the NCE weights and biases on
  // task 1 % num_ps) and worker i computes on /job:worker/task:i.
  int num_ps = 0;
  int num_workers = 1;
  int64_t timeout_ms = 60000;  // each step's RunOptions::timeout_in_ms
  // A model directory (training/estimators/model_dir.h): training resumes from its
  // latest checkpoint (the text continues where that run stopped) and ends with a
  // checkpoint, the serving files and vocabulary.txt (word i on line i + 1, a tab,
  // its count). Empty: none.
  std::string checkpoint_dir;
  StepObserver on_step;  // may be empty
};

// Checks every option; InvalidArgument naming the first bad one.
Status ValidateWord2VecOptions(const Word2VecOptions& options);

// A text as word ids: words are runs of letters, lowercased; the vocabulary holds
// "UNK" and the vocab_size - 1 most frequent words (ties by first appearance), most
// frequent first, so that low ids are frequent ones (what the log-uniform sampler
// assumes).
struct Corpus {
  std::vector<std::string> words;          // by id
  std::vector<int64_t> counts;             // by id (UNK counts the rarer words)
  std::vector<int32_t> ids;                // the text
  std::unordered_map<std::string, int32_t> index;
};

// Reads `path`, a text file or a directory of them (every regular file whose name has
// no ".dat" or ".u8" ending, in name order: the layout of Debian's fortunes package).
// NotFound naming the path; InvalidArgument when it holds fewer than 2 words.
StatusOr<Corpus> ReadCorpus(const std::string& path, int64_t vocab_size);
// The same from text in memory.
StatusOr<Corpus> CorpusFromText(const std::string& text, int64_t vocab_size);

struct Word2VecResult {
  double first_loss = 0;  // mean NCE loss of the first 100 steps (of each worker, averaged)
  double loss = 0;        // of the last 100 steps
  std::vector<double> losses;  // worker 0's loss at each of its steps
  int64_t steps = 0;           // steps run by all workers together
  int64_t global_step = 0;     // steps, plus those of the checkpoint resumed from
  double seconds = 0;
  double words_per_second = 0;  // center words trained per second (batch / 2 / skip_window)
  // Between the ps tasks and the workers, per step, measured (0 in one process).
  double bytes_pulled_per_step = 0;
  double bytes_pushed_per_step = 0;
  // What pulling and pushing the three tables whole would move per step.
  double dense_bytes_per_step = 0;
  // Distinct embedding rows plus distinct NCE rows (true and sampled words) per step.
  double rows_touched_per_step = 0;
  // The 8 most frequent words longer than 3 letters, each to its 5 nearest words by
  // cosine similarity of the trained embeddings.
  std::map<std::string, std::vector<std::string>> nearest;
};

StatusOr<Word2VecResult> TrainWord2Vec(const Word2VecOptions& options, const Corpus& corpus,
                                       const WorkerSessionFactory& sessions);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_ESTIMATORS_WORD2VEC_H_
