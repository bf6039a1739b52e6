#include "tests/child_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

extern char** environ;

namespace actorflow {
namespace subprocess {
namespace {

using Clock = std::chrono::steady_clock;

int MillisLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

// A socket bound to 127.0.0.1:port (0 = any); -1 on failure. *bound gets the port.
int BindLoopback(int port, int* bound) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    return -1;
  }
  *bound = ntohs(addr.sin_port);
  return fd;
}

// The lowest port of the kernel's ephemeral range (the ports it hands to outgoing
// connections and to bind(port 0)); 32768 when the range cannot be read.
int EphemeralRangeLow() {
  int low = 32768;
  int high = 60999;
  if (FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(f, "%d %d", &low, &high) != 2) low = 32768;
    std::fclose(f);
  }
  return low;
}

// A socket bound to a port of 127.0.0.1 that a server task will listen on later.
// Why not port 0: the kernel draws such a port from the ephemeral range, so once it
// is released an outgoing connection of any process (another test, the cluster's own
// tasks) can take it as its local port before the server binds it, and the server
// fails with "port in use". Below the ephemeral range only explicit binds take a
// port, so a port is drawn at random from [10000, low of the range). Falls back to
// port 0 when that span is small or full.
int BindServerPort(int* bound) {
  constexpr int kLowest = 10000;
  const int span = EphemeralRangeLow() - kLowest;
  if (span >= 1000) {
    thread_local std::mt19937 random(static_cast<uint32_t>(
        getpid() ^ Clock::now().time_since_epoch().count()));
    std::uniform_int_distribution<int> pick(kLowest, kLowest + span - 1);
    for (int attempt = 0; attempt < 64; ++attempt) {
      const int fd = BindLoopback(pick(random), bound);
      if (fd >= 0) return fd;
    }
  }
  return BindLoopback(0, bound);
}

}  // namespace

std::unique_ptr<ChildProcess> ChildProcess::Start(const std::string& program,
                                                  const std::vector<std::string>& args,
                                                  std::string* error) {
  std::vector<std::string> argv_storage = {program};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_storage;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "BUILD_WORKING_DIRECTORY=", 24) != 0) env_storage.push_back(*e);
  }
  std::vector<char*> envp;
  for (std::string& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);

  // Three pipes: stdout, stderr, and one that carries errno when exec fails (it
  // closes on a successful exec).
  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, exec_pipe[2] = {-1, -1};
  auto close_all = [&] {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], exec_pipe[0], exec_pipe[1]}) {
      if (fd >= 0) close(fd);
    }
  };
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0 ||
      pipe2(exec_pipe, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    close_all();
    return nullptr;
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    close_all();
    return nullptr;
  }
  if (pid == 0) {
    // The child: only async-signal-safe calls until exec. dup2 clears O_CLOEXEC on
    // stdout/stderr; every other pipe end (also those of sibling children) closes on
    // exec, so a child never holds another's pipe. The child dies with the thread
    // that started it, so a test that crashes leaves no server behind.
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    execve(program.c_str(), argv.data(), envp.data());
    const int exec_errno = errno;
    (void)!write(exec_pipe[1], &exec_errno, sizeof(exec_errno));
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  close(exec_pipe[1]);
  int exec_errno = 0;
  ssize_t got;
  while ((got = read(exec_pipe[0], &exec_errno, sizeof(exec_errno))) < 0 && errno == EINTR) {
  }
  close(exec_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof(exec_errno))) {
    *error = "cannot run " + program + ": " + std::strerror(exec_errno);
    close(out_pipe[0]);
    close(err_pipe[0]);
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return nullptr;
  }
  std::unique_ptr<ChildProcess> child(new ChildProcess());
  child->pid_ = pid;
  child->out_fd_ = out_pipe[0];
  child->err_fd_ = err_pipe[0];
  // Readable once the child has exited: lets the waits poll for the exit too.
  // (glibc 2.36's <sys/pidfd.h> lacks C linkage for C++, hence the raw syscall.)
  child->pid_fd_ = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  return child;
}

