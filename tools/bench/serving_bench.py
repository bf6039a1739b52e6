#!/usr/bin/env python3
"""Serving throughput of `actorflow serve` beside its peer, in one run.

The peer (../shared/peers/serve_peer.py) is the usual small-model deployment: PyTorch
MLPs behind Flask under gunicorn (2 worker processes, 1 torch thread each), speaking
TensorFlow Serving's REST shapes. This script exports the same architectures as
actorflow servables (random weights, fixed seed: the work per request is what
matters), serves them with `actorflow serve`, and loads both servers with the peers'
serve_load.sh (wrk), so that every figure comes from the same load generator.

Rows:
  ours vs peer, interleaved in every round (ours, peer, ours, peer, ...):
    iris 4-10-10-3 and mnist 784-256-256-10, 1 and 32 instances per request, 16 conns
  ours only, each configuration on a server of its own, alternating in every round:
    mnist 1 instance, 64 conns: --enable-batching (max batch 32, 500 us) / no batching
    mnist 32 instances, 16 conns: --devices cpu=2 / cpu=1 (OPENBLAS_NUM_THREADS=1)
    iris under load while version 2 is exported next to version 1
    (--file-system-poll-wait-seconds 1): failed requests during the swap
Ratios are taken per round (paired) and given as min / median / max over rounds; a
target is judged on the median (the swap on every round).

The machine is shared: every load also records the foreign CPU load during it (cores
busy in /proc/stat minus the CPU time of the server's process group, of the load
generator and of this script, per wall second), and a load whose foreign load
exceeded --max-foreign cores is retaken (--tries in all; the quietest is kept). The
tables give the median foreign load and the number of retakes, so noise stays visible.

Usage (from the repository root, after `bazel build //tools:actorflow`):
  tools/bench/serving_bench.py [--bin bazel-bin/tools/actorflow] [--rounds 3]
                               [--seconds 10] [--quick] [--versus-only] [--json FILE]
                               [--peers ../shared/peers] [--out DIR]
  --quick      one round of 3-second loads
  --versus-only  only the rows of ours vs the peer (tools/bench/run_all.py runs these)
  --json FILE  also write the rows as a list of {"name", "unit", "min", "median",
               "max", "target", "met"} objects (plus "direction" and the raw figures)
Needs wrk (tools/setup.sh installs it) and, for the peer, Debian's /usr/bin/python3 with
  apt-get install -y python3-torch python3-flask gunicorn
"""
import argparse
import json
import os
import random
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

PYTHON = "/usr/bin/python3"
# The peer's models and ours: name -> layer widths.
MODELS = {"iris": [4, 10, 10, 3], "mnist": [784, 256, 256, 10]}
SEEDS = {"iris": 1, "mnist": 2}
SERVER_START_DEADLINE_S = 60.0
STOP_DEADLINE_S = 10.0


def parse_args():
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(repo, "bazel-bin", "tools", "actorflow"),
                    help="the actorflow binary (default: bazel-bin/tools/actorflow)")
    ap.add_argument("--rounds", type=int, default=None, help="rounds (default 3; --quick: 1)")
    ap.add_argument("--seconds", type=int, default=None,
                    help="seconds per load (default 10; --quick: 3)")
    ap.add_argument("--quick", action="store_true", help="one round of 3-second loads")
    ap.add_argument("--versus-only", action="store_true",
                    help="only ours vs the peer (no configurations of ours alone, no swap)")
    ap.add_argument("--json", metavar="FILE", help="write the rows as a JSON list to FILE")
    ap.add_argument("--peers", metavar="DIR", default=os.path.join(repo, "..", "shared", "peers"),
                    help="folder of serve_peer.py and serve_load.sh (default ../shared/peers)")
    ap.add_argument("--max-foreign", type=float, default=0.25, metavar="CORES",
                    help="retake a load when other processes used more CPU (default 0.25)")
    ap.add_argument("--tries", type=int, default=3,
                    help="loads per figure at most, retakes included (default 3)")
    ap.add_argument("--out", metavar="DIR", help="models, logs and raw outputs (default: a new "
                    "folder under /tmp)")
    args = ap.parse_args()
    if args.rounds is None:
        args.rounds = 1 if args.quick else 3
    if args.seconds is None:
        args.seconds = 3 if args.quick else 10
    if args.rounds < 1 or args.seconds < 1 or args.tries < 1:
        ap.error("--rounds, --seconds and --tries must be at least 1")
    args.peers = os.path.abspath(args.peers)
    args.out = args.out or tempfile.mkdtemp(prefix="serving_bench-")
    os.makedirs(args.out, exist_ok=True)
    return args


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def check_prerequisites(args):
    for name in ("serve_peer.py", "serve_load.sh"):
        if not os.path.isfile(os.path.join(args.peers, name)):
            sys.exit(f"serving_bench: no {name} in {args.peers} (use --peers DIR)")
    if not shutil.which("wrk"):
        sys.exit("serving_bench: wrk is not installed (tools/setup.sh, or apt-get install -y wrk)")
    probe = subprocess.run([PYTHON, "-c", "import torch, flask, gunicorn"], capture_output=True)
    if probe.returncode != 0:
        sys.exit(f"serving_bench: {PYTHON} lacks torch, flask or gunicorn: "
                 "apt-get install -y python3-torch python3-flask gunicorn")
    if not os.access(args.bin, os.X_OK):
        sys.exit(f"serving_bench: no executable actorflow at {args.bin} "
                 "(bazel build //tools:actorflow, or --bin PATH)")


