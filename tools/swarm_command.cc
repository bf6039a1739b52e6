#include "tools/swarm_command.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "actors/sim/fault_injector.h"
#include "tools/simulate_command.h"

namespace actorflow {
namespace cli {
namespace {

// Draws from one scenario's stream.
class Draw {
 public:
  explicit Draw(uint64_t seed) : random_(seed * 0x9E3779B97F4A7C15ULL + 0x5A17) {}
  int Int(int lo, int hi) {  // [lo, hi]
    return lo + static_cast<int>(random_.Next() % static_cast<uint64_t>(hi - lo + 1));
  }
  double Real(double lo, double hi) { return lo + (hi - lo) * random_.Uniform(); }
  bool Chance(double p) { return random_.Uniform() < p; }

 private:
  SimRandom random_;
};

std::string ShortNumber(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

std::string Worker(int w) { return "/job:worker/task:" + std::to_string(w); }

std::string Match(Draw& d, const SwarmScenario& s) {
  // All-reduce has no ps: its chunks are "tensor" messages between workers.
  static const char* kinds[] = {"push", "pull", "step", "*"};
  static const char* all_reduce_kinds[] = {"tensor", "tensor", "step", "*"};
  const bool all_reduce = s.mode == "allreduce";
  const std::string from = d.Chance(0.5) ? Worker(d.Int(0, s.workers - 1))
                                         : (d.Chance(0.5) ? "/job:worker/*" : "*");
  const std::string to =
      !d.Chance(0.5) ? "*"
      : all_reduce   ? Worker(d.Int(0, s.workers - 1))
                     : "/job:ps/task:" + std::to_string(d.Int(0, s.ps - 1));
  const int kind = d.Int(0, 3);
  return R"({"from": ")" + from + R"(", "to": ")" + to + R"(", "kind": ")" +
         (all_reduce ? all_reduce_kinds[kind] : kinds[kind]) + R"("})";
}

std::string MessageFault(Draw& d, const SwarmScenario& s) {
  switch (d.Int(0, 4)) {
    case 0:
      return R"({"drop": )" + Match(d, s) + R"(, "probability": )" +
             ShortNumber(d.Real(0.01, 0.2)) + "}";
    case 1:
      return R"({"drop": )" + Match(d, s) + R"(, "every": )" + std::to_string(d.Int(3, 20)) + "}";
    case 2:
      return R"({"delay": )" + Match(d, s) + R"(, "ms": )" + ShortNumber(d.Real(0.05, 5)) +
             R"(, "jitter_ms": )" + ShortNumber(d.Real(0, 2)) + "}";
    case 3:
      return R"({"duplicate": )" + Match(d, s) + R"(, "probability": )" +
             ShortNumber(d.Real(0.05, 0.4)) + "}";
    default:
      return R"({"reorder": )" + Match(d, s) + R"(, "probability": )" +
             ShortNumber(d.Real(0.05, 0.4)) + "}";
  }
}

}  // namespace

std::string SwarmScenario::Cluster() const {
  if (mode == "allreduce") return "sim:worker=" + std::to_string(workers);
  return "sim:ps=" + std::to_string(ps) + ",worker=" + std::to_string(workers);
}

std::string SwarmScenario::Describe() const {
  return "seed " + std::to_string(seed) + ": " + Cluster() + " " + mode +
         (mode == "sync" ? " aggregate " + std::to_string(replicas_to_aggregate) : "") + ", " +
         std::to_string(steps) + " steps, timeout " + std::to_string(timeout_ms) + " ms" +
         (checkpoint_every > 0 ? ", a checkpoint every " + std::to_string(checkpoint_every) + " steps"
                               : std::string()) +
         ", stragglers " + stragglers + ", faults " + faults_json;
}

