#!/usr/bin/python3
"""Chaos run of supervised between-graph training with real processes (tools/chaos.sh).

A cluster of 1 ps and 3 workers on 127.0.0.1 (free ports) trains the digits with
--mode async, the chief writing a coordinated checkpoint every --checkpoint-every
global steps, each task its own process started the way a user starts one:
`actorflow server --cluster FILE --job ps --task 0` and `actorflow train --cluster
FILE --job worker --task I ... --max-restarts --reconnect-timeout-ms`. This script is
their supervisor (what systemd or Kubernetes would be): a task that dies is started
again at once with the same command line. For --duration-s it SIGKILLs a random live
task (ps, chief or another worker, chosen with --seed) every --kill-every-s seconds;
then training runs to its end undisturbed. Killing stops early once a worker has
finished (a finished chief cannot restore a restarted ps any more).

Checks, each printed, then one summary line; the exit code is 1 when any failed:
  - every worker's last run exited 0 and no task ended in a way we did not cause;
    the ps stops with 0 on SIGTERM;
  - the global step never went backwards: in every run's progress lines, in each
    final result ("global_step_monotone"), and in the checkpoints' steps in the
    order they appeared;
  - every checkpoint (each one seen during the run is copied as it appears; those
    left on disk are checked in place) is readable: `actorflow predict` on it alone;
    no temporary or manifest-less file is left in the checkpoint directory;
  - the chief's final accuracy is within --tolerance of an undisturbed run with the
    same settings (run first, or --baseline-accuracy);
  - no process is left: none in the process groups of the tasks, none whose command
    line names the work directory.
Without --epochs, a short calibration run sizes training so that an undisturbed run
lasts about --duration-s.

Usage (from the repository root, after `bazel build //tools:actorflow`):
  tools/chaos.sh [--duration-s 180] [--kill-every-s 5] [--seed 1] [--epochs N]
                 [--baseline-accuracy X] [--tolerance 0.02] [--workdir DIR] [--keep]
"""
import argparse
import ctypes
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from free_ports import free_ports

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRESS = re.compile(r"^worker \d+: step \d+/\d+ .*global step (\d+)")
CHECKPOINT = re.compile(r"^ckpt-(\d+)\.json$")
_libc = ctypes.CDLL(None, use_errno=True)


def log(text):
    print(text, flush=True)


def die_with_parent():
    _libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: no child outlives this script