# ---------------------------------------------------------------------------
# Models.

def mlp_graph(sizes, seed):
    """Graph JSON of an MLP: Placeholder "x" float32 [-1, W], MatMul + BiasAdd per layer,
    Relu between layers, Softmax "probs" at the end. Weights are Consts drawn like
    torch.nn.Linear's default (uniform in +-1/sqrt(fan_in)) from a seeded generator."""
    rng = random.Random(seed)
    nodes = [{"name": "x", "op": "Placeholder",
              "attrs": {"dtype": "float32", "shape": [-1, sizes[0]]}}]
    prev = "x"
    for i in range(len(sizes) - 1):
        fan_in, fan_out = sizes[i], sizes[i + 1]
        bound = fan_in ** -0.5

        def const(name, shape, count):
            data = [round(rng.uniform(-bound, bound), 6) for _ in range(count)]
            nodes.append({"name": name, "op": "Const",
                          "attrs": {"value": {"dtype": "float32", "shape": shape, "data": data}}})

        const(f"w{i}", [fan_in, fan_out], fan_in * fan_out)
        const(f"b{i}", [fan_out], fan_out)
        nodes.append({"name": f"matmul{i}", "op": "MatMul", "inputs": [prev, f"w{i}"]})
        nodes.append({"name": f"logits{i}", "op": "BiasAdd", "inputs": [f"matmul{i}", f"b{i}"]})
        prev = f"logits{i}"
        if i < len(sizes) - 2:
            nodes.append({"name": f"relu{i}", "op": "Relu", "inputs": [prev]})
            prev = f"relu{i}"
    nodes.append({"name": "probs", "op": "Softmax", "inputs": [prev]})
    return {"format": "actorflow.graph/1", "nodes": nodes}


