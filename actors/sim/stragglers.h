// Straggler model for a simulated cluster: how much slower than its base compute time
// each step of each worker runs. CAF-free; the simulator multiplies a step's virtual
// compute time by StragglerFactor(spec, seed, worker, step).
//
// Determinism: a factor is a pure function of (spec, seed, worker, step). Each term
// draws from its own stream, derived from those four values and the term's position,
// so neither call order nor adding a later term changes what an earlier term draws.
//
// Grammar of the spec text:
//   SPEC := "none" | TERM ("+" TERM)*          terms multiply together
//   TERM := lognormal:SIGMA                    e.g. lognormal:0.5
//         | pareto:ALPHA[,p=P]                 e.g. pareto:1.5  or  pareto:1.2,p=0.1
//         | slow:I=F[,I=F]...                  e.g. slow:3=4,7=2.5 (worker 3 always 4x)
//         | at:I@S=F[,I@S=F]...                e.g. at:3@17=50 (worker 3's step 17, 50x)
// lognormal: factor = exp(SIGMA * z), z ~ N(0,1); median 1, so some steps run faster.
// pareto:    with probability P (default 1) factor = U^(-1/ALPHA), U ~ Uniform(0,1]
//            (a Pareto tail with minimum 1), else 1.
// slow:      worker I's every step is F times slower; other workers are unaffected.
// at:        a schedule: worker I's step S (0-based, the worker's own count) is F times
//            slower; every other step is unaffected.
// Numbers are decimal (an exponent such as 1e-3 is fine); a "+" separates terms only
// when a letter follows it.
#ifndef ACTORFLOW_ACTORS_SIM_STRAGGLERS_H_
#define ACTORFLOW_ACTORS_SIM_STRAGGLERS_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "graph/status.h"

namespace actorflow {

struct StragglerSpec {
  struct Term {
    enum class Kind { kLognormal, kPareto, kSlowWorkers, kSchedule };
    Kind kind = Kind::kLognormal;
    double sigma = 0;            // kLognormal: >= 0
    double alpha = 0;            // kPareto: > 0
    double probability = 1;      // kPareto: in [0, 1]
    std::map<int, double> slow;  // kSlowWorkers: worker index -> factor >= 1
    // kSchedule: (worker, step) -> factor >= 1
    std::map<std::pair<int, int64_t>, double> schedule;
  };
  std::vector<Term> terms;  // empty = no stragglers (factor 1)
  std::string text;         // as given, for reports
};

// Bounds on a factor (each term's and the product), so virtual time stays finite and
// positive whatever the parameters.
inline constexpr double kMinStragglerFactor = 1e-4;
inline constexpr double kMaxStragglerFactor = 1e4;

// Parses `text` (grammar above). InvalidArgument naming the bad term for an empty spec
// or term, an unknown kind or option, a non-numeric or non-finite number, sigma < 0,
// alpha <= 0, p outside [0, 1], a slow factor < 1, a negative or repeated worker index,
// or a worker index >= num_workers (num_workers = -1: indices unchecked).
StatusOr<StragglerSpec> ParseStragglerSpec(const std::string& text, int num_workers = -1);

// The factor for worker `worker`'s step `step` (both 0-based): the product of the
// terms' factors, clamped to [kMinStragglerFactor, kMaxStragglerFactor]. It is >= 1
// when the spec has only pareto and slow terms; 1 for an empty spec.
double StragglerFactor(const StragglerSpec& spec, uint64_t seed, int worker, int64_t step);

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_SIM_STRAGGLERS_H_
