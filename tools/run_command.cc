#include "tools/run_command.h"

#include <iostream>
#include <memory>
#include <set>
#include <string_view>
#include <utility>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "actors/transport/server_limits.h"

#include "graph/graph.h"
#include "graph/graph_json.h"
#include "graph/tensor_json.h"
#include "actors/cluster/session_factory.h"
#include "kernels/chrome_trace.h"
#include "kernels/session.h"
#include "tools/cli/did_you_mean.h"

namespace actorflow {
namespace cli {
namespace {

// A `--feed NAME=JSON` argument, parsed without the graph.
struct FeedArg {
  std::string name;  // as written: "x" or "x:0"
  nlohmann::json value;
};

// Usage-level checks: everything that can be judged without loading the graph.
StatusOr<std::vector<FeedArg>> ParseFeedArgs(const std::vector<std::string>& feeds) {
  std::vector<FeedArg> parsed;
  for (const std::string& feed : feeds) {
    const size_t eq = feed.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgument("--feed '" + feed + "': expected NAME=JSON, e.g. --feed x=3");
    }
    FeedArg arg;
    arg.name = feed.substr(0, eq);
    const std::string_view text = std::string_view(feed).substr(eq + 1);
    AF_ASSIGN_OR_RETURN(arg.value, ParseJsonText(text, "--feed " + arg.name));
    parsed.push_back(std::move(arg));
  }
  return parsed;
}

Status CheckFetchesAndTargets(const RunCommandOptions& options) {
  if (options.fetches.empty()) return InvalidArgument("--fetch: no tensor to fetch");
  for (const std::string& fetch : options.fetches) {
    if (fetch.empty()) return InvalidArgument("--fetch: empty tensor name in the list");
  }
  for (const std::string& target : options.before) {
    if (target.empty()) return InvalidArgument("--before: empty target name");
  }
  AF_RETURN_IF_ERROR(CheckTimeoutMs(options.timeout_ms));
  return ParseDeviceCounts(options.devices).status();
}

// The graph's node names, for "did you mean" proposals.
std::vector<std::string> NodeNames(const Graph& graph) {
  std::vector<std::string> names;
  for (int id = 0; id < graph.num_nodes(); ++id) {
    if (const Node* node = graph.node(id)) names.push_back(node->name());
  }
  return names;
}

// The node `name` ("node" or "node:k") refers to; when there is none, a Status with
// `code` (NotFound for what the session would look up, InvalidArgument for a feed)
// starting with `what` (e.g. "--fetch 'lossx'") that proposes near node names.
StatusOr<const Node*> FindNamedNode(const Graph& graph, const std::string& name,
                                    const std::string& what, Code code = Code::kNotFound) {
  auto parsed = ParseTensorName(name);
  if (!parsed.ok()) return parsed.status().WithContext(what);
  const Node* node = graph.FindNode(parsed->first);
  if (node == nullptr) {
    return Status(code, what + ": the graph has no node named '" + parsed->first + "'" +
                            DidYouMean(NearestNames(parsed->first, NodeNames(graph))));
  }
  return node;
}

// The --fetch names split into the tensors to fetch and the nodes to run as targets:
// a plain node name ("train", not "train:0") of a node without outputs (a NoOp, a
// group of updates) is run, since it has nothing to fetch.
struct FetchPlan {
  std::vector<std::string> tensors;
  std::vector<std::string> targets;
  std::vector<bool> is_target;  // per --fetch name
};

StatusOr<FetchPlan> PlanFetches(const Graph& graph, const std::vector<std::string>& fetches) {
  FetchPlan plan;
  for (const std::string& fetch : fetches) {
    AF_ASSIGN_OR_RETURN(const Node* node, FindNamedNode(graph, fetch, "--fetch '" + fetch + "'"));
    const bool target = node->num_outputs() == 0 && fetch == node->name();
    plan.is_target.push_back(target);
    (target ? plan.targets : plan.tensors).push_back(fetch);
  }
  return plan;
}

// Converts the feeds to tensors of the fed outputs' dtypes, checked against their
// inferred shapes. "x" and "x:0" name the same tensor; feeding it twice is an error.
StatusOr<FeedList> BuildFeeds(const Graph& graph, const std::vector<FeedArg>& args) {
  FeedList feeds;
  std::set<std::pair<std::string, int>> seen;
  for (const FeedArg& arg : args) {
    auto parsed = ParseTensorName(arg.name);
    if (!parsed.ok()) return parsed.status().WithContext("--feed");
    const int index = parsed->second;
    AF_ASSIGN_OR_RETURN(const Node* node, FindNamedNode(graph, arg.name, "feed '" + arg.name + "'",
                                                        Code::kInvalidArgument));
    if (index >= node->num_outputs()) {
      return InvalidArgument("feed '" + arg.name + "': " + node->Describe() + " has " +
                             std::to_string(node->num_outputs()) + " output(s)");
    }
    if (!seen.insert(*parsed).second) {
      return InvalidArgument("feed '" + arg.name + "': tensor fed more than once");
    }
    // TensorFromJsonValue starts its messages with this.
    const std::string culprit = node->op() == "Placeholder"
                                    ? "placeholder '" + node->name() + "'"
                                    : "feed '" + arg.name + "' for " + node->Describe();
    AF_ASSIGN_OR_RETURN(Tensor value,
                        TensorFromJsonValue(arg.value, node->output_dtype(index),
                                            node->output_shape(index), culprit));
    feeds.emplace_back(arg.name, std::move(value));
  }
  return feeds;
}

// One element of TensorToJson's "data": numbers as JSON prints them, the strings
// "nan"/"inf"/"-inf" bare.
std::string FormatElement(const nlohmann::json& element) {
  if (element.is_string()) return element.get<std::string>();
  return element.dump();
}

// Appends the elements of `data` (flat, row-major) from `*offset` as nested lists
// following dims[axis...].
void AppendNested(const nlohmann::json& data, DimSpan dims, size_t axis,
                  size_t* offset, std::string* out) {
  if (axis == dims.size()) {
    *out += FormatElement(data.at(*offset));
    ++*offset;
    return;
  }
  *out += "[";
  for (int64_t i = 0; i < dims[axis]; ++i) {
    if (i > 0) *out += ", ";
    AppendNested(data, dims, axis + 1, offset, out);
  }
  *out += "]";
}

// "float32[2] [3, 7]", "int32[] 15625", "float32[2,3] [[1, 2, 3], [4, 5, 6]]".
std::string FormatTensorLine(const Tensor& tensor) {
  const nlohmann::json j = TensorToJson(tensor);
  std::string text = DTypeName(tensor.dtype());
  text += "[";
  const DimSpan dims = tensor.shape().dims();
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) text += ",";
    text += std::to_string(dims[i]);
  }
  text += "] ";
  size_t offset = 0;
  AppendNested(j.at("data"), dims, 0, &offset, &text);
  return text;
}