SwarmScenario MakeSwarmScenario(uint64_t seed) {
  Draw d(seed);
  SwarmScenario s;
  s.seed = seed;
  s.ps = d.Int(1, 3);
  s.workers = d.Int(2, 6);
  switch (d.Int(0, 4)) {
    case 4:
      s.mode = "allreduce";  // no ps: every worker holds a replica
      break;
    case 0:
      s.mode = "sync";
      s.replicas_to_aggregate = s.workers;
      break;
    case 1:
      s.mode = "sync";
      s.replicas_to_aggregate = d.Int(1, s.workers - 1);
      break;
    case 2:
      s.mode = "async";
      break;
    default:
      s.mode = "ssp:" + std::to_string(d.Int(1, 3));
  }
  s.steps = d.Int(10, 60);
  s.checkpoint_every = s.mode == "sync" && d.Chance(0.5) ? d.Int(3, 10) : 0;
  s.timeout_ms = d.Int(20, 400);
  const bool all_reduce = s.mode == "allreduce";
  switch (all_reduce ? 0 : d.Int(0, 3)) {
    case 0:
      s.stragglers = "none";
      break;
    case 1:
      s.stragglers = "lognormal:" + ShortNumber(d.Real(0.1, 1.0));
      break;
    case 2:
      s.stragglers =
          "pareto:" + ShortNumber(d.Real(1.1, 3.0)) + ",p=" + ShortNumber(d.Real(0.05, 1.0));
      break;
    default:
      s.stragglers =
          "slow:" + std::to_string(d.Int(0, s.workers - 1)) + "=" + ShortNumber(d.Real(1.5, 8));
  }
  s.latency_us = d.Real(5, 500);
  s.jitter_us = d.Chance(0.5) ? d.Real(0, 100) : 0;
  std::vector<std::string> faults;
  const int n = d.Int(0, 4);
  for (int i = 0; i < n; ++i) {
    // All-reduce members meet every step: only message faults (a lost chunk fails the
    // step at its deadline); kills and partitions are the ps modes'.
    const int kind = all_reduce ? 0 : d.Int(0, 9);
    if (kind < 6) {
      faults.push_back(MessageFault(d, s));
    } else if (kind < 8) {
      const double from = d.Real(0, 0.05);
      faults.push_back(R"({"partition": [["/job:ps/task:)" + std::to_string(d.Int(0, s.ps - 1)) +
                       R"("], [")" + Worker(d.Int(0, s.workers - 1)) + R"("]], "from_s": )" +
                       ShortNumber(from) + R"(, "until_s": )" +
                       ShortNumber(from + d.Real(0.005, 0.5)) + "}");
    } else {
      const int w = d.Int(0, s.workers - 1);
      if (d.Chance(0.5)) {
        // At a step; a restart at a later step (which a stalled sync run never reaches).
        const int at = d.Int(1, static_cast<int>(s.steps / 2));
        faults.push_back(R"({"kill": ")" + Worker(w) + R"(", "at_step": )" + std::to_string(at) + "}");
        if (d.Chance(0.5)) {
          faults.push_back(R"({"restart": ")" + Worker(w) + R"(", "at_step": )" +
                           std::to_string(at + d.Int(2, 15)) + "}");
        }
      } else {
        // At a virtual time, back after a while.
        const double at = d.Real(0.001, 0.05);
        faults.push_back(R"({"kill": ")" + Worker(w) + R"(", "at_s": )" + ShortNumber(at) + "}");
        faults.push_back(R"({"restart": ")" + Worker(w) + R"(", "at_s": )" +
                         ShortNumber(at + d.Real(0.01, 0.4)) + "}");
      }
    }
  }
  s.faults_json = R"({"faults": [)";
  for (size_t i = 0; i < faults.size(); ++i) s.faults_json += (i ? ", " : "") + faults[i];
  s.faults_json += "]}";
  return s;
}

namespace {

SimulateCommandOptions SimulateOptionsFor(const SwarmScenario& s, bool json) {
  SimulateCommandOptions o;
  o.cluster = s.Cluster();
  o.mode = s.mode;
  o.replicas_to_aggregate = s.replicas_to_aggregate;
  o.faults_text = s.faults_json;
  o.stragglers = s.stragglers;
  o.latency_us = s.latency_us;
  o.jitter_us = s.jitter_us;
  o.max_virtual_seconds = 600;
  o.train.steps = s.steps;
  o.train.seed = s.seed;
  o.train.normalize = true;
  o.train.optimizer = "sgd";
  o.train.learning_rate = 0.1;
  o.train.batch = 16;
  o.train.timeout_ms = s.timeout_ms;
  o.train.json = json;
  o.train.checkpoint_every = s.checkpoint_every;
  return o;
}

std::string ReplayCommand(uint64_t seed) { return "actorflow swarm --replay " + std::to_string(seed); }

}  // namespace

