#include "actors/sim/fault_plan.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>

#include <nlohmann/json.hpp>

#include "actors/sim/sim_cluster_spec.h"
#include "graph/tensor_json.h"

namespace actorflow {

namespace {

using nlohmann::json;

std::string Quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

// Reads the fields of one entry, refusing unknown keys and wrong types.
class EntryReader {
 public:
  EntryReader(const json& entry, std::string where) : entry_(entry), where_(std::move(where)) {}

  const std::string& where() const { return where_; }
  bool Has(const char* key) const { return entry_.contains(key); }
  const json& At(const char* key) {
    used_.insert(key);
    return entry_.at(key);
  }

  // A time: "..._s" keys in seconds, "...ms" keys in milliseconds; either at most
  // kMaxFaultPlanSeconds.
  Status Number(const char* key, double* out, bool* present = nullptr) {
    if (present != nullptr) *present = Has(key);
    if (!Has(key)) return Status::OK();
    const json& v = At(key);
    if (!v.is_number()) return InvalidArgument(where_ + "." + key + " must be a number");
    *out = v.get<double>();
    const std::string_view name(key);
    const bool in_ms = name.size() >= 2 && name.substr(name.size() - 2) == "ms";
    const double max = in_ms ? kMaxFaultPlanSeconds * 1000 : kMaxFaultPlanSeconds;
    if (!std::isfinite(*out) || *out < 0 || *out > max) {
      return InvalidArgument(where_ + "." + key + " must be a number in [0, " +
                             json(max).dump() + "] (" + (in_ms ? "milliseconds" : "seconds") +
                             "), not " + v.dump());
    }
    return Status::OK();
  }

  Status Integer(const char* key, int64_t* out, bool* present) {
    *present = Has(key);
    if (!*present) return Status::OK();
    const json& v = At(key);
    if (!v.is_number_integer() || v.get<int64_t>() < 0) {
      return InvalidArgument(where_ + "." + key + " must be an integer >= 0, not " + v.dump());
    }
    *out = v.get<int64_t>();
    return Status::OK();
  }

  Status NoUnknownKeys() const {
    for (auto it = entry_.begin(); it != entry_.end(); ++it) {
      if (used_.count(it.key()) == 0) {
        return InvalidArgument(where_ + " has an unknown key " + Quoted(it.key()));
      }
    }
    return Status::OK();
  }

