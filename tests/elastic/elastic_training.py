#!/usr/bin/python3
"""Elastic synchronous training with real processes on 127.0.0.1.

Scenario `join-and-kill` (the default): one ps server and a cluster file with three
worker slots; workers 0 and 1 start with --elastic --min-workers 2, worker 2 is
started once the training has made some steps, and worker 1 is killed (SIGKILL) once
worker 2 is a member; then worker 2 is killed too, the training pauses below
--min-workers and says so, and a new process for task 1 joins and lets it finish.
Checks the chief's --json: the training finished, its membership changes are the
joins and losses in order, test accuracy on the digits >= 0.95, no update averaged
fewer than 2 gradients, and no push waited longer than the step deadline.

Scenario `refusals`: a worker with another model, a second process claiming a live
task, and --elastic against a training that is not elastic are refused, naming the
culprit, while the training goes on.

Scenario `ps-failover`: two ps tasks and --ps-replicas 2; ps task 1 is killed while
two workers train. Both workers switch to the standby, neither restarts, the chief's
--json says ps_failovers 1, the global step in its progress never goes back, and the
accuracy is >= 0.9.

Scenario `ps-restore`: the same without standbys; the chief checkpoints every 50
global steps, and after ps task 1 dies its shard is replaced on ps task 0 and
restored from the last checkpoint while worker 1 waits; the --json counts the
updates lost, and the global step never goes back.

Scenario `kill-times`: the time from a worker's death to the next completed update,
measured N times (--kills N) from the chief's progress; prints min/median/max. With
--hang the worker is stopped (SIGSTOP) instead: its connection stays open, so only
the step deadline (--timeout-ms 3000) lets the version complete without it.

Every wait has a deadline; no sleep stands for synchronization.

Usage: elastic_training.py ACTORFLOW DATA_DIR [join-and-kill|ps-failover|ps-restore|
                           refusals|kill-times]
                           [--kills N] [--hang]
"""
import json
import os
import queue
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from free_ports import free_ports  # noqa: E402 (tools/free_ports.py)

DEADLINE_S = 120
STEP_TIMEOUT_MS = 3000


class Proc:
    """A child whose stderr (or stdout, or both merged: "both") lines are read with
    deadlines. A thread reads the watched stream into a queue, so that lines that
    arrive together are each seen at once (a select() on the pipe would miss those
    already buffered by an earlier readline)."""

    def __init__(self, args, name, stream="stderr"):
        self.name = name
        merged = subprocess.STDOUT if stream == "both" else subprocess.PIPE
        self.p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=merged,
                                  text=True, bufsize=1)
        self.watching_stderr = stream == "stderr"
        self.stream = self.p.stderr if self.watching_stderr else self.p.stdout
        self.lines = []
        self.queue = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.stream:
            self.queue.put(line)
        self.queue.put(None)  # the stream ended

    def wait_line(self, predicate, deadline_s, what):
        end = time.monotonic() + deadline_s
        while True:
            left = end - time.monotonic()
            if left <= 0:
                break
            try:
                line = self.queue.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                self.queue.put(None)  # later waits see the end too
                break
            self.lines.append(line.rstrip("\n"))
            if predicate(line):
                return line
        raise AssertionError(f"{self.name}: no line {what} within {deadline_s} s; last lines:\n" +
                             "\n".join(self.lines[-15:]))

    def finish(self, deadline_s):
        """Waits for the exit; returns (code, stdout, stderr), the watched stream's
        part being what no wait_line took."""
        other = self.p.stdout if self.watching_stderr else self.p.stderr
        other_text = []
        if other is not None:  # read beside the wait, so that a full pipe cannot block it
            drain = threading.Thread(target=lambda: other_text.append(other.read()), daemon=True)
            drain.start()
        self.p.wait(timeout=deadline_s)
        if other is not None:
            drain.join(timeout=deadline_s)
        other_text = "".join(other_text)
        self.reader.join(timeout=deadline_s)
        rest = []
        while True:
            try:
                line = self.queue.get_nowait()
            except queue.Empty:
                break
            if line is None:
                self.queue.put(None)
                break
            rest.append(line)
        watched_text = "".join(rest)
        self.lines.extend(watched_text.splitlines())
        if self.watching_stderr:
            return self.p.returncode, other_text, watched_text
        return self.p.returncode, watched_text, other_text

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(timeout=10)


