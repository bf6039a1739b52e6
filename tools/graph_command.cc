#include "tools/graph_command.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <vector>

#include <CLI/CLI.hpp>

#include "graph/graph_json.h"
#include "kernels/gpu_runtime.h"
#include "placement/device_name.h"
#include "placement/graph_dot.h"

extern char** environ;

namespace actorflow {
namespace cli {
namespace {

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A file made by mkstemp under $TMPDIR (or /tmp), removed when this goes away.
class TempFile {
 public:
  TempFile() {
    const char* dir = std::getenv("TMPDIR");
    std::string pattern =
        std::string(dir != nullptr && dir[0] != '\0' ? dir : "/tmp") + "/actorflow_graph_XXXXXX";
    const int fd = mkstemp(pattern.data());
    if (fd >= 0) {
      close(fd);
      path_ = pattern;
    }
  }
  ~TempFile() {
    if (!path_.empty()) unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The local task's devices, named as the in-process session names them: N CPUs and
// the requested GPUs that this process finds. Nodes without a device prefer the
// first GPU, as in a session.
StatusOr<PlacerOptions> LocalDevices(const GraphCommandOptions& options, std::ostream& err) {
  AF_ASSIGN_OR_RETURN(auto counts, ParseDeviceCounts(options.devices));
  const int found = GpuDeviceCount();
  if (counts.count("GPU") && counts.at("GPU") > found) {
    err << "note: --devices asks for " << counts.at("GPU") << " GPU(s); this process finds "
        << found << " (" << DescribeGpus() << ")\n";
  }
  PlacerOptions placer;
  for (const std::string& name : LocalDeviceNames(counts)) {
    const std::string type = name.find("/device:GPU:") != std::string::npos ? "GPU" : "CPU";
    placer.devices.push_back(DeviceInfo{name, type});
    if (type == "GPU" && placer.default_device.empty()) placer.default_device = name;
  }
  if (placer.default_device.empty()) placer.default_device = placer.devices[0].name;
  placer.allow_soft_placement = options.soft_placement;
  return placer;
}

// Writes `text` to `path`; an error calls the file `what`.
Status WriteTextFile(const std::string& path, const std::string& text, const std::string& what) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (file) file << text;
  if (file) file.close();
  if (!file) {
    const int error = errno;
    return FailedPrecondition("cannot write " + what + " " + path + ": " + std::strerror(error));
  }
  return Status::OK();
}

Status DrawGraph(const GraphCommandOptions& options, std::ostream& out, std::ostream& err) {
  AF_ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph,
                      LoadGraphFile(ResolveUserPath(options.graph_path)));
  // Find `dot` before the work, so that a missing Graphviz is the first thing said.
  std::string dot_program;
  if (options.format == "svg") {
    const char* path = std::getenv("PATH");
    dot_program = FindExecutableOnPath("dot", path != nullptr ? path : "");
    if (dot_program.empty()) {
      return FailedPrecondition(
          "--format svg needs Graphviz's `dot` on PATH, and there is none: install Graphviz "
          "(apt-get install graphviz), or write DOT with --format dot and render it elsewhere");
    }
  }
  std::string text;
  std::string summary = std::to_string(graph->num_nodes()) + " nodes";
  if (options.placed) {
    AF_ASSIGN_OR_RETURN(PlacerOptions placer, LocalDevices(options, err));
    AF_ASSIGN_OR_RETURN(std::vector<DevicePartition> partitions,
                        PlaceAndPartitionWholeGraph(*graph, placer));
    text = PartitionsToDot(partitions);
    summary += ", on " + std::to_string(partitions.size()) + " device(s)";
  } else {
    text = GraphToDot(*graph);
  }
  if (!dot_program.empty()) {
    AF_ASSIGN_OR_RETURN(text, RenderDotAsSvg(dot_program, text));
  }
  if (options.out_path.empty()) {
    out << text;
  } else {
    AF_RETURN_IF_ERROR(WriteTextFile(ResolveUserPath(options.out_path), text, "--out"));
    out << "wrote " << options.out_path << ": " << summary << "\n";
  }
  out.flush();
  return Status::OK();
}

}  // namespace

std::string FindExecutableOnPath(const std::string& name, const std::string& path_list) {
  size_t start = 0;
  while (start <= path_list.size()) {
    size_t end = path_list.find(':', start);
    if (end == std::string::npos) end = path_list.size();
    const std::string dir = path_list.substr(start, end - start);
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    struct stat info;
    if (stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
        access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    start = end + 1;
  }
  return "";
}

StatusOr<std::string> RenderDotAsSvg(const std::string& dot_program, const std::string& dot_text) {
  TempFile input, output, errors;
  if (!input.ok() || !output.ok() || !errors.ok()) {
    return Internal("cannot create temporary files for " + dot_program +
                    " (is $TMPDIR or /tmp writable?)");
  }
  AF_RETURN_IF_ERROR(WriteTextFile(input.path(), dot_text, "the DOT input for " + dot_program));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output.path().c_str(),
                                   O_WRONLY | O_TRUNC, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, errors.path().c_str(),
                                   O_WRONLY | O_TRUNC, 0);
  std::vector<std::string> args = {dot_program, "-Tsvg", input.path()};
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawn_error =
      posix_spawn(&pid, dot_program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawn_error != 0) {
    return Internal("cannot run " + dot_program + ": " + std::strerror(spawn_error));
  }
  int wait_status = 0;
  while (waitpid(pid, &wait_status, 0) < 0) {
    if (errno != EINTR) return Internal("waiting for " + dot_program + ": " + std::strerror(errno));
  }
  if (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0) {
    std::string message = ReadWholeFile(errors.path());
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) {
      message.pop_back();
    }
    return Internal(dot_program + " -Tsvg failed (" +
                    (WIFEXITED(wait_status)
                         ? "exit status " + std::to_string(WEXITSTATUS(wait_status))
                         : "signal " + std::to_string(WTERMSIG(wait_status))) +
                    "): " + message);
  }
  return ReadWholeFile(output.path());
}

int GraphCommand(const GraphCommandOptions& options, std::ostream& out, std::ostream& err) {
  return RunChecked(
      out, err,
      [&]() -> Status {
        if (options.graph_path.empty()) return InvalidArgument("graph needs --graph FILE.json");
        if (options.format != "dot" && options.format != "svg") {
          return InvalidArgument("--format '" + options.format + "': expected dot or svg");
        }
        if (!options.placed && (!options.devices.empty() || options.soft_placement)) {
          return InvalidArgument(
              "--devices and --soft-placement choose where --placed puts the nodes: add "
              "--placed");
        }
        return ParseDeviceCounts(options.devices).status();
      },
      [&]() { return DrawGraph(options, out, err); });
}

Subcommand AddGraphSubcommand(CLI::App* parent) {
  auto options = std::make_shared<GraphCommandOptions>();
  CLI::App* app = parent->add_subcommand(
      "graph", "Draw a graph JSON file as Graphviz DOT or SVG, optionally as placed");
  app->add_option("--graph", options->graph_path, "Graph JSON file")->required();
  app->add_option("--format", options->format, "dot or svg (svg runs Graphviz's dot)")
      ->capture_default_str();
  app->add_option("--out", options->out_path, "Write here instead of stdout");
  app->add_option("--devices", options->devices, "Devices of the local task: cpu=N[,gpu=M]");
  app->add_flag("--placed", options->placed, "Draw one cluster per device, with Send/Recv");
  app->add_flag("--soft-placement", options->soft_placement,
                "Let nodes whose device is missing run on a CPU (with --placed)");
  return Subcommand{app, [options]() { return GraphCommand(*options, std::cout, std::cerr); }};
}

}  // namespace cli
}  // namespace actorflow