 private:
  const json& entry_;
  std::string where_;
  std::set<std::string> used_;
};

StatusOr<TaskPattern> PatternField(const json& value, const ClusterSpec& cluster,
                                   const std::string& where) {
  if (!value.is_string()) return InvalidArgument(where + " must be a task pattern string");
  return ParseTaskPattern(value.get<std::string>(), cluster, where);
}

Status ReadMatch(EntryReader& r, const char* action, const ClusterSpec& cluster,
                 MessageMatch* match) {
  const json& m = r.At(action);
  const std::string where = r.where() + "." + action;
  if (!m.is_object()) {
    return InvalidArgument(where + " must be an object {\"from\", \"to\", \"kind\"}");
  }
  for (auto it = m.begin(); it != m.end(); ++it) {
    const std::string& key = it.key();
    if (key == "from" || key == "to") {
      AF_ASSIGN_OR_RETURN(TaskPattern p, PatternField(it.value(), cluster, where + "." + key));
      (key == "from" ? match->from : match->to) = p;
    } else if (key == "kind") {
      if (!it.value().is_string()) return InvalidArgument(where + ".kind must be a string");
      const std::string kind = it.value().get<std::string>();
      bool known = kind == "*";
      std::string list;
      for (const char* k : kMessageKinds) {
        known = known || kind == k;
        list += (list.empty() ? "" : ", ") + std::string(k);
      }
      if (!known) {
        return InvalidArgument(where + ".kind " + Quoted(kind) + " is not a message kind (" +
                               list + ", or *)");
      }
      match->kind = kind;
    } else {
      return InvalidArgument(where + " has an unknown key " + Quoted(key));
    }
  }
  return Status::OK();
}

Status ReadWindow(EntryReader& r, Fault* f) {
  AF_RETURN_IF_ERROR(r.Number("from_s", &f->from_s));
  bool has_until = false;
  double until = 0;
  AF_RETURN_IF_ERROR(r.Number("until_s", &until, &has_until));
  if (has_until) {
    if (until <= f->from_s) {
      return InvalidArgument(r.where() + ".until_s (" + std::to_string(until) +
                             ") must be after from_s (" + std::to_string(f->from_s) + ")");
    }
    f->until_s = until;
  }
  return Status::OK();
}

Status ReadProbability(EntryReader& r, Fault* f) {
  if (!r.Has("probability")) return Status::OK();
  const json& v = r.At("probability");
  if (!v.is_number() || !(v.get<double>() >= 0.0 && v.get<double>() <= 1.0)) {
    return InvalidArgument(r.where() + ".probability must be in [0, 1], not " + v.dump());
  }
  f->probability = v.get<double>();
  return Status::OK();
}

Status ReadTaskEvent(EntryReader& r, const char* action, const ClusterSpec& cluster, Fault* f) {
  AF_ASSIGN_OR_RETURN(TaskPattern p, PatternField(r.At(action), cluster, r.where() + "." + action));
  if (!p.IsSingleTask()) {
    return InvalidArgument(r.where() + "." + action + " must name one task, not the pattern " +
                           Quoted(p.ToString()));
  }
  f->task = TaskId{p.job, p.index};
  bool has_step = false;
  bool has_time = false;
  AF_RETURN_IF_ERROR(r.Integer("at_step", &f->at_step, &has_step));
  AF_RETURN_IF_ERROR(r.Number("at_s", &f->at_s, &has_time));
  if (has_step == has_time) {
    return InvalidArgument(r.where() + " needs exactly one of \"at_step\" and \"at_s\"");
  }
  if (!has_step) f->at_step = -1;
  if (!has_time) f->at_s = -1;
  return Status::OK();
}

Status ReadPartition(EntryReader& r, const ClusterSpec& cluster, Fault* f) {
  const json& sides = r.At("partition");
  const std::string where = r.where() + ".partition";
  if (!sides.is_array() || sides.size() < 2) {
    return InvalidArgument(where + " must be a list of at least two sides (lists of tasks)");
  }
  for (size_t s = 0; s < sides.size(); ++s) {
    const std::string side_where = where + "[" + std::to_string(s) + "]";
    if (!sides[s].is_array() || sides[s].empty()) {
      return InvalidArgument(side_where + " must be a non-empty list of task patterns");
    }
    std::vector<TaskPattern> side;
    for (size_t t = 0; t < sides[s].size(); ++t) {
      AF_ASSIGN_OR_RETURN(TaskPattern p, PatternField(sides[s][t], cluster,
                                                      side_where + "[" + std::to_string(t) + "]"));
      side.push_back(p);
    }
    f->sides.push_back(std::move(side));
  }
  // No task on two sides: the partition would be meaningless for it.
  for (const TaskId& task : cluster.AllTasks()) {
    int first_side = -1;
    for (size_t s = 0; s < f->sides.size(); ++s) {
      for (const TaskPattern& p : f->sides[s]) {
        if (!p.Matches(task)) continue;
        if (first_side >= 0 && first_side != static_cast<int>(s)) {
          return InvalidArgument(where + ": task " + task.ToString() + " is on side " +
                                 std::to_string(first_side) + " and side " + std::to_string(s));
        }
        first_side = static_cast<int>(s);
      }
    }
  }
  return ReadWindow(r, f);
}

StatusOr<Fault> ReadEntry(const json& entry, const ClusterSpec& cluster, const std::string& where) {
  if (!entry.is_object()) return InvalidArgument(where + " must be an object");
  static const std::pair<const char*, Fault::Action> kActions[] = {
      {"kill", Fault::Action::kKill},           {"restart", Fault::Action::kRestart},
      {"drop", Fault::Action::kDrop},           {"delay", Fault::Action::kDelay},
      {"duplicate", Fault::Action::kDuplicate}, {"reorder", Fault::Action::kReorder},
      {"partition", Fault::Action::kPartition}};
  const char* action = nullptr;
  Fault f;
  for (const auto& [name, value] : kActions) {
    if (!entry.contains(name)) continue;
    if (action != nullptr) {
      return InvalidArgument(where + " has two actions, " + Quoted(action) + " and " +
                             Quoted(name) + "; give each its own entry");
    }
    action = name;
    f.action = value;
  }
  if (action == nullptr) {
    return InvalidArgument(where + " has no action (kill, restart, drop, delay, duplicate, "
                                   "reorder or partition)");
  }
  EntryReader r(entry, where);
  switch (f.action) {
    case Fault::Action::kKill:
    case Fault::Action::kRestart:
      AF_RETURN_IF_ERROR(ReadTaskEvent(r, action, cluster, &f));
      break;
    case Fault::Action::kPartition:
      AF_RETURN_IF_ERROR(ReadPartition(r, cluster, &f));
      break;
    case Fault::Action::kDrop:
    case Fault::Action::kDelay:
    case Fault::Action::kDuplicate:
    case Fault::Action::kReorder: {
      AF_RETURN_IF_ERROR(ReadMatch(r, action, cluster, &f.match));
      AF_RETURN_IF_ERROR(ReadProbability(r, &f));
      AF_RETURN_IF_ERROR(ReadWindow(r, &f));
      bool has_every = false;
      if (f.action == Fault::Action::kDrop) {
        AF_RETURN_IF_ERROR(r.Integer("every", &f.every, &has_every));
        if (has_every && f.every < 1) return InvalidArgument(where + ".every must be at least 1");
        if (has_every && r.Has("probability")) {
          return InvalidArgument(where + " gives both \"every\" and \"probability\"; pick one");
        }
      }
      if (f.action == Fault::Action::kDelay) {
        bool has_ms = false;
        AF_RETURN_IF_ERROR(r.Number("ms", &f.delay_ms, &has_ms));
        if (!has_ms) return InvalidArgument(where + " (delay) needs \"ms\"");
        AF_RETURN_IF_ERROR(r.Number("jitter_ms", &f.jitter_ms));
      }
      break;
    }
  }
  AF_RETURN_IF_ERROR(r.NoUnknownKeys());
  return f;
}

}  // namespace

bool TaskPattern::Matches(const TaskId& task) const {
  if (job.empty()) return true;
  return task.job == job && (index < 0 || task.index == index);
}

std::string TaskPattern::ToString() const {
  if (job.empty()) return "*";
  if (index < 0) return "/job:" + job + "/*";
  return "/job:" + job + "/task:" + std::to_string(index);
}

StatusOr<TaskPattern> ParseTaskPattern(std::string_view text, const ClusterSpec& cluster,
                                       const std::string& where) {
  if (text == "*") return TaskPattern::Any();
  const auto bad = [&](const std::string& why) {
    return InvalidArgument(where + ": " + Quoted(text) + " " + why +
                           " (expected \"*\", \"/job:J/*\" or \"/job:J/task:I\")");
  };
  constexpr std::string_view kJob = "/job:";
  if (text.substr(0, kJob.size()) != kJob) return bad("is not a task pattern");
  std::string_view rest = text.substr(kJob.size());
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0) return bad("is not a task pattern");
  TaskPattern p;
  p.job = std::string(rest.substr(0, slash));
  rest = rest.substr(slash + 1);
  if (cluster.num_tasks(p.job) == 0) {
    std::string jobs;
    for (const std::string& j : cluster.jobs()) jobs += (jobs.empty() ? "" : ", ") + j;
    return InvalidArgument(where + ": " + Quoted(text) + " names job " + Quoted(p.job) +
                           ", which the cluster does not have (jobs: " + jobs + ")");
  }
  if (rest == "*") return p;
  constexpr std::string_view kReplica = "replica:0/";
  if (rest.substr(0, kReplica.size()) == kReplica) rest = rest.substr(kReplica.size());
  constexpr std::string_view kTask = "task:";
  if (rest.substr(0, kTask.size()) != kTask || !ParseSmallCount(rest.substr(kTask.size()), &p.index)) {
    return bad("is not a task pattern");
  }
  const int tasks = cluster.num_tasks(p.job);
  if (p.index >= tasks) {
    return InvalidArgument(where + ": " + Quoted(text) + " names task " + std::to_string(p.index) +
                           " of job " + Quoted(p.job) + ", which has " + std::to_string(tasks) +
                           " task" + (tasks == 1 ? "" : "s"));
  }
  return p;
}