def export(args, name, base, version, seed):
    """Writes the graph of model `name` and exports it as BASE/<version>."""
    graph = os.path.join(args.out, f"{name}-seed{seed}.json")
    if not os.path.exists(graph):
        with open(graph, "w") as f:
            json.dump(mlp_graph(MODELS[name], seed), f)
    cmd = [args.bin, "export", "--graph", graph, "--input", "x=x", "--output", "y=probs",
           "--model-base-path", base, "--version", str(version)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        sys.exit(f"serving_bench: {' '.join(cmd)} exited {done.returncode}:\n{done.stderr}")


# ---------------------------------------------------------------------------
# HTTP.

def http_json(url, body=None, timeout=5.0):
    """GET (body None) or POST JSON; returns (status, parsed body or text); status is
    None when no answer came (refused, reset, timed out)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status, text = resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode(errors="replace")
    except OSError as e:  # URLError, connection reset, socket timeout
        return None, str(e)
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def version_states(base_url, model):
    status, body = http_json(f"{base_url}/v1/models/{model}", timeout=2.0)
    if status != 200 or not isinstance(body, dict):
        return {}
    return {int(v["version"]): v["state"] for v in body.get("model_version_status", [])}


def check_predict(base_url, model):
    """One predict of two rows; SystemExit unless both rows are probabilities."""
    width = MODELS[model][0]
    rows = [[round(0.1 * ((i + j) % 10), 1) for j in range(width)] for i in range(2)]
    status, body = http_json(f"{base_url}/v1/models/{model}:predict", {"instances": rows})
    preds = body.get("predictions") if isinstance(body, dict) else None
    ok = (status == 200 and isinstance(preds, list) and len(preds) == 2 and
          all(len(p) == MODELS[model][-1] and abs(sum(p) - 1.0) < 1e-4 for p in preds))
    if not ok:
        sys.exit(f"serving_bench: predict on {base_url} {model} gave {status}: {str(body)[:500]}")
    return preds


def server_answers(server, model):
    """What our server says it answered to predicts of `model` so far, from its
    Prometheus metrics: {"codes": {HTTP code: count}, "over_1s": answers slower than 1 s};
    None for a server without them (the peer) or when they cannot be read."""
    if not server.has_metrics:
        return None
    req = urllib.request.Request(f"{server.url}/monitoring/prometheus/metrics")
    try:
        with urllib.request.urlopen(req, timeout=5.0) as resp:
            text = resp.read().decode()
    except OSError:
        return None
    codes, within_1s, total = {}, 0, 0
    for line in text.splitlines():
        if f'model="{model}"' not in line or 'api="predict"' not in line:
            continue
        value = float(line.rsplit(" ", 1)[1])
        if line.startswith("actorflow_serving_requests_total{"):
            code = re.search(r'code="(\d+)"', line).group(1)
            codes[code] = codes.get(code, 0) + value
        elif line.startswith("actorflow_serving_request_latency_seconds_bucket{"):
            if 'le="1"' in line:
                within_1s = value
            elif 'le="+Inf"' in line:
                total = value
    return {"codes": codes, "over_1s": total - within_1s}


def answers_between(before, after):
    if before is None or after is None:
        return None
    codes = {c: n - before["codes"].get(c, 0) for c, n in after["codes"].items()
             if n - before["codes"].get(c, 0)}
    return {"codes": codes, "over_1s": after["over_1s"] - before["over_1s"]}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------
# Servers.

class Server:
    """A server process in a process group of its own (gunicorn forks workers), its
    output in a log file. stop() ends the whole group: SIGTERM, then SIGKILL."""

    def __init__(self, label, cmd, port, model, logfile, env=None, has_metrics=True):
        self.label, self.cmd, self.port, self.model = label, cmd, port, model
        self.logfile, self.env, self.has_metrics = logfile, env, has_metrics
        self.url = f"http://127.0.0.1:{port}"
        self.proc = None

    def start(self):
        log(f"  start {self.label}: {' '.join(self.cmd)}")
        out = open(self.logfile, "a")
        self.proc = subprocess.Popen(self.cmd, stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=self.env,
                                     start_new_session=True)
        out.close()
        deadline = time.monotonic() + SERVER_START_DEADLINE_S
        while time.monotonic() < deadline:
            try:
                self.check_alive()
            except ServerDied as e:
                self.proc = None
                sys.exit(f"serving_bench: {e}")
            if "AVAILABLE" in version_states(self.url, self.model).values():
                return self
            time.sleep(0.1)
        self.stop()
        sys.exit(f"serving_bench: {self.label} did not serve {self.model} within "
                 f"{SERVER_START_DEADLINE_S:.0f} s (log: {self.logfile})")

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def check_alive(self):
        if self.proc is not None and self.proc.poll() is not None:
            tail = open(self.logfile).read()[-2000:]
            raise ServerDied(f"{self.label} exited with {self.proc.returncode} "
                             f"(log: {self.logfile}):\n{tail}")

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=STOP_DEADLINE_S)
            except subprocess.TimeoutExpired:
                log(f"  {self.label} ignored SIGTERM for {STOP_DEADLINE_S:.0f} s: SIGKILL")
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=STOP_DEADLINE_S)
            except ProcessLookupError:
                pass
        self.proc = None


class ServerDied(Exception):
    pass


def ours(args, label, serve_flags, model, env_extra=None):
    port = free_port()
    env = dict(os.environ, **(env_extra or {}))
    cmd = [args.bin, "serve", "--rest-api-host", "127.0.0.1", "--rest-api-port", str(port)]
    cmd += serve_flags
    return Server(label, cmd, port, model, os.path.join(args.out, f"{label}.log"), env)


def peer(args):
    port = free_port()
    cmd = [PYTHON, "-m", "gunicorn", "-w", "2", "-b", f"127.0.0.1:{port}", "--chdir", args.peers,
           "serve_peer:app"]
    return Server("peer", cmd, port, "iris", os.path.join(args.out, "peer.log"),
                  has_metrics=False)


# ---------------------------------------------------------------------------
# Foreign CPU load.

HZ = os.sysconf("SC_CLK_TCK")


def busy_seconds():
    """CPU seconds the whole machine has been busy (user nice system irq softirq steal)."""
    v = [int(x) for x in open("/proc/stat").readline().split()[1:9]]
    return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / HZ


def group_cpu_seconds(pgid):
    """CPU seconds of the live processes of process group `pgid`, their reaped children
    included."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            text = open(f"/proc/{pid}/stat").read()
        except OSError:
            continue  # exited meanwhile
        fields = text[text.rfind(")") + 2:].split()
        if int(fields[2]) == pgid:
            total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    return total / HZ


def children_cpu_seconds():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


class Window:
    """Measures the foreign CPU load (cores) while a load runs against `server`:
    everything busy except the server's group, reaped children (the load generator,
    exports) and this process."""

    def __init__(self, server):
        self.pgid = server.proc.pid

    def _sample(self):
        return (time.monotonic(), busy_seconds(), group_cpu_seconds(self.pgid),
                children_cpu_seconds(), time.process_time())

    def __enter__(self):
        self.start = self._sample()
        return self

    def __exit__(self, *exc):
        self.end = self._sample()

    def foreign(self):
        d = [b - a for a, b in zip(self.start, self.end)]
        return max(0.0, (d[1] - d[2] - d[3] - d[4]) / d[0]) if d[0] > 0 else 0.0


# ---------------------------------------------------------------------------
# Load.

def load(args, server, model, instances, conns, seconds=None):
    """Starts serve_load.sh against `server`; returns the Popen (stdout piped)."""
    seconds = seconds or args.seconds
    url = f"{server.url}/v1/models/{model}:predict"
    cmd = ["sh", os.path.join(args.peers, "serve_load.sh"), url, str(MODELS[model][0]),
           str(instances), str(conns), str(seconds)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish_load(args, proc, seconds=None):
    """Waits for serve_load.sh (deadline: its seconds plus a margin); returns its figures
    {requests_per_s, p50_ms, p90_ms, p99_ms, errors, non2xx} or None."""
    seconds = seconds or args.seconds
    try:
        out, _ = proc.communicate(timeout=seconds + 60)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        log(f"  serve_load.sh ran past its deadline:\n{out}")
        return None
    with open(os.path.join(args.out, "loads.txt"), "a") as f:
        f.write(out)
    line = next((l for l in out.splitlines() if "requests_per_s=" in l), None)
    if proc.returncode != 0 or line is None:
        log(f"  serve_load.sh exited {proc.returncode} without a RESULT:\n{out}")
        return None
    fig = {}
    for key in ("requests_per_s", "p50_ms", "p90_ms", "p99_ms", "errors", "non2xx"):
        m = re.search(rf"\b{key}=([\d.]+)", line)
        fig[key] = float(m.group(1)) if m else None
    return fig


def measure(args, server, model, instances, conns):
    """One figure of a running server: a load, retaken (at most --tries loads in all)
    while the foreign CPU load exceeded --max-foreign; the quietest load is kept, with
    "foreign" (cores), "retakes" and, for our server, "server" (what it answered during
    the load, from its metrics: wrk's errors are on the connection level, so this tells
    whether the server answered the requests wrk lost) added. A server found dead after a load is reported
    and restarted, so that one crash costs one figure, not the run; such a figure has
    "crashed" set and is kept whatever its foreign load."""
    best = None
    for attempt in range(args.tries):
        before = server_answers(server, model)
        with Window(server) as w:
            fig = finish_load(args, load(args, server, model, instances, conns))
        after = server_answers(server, model)
        crashed = False
        try:
            server.check_alive()
        except ServerDied as e:
            log(f"  !! {e}")
            crashed = True
            server.proc = None
            server.start()
        if fig is None:
            continue
        fig.update(crashed=crashed, foreign=w.foreign(), server=answers_between(before, after))
        log(f"    {server.label:18s} {model} n={instances} c={conns}: "
            f"{fig['requests_per_s']:.0f} req/s p50 {fig['p50_ms']:.2f} ms p99 {fig['p99_ms']:.2f} ms"
            f" errors {fig['errors']:.0f} non2xx {fig['non2xx']:.0f} foreign {fig['foreign']:.2f}"
            + (" CRASHED" if crashed else ""))
        if fig["server"] and (fig["errors"] or fig["non2xx"] or fig["server"]["over_1s"]):
            log(f"      the server answered {fig['server']['codes']} "
                f"({fig['server']['over_1s']:.0f} slower than 1 s)")
        if best is None or crashed or fig["foreign"] < best["foreign"]:
            best = fig
        if crashed or fig["foreign"] <= args.max_foreign:
            break
    if best is not None:
        best["retakes"] = attempt
    return best


# ---------------------------------------------------------------------------
# Scenarios.

VERSUS = [("iris 1 instance 16 conns", "iris", 1, 16),
          ("iris 32 instances 16 conns", "iris", 32, 16),
          ("mnist 1 instance 16 conns", "mnist", 1, 16),
          ("mnist 32 instances 16 conns", "mnist", 32, 16)]

# (name, label A, flags A, env A, label B, flags B, env B, model, instances, conns); the
# row's figure is A's req/s ÷ B's.
ONE_BLAS = {"OPENBLAS_NUM_THREADS": "1"}
PAIRS = [
    ("mnist 1 instance 64 conns, batching ÷ no batching",
     "ours-batching", ["--enable-batching", "--max-batch-size", "32",
                       "--batch-timeout-micros", "500"], None,
     "ours-no-batching", [], None, "mnist", 1, 64),
    ("mnist 32 instances 16 conns, --devices cpu=2 ÷ cpu=1 (OPENBLAS_NUM_THREADS=1)",
     "ours-cpu2", ["--devices", "cpu=2"], ONE_BLAS,
     "ours-cpu1", ["--devices", "cpu=1"], ONE_BLAS, "mnist", 32, 16),
]


def run_versus(args, config_file, rounds):
    """Ours and the peer, both running; every scenario ours then peer in each round."""
    a = ours(args, "ours", ["--model-config-file", config_file], "iris")
    p = peer(args)
    try:
        a.start()
        p.start()
        for model in MODELS:
            check_predict(a.url, model)
            check_predict(p.url, model)
        for r in range(rounds):
            log(f"round {r + 1}/{rounds}, ours vs peer (load average "
                f"{open('/proc/loadavg').read().split()[0]})")
            for name, model, n, c in VERSUS:
                figs = {}
                for side, server in (("ours", a), ("peer", p)):
                    figs[side] = measure(args, server, model, n, c)
                yield name, figs
    finally:
        a.stop()
        p.stop()


def run_pairs(args, bases, rounds):
    """Ours only: each configuration on its own server, started for its load."""
    for r in range(rounds):
        log(f"round {r + 1}/{rounds}, ours only")
        for name, la, fa, ea, lb, fb, eb, model, n, c in PAIRS:
            figs = {}
            for side, label, flags, env in (("a", la, fa, ea), ("b", lb, fb, eb)):
                server = ours(args, label, ["--model-name", model, "--model-base-path",
                                            bases[model]] + flags, model, env)
                try:
                    server.start()
                    check_predict(server.url, model)
                    figs[side] = measure(args, server, model, n, c)
                finally:
                    server.stop()
            yield name, figs


def run_swap(args, r):
    """Iris under load while version 2 appears beside version 1: the load's figures,
    the states afterwards, and whether unversioned predicts now answer from version 2."""
    base = os.path.join(args.out, f"swap-{r}", "iris")
    export(args, "iris", base, 1, SEEDS["iris"])
    server = ours(args, "ours-swap", ["--model-name", "iris", "--model-base-path", base,
                                      "--file-system-poll-wait-seconds", "1"], "iris")
    try:
        server.start()
        before = check_predict(server.url, "iris")
        answers0 = server_answers(server, "iris")
        with Window(server) as w:
            proc = load(args, server, "iris", 1, 16)
            # Export a couple of seconds in (earlier for short loads), so that the load
            # brackets the poll that finds version 2, its load and the switch.
            time.sleep(min(2.0, args.seconds / 3))
            export(args, "iris", base, 2, SEEDS["iris"] + 100)
            fig = finish_load(args, proc)
        if fig is not None:
            fig["foreign"] = w.foreign()
            fig["server"] = answers_between(answers0, server_answers(server, "iris"))
        states = {}
        deadline = time.monotonic() + 15.0
        while time.monotonic() < deadline:
            server.check_alive()
            states = version_states(server.url, "iris")
            if states.get(2) == "AVAILABLE":
                break
            time.sleep(0.1)
        after = check_predict(server.url, "iris")
        _, v2 = http_json(f"{server.url}/v1/models/iris/versions/2:predict",
                          {"instances": [[round(0.1 * ((i + j) % 10), 1) for j in range(4)]
                                         for i in range(2)]})
        switched = (after != before and isinstance(v2, dict) and v2.get("predictions") == after)
        crashed = False
    except ServerDied as e:
        log(f"  !! {e}")
        fig, states, switched, crashed = None, {}, False, True
    finally:
        server.stop()
    if fig is not None:
        fig["crashed"] = crashed
    swap = {"load": fig, "states": states, "v2_available": states.get(2) == "AVAILABLE",
            "answers_from_v2": switched, "crashed": crashed}
    figures = ("no result" if fig is None else
               f"{fig['requests_per_s']:.0f} req/s errors {fig['errors']:.0f} "
               f"non2xx {fig['non2xx']:.0f}")
    log(f"    ours-swap iris: {figures}; states {states}; answers from v2 {switched}")
    return swap


# ---------------------------------------------------------------------------
# Summary.

def triple(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return (min(values), statistics.median(values), max(values))


def fmt3(t, f="{:.0f}"):
    return "no result" if t is None else " / ".join(f.format(v) for v in t)


def judge(value, target, direction):
    if target is None or value is None:
        return None
    return value >= target if direction == ">=" else (value < target if direction == "<"
                                                       else value <= target)


def noise(figs):
    """"median foreign load (retakes)" of some figures."""
    if not figs:
        return "-"
    return (f"{statistics.median(f['foreign'] for f in figs):.2f} "
            f"({sum(f.get('retakes', 0) for f in figs)})")


def mark(met):
    return "" if met is None else ("met" if met else "MISSED")


# name -> (target, direction) for the ratio rows.
TARGETS = {"iris 1 instance 16 conns": (10.0, ">="), "mnist 32 instances 16 conns": (2.0, ">="),
           PAIRS[0][0]: (3.0, ">="), PAIRS[1][0]: (1.7, ">=")}


def summarize(versus, pairs, swaps):
    rows, printed = [], []
    printed.append("ours (actorflow serve) vs peer (gunicorn -w 2 + Flask + PyTorch), same wrk "
                   "load (serve_load.sh), interleaved; min / median / max over rounds")
    printed.append("| scenario | ours req/s | peer req/s | ours ÷ peer (median; min / max) | "
                   "target | p50 ms ours / peer | p99 ms ours / peer | errors / non2xx ours; peer | "
                   "foreign cores (retakes) ours; peer |")
    printed.append("|---|---|---|---|---|---|---|---|---|")
    for name, *_ in VERSUS:
        pairs_ = [f for n, f in versus if n == name]
        o = [f["ours"] for f in pairs_ if f["ours"]]
        p = [f["peer"] for f in pairs_ if f["peer"]]
        ratios = [f["ours"]["requests_per_s"] / f["peer"]["requests_per_s"] for f in pairs_
                  if f["ours"] and f["peer"] and f["peer"]["requests_per_s"]]
        rt = triple(ratios)
        target, direction = TARGETS.get(name, (None, ">="))
        met = judge(rt and rt[1], target, direction)
        med = lambda figs, k: statistics.median([f[k] for f in figs]) if figs else float("nan")
        errs = lambda figs: (f"{sum(f['errors'] for f in figs):.0f} / "
                             f"{sum(f['non2xx'] for f in figs):.0f}")
        crashes = sum(1 for f in o if f.get("crashed"))
        ratio_cell = "no result" if rt is None else f"{rt[1]:.2f}x ({rt[0]:.2f} / {rt[2]:.2f})"
        tcell = f"≥ {target:g}x {mark(met)}" if target else ""
        printed.append(
            f"| {name} | {fmt3(triple([f['requests_per_s'] for f in o]))} | "
            f"{fmt3(triple([f['requests_per_s'] for f in p]))} | {ratio_cell} | {tcell} | "
            f"{med(o, 'p50_ms'):.2f} / {med(p, 'p50_ms'):.2f} | "
            f"{med(o, 'p99_ms'):.2f} / {med(p, 'p99_ms'):.2f} | {errs(o)}; {errs(p)}"
            + (f" ({crashes} crash(es) of ours)" if crashes else "") +
            f" | {noise(o)}; {noise(p)} |")
        rows.append({"name": f"{name}, req/s ours ÷ peer", "unit": "x",
                     "min": rt and rt[0], "median": rt and rt[1], "max": rt and rt[2],
                     "target": target, "direction": direction, "met": met,
                     "ours_requests_per_s": triple([f["requests_per_s"] for f in o]),
                     "peer_requests_per_s": triple([f["requests_per_s"] for f in p]),
                     "ours_errors": sum(f["errors"] + f["non2xx"] for f in o),
                     "peer_errors": sum(f["errors"] + f["non2xx"] for f in p)})
        if name == "iris 1 instance 16 conns":
            lat = triple([f["ours"]["p99_ms"] / f["peer"]["p50_ms"] for f in pairs_
                          if f["ours"] and f["peer"] and f["peer"]["p50_ms"]])
            lmet = judge(lat and lat[1], 1.0, "<")
            rows.append({"name": f"{name}, our p99 ÷ peer p50", "unit": "x",
                         "min": lat and lat[0], "median": lat and lat[1], "max": lat and lat[2],
                         "target": 1.0, "direction": "<", "met": lmet})
            printed_lat = ("no result" if lat is None else
                           f"{lat[1]:.3f} ({lat[0]:.3f} / {lat[2]:.3f})")
            printed.append(f"| {name}: our p99 ÷ peer p50 | | | {printed_lat} | < 1 {mark(lmet)} "
                           "| | | | |")

    if not pairs and not swaps:  # --versus-only
        return rows, printed
    printed.append("")
    printed.append("ours only, each configuration on a server of its own, alternating; "
                   "min / median / max over rounds")
    printed.append("| row | A req/s | B req/s | A ÷ B (median; min / max) | target | "
                   "p99 ms A / B | errors / non2xx A; B | foreign cores (retakes) A; B |")
    printed.append("|---|---|---|---|---|---|---|---|")
    for name, *_ in PAIRS:
        figs = [f for n, f in pairs if n == name]
        a = [f["a"] for f in figs if f.get("a")]
        b = [f["b"] for f in figs if f.get("b")]
        rt = triple([f["a"]["requests_per_s"] / f["b"]["requests_per_s"] for f in figs
                     if f.get("a") and f.get("b") and f["b"]["requests_per_s"]])
        target, direction = TARGETS[name]
        met = judge(rt and rt[1], target, direction)
        med = lambda xs, k: statistics.median([f[k] for f in xs]) if xs else float("nan")
        errs = lambda xs: (f"{sum(f['errors'] for f in xs):.0f} / "
                           f"{sum(f['non2xx'] for f in xs):.0f}")
        ratio_cell = "no result" if rt is None else f"{rt[1]:.2f}x ({rt[0]:.2f} / {rt[2]:.2f})"
        printed.append(f"| {name} | {fmt3(triple([f['requests_per_s'] for f in a]))} | "
                       f"{fmt3(triple([f['requests_per_s'] for f in b]))} | {ratio_cell} | "
                       f"≥ {target:g}x {mark(met)} | {med(a, 'p99_ms'):.2f} / {med(b, 'p99_ms'):.2f}"
                       f" | {errs(a)}; {errs(b)} | {noise(a)}; {noise(b)} |")
        rows.append({"name": name, "unit": "x", "min": rt and rt[0], "median": rt and rt[1],
                     "max": rt and rt[2], "target": target, "direction": direction, "met": met,
                     "a_requests_per_s": triple([f["requests_per_s"] for f in a]),
                     "b_requests_per_s": triple([f["requests_per_s"] for f in b])})

    failed = [None if s["load"] is None else s["load"]["errors"] + s["load"]["non2xx"]
              for s in swaps]
    ft = triple(failed)
    smet = (all(f == 0 for f in failed) and all(s["v2_available"] for s in swaps)
            and not any(s["crashed"] for s in swaps))
    rps = triple([s["load"]["requests_per_s"] for s in swaps if s["load"]])
    printed.append("")
    printed.append("version swap under load: iris 1 instance 16 conns, version 2 exported "
                   "beside version 1 during the load (--file-system-poll-wait-seconds 1)")
    printed.append("| round | req/s | p99 ms | errors | non2xx | states afterwards | "
                   "unversioned predict answers from v2 | foreign cores |")
    printed.append("|---|---|---|---|---|---|---|---|")
    for i, s in enumerate(swaps):
        f = s["load"]
        states = ", ".join(f"v{v} {st}" for v, st in sorted(s["states"].items())) or "none"
        if f is None:
            printed.append(f"| {i + 1} | no result{' (server crashed)' if s['crashed'] else ''} "
                           f"| | | | {states} | {s['answers_from_v2']} | |")
        else:
            printed.append(f"| {i + 1} | {f['requests_per_s']:.0f} | {f['p99_ms']:.2f} | "
                           f"{f['errors']:.0f} | {f['non2xx']:.0f} | {states} | "
                           f"{'yes' if s['answers_from_v2'] else 'no'} | {f['foreign']:.2f} |")
    printed.append(f"swap: failed requests {fmt3(ft)} (min / median / max), target 0 in every "
                   f"round and version 2 AVAILABLE: {mark(smet)}")
    rows.append({"name": "iris version swap under load, failed requests (errors + non2xx)",
                 "unit": "requests", "min": ft and ft[0], "median": ft and ft[1],
                 "max": ft and ft[2], "target": 0, "direction": "<=", "met": smet,
                 "requests_per_s": rps,
                 "v2_available": [s["v2_available"] for s in swaps],
                 "answers_from_v2": [s["answers_from_v2"] for s in swaps]})
    return rows, printed


def main():
    args = parse_args()
    check_prerequisites(args)
    # A private copy, so that a rebuild during the run cannot swap the binary.
    binary = os.path.join(args.out, "actorflow")
    shutil.copyfile(args.bin, binary)
    os.chmod(binary, 0o755)
    args.bin = binary
    log(f"serving_bench: {args.rounds} round(s) of {args.seconds} s loads; files in {args.out}")

    bases = {}
    for model in MODELS:
        bases[model] = os.path.join(args.out, "models", model)
        if not os.path.isdir(os.path.join(bases[model], "1")):
            export(args, model, bases[model], 1, SEEDS[model])
    config_file = os.path.join(args.out, "models.config.json")
    with open(config_file, "w") as f:
        json.dump({"model_config_list": [{"name": m, "base_path": bases[m]} for m in MODELS]}, f)

    versus = list(run_versus(args, config_file, args.rounds))
    pairs = [] if args.versus_only else list(run_pairs(args, bases, args.rounds))
    swaps = []
    for r in range(0 if args.versus_only else args.rounds):
        log(f"round {r + 1}/{args.rounds}, version swap")
        swaps.append(run_swap(args, r))

    with open(os.path.join(args.out, "rounds.json"), "w") as f:
        json.dump({"versus": versus, "pairs": pairs, "swaps": swaps}, f, indent=1,
                  ensure_ascii=False)
    rows, printed = summarize(versus, pairs, swaps)
    print(f"serving, {args.rounds} round(s) of {args.seconds} s loads (wrk, 2 threads)")
    print("\n".join(printed))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1, ensure_ascii=False)
            f.write("\n")
    log(f"raw outputs: {args.out}")


if __name__ == "__main__":
    main()