ChildProcess::~ChildProcess() {
  if (!reaped_) Kill(SIGKILL);
  for (int fd : {out_fd_, err_fd_, pid_fd_}) {
    if (fd >= 0) close(fd);
  }
}

bool ChildProcess::Pump(Clock::time_point deadline) {
  pollfd fds[3] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}, {pid_fd_, POLLIN, 0}};
  if (out_fd_ < 0 && err_fd_ < 0 && pid_fd_ < 0) return false;
  int n = poll(fds, 3, MillisLeft(deadline));
  if (n < 0) return errno == EINTR;
  if (n == 0) return false;
  int* fd_of[2] = {&out_fd_, &err_fd_};
  std::string* sinks[2] = {&out_, &err_};
  for (int i = 0; i < 2; ++i) {
    if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    char buffer[4096];
    const ssize_t got = read(fds[i].fd, buffer, sizeof(buffer));
    if (got > 0) {
      sinks[i]->append(buffer, static_cast<size_t>(got));
    } else if (got == 0 || errno != EINTR) {
      close(*fd_of[i]);
      *fd_of[i] = -1;
    }
  }
  if (fds[2].fd >= 0 && fds[2].revents != 0) {
    Reap(/*block=*/false);
    if (reaped_) {
      close(pid_fd_);
      pid_fd_ = -1;
    }
  }
  return true;
}

bool ChildProcess::WaitForLine(const std::string& prefix, std::chrono::milliseconds timeout,
                               std::string* line) {
  return WaitForLineIn(out_, &out_fd_, &scanned_, prefix, timeout, line);
}

bool ChildProcess::WaitForErrLine(const std::string& prefix, std::chrono::milliseconds timeout,
                                  std::string* line) {
  return WaitForLineIn(err_, &err_fd_, &err_scanned_, prefix, timeout, line);
}

bool ChildProcess::WaitForLineIn(const std::string& text, const int* fd, size_t* scanned,
                                 const std::string& prefix, std::chrono::milliseconds timeout,
                                 std::string* line) {
  const auto deadline = Clock::now() + timeout;
  while (true) {
    size_t end;
    while ((end = text.find('\n', *scanned)) != std::string::npos) {
      std::string candidate = text.substr(*scanned, end - *scanned);
      *scanned = end + 1;
      if (candidate.rfind(prefix, 0) == 0) {
        if (line != nullptr) *line = candidate;
        return true;
      }
    }
    if (*fd < 0) return false;  // the pipe closed: the line can no longer come
    if (Clock::now() >= deadline) return false;
    Pump(deadline);
  }
}

void ChildProcess::Reap(bool block) {
  if (reaped_) return;
  int status = 0;
  pid_t r;
  while ((r = waitpid(pid_, &status, block ? 0 : WNOHANG)) < 0 && errno == EINTR) {
  }
  if (r != pid_) return;
  RecordEnd(status);
}

void ChildProcess::RecordEnd(int status) {
  reaped_ = true;
  if (WIFEXITED(status)) {
    exited_ = true;
    exit_code_ = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    term_signal_ = WTERMSIG(status);
  }
}

bool ChildProcess::WaitForExit(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  // Done when the child was reaped and its pipes are drained (they close when it
  // has gone, unless something it spawned still holds them).
  while ((!reaped_ || out_fd_ >= 0 || err_fd_ >= 0) && Clock::now() < deadline) {
    if (pid_fd_ < 0 && !reaped_ && out_fd_ < 0 && err_fd_ < 0) {
      Reap(/*block=*/true);  // no pidfd (old kernel): the pipes closed, the exit is due
      break;
    }
    if (!Pump(deadline)) break;
  }
  return reaped_;
}