def global_step_of(line):
    if "global step " not in line:
        return -1
    return int(line.split("global step ")[1].split(",")[0].split()[0])


class Cluster:
    def __init__(self, actorflow, data, slots=3, ps_tasks=1):
        self.actorflow = actorflow
        self.data = data
        self.dir = tempfile.mkdtemp(prefix="elastic_", dir=os.environ.get("TEST_TMPDIR"))
        ports = free_ports(ps_tasks + slots)
        self.file = os.path.join(self.dir, "cluster.json")
        with open(self.file, "w") as f:
            json.dump({"ps": [f"127.0.0.1:{p}" for p in ports[:ps_tasks]],
                       "worker": [f"127.0.0.1:{p}" for p in ports[ps_tasks:]]}, f)
        self.procs = []
        self.ps = []
        for task in range(ps_tasks):
            ps = self.spawn([actorflow, "server", "--cluster", self.file, "--job", "ps", "--task",
                             str(task)], f"ps:{task}", stream="stdout")
            ps.wait_line(lambda l: "ready" in l, 30, "saying the server is ready")
            self.ps.append(ps)

    def spawn(self, args, name, stream="stderr"):
        proc = Proc(args, name, stream)
        self.procs.append(proc)
        return proc

    def worker(self, task, epochs, hidden="64", extra=()):
        args = [self.actorflow, "train", "--cluster", self.file, "--job", "worker", "--task",
                str(task), "--elastic", "--json",
                "--train", os.path.join(self.data, "digits_training.csv"),
                "--test", os.path.join(self.data, "digits_test.csv"), "--normalize",
                "--hidden", hidden, "--optimizer", "adam", "--lr", "0.01", "--batch", "32",
                "--epochs", str(epochs), "--timeout-ms", str(STEP_TIMEOUT_MS)] + list(extra)
        return self.spawn(args, f"worker:{task}")

    def close(self):
        for proc in self.procs:
            proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def join_and_kill(actorflow, data):
    cluster = Cluster(actorflow, data)
    try:
        min_two = ("--min-workers", "2")
        chief = cluster.worker(0, epochs=200, extra=min_two)
        one = cluster.worker(1, epochs=200, extra=min_two)
        chief.wait_line(lambda l: global_step_of(l) >= 100, DEADLINE_S, "past global step 100")
        two = cluster.worker(2, epochs=200, extra=min_two)
        chief.wait_line(lambda l: "members [0,1,2]" in l, DEADLINE_S, "with worker 2 a member")
        one.kill()
        line = chief.wait_line(lambda l: "members [0,2]" in l, DEADLINE_S,
                               "after worker 1's loss")
        print("after the kill:", line.strip())
        assert "gone: /job:worker/task:1" in line, line  # the loss names the task
        # Below --min-workers 2 the training pauses, says so, and goes on when a
        # worker (task 1 again, a new process) joins.
        two.kill()
        line = chief.wait_line(lambda l: "training paused" in l, DEADLINE_S, "saying it paused")
        print("paused:", line.strip())
        again = cluster.worker(1, epochs=200, extra=min_two)
        chief.wait_line(lambda l: "members [0,1]" in l, DEADLINE_S, "with task 1 back")
        code, out, err = chief.finish(DEADLINE_S)
        assert code == 0, f"chief exited {code}: {err[-2000:]}"
        result = json.loads(out.strip().splitlines()[-1])
        print(json.dumps(result))
        events = [(c["event"], c["worker"]) for c in result["membership_changes"]]
        # A worker that finished first may have left before the chief read the stats.
        while events and events[-1] == ("leave", 1):
            events.pop()
        assert events == [("join", 0), ("join", 1), ("join", 2), ("lost", 1), ("lost", 2),
                          ("join", 1)], events
        steps = [c["global_step"] for c in result["membership_changes"]]
        assert steps == sorted(steps), steps
        assert result["accuracy"] >= 0.95, result["accuracy"]
        assert result["elastic"] is True
        # Whether an update averaged all three depends on how soon worker 1 dies after
        # worker 2 joined; that none averaged fewer than --min-workers does not.
        assert result["updates_by_aggregated"][1] == 0, "an update averaged 1 < min_workers"
        assert sum(result["updates_by_aggregated"]) == result["updates_applied"], result
        code, out_again, _ = again.finish(DEADLINE_S)
        assert code == 0, f"the rejoined worker exited {code}"
        reports = result["worker_reports"] + json.loads(out_again.strip().splitlines()[-1])[
            "worker_reports"]
        # A paused push waits out the step deadline once, then pulls afresh: no push
        # waits longer than the deadline (plus the client's 250 ms grace and the reply's
        # way back on a loaded machine).
        for r in reports:
            assert r["longest_push_seconds"] <= STEP_TIMEOUT_MS / 1000.0 + 1.0, r
        print("PASS join-and-kill: membership", events, "accuracy", result["accuracy"])
    finally:
        cluster.close()


