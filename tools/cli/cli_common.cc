#include "tools/cli/cli_common.h"

#include <pthread.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdlib>
#include <exception>

#include <CLI/CLI.hpp>

#include "kernels/gpu_runtime.h"
#include "placement/device_name.h"
#include "tools/cli/did_you_mean.h"

namespace actorflow {
namespace cli {
namespace {

// "--epochs" for each long name of every option of `app`, --help included.
std::vector<std::string> LongFlagNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
  }
  return names;
}

}  // namespace

Status DescribeParseError(const std::vector<Subcommand>& subcommands,
                          const std::vector<std::string>& args, const std::string& cli11_message) {
  std::vector<std::string> names;
  std::string list;
  for (const Subcommand& sub : subcommands) {
    names.push_back(sub.app->get_name());
    list += (list.empty() ? "" : ", ") + sub.app->get_name();
  }
  if (args.empty()) return InvalidArgument("no subcommand given: expected one of " + list);
  const std::string& first = args[0];
  const CLI::App* app = nullptr;
  for (const Subcommand& sub : subcommands) {
    if (sub.app->get_name() == first) app = sub.app;
  }
  if (app == nullptr) {
    if (first.rfind("-", 0) == 0) {
      return InvalidArgument(cli11_message + " (run 'actorflow --help' for usage)");
    }
    return InvalidArgument("unknown subcommand '" + first + "'" +
                           DidYouMean(NearestNames(first, names)) + ": expected one of " + list);
  }
  const std::vector<std::string> flags = LongFlagNames(*app);
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") break;  // what follows is positional
    if (arg.rfind("--", 0) != 0 || arg.size() == 2) continue;
    const std::string flag = arg.substr(0, arg.find('='));
    if (std::find(flags.begin(), flags.end(), flag) != flags.end()) continue;
    return InvalidArgument(first + ": unknown flag " + flag +
                           DidYouMean(NearestNames(flag, flags, 1), "") + "; run 'actorflow " +
                           first + " --help' for the flags");
  }
  return InvalidArgument(cli11_message + " (run 'actorflow " + first + " --help' for usage)");
}

std::string ResolveUserPath(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  const char* base = std::getenv("BUILD_WORKING_DIRECTORY");
  if (base == nullptr || base[0] == '\0') return path;
  std::string resolved = base;
  if (resolved.back() != '/') resolved += '/';
  return resolved + path;
}

void PrintError(std::ostream& err, const Status& status) {
  std::string text = status.ToString();
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  err << "actorflow: " << text << "\n";
  err.flush();
}

int ReportError(std::ostream& err, const Status& status, int exit_code) {
  PrintError(err, status);
  return exit_code;
}

int CatchExceptions(std::ostream& err, const std::function<int()>& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return ReportError(err, Internal(std::string("unexpected exception: ") + e.what()),
                       kExitRuntimeError);
  }
}

int RunChecked(std::ostream& out, std::ostream& err, const std::function<Status()>& check,
               const std::function<Status()>& run,
               const std::function<int(const Status&)>& runtime_exit_code) {
  return CatchExceptions(err, [&]() {
    Status usage = check();
    if (!usage.ok()) return ReportError(err, usage, kExitUsageError);
    Status status = run();
    if (status.ok()) return kExitOk;
    out.flush();
    return ReportError(err, status,
                       runtime_exit_code ? runtime_exit_code(status) : kExitRuntimeError);
  });
}

CLI::Option* AddTimeoutMsOption(CLI::App* app, int64_t* timeout_ms) {
  return app->add_option("--timeout-ms", *timeout_ms, "Deadline of each step in ms (0 = none)");
}

Status CheckTimeoutMs(int64_t timeout_ms) {
  if (timeout_ms >= 0) return Status::OK();
  return InvalidArgument("--timeout-ms " + std::to_string(timeout_ms) +
                         ": must be >= 0 (0 = no deadline)");
}

StatusOr<std::map<std::string, int>> ParseDeviceCounts(const std::string& text) {
  std::map<std::string, int> counts;
  if (text.empty()) return counts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string part = text.substr(start, comma == std::string::npos ? std::string::npos
                                                                    : comma - start);
    auto eq = part.find('=');
    std::string type = part.substr(0, eq);
    std::string count = eq == std::string::npos ? "" : part.substr(eq + 1);
    for (char& c : type) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if ((type != "CPU" && type != "GPU") || count.empty() || count.size() > 4 ||
        count.find_first_not_of("0123456789") != std::string::npos) {
      return InvalidArgument("--devices '" + text + "': bad entry '" + part +
                             "' (expected cpu=N[,gpu=M])");
    }
    if (counts.count(type)) return InvalidArgument("--devices '" + text + "': " + type + " given twice");
    counts[type] = std::stoi(count);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (counts.count("CPU") && counts["CPU"] < 1) {
    return InvalidArgument("--devices '" + text + "': at least one CPU device is needed");
  }
  return counts;
}

bool IsLocalCluster(const std::string& cluster) { return cluster.rfind("local:", 0) == 0; }

StatusOr<ClusterSpec> LoadClusterFile(const std::string& cluster) {
  return ClusterSpec::FromFile(ResolveUserPath(cluster));
}

StatusOr<std::map<std::string, int>> ParseLocalClusterFlag(const std::string& cluster) {
  StatusOr<std::map<std::string, int>> shape = ParseLocalClusterShape(cluster);
  if (!shape.ok()) return InvalidArgument("--cluster: " + shape.status().message());
  return shape;
}

std::vector<std::string> LocalDeviceNames(const std::map<std::string, int>& device_count) {
  int cpus = 1;
  int gpus = GpuDeviceCount();
  bool gpus_named = false;
  for (const auto& [type, count] : device_count) {
    if (type == "CPU") cpus = count;
    if (type == "GPU") {
      gpus = std::min(gpus, count);
      gpus_named = count > 0;
    }
  }
  std::vector<std::string> names;
  auto add = [&names](const char* type, int count) {
    for (int i = 0; i < count; ++i) {
      names.push_back(std::string(kLocalTaskName) + "/device:" + type + ":" + std::to_string(i));
    }
  };
  if (gpus_named) add("GPU", gpus);
  add("CPU", cpus);
  if (!gpus_named) add("GPU", gpus);
  return names;
}

namespace {
sigset_t ShutdownSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  return signals;
}

// The thread that waits for a shutdown signal (BlockShutdownSignals' caller).
pthread_t waiting_thread;

// A shutdown signal delivered to a thread that does not block it (one that a library
// started before the mask was set, such as OpenBLAS's workers, started when the
// library loads) would otherwise end the process at once (the default action):
// handed to the waiting thread, where it is pending for sigwait. pthread_kill is
// async-signal-safe.
void ForwardToWaitingThread(int signal) { pthread_kill(waiting_thread, signal); }
}  // namespace

void BlockShutdownSignals() {
  waiting_thread = pthread_self();
  struct sigaction forward = {};
  forward.sa_handler = ForwardToWaitingThread;
  sigemptyset(&forward.sa_mask);
  forward.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &forward, nullptr);
  sigaction(SIGINT, &forward, nullptr);
  const sigset_t signals = ShutdownSignals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
}

void WaitForShutdownSignal() {
  const sigset_t signals = ShutdownSignals();
  int received = 0;
  sigwait(&signals, &received);
}

}  // namespace cli
}  // namespace actorflow
