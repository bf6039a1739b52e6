#include "actors/sim/stragglers.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <string_view>
#include <utility>

#include "actors/sim/fault_injector.h"

namespace actorflow {
namespace {

using Term = StragglerSpec::Term;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> Split(std::string_view s, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == separator) {
      parts.push_back(Trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  return parts;
}

// Splits at each '+' followed (after spaces) by a letter, so "1e+3" stays one number.
std::vector<std::string_view> SplitTerms(std::string_view s) {
  std::vector<std::string_view> terms;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '+') continue;
    size_t next = i + 1;
    while (next < s.size() && std::isspace(static_cast<unsigned char>(s[next]))) ++next;
    if (next < s.size() && !std::isalpha(static_cast<unsigned char>(s[next]))) continue;
    terms.push_back(Trim(s.substr(start, i - start)));
    start = i + 1;
  }
  terms.push_back(Trim(s.substr(start)));
  return terms;
}

Status TermError(std::string_view term, const std::string& what) {
  return InvalidArgument("straggler term \"" + std::string(term) + "\": " + what);
}

// A finite number filling all of `text`, or InvalidArgument naming `field` and `term`.
Status ParseNumber(std::string_view term, const std::string& field, std::string_view text,
                   double* out) {
  const std::string s(text);
  char* end = nullptr;
  const double value = s.empty() ? 0 : std::strtod(s.c_str(), &end);
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0])) || end != s.c_str() + s.size()) {
    return TermError(term, field + " \"" + s + "\" is not a number");
  }
  if (!std::isfinite(value)) {
    return TermError(term, field + " \"" + s + "\" is not a finite number");
  }
  *out = value;
  return Status::OK();
}

Status ParseWorkerIndex(std::string_view term, std::string_view text, int num_workers, int* out) {
  const std::string s(text);
  if (!s.empty() && s[0] == '-') return TermError(term, "worker index " + s + " is negative");
  const bool digits = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  });
  if (!digits) return TermError(term, "worker index \"" + s + "\" is not a non-negative integer");
  errno = 0;
  const long long value = std::strtoll(s.c_str(), nullptr, 10);
  if (errno == ERANGE || value > INT_MAX || (num_workers >= 0 && value >= num_workers)) {
    return TermError(term, "worker index " + s + " is out of range: the cluster has " +
                               std::to_string(num_workers) + " workers");
  }
  *out = static_cast<int>(value);
  return Status::OK();
}

StatusOr<Term> ParseTerm(std::string_view term, int num_workers) {
  const size_t colon = term.find(':');
  if (colon == std::string_view::npos) {
    return TermError(term, "expected KIND:PARAMETERS with KIND one of lognormal, pareto, slow, at");
  }
  const std::string_view kind = Trim(term.substr(0, colon));
  const std::vector<std::string_view> args = Split(term.substr(colon + 1), ',');
  Term t;
  if (kind == "lognormal") {
    t.kind = Term::Kind::kLognormal;
    if (args.size() != 1) return TermError(term, "lognormal takes one parameter, SIGMA");
    AF_RETURN_IF_ERROR(ParseNumber(term, "sigma", args[0], &t.sigma));
    if (t.sigma < 0) return TermError(term, "sigma must be >= 0");
  } else if (kind == "pareto") {
    t.kind = Term::Kind::kPareto;
    AF_RETURN_IF_ERROR(ParseNumber(term, "alpha", args[0], &t.alpha));
    if (t.alpha <= 0) return TermError(term, "alpha must be > 0");
    bool seen_p = false;
    for (size_t i = 1; i < args.size(); ++i) {
      if (args[i].substr(0, 2) != "p=") {
        return TermError(term, "unknown option \"" + std::string(args[i]) + "\"; expected p=P");
      }
      if (seen_p) return TermError(term, "p is given twice");
      seen_p = true;
      AF_RETURN_IF_ERROR(ParseNumber(term, "p", Trim(args[i].substr(2)), &t.probability));
      if (t.probability < 0 || t.probability > 1) return TermError(term, "p must be in [0, 1]");
    }
  } else if (kind == "slow") {
    t.kind = Term::Kind::kSlowWorkers;
    for (std::string_view arg : args) {
      const size_t eq = arg.find('=');
      if (eq == std::string_view::npos) {
        return TermError(term, "expected WORKER=FACTOR, got \"" + std::string(arg) + "\"");
      }
      int worker = 0;
      double factor = 0;
      AF_RETURN_IF_ERROR(ParseWorkerIndex(term, Trim(arg.substr(0, eq)), num_workers, &worker));
      AF_RETURN_IF_ERROR(ParseNumber(term, "factor", Trim(arg.substr(eq + 1)), &factor));
      if (factor < 1) return TermError(term, "factor for worker " + std::to_string(worker) + " must be >= 1");
      if (!t.slow.emplace(worker, factor).second) {
        return TermError(term, "worker " + std::to_string(worker) + " is repeated");
      }
    }
  } else if (kind == "at") {
    t.kind = Term::Kind::kSchedule;
    for (std::string_view arg : args) {
      const size_t at = arg.find('@');
      const size_t eq = arg.find('=');
      if (at == std::string_view::npos || eq == std::string_view::npos || eq < at) {
        return TermError(term, "expected WORKER@STEP=FACTOR, got \"" + std::string(arg) + "\"");
      }
      int worker = 0;
      double step = 0;
      double factor = 0;
      AF_RETURN_IF_ERROR(ParseWorkerIndex(term, Trim(arg.substr(0, at)), num_workers, &worker));
      AF_RETURN_IF_ERROR(ParseNumber(term, "step", Trim(arg.substr(at + 1, eq - at - 1)), &step));
      if (step < 0 || step != std::floor(step)) {
        return TermError(term, "step must be a whole number >= 0");
      }
      AF_RETURN_IF_ERROR(ParseNumber(term, "factor", Trim(arg.substr(eq + 1)), &factor));
      if (factor < 1) return TermError(term, "a scheduled factor must be >= 1");
      if (!t.schedule.emplace(std::make_pair(worker, static_cast<int64_t>(step)), factor).second) {
        return TermError(term, "worker " + std::to_string(worker) + " step " +
                                   std::to_string(static_cast<int64_t>(step)) + " is repeated");
      }
    }
  } else {
    return TermError(term, "unknown kind \"" + std::string(kind) +
                               "\"; expected lognormal, pareto, slow or at");
  }
  return t;
}

