// SampleCharLm: text from a char LM's model directory, one character per run of the
// window before it.
#include <cmath>
#include <random>

#include "graph/scope.h"
#include "training/checkpoint/checkpoint.h"
#include "training/estimators/char_lm.h"

namespace actorflow {
namespace {

// A draw from softmax(logits / temperature).
int32_t Draw(const float* logits, int64_t n, double temperature, std::mt19937_64* rng) {
  std::vector<double> weights(n);
  double max = logits[0];
  for (int64_t i = 1; i < n; ++i) max = std::max<double>(max, logits[i]);
  for (int64_t i = 0; i < n; ++i) weights[i] = std::exp((logits[i] - max) / temperature);
  std::discrete_distribution<int32_t> pick(weights.begin(), weights.end());
  return pick(*rng);
}

}  // namespace

StatusOr<std::string> SampleCharLm(const std::string& dir, const SampleOptions& o,
                                   const WorkerSessionFactory& sessions) {
  if (o.length < 0 || !(o.temperature > 0) || !std::isfinite(o.temperature)) {
    return InvalidArgument("sample: --length must be >= 0 and --temperature a positive number");
  }
  AF_ASSIGN_OR_RETURN(CharLmSpec spec, ReadCharLmSpec(dir));
  CharCorpus vocabulary;
  vocabulary.vocabulary = spec.vocabulary;
  AF_ASSIGN_OR_RETURN(std::u32string prime, DecodeUtf8(o.prime, "--prime"));
  std::vector<int32_t> ids;
  for (size_t i = 0; i < prime.size(); ++i) {
    const int32_t id = vocabulary.IdOf(prime[i]);
    if (id < 0) {
      return InvalidArgument("--prime: character " + std::to_string(i) + " ('" +
                             EncodeUtf8(std::u32string(1, prime[i])) +
                             "') is not in the model's vocabulary");
    }
    ids.push_back(id);
  }
  Scope root = Scope::NewRootScope();
  AF_RETURN_IF_ERROR(BuildCharLm(root, spec, /*learning_rate=*/0));
  AF_ASSIGN_OR_RETURN(std::unique_ptr<Saver> saver, Saver::Create(root.graph(), SaverOptions()));
  AF_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, sessions(root.graph(), 0));
  AF_RETURN_IF_ERROR(saver->Restore(session.get(), dir));
  const int32_t newline = std::max(0, vocabulary.IdOf(U'\n'));
  const int64_t t = spec.seq_len;
  const int64_t v = static_cast<int64_t>(spec.vocabulary.size());
  std::mt19937_64 rng(o.seed);
  std::vector<int32_t> generated;
  std::vector<int32_t> window(t);
  for (int64_t k = 0; k < o.length; ++k) {
    const int64_t have = static_cast<int64_t>(ids.size());
    for (int64_t i = 0; i < t; ++i) {
      const int64_t from = have - t + i;
      window[i] = from >= 0 ? ids[from] : newline;
    }
    std::vector<Tensor> out;
    AF_RETURN_IF_ERROR(session->Run({{"inputs", Tensor::FromVector(window, Shape{1, t})}},
                                    {"logits"}, {}, &out));
    const int32_t next = Draw(out[0].data<float>() + (t - 1) * v, v, o.temperature, &rng);
    ids.push_back(next);
    generated.push_back(next);
  }
  AF_ASSIGN_OR_RETURN(std::string text, vocabulary.Decode(generated));
  return o.prime + text;
}

}  // namespace actorflow