class Task:
    """One task of the cluster and every run (process) of it."""

    def __init__(self, name, kind, argv, logdir):
        self.name, self.kind, self.argv, self.logdir = name, kind, argv, logdir
        self.runs = []  # [{"proc", "out", "err", "killed"}]
        self.finished = False

    def start(self):
        n = len(self.runs)
        base = os.path.join(self.logdir, "%s.run%d" % (self.name.replace(":", ""), n))
        with open(base + ".out", "wb") as out, open(base + ".err", "wb") as err:
            proc = subprocess.Popen(self.argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                    start_new_session=True, preexec_fn=die_with_parent)
        self.runs.append({"proc": proc, "out": base + ".out", "err": base + ".err",
                          "killed": False})

    @property
    def proc(self):
        return self.runs[-1]["proc"]

    def alive(self):
        return self.runs and self.proc.poll() is None

    def kill(self):
        self.runs[-1]["killed"] = True
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class Cluster:
    def __init__(self, args, workdir, name):
        self.args, self.dir = args, os.path.join(workdir, name)
        self.logdir = os.path.join(self.dir, "logs")
        self.ckpt = os.path.join(self.dir, "checkpoints")
        os.makedirs(self.logdir)
        ports = free_ports(4)
        spec = {"ps": ["127.0.0.1:%d" % ports[0]],
                "worker": ["127.0.0.1:%d" % p for p in ports[1:]]}
        self.spec_path = os.path.join(self.dir, "cluster.json")
        with open(self.spec_path, "w") as f:
            json.dump(spec, f)
        exe = args.actorflow
        self.ps = Task("ps:0", "ps", [exe, "server", "--cluster", self.spec_path, "--job", "ps",
                                      "--task", "0"], self.logdir)
        self.workers = []
        for i in range(3):
            argv = [exe, "train", "--cluster", self.spec_path, "--job", "worker", "--task", str(i),
                    "--mode", "async", "--train", os.path.join(args.data, "digits_training.csv"),
                    "--test", os.path.join(args.data, "digits_test.csv"), "--normalize",
                    "--hidden", "64", "--optimizer", "sgd", "--lr", "0.1", "--batch", "32",
                    "--epochs", str(args.epochs), "--seed", str(args.seed),
                    "--timeout-ms", "60000", "--reconnect-timeout-ms", "60000",
                    "--max-restarts", "100000", "--json"]
            if i == 0:
                argv += ["--checkpoint-dir", self.ckpt,
                         "--checkpoint-every", str(args.checkpoint_every)]
            self.workers.append(Task("worker:%d" % i, "chief" if i == 0 else "worker", argv,
                                     self.logdir))
        self.tasks = [self.ps] + self.workers
        self.unexpected = []  # lines: task endings this script did not cause
        self.checkpoints = []  # steps, in the order they appeared
        self.archive = os.path.join(self.dir, "archive")
        os.makedirs(self.archive)
        self.pruned_before_copy = 0

    def wait_ps_ready(self, timeout_s=30):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.ps.alive():
            with open(self.ps.runs[-1]["out"]) as f:
                if "actorflow server ready:" in f.read():
                    return True
            time.sleep(0.05)
        return False

    def start(self):
        self.ps.start()
        if not self.wait_ps_ready():
            raise SystemExit("chaos: the ps task did not get ready; see " + self.logdir)
        for w in self.workers:
            w.start()

    def supervise(self, t0):
        """Reaps ended runs and starts a task again unless it finished."""
        for task in self.tasks:
            if not task.runs or task.finished or task.alive():
                continue
            run, code = task.runs[-1], task.proc.returncode
            if task.kind != "ps" and code == 0:
                task.finished = True
                log("%7.1f s  %s finished" % (time.monotonic() - t0, task.name))
                continue
            if not (run["killed"] and code == -signal.SIGKILL):
                with open(run["err"], errors="replace") as f:
                    tail = f.read().strip().splitlines()[-1:] or [""]
                self.unexpected.append("%s run %d ended with %s: %s" % (
                    task.name, len(task.runs) - 1, code, tail[0]))
                log("%7.1f s  UNEXPECTED: %s" % (time.monotonic() - t0, self.unexpected[-1]))
            task.start()
            log("%7.1f s  %s started again (run %d)" % (time.monotonic() - t0, task.name,
                                                       len(task.runs) - 1))

    def watch_checkpoints(self):
        """Records new checkpoints in order of appearance and copies each one away."""
        try:
            names = os.listdir(self.ckpt)
        except FileNotFoundError:
            return
        seen = set(self.checkpoints)
        for step in sorted(int(m.group(1)) for m in map(CHECKPOINT.match, names) if m):
            if step in seen:
                continue
            self.checkpoints.append(step)
            try:
                for f in ("model.json", "ckpt-%d.json" % step, "ckpt-%d.data" % step):
                    dest = os.path.join(self.archive, "ckpt-%d" % step, f)
                    os.makedirs(os.path.dirname(dest), exist_ok=True)
                    shutil.copyfile(os.path.join(self.ckpt, f), dest)
            except FileNotFoundError:  # pruned (max_to_keep) before it could be copied
                shutil.rmtree(os.path.join(self.archive, "ckpt-%d" % step), ignore_errors=True)
                self.pruned_before_copy += 1

    def stop_ps(self):
        if self.ps.alive():
            self.ps.proc.send_signal(signal.SIGTERM)
            try:
                self.ps.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.ps.kill()
                self.ps.proc.wait()
        return self.ps.proc.returncode

    def kill_all(self):
        for task in self.tasks:
            if task.alive():
                task.kill()
                task.proc.wait()

    def final_results(self):
        results = []
        for w in self.workers:
            with open(w.runs[-1]["out"]) as f:
                lines = f.read().strip().splitlines()
            try:
                results.append(json.loads(lines[-1]) if lines else None)
            except ValueError:
                results.append(None)
        return results


def run_cluster(args, workdir, name, chaos):
    """Trains on a fresh cluster; with `chaos`, kills tasks as described above."""
    cluster = Cluster(args, workdir, name)
    rng = random.Random(args.seed)
    kills = {"ps": 0, "chief": 0, "worker": 0}
    t0 = time.monotonic()
    try:
        cluster.start()
        next_kill = t0 + args.kill_every_s
        chaos_until = t0 + args.duration_s if chaos else t0
        deadline = t0 + args.finish_timeout_s + (args.duration_s if chaos else 0)
        while not all(w.finished for w in cluster.workers):
            now = time.monotonic()
            cluster.supervise(t0)
            cluster.watch_checkpoints()
            if now < chaos_until and any(w.finished for w in cluster.workers):
                log("%7.1f s  a worker finished: no more kills" % (now - t0))
                chaos_until = now
            if now < chaos_until and now >= next_kill:
                victim = rng.choice([t for t in cluster.tasks if t.alive()] or [None])
                if victim is not None:
                    victim.kill()
                    kills[victim.kind] += 1
                    log("%7.1f s  SIGKILL %s (pid %d)" % (now - t0, victim.name, victim.proc.pid))
                next_kill += args.kill_every_s
            if now > deadline:
                cluster.unexpected.append("training did not end within %.0f s" % (now - t0))
                break
            time.sleep(0.05)
        cluster.watch_checkpoints()
        chaos_seconds = min(time.monotonic(), chaos_until) - t0 if chaos else 0.0
        ps_code = cluster.stop_ps()
    finally:
        cluster.kill_all()
    return cluster, kills, time.monotonic() - t0, chaos_seconds, ps_code