def ps_failover(actorflow, data):
    cluster = Cluster(actorflow, data, slots=2, ps_tasks=2)
    try:
        replicas = ("--ps-replicas", "2")
        chief = cluster.worker(0, epochs=200, extra=replicas)
        one = cluster.worker(1, epochs=200, extra=replicas)
        chief.wait_line(lambda l: global_step_of(l) >= 200, DEADLINE_S, "past global step 200")
        # ps task 1 holds shard 1 (its standby is on task 0) and shard 0's standby.
        killed_at = time.monotonic()
        cluster.ps[1].kill()
        line = chief.wait_line(lambda l: "failed over" in l, DEADLINE_S, "about the failover")
        print(f"ps task killed -> worker 0 going on: {(time.monotonic() - killed_at) * 1000:.1f} ms:",
              line.strip())
        code, out, err = chief.finish(DEADLINE_S)
        assert code == 0, f"chief exited {code}: {err[-2000:]}"
        result = json.loads(out.strip().splitlines()[-1])
        print(json.dumps(result))
        assert result["ps_failovers"] == 1, result
        assert "failed over 1 parameter shard(s) to their standbys" in line, line
        assert result["accuracy"] >= 0.9, result["accuracy"]
        steps = [global_step_of(l) for l in chief.lines if global_step_of(l) >= 0]
        assert steps == sorted(steps), f"global step went back: {steps}"
        code, out1, err1 = one.finish(DEADLINE_S)
        assert code == 0, f"worker 1 exited {code}: {err1[-1000:]}"
        assert json.loads(out1.strip().splitlines()[-1])["ps_failovers"] == 1
        print(f"PASS ps-failover: ps_failovers 1, updates lost {result['updates_lost']}, "
              f"accuracy {result['accuracy']}")
    finally:
        cluster.close()


def ps_restore(actorflow, data):
    cluster = Cluster(actorflow, data, slots=2, ps_tasks=2)
    try:
        ckpt = os.path.join(cluster.dir, "ckpt")
        chief = cluster.worker(0, epochs=200, extra=("--checkpoint-dir", ckpt,
                                                     "--checkpoint-every", "50"))
        one = cluster.worker(1, epochs=200)
        chief.wait_line(lambda l: global_step_of(l) >= 200, DEADLINE_S, "past global step 200")
        killed_at = time.monotonic()
        cluster.ps[1].kill()  # no standbys: its shard comes back from a checkpoint
        line = chief.wait_line(lambda l: "failed over" in l, DEADLINE_S, "about the restore")
        print(f"ps task killed -> restored: {(time.monotonic() - killed_at) * 1000:.1f} ms:",
              line.strip())
        assert "replaced 1, restored from " in line, line
        code, out, err = chief.finish(DEADLINE_S)
        assert code == 0, f"chief exited {code}: {err[-2000:]}"
        result = json.loads(out.strip().splitlines()[-1])
        print(json.dumps(result))
        assert result["ps_failovers"] == 1, result
        # The versions since the last checkpoint (none when the kill came right after one).
        assert result["updates_lost"] >= 0, result
        assert result["accuracy"] >= 0.9, result["accuracy"]
        steps = [global_step_of(l) for l in chief.lines if global_step_of(l) >= 0]
        assert steps == sorted(steps), f"global step went back: {steps}"
        code, _, err1 = one.finish(DEADLINE_S)
        assert code == 0, f"worker 1 exited {code}: {err1[-1000:]}"
        print(f"PASS ps-restore: updates lost {result['updates_lost']}, "
              f"accuracy {result['accuracy']}")
    finally:
        cluster.close()