// Loads, runs and prints. Errors carry their own Status; the caller maps them to
// the runtime exit code.
Status LoadAndRun(const RunCommandOptions& options, const std::vector<FeedArg>& feed_args,
                  std::ostream& out) {
  AF_ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph,
                      LoadGraphFile(ResolveUserPath(options.graph_path)));
  AF_ASSIGN_OR_RETURN(FeedList feeds, BuildFeeds(*graph, feed_args));
  // Any node may run first: a target is a node, so "init:0" means the node "init".
  std::vector<std::string> before;
  for (const std::string& target : options.before) {
    AF_ASSIGN_OR_RETURN(const Node* node,
                        FindNamedNode(*graph, target, "--before '" + target + "'"));
    before.push_back(node->name());
  }
  AF_ASSIGN_OR_RETURN(FetchPlan plan, PlanFetches(*graph, options.fetches));

  SessionOptions session_options;
  session_options.target = options.target;
  session_options.heartbeat_timeout_in_ms = DefaultPeerTimeoutMs();  // --heartbeat-timeout-ms
  AF_ASSIGN_OR_RETURN(session_options.device_count, ParseDeviceCounts(options.devices));
  session_options.allow_soft_placement = options.soft_placement;
  session_options.log_device_placement = options.log_placement;
  // --timeout-ms bounds the connection to a remote target as well as each step.
  if (options.timeout_ms > 0) session_options.connect_timeout_in_ms = options.timeout_ms;
  AF_ASSIGN_OR_RETURN(std::unique_ptr<Session> session,
                      NewSession(graph.get(), session_options));
  RunOptions run_options;
  run_options.timeout_in_ms = options.timeout_ms;

  for (size_t i = 0; i < before.size(); ++i) {
    std::vector<Tensor> unused;
    Status s = session->Run(run_options, feeds, {}, {before[i]}, &unused, nullptr);
    if (!s.ok()) return s.WithContext("--before step '" + options.before[i] + "'");
  }

  std::vector<Tensor> outputs;
  RunMetadata metadata;
  RunOptions fetch_options = run_options;
  if (!options.trace_path.empty()) fetch_options.trace_level = RunOptions::TraceLevel::kFullTrace;
  AF_RETURN_IF_ERROR(
      session->Run(fetch_options, feeds, plan.tensors, plan.targets, &outputs, &metadata));
  if (!options.trace_path.empty()) {
    AF_RETURN_IF_ERROR(WriteChromeTrace(metadata, ResolveUserPath(options.trace_path)));
  }
  AF_RETURN_IF_ERROR(session->Close());
  if (outputs.size() != plan.tensors.size()) {
    return Internal("the session returned " + std::to_string(outputs.size()) +
                    " tensor(s) for " + std::to_string(plan.tensors.size()) + " fetch(es)");
  }

  size_t next_output = 0;
  if (options.json) {
    // Ordered as documented: "fetches" then "executed"; tensors as dtype, shape, data;
    // a node run as a target (it has no outputs) as null.
    nlohmann::ordered_json result;
    result["fetches"] = nlohmann::ordered_json::object();
    for (size_t i = 0; i < options.fetches.size(); ++i) {
      result["fetches"][options.fetches[i]] =
          plan.is_target[i] ? nlohmann::ordered_json(nullptr)
                            : TensorToOrderedJson(outputs[next_output++]);
    }
    result["executed"] = metadata.executed_nodes;
    out << result.dump() << "\n";
  } else {
    for (size_t i = 0; i < options.fetches.size(); ++i) {
      if (plan.is_target[i]) {
        out << options.fetches[i] << ": ran (no outputs)\n";
      } else {
        out << options.fetches[i] << " = " << FormatTensorLine(outputs[next_output++]) << "\n";
      }
    }
  }
  out.flush();
  return Status::OK();
}

}  // namespace