bool ChildProcess::Suspend(std::chrono::milliseconds timeout) {
  if (reaped_) return false;
  ::kill(pid_, SIGSTOP);
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = waitpid(pid_, &status, WUNTRACED | WNOHANG);
    if (r == pid_) {
      if (WIFSTOPPED(status)) return true;
      RecordEnd(status);
      return false;
    }
    if (r < 0 && errno != EINTR) return false;
    const auto now = Clock::now();
    if (now >= deadline) return false;
    // A stop makes no descriptor ready (a pidfd reports only the end), so the wait
    // looks again each millisecond, reading the child's pipes meanwhile.
    const auto next = std::min(deadline, now + std::chrono::milliseconds(1));
    if (!Pump(next) && Clock::now() < next) poll(nullptr, 0, MillisLeft(next));
  }
}

bool ChildProcess::HasExited() {
  Reap(/*block=*/false);
  return reaped_;
}

void ChildProcess::Kill(int signal) {
  if (reaped_) return;
  ::kill(pid_, signal);
  if (signal == SIGKILL) Reap(/*block=*/true);
}

std::string FindWorkspaceProgram(const std::string& relative) {
  std::vector<std::string> candidates;
  if (const char* srcdir = std::getenv("TEST_SRCDIR")) {
    const char* workspace = std::getenv("TEST_WORKSPACE");
    candidates.push_back(std::string(srcdir) + "/" + (workspace ? workspace : "actorflow") + "/" +
                         relative);
  }
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    candidates.push_back(std::string(exe, static_cast<size_t>(n)) + ".runfiles/actorflow/" +
                         relative);
  }
  candidates.push_back(relative);
  candidates.push_back("bazel-bin/" + relative);
  for (const std::string& path : candidates) {
    if (::access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

int FreeLoopbackPort() {
  int port = 0;
  int fd = BindServerPort(&port);
  if (fd < 0) return 0;
  close(fd);
  return port;
}

GarbageListener::GarbageListener(std::string reply) : reply_(std::move(reply)) {
  listen_fd_ = BindLoopback(0, &port_);
  if (listen_fd_ < 0 || listen(listen_fd_, 16) != 0 || pipe2(stop_pipe_, O_CLOEXEC) != 0) {
    port_ = 0;
    return;
  }
  thread_ = std::thread([this] { Serve(); });
}

GarbageListener::~GarbageListener() {
  if (thread_.joinable()) {
    (void)!write(stop_pipe_[1], "x", 1);
    thread_.join();
  }
  for (int fd : {listen_fd_, stop_pipe_[0], stop_pipe_[1]}) {
    if (fd >= 0) close(fd);
  }
}

void GarbageListener::Serve() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    int conn = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) continue;
    connections_++;
    (void)!send(conn, reply_.data(), reply_.size(), MSG_NOSIGNAL);
    close(conn);
  }
}

PortHolder::PortHolder() {
  fd_ = BindServerPort(&port_);
  if (fd_ < 0 || listen(fd_, 1) != 0) port_ = 0;
}

PortHolder::~PortHolder() {
  if (fd_ >= 0) close(fd_);
}

SignalFifo::SignalFifo(std::string path) : path_(std::move(path)) {
  unlink(path_.c_str());
  if (mkfifo(path_.c_str(), 0600) != 0) return;
  fd_ = open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ >= 0) keep_open_fd_ = open(path_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
}

SignalFifo::~SignalFifo() {
  if (keep_open_fd_ >= 0) close(keep_open_fd_);
  if (fd_ >= 0) close(fd_);
  unlink(path_.c_str());
}

bool SignalFifo::WaitFor(const std::string& text, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (true) {
    size_t end;
    while ((end = received_.find('\n')) != std::string::npos) {
      std::string line = received_.substr(0, end);
      received_.erase(0, end + 1);
      if (line == text) return true;
    }
    if (fd_ < 0 || Clock::now() >= deadline) return false;
    pollfd fds[1] = {{fd_, POLLIN, 0}};
    if (poll(fds, 1, MillisLeft(deadline)) <= 0) continue;
    char buffer[256];
    const ssize_t got = read(fd_, buffer, sizeof(buffer));
    if (got > 0) received_.append(buffer, static_cast<size_t>(got));
  }
}

}  // namespace subprocess
}  // namespace actorflow