bool MessageMatch::Matches(const TaskId& sender, const TaskId& receiver,
                           std::string_view message_kind) const {
  return from.Matches(sender) && to.Matches(receiver) && (kind == "*" || kind == message_kind);
}

const char* ActionName(Fault::Action action) {
  switch (action) {
    case Fault::Action::kKill: return "kill";
    case Fault::Action::kRestart: return "restart";
    case Fault::Action::kDrop: return "drop";
    case Fault::Action::kDelay: return "delay";
    case Fault::Action::kDuplicate: return "duplicate";
    case Fault::Action::kReorder: return "reorder";
    case Fault::Action::kPartition: return "partition";
  }
  return "?";
}

StatusOr<FaultPlan> ParseFaultPlan(std::string_view json_text, const ClusterSpec& cluster,
                                   const std::string& source) {
  AF_ASSIGN_OR_RETURN(json doc, ParseJsonText(json_text, source));
  if (!doc.is_object() || !doc.contains("faults")) {
    return InvalidArgument(source + ": expected an object {\"faults\": [...]}");
  }
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.key() != "faults") {
      return InvalidArgument(source + ": unknown top-level key " + Quoted(it.key()));
    }
  }
  const json& faults = doc.at("faults");
  if (!faults.is_array()) return InvalidArgument(source + ": \"faults\" must be a list");
  if (faults.size() > kMaxFaults) {
    return InvalidArgument(source + ": " + std::to_string(faults.size()) + " faults; a plan holds at most " +
                           std::to_string(kMaxFaults) + " (each message is checked against every one)");
  }
  FaultPlan plan;
  for (size_t i = 0; i < faults.size(); ++i) {
    AF_ASSIGN_OR_RETURN(Fault f,
                        ReadEntry(faults[i], cluster, source + ": faults[" + std::to_string(i) + "]"));
    plan.faults.push_back(std::move(f));
  }
  return plan;
}

StatusOr<FaultPlan> LoadFaultPlan(const std::string& path, const ClusterSpec& cluster) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return NotFound("fault plan '" + path + "' is a directory, not a file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot open fault plan '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return NotFound("cannot read fault plan '" + path + "'");
  return ParseFaultPlan(text.str(), cluster, path);
}

}  // namespace actorflow