def refusals(actorflow, data):
    cluster = Cluster(actorflow, data)
    try:
        chief = cluster.worker(0, epochs=400)
        chief.wait_line(lambda l: global_step_of(l) >= 50, DEADLINE_S, "past global step 50")
        other_model = cluster.worker(1, epochs=5, hidden="32")
        code, _, err = other_model.finish(DEADLINE_S)
        assert code != 0 and "must join with the same model" in err, err[-1000:]
        assert "'dnn/hiddenlayer_0/kernel'" in err or "variable '" in err, err[-1000:]
        twin = cluster.worker(0, epochs=5)
        code, _, err = twin.finish(DEADLINE_S)
        assert code != 0 and "second process claiming task 0" in err, err[-1000:]
        code, out, err = chief.finish(DEADLINE_S)
        assert code == 0, err[-1000:]
        result = json.loads(out.strip().splitlines()[-1])
        assert [c["worker"] for c in result["membership_changes"]] == [0], result
        # --elastic against a training that is not elastic.
        plain = Cluster(actorflow, data, slots=2)
        cluster.procs += plain.procs
        args = [actorflow, "train", "--cluster", plain.file, "--job", "worker", "--task", "0",
                "--mode", "sync", "--replicas-to-aggregate", "1", "--json",
                "--train", os.path.join(data, "digits_training.csv"),
                "--test", os.path.join(data, "digits_test.csv"), "--normalize", "--epochs", "400",
                "--timeout-ms", "3000"]
        fixed = plain.spawn(args, "fixed:0")
        fixed.wait_line(lambda l: "global step" in l, DEADLINE_S, "with a global step")
        joiner = Proc([actorflow, "train", "--cluster", plain.file, "--job", "worker", "--task",
                       "1", "--elastic", "--train", os.path.join(data, "digits_training.csv"),
                       "--test", os.path.join(data, "digits_test.csv"), "--normalize",
                       "--timeout-ms", "3000"], "elastic joiner")
        code, _, err = joiner.finish(DEADLINE_S)
        assert code != 0 and "not elastic" in err, err[-1000:]
        print("PASS refusals:", err.strip().splitlines()[-1])
    finally:
        cluster.close()


def kill_times(actorflow, data, kills, hang=False):
    times = []
    cluster = Cluster(actorflow, data)
    try:
        chief = cluster.worker(0, epochs=5000)
        chief.wait_line(lambda l: "members [0]" in l or "global step" in l, DEADLINE_S, "started")
        for k in range(kills):
            victim = cluster.worker(1, epochs=5000)
            chief.wait_line(lambda l: "members [0,1]" in l, DEADLINE_S, "with worker 1 a member")
            before = global_step_of(chief.lines[-1])
            killed_at = time.monotonic()
            if hang:  # stopped, not dead: only the step deadline frees the version
                victim.p.send_signal(signal.SIGSTOP)
            else:
                victim.kill()
            # The first line after the loss names the shrunk membership and comes with
            # the next completed update.
            chief.wait_line(lambda l: "members [0]" in l and global_step_of(l) > before,
                            DEADLINE_S, "after the kill")
            times.append((time.monotonic() - killed_at) * 1000.0)
            victim.kill()
        what = "hang (SIGSTOP)" if hang else "death"
        print(f"{what} -> next completed update, {kills} kills (ms): min {min(times):.1f} / "
              f"median {statistics.median(times):.1f} / max {max(times):.1f}")
    finally:
        cluster.close()


def main(argv):
    actorflow, data = argv[1], argv[2]
    scenario = argv[3] if len(argv) > 3 else "join-and-kill"
    kills = int(argv[argv.index("--kills") + 1]) if "--kills" in argv else 10
    if scenario == "join-and-kill":
        join_and_kill(actorflow, data)
    elif scenario == "ps-failover":
        ps_failover(actorflow, data)
    elif scenario == "ps-restore":
        ps_restore(actorflow, data)
    elif scenario == "refusals":
        refusals(actorflow, data)
    elif scenario == "kill-times":
        kill_times(actorflow, data, kills, hang="--hang" in argv)
    else:
        sys.exit(f"unknown scenario {scenario}")


if __name__ == "__main__":
    main(sys.argv)