def labels(data_dir):
    with open(os.path.join(data_dir, "digits_test.csv")) as f:
        return [int(line.rsplit(",", 1)[1]) for line in f.read().splitlines()[1:] if line]


def verify_checkpoint(args, files_dir, step, scratch, truth):
    """Accuracy of checkpoint `step` read alone by `actorflow predict`, or an error line."""
    alone = os.path.join(scratch, "verify-%d" % step)
    os.makedirs(alone)
    for f in ("model.json", "ckpt-%d.json" % step, "ckpt-%d.data" % step):
        shutil.copyfile(os.path.join(files_dir, f), os.path.join(alone, f))
    with open(os.path.join(alone, "latest"), "w") as f:
        f.write("ckpt-%d\n" % step)
    r = subprocess.run([args.actorflow, "predict", "--checkpoint-dir", alone, "--input",
                        os.path.join(args.data, "digits_test.csv"), "--json"],
                       capture_output=True, text=True, timeout=120)
    shutil.rmtree(alone)
    if r.returncode != 0 or r.stderr.strip():
        return None, "ckpt-%d: predict exited %d: %s" % (step, r.returncode, r.stderr.strip())
    predictions = json.loads(r.stdout)["predictions"]
    correct = sum(p["class"] == y for p, y in zip(predictions, truth))
    return correct / len(truth), None


