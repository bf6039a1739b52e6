#include "tools/process_group.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

namespace actorflow {
namespace cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kReadyPrefix[] = "actorflow server ready:";

struct Stream {
  int fd = -1;
  std::string partial;  // the current line, not yet ended by '\n'
};

struct Child {
  const LaunchTask* task = nullptr;
  pid_t pid = -1;
  Stream out, err;
  bool ready = false;
  bool reaped = false;
  int code = 0;  // exit code, or 128 + signal
};

// The signals the launcher forwards, and SIGCHLD, which wakes its loop.
sigset_t HandledSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&set, s);
  return set;
}

class Group {
 public:
  Group(const ProcessGroupOptions& options, std::ostream& out, std::ostream& err)
      : options_(options), out_(out), err_(err) {}

  int Run(const std::vector<LaunchTask>& plan) {
    sigset_t handled = HandledSignals();
    sigprocmask(SIG_BLOCK, &handled, &saved_mask_);
    signal_fd_ = signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK);
    if (signal_fd_ < 0) return Fail("signalfd: " + std::string(std::strerror(errno)), 1);
    for (const LaunchTask& t : plan) {
      if (t.server) StartOrFail(t);
    }
    const Clock::time_point ready_deadline = Clock::now() + options_.ready_timeout;
    while (!stopping_ && !AllServersReady()) {
      if (Clock::now() >= ready_deadline) {
        for (const Child& c : children_) {
          if (!c.ready) {
            StopAll(Fail("[" + c.task->label + "] printed no ready line within " +
                             std::to_string(options_.ready_timeout.count()) + " ms",
                         1));
            break;
          }
        }
        break;
      }
      Pump(ready_deadline);
    }
    if (!stopping_) {
      for (const LaunchTask& t : plan) {
        if (!t.server) StartOrFail(t);
      }
    }
    while (!AllReaped()) {
      if (!stopping_ && workers_ > 0 && WorkersDone()) StopAll(0);
      Pump(stopping_ ? stop_deadline_ : Clock::time_point::max());
      if (stopping_ && Clock::now() >= stop_deadline_) KillAll();
    }
    for (Child& c : children_) {
      Drain(&c);
    }
    close(signal_fd_);
    sigprocmask(SIG_SETMASK, &saved_mask_, nullptr);
    return exit_code_;
  }

 private:
  int Fail(const std::string& message, int code) {
    out_.flush();
    err_ << "actorflow launch: " << message << std::endl;
    return code;
  }

  void StartOrFail(const LaunchTask& task) {
    int out_pipe[2], err_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
      StopAll(Fail("cannot start [" + task.label + "]: pipe: " + std::strerror(errno), 1));
      return;
    }
    std::vector<std::string> argv_strings = {task.program.empty() ? options_.program
                                                                  : task.program};
    argv_strings.insert(argv_strings.end(), task.args.begin(), task.args.end());
    std::vector<char*> argv;
    for (std::string& s : argv_strings) argv.push_back(s.data());
    argv.push_back(nullptr);
    // Made before fork: the child only reads them.
    std::vector<std::string> env_strings = task.env;
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid == 0) {
      // The child: its own signal mask back, dies with the launcher, pipes as stdio.
      sigprocmask(SIG_SETMASK, &saved_mask_, nullptr);
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);
      dup2(out_pipe[1], STDOUT_FILENO);
      dup2(err_pipe[1], STDERR_FILENO);
      for (std::string& e : env_strings) putenv(e.data());
      // A user's program is found as a shell finds it (a name with '/' as given,
      // else on $PATH); the actorflow binary is an absolute path.
      execvp(argv[0], argv.data());
      const std::string message = "exec " + argv_strings[0] + ": " + std::strerror(errno) + "\n";
      (void)!write(STDERR_FILENO, message.data(), message.size());
      _exit(127);
    }
    close(out_pipe[1]);
    close(err_pipe[1]);
    if (pid < 0) {
      close(out_pipe[0]);
      close(err_pipe[0]);
      StopAll(Fail("cannot start [" + task.label + "]: fork: " + std::strerror(errno), 1));
      return;
    }
    Child child;
    child.task = &task;
    child.pid = pid;
    child.out.fd = out_pipe[0];
    child.err.fd = err_pipe[0];
    children_.push_back(std::move(child));
    if (!task.server) ++workers_;
  }

  bool AllServersReady() const {
    for (const Child& c : children_) {
      if (c.task->server && !c.ready) return false;
    }
    return true;
  }
  bool AllReaped() const {
    for (const Child& c : children_) {
      if (!c.reaped) return false;
    }
    return true;
  }
  bool WorkersDone() const {
    for (const Child& c : children_) {
      if (!c.task->server && !c.reaped) return false;
    }
    return true;
  }

  // Waits for output, a signal or a child's end, until `deadline`.
  void Pump(Clock::time_point deadline) {
    std::vector<pollfd> fds = {{signal_fd_, POLLIN, 0}};
    std::vector<std::pair<Child*, Stream*>> owners = {{nullptr, nullptr}};
    for (Child& c : children_) {
      for (Stream* s : {&c.out, &c.err}) {
        if (s->fd < 0) continue;
        fds.push_back({s->fd, POLLIN, 0});
        owners.emplace_back(&c, s);
      }
    }
    int timeout_ms = -1;
    if (deadline != Clock::time_point::max()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      timeout_ms = static_cast<int>(std::max<int64_t>(0, left.count()) + 1);
    }
    if (poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) return;
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) Read(owners[i].first, owners[i].second);
    }
    if (fds[0].revents & POLLIN) HandleSignals();
  }

  // Copies what the pipe holds; false when nothing more is there now (it would
  // block, or the pipe closed, in which case it is closed here too).
  bool Read(Child* child, Stream* stream) {
    char buffer[65536];
    const ssize_t n = read(stream->fd, buffer, sizeof(buffer));
    if (n > 0) {
      stream->partial.append(buffer, static_cast<size_t>(n));
      EmitLines(child, stream, /*flush=*/false);
      return true;
    }
    if (n < 0 && errno == EINTR) return true;
    if (n < 0 && errno == EAGAIN) return false;
    EmitLines(child, stream, /*flush=*/true);
    close(stream->fd);
    stream->fd = -1;
    return false;
  }

  void EmitLines(Child* child, Stream* stream, bool flush) {
    std::ostream& sink = stream == &child->out ? out_ : err_;
    size_t start = 0, end;
    while ((end = stream->partial.find('\n', start)) != std::string::npos) {
      const std::string line = stream->partial.substr(start, end - start);
      if (stream == &child->out && line.rfind(kReadyPrefix, 0) == 0) child->ready = true;
      sink << "[" << child->task->label << "] " << line << "\n";
      start = end + 1;
    }
    stream->partial.erase(0, start);
    if (flush && !stream->partial.empty()) {
      sink << "[" << child->task->label << "] " << stream->partial << "\n";
      stream->partial.clear();
    }
    sink.flush();
  }

  // After the child ended: what its pipes still hold, then they are closed (a
  // grandchild that kept them open is not waited for).
  void Drain(Child* child) {
    for (Stream* s : {&child->out, &child->err}) {
      if (s->fd < 0) continue;
      fcntl(s->fd, F_SETFL, O_NONBLOCK);
      while (Read(child, s)) {
      }
      if (s->fd >= 0) {
        EmitLines(child, s, /*flush=*/true);
        close(s->fd);
        s->fd = -1;
      }
    }
  }

  void HandleSignals() {
    signalfd_siginfo info;
    while (read(signal_fd_, &info, sizeof(info)) == sizeof(info)) {
      const int sig = static_cast<int>(info.ssi_signo);
      if (sig == SIGCHLD) continue;
      if (!stopping_) Fail("got signal " + std::to_string(sig) + ": forwarding it to every task", 0);
      for (Child& c : children_) {
        if (!c.reaped) kill(c.pid, sig);
      }
      if (!stopping_) {
        stopping_ = true;
        exit_code_ = 128 + sig;
        stop_deadline_ = Clock::now() + options_.stop_grace;
      }
    }
    ReapExited();
  }

  void ReapExited() {
    for (Child& c : children_) {
      if (c.reaped) continue;
      int status = 0;
      if (waitpid(c.pid, &status, WNOHANG) != c.pid) continue;
      c.reaped = true;
      c.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      Drain(&c);
      if (c.code != 0 && !stopping_) {
        const std::string how = WIFEXITED(status)
                                    ? "exited with code " + std::to_string(c.code)
                                    : "was killed by signal " + std::to_string(WTERMSIG(status));
        const std::string when = c.task->server && !c.ready ? " before it was ready" : "";
        StopAll(Fail("[" + c.task->label + "] " + how + when + "; stopping the other tasks",
                     c.code));
      }
    }
  }

  // Ends the group with `code`: SIGTERM now, SIGKILL after the grace period.
  void StopAll(int code) {
    if (stopping_) return;
    stopping_ = true;
    exit_code_ = code;
    stop_deadline_ = Clock::now() + options_.stop_grace;
    for (Child& c : children_) {
      if (!c.reaped) kill(c.pid, SIGTERM);
    }
  }

  void KillAll() {
    for (Child& c : children_) {
      if (!c.reaped) kill(c.pid, SIGKILL);
    }
    stop_deadline_ = Clock::time_point::max();
  }

  const ProcessGroupOptions& options_;
  std::ostream& out_;
  std::ostream& err_;
  sigset_t saved_mask_;
  int signal_fd_ = -1;
  std::vector<Child> children_;
  int workers_ = 0;
  bool stopping_ = false;
  int exit_code_ = 0;
  Clock::time_point stop_deadline_ = Clock::time_point::max();
};

}  // namespace

int RunProcessGroup(const std::vector<LaunchTask>& plan, const ProcessGroupOptions& options,
                    std::ostream& out, std::ostream& err) {
  Group group(options, out, err);
  return group.Run(plan);
}

}  // namespace cli
}  // namespace actorflow
