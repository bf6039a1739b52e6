// Child processes for end-to-end tests, the one place that spawns them: long-running
// ones for tests of a cluster (servers that run until killed), and the runs to
// completion of RunProcess (tests/subprocess.h) built on them; plus the loopback
// helpers the cluster tests need: free ports, a listener that is not an actorflow
// server, a FIFO a child can signal through.
//
// Every wait is bounded by a deadline and reads the child's pipes with poll(): no
// sleeps. A ChildProcess kills (SIGKILL) and reaps its process when destroyed, so a
// failing test never leaves a server behind; and the child gets SIGKILL when the
// thread that started it ends (PR_SET_PDEATHSIG), so not even a crashed test does.
// Hence: start children from a thread that outlives them (a test's main thread).
//
// Output is collected only while a Wait* call runs; a child that writes more than a
// pipe's buffer (64 KiB) between waits blocks until the next wait. Servers write one
// line, so this never matters for them.
//
// Thread safety: a ChildProcess, a GarbageListener and a SignalFifo each belong to
// one thread (the GarbageListener's own accept thread is internal).
#ifndef ACTORFLOW_TESTS_CHILD_PROCESS_H_
#define ACTORFLOW_TESTS_CHILD_PROCESS_H_

#include <signal.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace actorflow {
namespace subprocess {

class ChildProcess {
 public:
  // Runs `program` with `args` (argv[0] is the program), stdout and stderr piped,
  // the environment minus BUILD_WORKING_DIRECTORY. Null with *error set when it
  // cannot be started (e.g. no such file).
  static std::unique_ptr<ChildProcess> Start(const std::string& program,
                                             const std::vector<std::string>& args,
                                             std::string* error);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Reads until a full stdout line starting with `prefix` arrived (true; the line
  // is stored in *line), the child closed stdout or exited (false), or `timeout`
  // passed (false).
  bool WaitForLine(const std::string& prefix, std::chrono::milliseconds timeout,
                   std::string* line);
  // The same for a stderr line (where a --json command writes its progress).
  bool WaitForErrLine(const std::string& prefix, std::chrono::milliseconds timeout,
                      std::string* line);
  // Waits until the child exits (reaping it, draining both pipes); false when
  // `timeout` passed first.
  bool WaitForExit(std::chrono::milliseconds timeout);
  // Sends `signal`; for SIGKILL also reaps the child (it cannot outlive SIGKILL).
  void Kill(int signal = SIGKILL);
  // Hangs the child (SIGSTOP) and waits until the kernel reports it stopped: kill()
  // returns before that, and until the thread that takes the signal runs, the
  // child's other threads still answer what reaches them. True once stopped; false
  // when it ended instead or `timeout` passed. SIGCONT (Kill) lets it go on.
  bool Suspend(std::chrono::milliseconds timeout);

  pid_t pid() const { return pid_; }
  // Whether the child has ended (reaps it if so); never blocks.
  bool HasExited();
  bool running() const { return !reaped_; }
  // Valid once reaped: exit status, or the signal that ended it (0 if it exited).
  bool exited() const { return exited_; }
  int exit_code() const { return exit_code_; }
  int term_signal() const { return term_signal_; }
  // What the child wrote so far (as far as the waits read it).
  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }

 private:
  ChildProcess() = default;
  // Reads what is available within `timeout`; false when nothing more can come
  // (both pipes closed) or the time passed.
  bool Pump(std::chrono::steady_clock::time_point deadline);
  void Reap(bool block);
  // Records how a reaped child ended (`status` as waitpid gives it).
  void RecordEnd(int status);
  // WaitForLine on `text` (out_ or err_), read from `*fd`, holding no wanted line
  // before `*scanned`.
  bool WaitForLineIn(const std::string& text, const int* fd, size_t* scanned,
                     const std::string& prefix, std::chrono::milliseconds timeout,
                     std::string* line);

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  int pid_fd_ = -1;  // pidfd of the child; -1 once reaped or when unsupported
  bool reaped_ = false;
  bool exited_ = false;
  int exit_code_ = -1;
  int term_signal_ = 0;
  std::string out_;
  std::string err_;
  size_t scanned_ = 0;      // out_ before this offset holds no wanted line
  size_t err_scanned_ = 0;  // the same for err_
};

// The path of an executable of the workspace (e.g. "tools/actorflow") wherever the
// caller runs: a test's runfiles ($TEST_SRCDIR), the runfiles of the running
// binary (`bazel run` of a benchmark), the current directory, then bazel-bin.
// Empty when none of them is executable.
std::string FindWorkspaceProgram(const std::string& relative);

// A TCP port on 127.0.0.1 that was free a moment ago (bound, read, closed), drawn
// below the kernel's ephemeral range so that no outgoing connection takes it before
// a server binds it. 0 when no socket could be bound.
int FreeLoopbackPort();

// A listener on 127.0.0.1 that is not an actorflow server: it accepts every
// connection, writes `reply` and closes it. Stops (and joins) when destroyed.
class GarbageListener {
 public:
  explicit GarbageListener(std::string reply);
  ~GarbageListener();
  GarbageListener(const GarbageListener&) = delete;
  GarbageListener& operator=(const GarbageListener&) = delete;

  // 0 when the listener could not be set up.
  int port() const { return port_; }
  int connections() const { return connections_.load(); }

 private:
  void Serve();

  std::string reply_;
  int listen_fd_ = -1;
  int stop_pipe_[2] = {-1, -1};
  int port_ = 0;
  std::atomic<int> connections_{0};
  std::thread thread_;
};

// A socket listening on 127.0.0.1:port (no accept): holds a port taken.
class PortHolder {
 public:
  PortHolder();  // takes a free port
  ~PortHolder();
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// A named FIFO a child process writes to (one line per event, e.g. a node name) so
// that the test learns, without polling, that the child reached some point.
class SignalFifo {
 public:
  // Creates `path` as a FIFO and opens its reading end (non-blocking).
  explicit SignalFifo(std::string path);
  ~SignalFifo();
  bool ok() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }
  // Waits until a line equal to `text` arrived; false when `timeout` passed first.
  bool WaitFor(const std::string& text, std::chrono::milliseconds timeout);

 private:
  std::string path_;
  int fd_ = -1;
  int keep_open_fd_ = -1;  // our own writer, so poll() does not report HUP between writers
  std::string received_;
};

}  // namespace subprocess
}  // namespace actorflow

#endif  // ACTORFLOW_TESTS_CHILD_PROCESS_H_