uint64_t Mix(uint64_t state, uint64_t value) { return SimRandom(state ^ value).Next(); }

double Clamp(double factor) {
  return std::min(kMaxStragglerFactor, std::max(kMinStragglerFactor, factor));
}

double TermFactor(const Term& term, SimRandom& random, int worker, int64_t step) {
  constexpr double kTwoPi = 6.283185307179586;
  switch (term.kind) {
    case Term::Kind::kLognormal: {
      // Box-Muller; 1 - Uniform() is in (0, 1], so the log is finite.
      const double radius = std::sqrt(-2.0 * std::log(1.0 - random.Uniform()));
      const double z = radius * std::cos(kTwoPi * random.Uniform());
      return std::exp(term.sigma * z);
    }
    case Term::Kind::kPareto:
      if (random.Uniform() >= term.probability) return 1;
      return std::pow(1.0 - random.Uniform(), -1.0 / term.alpha);
    case Term::Kind::kSlowWorkers: {
      const auto it = term.slow.find(worker);
      return it == term.slow.end() ? 1 : it->second;
    }
    case Term::Kind::kSchedule: {
      const auto it = term.schedule.find(std::make_pair(worker, step));
      return it == term.schedule.end() ? 1 : it->second;
    }
  }
  return 1;
}

}  // namespace

StatusOr<StragglerSpec> ParseStragglerSpec(const std::string& text, int num_workers) {
  StragglerSpec spec;
  spec.text = text;
  const std::string_view trimmed = Trim(text);
  if (trimmed.empty()) {
    return InvalidArgument("empty straggler spec; write \"none\" or terms such as lognormal:0.5");
  }
  if (trimmed == "none") return spec;
  for (std::string_view term : SplitTerms(trimmed)) {
    if (term.empty()) {
      return InvalidArgument("straggler spec \"" + text + "\" has an empty term around a \"+\"");
    }
    AF_ASSIGN_OR_RETURN(Term t, ParseTerm(term, num_workers));
    spec.terms.push_back(std::move(t));
  }
  return spec;
}

double StragglerFactor(const StragglerSpec& spec, uint64_t seed, int worker, int64_t step) {
  const uint64_t base = Mix(Mix(seed, static_cast<uint64_t>(worker) * 0x9e3779b97f4a7c15ULL),
                            static_cast<uint64_t>(step) * 0xc2b2ae3d27d4eb4fULL);
  double factor = 1;
  for (size_t i = 0; i < spec.terms.size(); ++i) {
    SimRandom random(Mix(base, (i + 1) * 0x165667b19e3779f9ULL));
    factor = Clamp(factor * Clamp(TermFactor(spec.terms[i], random, worker, step)));
  }
  return factor;
}

}  // namespace actorflow