StatusOr<SwarmRunResult> RunSwarmScenario(const SwarmScenario& scenario) {
  std::ostringstream out, err;
  const Status status = Simulate(SimulateOptionsFor(scenario, true), out, err);
  SwarmRunResult result;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(out.str());
  } catch (const nlohmann::json::exception&) {
    return Internal("scenario " + scenario.Describe() + " did not run: " + status.ToString());
  }
  result.event_log_hash = j.value("event_log_hash", "");
  result.weights_hash = j.value("weights_hash", "");
  result.virtual_seconds = j.value("virtual_seconds", 0.0);
  result.messages = j.value("messages", int64_t{0});
  for (const auto& [name, count] : j["invariants"].items()) {
    result.violations[name] = count.get<int64_t>();
  }
  if (j.value("hung", false)) {
    result.outcome = "hung";
    result.detail = status.message();
  } else if (j.value("out_of_time", false) && j.value("invariant_violations", int64_t{0}) == 0) {
    result.outcome = "slow";
    result.detail = status.message();
  } else if (j.value("invariant_violations", int64_t{0}) > 0) {
    result.outcome = "violated";
    result.detail = j["violations"].empty() ? "" : j["violations"][0].get<std::string>();
  } else if (!status.ok()) {
    result.outcome = "failed";
    result.detail = status.message();
  } else {
    result.outcome = "ok";
  }
  return result;
}

Status Swarm(const SwarmCommandOptions& options, std::ostream& out) {
  if (options.replay >= 0) {
    const SwarmScenario s = MakeSwarmScenario(static_cast<uint64_t>(options.replay));
    out << s.Describe() << "\n";
    std::ostringstream err;
    const Status status = Simulate(SimulateOptionsFor(s, options.json), out, err);
    out.flush();
    return status;
  }
  if (options.runs < 1) return InvalidArgument("--runs must be at least 1");
  const auto start = std::chrono::steady_clock::now();
  std::map<std::string, int64_t> outcomes = {
      {"ok", 0}, {"failed", 0}, {"slow", 0}, {"hung", 0}, {"violated", 0}};
  std::map<std::string, int64_t> by_invariant;
  nlohmann::json failures = nlohmann::json::array();
  for (int64_t i = 0; i < options.runs; ++i) {
    const uint64_t seed = options.first_seed + static_cast<uint64_t>(i);
    AF_ASSIGN_OR_RETURN(SwarmRunResult r, RunSwarmScenario(MakeSwarmScenario(seed)));
    ++outcomes[r.outcome];
    for (const auto& [name, n] : r.violations) {
      by_invariant[name] += n;
    }
    if (r.outcome == "hung" || r.outcome == "violated") {
      failures.push_back({{"seed", seed},
                          {"outcome", r.outcome},
                          {"replay", ReplayCommand(seed)},
                          {"first_violation", r.detail}});
      if (!options.json) {
        out << r.outcome << ": seed " << seed << ": " << r.detail << "\n  replay: "
            << ReplayCommand(seed) << "\n";
      }
    }
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (options.json) {
    nlohmann::ordered_json j;
    j["runs"] = options.runs;
    for (const auto& [name, n] : outcomes) j[name] = n;
    j["invariants"] = by_invariant;
    j["failures"] = failures;
    j["wall_seconds"] = wall;
    out << j.dump() << "\n";
  } else {
    out << options.runs << " runs: " << outcomes["ok"] << " ok, " << outcomes["failed"]
        << " failed (drivers gave up, as the scenario allows), " << outcomes["slow"]
        << " slow (still progressing at the virtual time limit), " << outcomes["hung"] << " hung, "
        << outcomes["violated"] << " violated an invariant (" << wall << " s)\n";
    for (const auto& [name, n] : by_invariant) out << "  " << name << ": " << n << " violations\n";
  }
  out.flush();
  if (outcomes["hung"] + outcomes["violated"] > 0) {
    return Internal(std::to_string(outcomes["hung"] + outcomes["violated"]) +
                    " runs hung or violated an invariant (replay commands above)");
  }
  return Status::OK();
}

Subcommand AddSwarmSubcommand(CLI::App* parent) {
  auto options = std::make_shared<SwarmCommandOptions>();
  CLI::App* app = parent->add_subcommand(
      "swarm", "Many seeded simulated trainings with random fault plans, checked by invariants");
  app->add_option("--runs", options->runs, "Scenarios to run")->capture_default_str();
  app->add_option("--first-seed", options->first_seed, "The first scenario's seed")
      ->capture_default_str();
  app->add_option("--replay", options->replay, "Run one scenario (its seed) and print its report");
  app->add_flag("--json", options->json, "End with one line of JSON");
  return Subcommand{app, [options]() {
                      return RunChecked(std::cout, std::cerr, [] { return Status::OK(); },
                                        [options] { return Swarm(*options, std::cout); });
                    }};
}

}  // namespace cli
}  // namespace actorflow