def own_processes(clusters, workdir):
    """Processes still in a task's process group or naming the work directory."""
    groups = {run["proc"].pid for c in clusters for t in c.tasks for run in t.runs}
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/stat" % pid) as f:
                pgid = int(f.read().rsplit(")", 1)[1].split()[2])
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError, ValueError):
            continue
        if int(pid) != os.getpid() and (pgid in groups or workdir in cmdline):
            left.append("%s %s" % (pid, cmdline.strip()))
    return left


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--duration-s", type=float, default=180)
    p.add_argument("--kill-every-s", type=float, default=5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--epochs", type=int, default=0, help="0: sized to --duration-s")
    p.add_argument("--checkpoint-every", type=int, default=0, help="0: about every 2 s")
    p.add_argument("--baseline-accuracy", type=float, default=None)
    p.add_argument("--tolerance", type=float, default=0.02)
    p.add_argument("--finish-timeout-s", type=float, default=600)
    p.add_argument("--actorflow", default=os.environ.get(
        "ACTORFLOW", os.path.join(ROOT, "bazel-bin/tools/actorflow")))
    p.add_argument("--data", default=os.path.join(ROOT, "examples/data"))
    p.add_argument("--workdir", default="")
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    args = p.parse_args()
    if args.duration_s <= 0 or args.kill_every_s <= 0:
        p.error("--duration-s and --kill-every-s must be > 0")
    if not os.access(args.actorflow, os.X_OK):
        p.error("no actorflow binary at %s (bazel build //tools:actorflow, or --actorflow)"
                % args.actorflow)
    workdir = os.path.abspath(args.workdir or tempfile.mkdtemp(prefix="actorflow-chaos-"))
    os.makedirs(workdir, exist_ok=True)
    failures, clusters = [], []

    def check(ok, text):
        log("check %s: %s" % ("ok  " if ok else "FAIL", text))
        if not ok:
            failures.append(text)

    try:
        if args.epochs <= 0 or args.checkpoint_every <= 0:
            calibration = argparse.Namespace(**vars(args))
            calibration.epochs, calibration.checkpoint_every = 300, 1000000
            c, _, seconds, _, _ = run_cluster(calibration, workdir, "calibration", chaos=False)
            clusters.append(c)
            steps_per_s = 300 * 45 / seconds  # 1437 rows / 32 = 45 global steps per epoch
            if args.epochs <= 0:
                args.epochs = max(300, int(300 * args.duration_s / seconds))
            if args.checkpoint_every <= 0:
                args.checkpoint_every = max(100, int(round(2 * steps_per_s, -2)))
            log("calibration: %.0f global steps/s: --epochs %d --checkpoint-every %d"
                % (steps_per_s, args.epochs, args.checkpoint_every))
        baseline = args.baseline_accuracy
        if baseline is None:
            c, _, seconds, _, _ = run_cluster(args, workdir, "undisturbed", chaos=False)
            clusters.append(c)
            r = c.final_results()[0]
            check(r is not None and not c.unexpected, "undisturbed run ended well (%.1f s)%s"
                  % (seconds, "".join("; " + u for u in c.unexpected)))
            baseline = r["accuracy"] if r else float("nan")
            log("undisturbed: accuracy %.4f in %.1f s" % (baseline, seconds))

        log("chaos: %.0f s, a SIGKILL every %.1f s, seed %d" % (args.duration_s,
                                                              args.kill_every_s, args.seed))
        c, kills, seconds, chaos_seconds, ps_code = run_cluster(args, workdir, "chaos", chaos=True)
        clusters.append(c)
        results = c.final_results()
        check(all(w.finished for w in c.workers) and None not in results,
              "every worker's last run exited 0 with a result")
        check(not c.unexpected, "no task ended unexpectedly%s"
              % "".join("; " + u for u in c.unexpected))
        check(ps_code == 0, "the ps stopped with 0 on SIGTERM (got %s)" % ps_code)

        backwards = []
        for t in c.workers:
            for i, run in enumerate(t.runs):
                with open(run["err"], errors="replace") as f:
                    steps = [int(m.group(1)) for m in map(PROGRESS.match, f) if m]
                if any(b < a for a, b in zip(steps, steps[1:])):
                    backwards.append("%s run %d" % (t.name, i))
        backwards += ["%s result" % t.name for t, r in zip(c.workers, results)
                      if r and not r["recovery"]["global_step_monotone"]]
        if any(b <= a for a, b in zip(c.checkpoints, c.checkpoints[1:])):
            backwards.append("checkpoints %s" % c.checkpoints)
        check(not backwards, "global step monotone in every run, result and the %d checkpoints"
              "%s" % (len(c.checkpoints), "".join("; backwards: " + b for b in backwards)))

        truth = labels(args.data)
        on_disk = sorted(int(m.group(1)) for m in map(CHECKPOINT.match, os.listdir(c.ckpt)) if m)
        archived = [s for s in c.checkpoints if s not in on_disk and
                    os.path.isdir(os.path.join(c.archive, "ckpt-%d" % s))]
        errors, final_ckpt_accuracy = [], None
        for step in on_disk + archived:
            where = c.ckpt if step in on_disk else os.path.join(c.archive, "ckpt-%d" % step)
            acc, err = verify_checkpoint(args, where, step, workdir, truth)
            if err:
                errors.append(err)
            if step == on_disk[-1]:
                final_ckpt_accuracy = acc
        check(on_disk and not errors, "%d checkpoints readable (%d on disk, %d copied as they appeared, "
              "%d pruned before a copy)%s" % (len(on_disk) + len(archived), len(on_disk),
                                               len(archived), c.pruned_before_copy,
                                               "".join("; " + e for e in errors)))
        debris = [n for n in os.listdir(c.ckpt) if n.startswith(".") or
                  (n.endswith(".data") and n[:-5] + ".json" not in os.listdir(c.ckpt))]
        check(not debris, "checkpoint directory clean%s" % "".join("; " + d for d in debris))

        accuracy = results[0]["accuracy"] if results[0] else float("nan")
        check(abs(accuracy - baseline) <= args.tolerance,
              "final accuracy %.4f within %.3f of the undisturbed %.4f (latest checkpoint "
              "predicts %s)" % (accuracy, args.tolerance, baseline,
                                "%.4f" % final_ckpt_accuracy if final_ckpt_accuracy else "?"))
    finally:
        for cluster in clusters:
            cluster.kill_all()
        left = own_processes(clusters, workdir)
        for line in left:
            try:
                os.kill(int(line.split()[0]), signal.SIGKILL)
            except OSError:
                pass
        check(not left, "no process left behind%s" % "".join("; " + l for l in left))
        if not args.keep and not failures:
            shutil.rmtree(workdir, ignore_errors=True)
    if not clusters or clusters[-1].dir != os.path.join(workdir, "chaos"):
        return 1
    restarts = sum(len(t.runs) - 1 for t in c.tasks)
    steps = max((r["global_step"] for r in results if r), default=0)
    log("chaos %s: %.0f s of kills (%.0f s in all), %d kills survived (ps %d, chief %d, "
        "worker %d), %d restarts, global step %d, %d checkpoints, accuracy %.4f vs "
        "undisturbed %.4f%s" % ("PASS" if not failures else "FAIL", chaos_seconds, seconds,
                                sum(kills.values()), kills["ps"], kills["chief"],
                                kills["worker"], restarts, steps, len(c.checkpoints), accuracy,
                                baseline, "" if not failures else "; work dir " + workdir))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