int RunGraphCommand(const RunCommandOptions& options, std::ostream& out, std::ostream& err) {
  std::vector<FeedArg> feed_args;
  return RunChecked(
      out, err,
      [&]() -> Status {
        AF_RETURN_IF_ERROR(CheckFetchesAndTargets(options));
        AF_ASSIGN_OR_RETURN(feed_args, ParseFeedArgs(options.feeds));
        return Status::OK();
      },
      [&]() { return LoadAndRun(options, feed_args, out); });
}

Subcommand AddRunSubcommand(CLI::App* parent) {
  auto options = std::make_shared<RunCommandOptions>();
  CLI::App* app = parent->add_subcommand("run", "Run a graph JSON file once and print fetches");
  app->add_option("--graph", options->graph_path, "Graph JSON file")->required();
  app->add_option("--fetch", options->fetches, "Tensors to fetch: NAME[,NAME...]")
      ->required()
      ->delimiter(',')
      ->allow_extra_args(false);
  app->add_option("--feed", options->feeds, "NAME=JSON: a number or nested lists")
      ->allow_extra_args(false);
  app->add_option("--before", options->before,
                  "Target run as its own step before the fetch step (repeatable)")
      ->allow_extra_args(false);
  app->add_flag("--json", options->json, "Print one line of JSON");
  AddTimeoutMsOption(app, &options->timeout_ms);
  app->add_option("--devices", options->devices, "Devices of the local task: cpu=N[,gpu=M]");
  app->add_flag("--soft-placement", options->soft_placement,
                "Place ops on the CPU when their requested device cannot run them");
  app->add_flag("--log-placement", options->log_placement,
                "Print each node's device and why to stderr");
  app->add_option("--trace", options->trace_path, "Write the fetch step's Chrome trace here");
  app->add_option("--target", options->target,
                  "Run on a remote master: actorflow://HOST:PORT (default: in this process)");
  return Subcommand{app, [options]() { return RunGraphCommand(*options, std::cout, std::cerr); }};
}

}  // namespace cli
}  // namespace actorflow
