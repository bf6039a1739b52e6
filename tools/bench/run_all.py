#!/usr/bin/env python3
"""Runs every runtime-speed figure of actorflow beside its peer, in one run.

Each round runs our benchmark binaries and the PyTorch peers one after the other
(ours, peer, ours, peer, ...), so that drift of the machine hits both sides alike.
Every row is a ratio or a figure per round; the table gives min / median / max over
the rounds and whether the median meets the row's target.

Rows (their names are a contract of --json):
  Iris 4-10-10-3 b32 training steps/s, actor session / PyTorch, 1 and 2 threads
  the same, actor session / DirectSession
  MLP 784-256-256-10 b64 and b256 samples/s / PyTorch, 1 and 2 threads, actor session
  a tensor across two processes on loopback, 1 MiB and 16 MiB (GB/s)
  remote trivial step round trip, client -> server -> client (us, median)
  sync data-parallel step, 2 workers + 1 ps / PyTorch DDP/gloo
  all-reduce throughput between 2 processes / gloo all_reduce, 1 MiB and 64 MiB
  all-reduce data-parallel step, 2 workers / PyTorch DDP/gloo
  async ps updates/s / torch.rpc parameter server, 1 ps + 2 workers
  one-network-per-device speed-up, 2 devices on 2 cores
  pipelined 4 dense stages of 2048 on 2 devices ÷ the unpipelined layer split, GPipe
  and 1F1B, and 1F1B's bubble less the theory's
  a tensor across two processes on one host, 16 MiB, 4 in flight (GB/s)
  serving Iris, 1 instance a request, 16 connections: requests/s ÷ the Flask + PyTorch
  peer, and our p99 latency ÷ the peer's p50 (tools/bench/serving_bench.py
  --versus-only, one round of its loads per round here)
  a fresh clone's first result: the quick start's first command in a new clone with
  a new Bazel output base and no disk cache (seconds; measured once, before the
  rounds, with --fresh-clone)
  idle CPU of a server with a connected, idle client (% of a core; not a speed figure)
A row made of several cases (1 and 2 threads, b64 and b256, 1 and 16 MiB) is judged
by its worst case; every case is listed under "cases" in the JSON. A row judged in
every round (EVERY_ROUND) is judged by its worst round rather than its median.

A second table, "floors beside the cross-process rows (no target)", gives what bare
TCP and a bare CAF actor echo reach between two processes on this machine
(tools/bench/floor_bench.cc, run once per round after cluster_bench): TCP ping-pong
round trip (blocking and busy-polling), CAF echo round trip (polling scheduler and
spin 0), TCP GB/s and CAF raw-byte messages GB/s at 1 MiB and 16 MiB. They are the
floors under the tensor and round-trip rows, min / median / max over rounds of each
round's median; they are not in the --json rows (a fixed contract) but in the out
folder's rounds.json (keys "floor ...") and floors.json.

The peers are the scripts of the peer-benchmark folder (default: ../shared/peers
beside the repository; --peers DIR), run with Debian's /usr/bin/python3 and
python3-torch. Usage: see --help. tools/bench/run_all.sh is the entry point.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

PYTHON = "/usr/bin/python3"
# The environment every benchmark process starts with (main sets it from the flags).
RUN_ENV = None
BINARIES = ["training_bench", "ps_bench", "cluster_bench", "floor_bench", "tune_bench",
            "allreduce_bench"]


def parse_args():
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="one short round (a few minutes)")
    ap.add_argument("--json", metavar="FILE", help="write the rows as a JSON list to FILE")
    ap.add_argument("--rounds", type=int, default=None, help="rounds (default 3; --quick: 1)")
    ap.add_argument("--bin-dir", metavar="DIR",
                    help="take the benchmark binaries (and actorflow) from DIR instead of "
                         "building them with bazel -c opt")
    ap.add_argument("--peers", metavar="DIR", default=os.path.join(repo, "..", "shared", "peers"))
    ap.add_argument("--fresh-clone", action="store_true",
                    help="also time the quick start's first command in a fresh clone with "
                         "an empty Bazel cache (about 10 minutes on 2 cores)")
    ap.add_argument("--out", metavar="DIR", default=f"/tmp/run_all-{time.strftime('%Y%m%d-%H%M%S')}",
                    help="raw outputs and logs")
    ap.add_argument("--openblas-own-choice", action="store_true",
                    help="start every process (ours and the peers') without OPENBLAS_CORETYPE, "
                         "so that OpenBLAS picks its kernels for this CPU; by default the "
                         "environment is passed on as it is")
    args = ap.parse_args()
    if args.rounds is None:
        args.rounds = 1 if args.quick else 3
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    args.repo = repo
    args.env = dict(os.environ)
    if args.openblas_own_choice:
        args.env.pop("OPENBLAS_CORETYPE", None)
    return args


def openblas_core(env):
    """The kernels OpenBLAS loads with in `env` (its name for the core), and why."""
    probe = ("import ctypes; lib = ctypes.CDLL('libopenblas.so.0'); "
             "lib.openblas_get_corename.restype = ctypes.c_char_p; "
             "print(lib.openblas_get_corename().decode())")
    done = subprocess.run([PYTHON, "-c", probe], env=env, capture_output=True, text=True)
    core = done.stdout.strip() or "unknown"
    forced = env.get("OPENBLAS_CORETYPE")
    why = f"OPENBLAS_CORETYPE={forced} in the environment" if forced else "OpenBLAS's own choice"
    return f"{core} ({why})"


def prepare_binaries(args):
    """Copies the binaries into the output folder, so a concurrent rebuild cannot swap
    them between rounds. Returns name -> path."""
    os.makedirs(args.out, exist_ok=True)
    if args.bin_dir:
        src = {name: os.path.join(args.bin_dir, name) for name in BINARIES + ["actorflow"]}
    else:
        targets = [f"//tools/bench:{b}" for b in BINARIES] + ["//tools:actorflow"]
        subprocess.run(["bazel", "build", "-c", "opt"] + targets, cwd=args.repo, check=True,
                       stdout=sys.stderr)
        bazel_bin = subprocess.run(["bazel", "info", "-c", "opt", "bazel-bin"], cwd=args.repo,
                                   check=True, capture_output=True, text=True).stdout.strip()
        src = {b: os.path.join(bazel_bin, "tools", "bench", b) for b in BINARIES}
        src["actorflow"] = os.path.join(bazel_bin, "tools", "actorflow")
    paths = {}
    for name, path in src.items():
        if not os.access(path, os.X_OK):
            sys.exit(f"run_all: no executable {name} at {path}")
        paths[name] = os.path.join(args.out, name)
        shutil.copyfile(path, paths[name])
        os.chmod(paths[name], 0o755)
    return paths


def run(cmd, log, cwd):
    """Runs one benchmark process; returns its stdout. Its stderr goes to `log`."""
    print(f"  {' '.join(os.path.basename(c) if i == 0 else c for i, c in enumerate(cmd))}",
          file=sys.stderr, flush=True)
    with open(log, "w") as err:
        done = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=err, text=True,
                              env=RUN_ENV)
    if done.returncode != 0:
        print(f"run_all: {os.path.basename(cmd[0])} exited {done.returncode} (log: {log})",
              file=sys.stderr)
    return done.stdout


def last_json(text):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    return None


def triple_median(line):
    m = re.search(r"min ([\d.]+) / median ([\d.]+) / max ([\d.]+)", line)
    return float(m.group(2)) if m else None


def torch_dist(text):
    """The medians dist_bench.py prints: ddp/single step ms, rpc updates/s."""
    res = {}
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("ddp ") and "step ms" in s:
            res["ddp_ms"] = triple_median(s)
        if s.startswith("server updates/s"):
            res["rpc_ups"] = triple_median(s)
    return res


def gloo_allreduce_ms(text):
    """{elements: median ms per op} from dist_bench.py allreduce's lines."""
    res = {}
    for line in text.splitlines():
        m = re.match(r"\s*n=\s*(\d+) ", line)
        if m:
            res[int(m.group(1))] = triple_median(line)
    return res


def allreduce_figures(args, bins, r, ddp_ms):
    """Ours (allreduce_bench) beside gloo's all_reduce; the step beside DDP's."""
    reps = "2" if args.quick else "3"
    ab = [bins["allreduce_bench"], "--json", "--actorflow", bins["actorflow"], "--reps", reps]
    ab += ["--quick"] if args.quick else []
    ours = last_json(run(ab, f"{args.out}/allreduce-{r}.log", args.repo))
    gloo = gloo_allreduce_ms(run([PYTHON, os.path.join(args.peers, "dist_bench.py"), "allreduce",
                                  "--reps", reps], f"{args.out}/torch-allreduce-{r}.log", args.repo))
    fig = {}
    if ours:
        for n, size in ((269322, "1 MiB"), (16 << 20, "64 MiB")):
            mine = ours["allreduce"].get(f"n={n}")
            if mine and gloo.get(n):
                fig[f"allreduce {size} ours/gloo"] = gloo[n] / mine["ms"]["median"]
        if ddp_ms:
            fig["allreduce step ours/ddp"] = ours["sync_step"]["ms"]["median"] / ddp_ms
    return fig


def floor_figures(args, bins, r):
    """Runs floor_bench once; returns its medians over repeats as {"floor ...": figure}."""
    fb = [bins["floor_bench"], "--json"] + (["--quick"] if args.quick else ["--repeats", "3"])
    ours = last_json(run(fb, f"{args.out}/floor-{r}.log", args.repo))
    if not ours:
        return {}
    fig = {"floor tcp rtt us": ours["tcp_rtt_us"]["median"],
           "floor tcp rtt polling us": ours["tcp_rtt_polling_us"]["median"],
           "floor caf rtt us": ours["caf_rtt_us"]["median"],
           "floor caf rtt no polling us": ours["caf_rtt_no_polling_us"]["median"]}
    for size in ("1 MiB", "16 MiB"):
        fig[f"floor tcp {size} GB/s"] = ours["tcp_gb_per_s"][size]["median"]
        for inflight in ("x1", "x8"):
            fig[f"floor caf {size} {inflight} GB/s"] = \
                ours["caf_gb_per_s"][f"{size} {inflight}"]["median"]
    return fig


def one_round(args, bins, r):
    """Runs every benchmark once; returns {case name: figure} for this round."""
    out, q = args.out, args.quick
    cwd = args.repo
    fig = {}
    iris_csv = os.path.join(args.repo, "examples", "data", "iris_training.csv")

    # Training steps: ours (both sessions), then PyTorch.
    tb = [bins["training_bench"], "--json", "--session", "both", "--iris-csv", iris_csv]
    tb += ["--quick"] if q else ["--reps", "3"]
    ours = last_json(run(tb, f"{out}/training-{r}.log", cwd))
    peer = os.path.join(args.peers, "torch_mlp_bench.py")
    pt = [PYTHON, peer, "--configs", "1/1", "1/2", "--reps", "2" if q else "3"]
    if q:
        pt += ["--steps", "40", "--iris-steps", "300", "--quiet-wait", "0"]
    peer_json = "/tmp/peers/torch_mlp_bench.json"  # where the peer writes its figures
    if os.path.exists(peer_json):
        os.remove(peer_json)
    run(pt, f"{out}/torch-mlp-{r}.log", cwd)
    torch = json.load(open(peer_json)) if os.path.exists(peer_json) else None
    if ours and torch:
        o, t = ours["results"], torch["results"]
        for threads, tc in (("t1", "1/1"), ("t2", "1/2")):
            n = "1 thread" if threads == "t1" else "2 threads"
            actor_iris = o[f"actor iris b32 {threads}"]["median"]
            fig[f"iris actor/torch {n}"] = actor_iris / t[f"iris b32 {tc}"]["median"]
            # The median of the per-repetition ratios: each repetition timed both
            # sessions in alternating bursts (training_bench), so drift cancels.
            paired = o[f"actor iris b32 {threads}"].get("ratio_to_direct_per_rep")
            fig[f"iris actor/direct {n}"] = (statistics.median(paired) if paired else
                                            actor_iris / o[f"direct iris b32 {threads}"]["median"])
            for b in ("64", "256"):
                fig[f"mlp b{b} actor/torch {n}"] = (o[f"actor mlp784 b{b} {threads}"]["median"] /
                                                   t[f"mlp784 b{b} {tc}"]["median"])

    # Distributed training: ours, then DDP and the rpc parameter server.
    pb = [bins["ps_bench"], "--json", "--actorflow", bins["actorflow"], "--reps", "2" if q else "3"]
    ours = last_json(run(pb, f"{out}/ps-{r}.log", cwd))
    reps = "2" if q else "3"
    ddp = torch_dist(run([PYTHON, os.path.join(args.peers, "dist_bench.py"), "ddp", "--reps", reps],
                         f"{out}/torch-ddp-{r}.log", cwd))
    rpc = torch_dist(run([PYTHON, os.path.join(args.peers, "dist_bench.py"), "ps", "--reps", reps],
                         f"{out}/torch-ps-{r}.log", cwd))
    if ours and ddp.get("ddp_ms"):
        fig["sync step ours/ddp"] = ours["sync"]["step_ms_stats"]["median"] / ddp["ddp_ms"]
    if ours and rpc.get("rpc_ups"):
        fig["async ups ours/rpc"] = ours["async"]["updates_per_s_stats"]["median"] / rpc["rpc_ups"]
    fig.update(allreduce_figures(args, bins, r, ddp.get("ddp_ms")))

    # Across processes (no peer: absolute figures against the targets).
    cb = [bins["cluster_bench"], "--json", "--actorflow", bins["actorflow"]]
    cb += ["--quick"] if q else ["--repeats", "3"]
    ours = last_json(run(cb, f"{out}/cluster-{r}.log", cwd))
    if ours:
        for size in ("1 MiB", "16 MiB"):
            single = ours["transfer"][f"{size} resident"]["gb_per_s"]["median"]
            piped = [v["gb_per_s"]["median"] for k, v in ours["transfer"].items()
                     if k.startswith(f"{size} resident x")]
            fig[f"tensor {size} one in flight"] = single
            if piped:
                fig[f"tensor {size} pipelined"] = piped[0]
        fig["remote round trip us"] = ours["round_trip_us"]["worker0_only"]["median"]
        idle = ours.get("idle_cpu_percent")
        if idle:
            fig["idle server cpu %"] = max(idle["worker0"], idle["worker1"])

    # The floors under the rows above: bare TCP and a bare CAF echo, two processes.
    fig.update(floor_figures(args, bins, r))

    # One network per device.
    tu = [bins["tune_bench"], "--json"] + (["--quick"] if q else ["--rounds", "3"])
    ours = last_json(run(tu, f"{out}/tune-{r}.log", cwd))
    if ours:
        fig["tune speed-up"] = ours["speedup"]
    fig.update(pipeline_figures(args, bins, r))
    fig.update(serving_figures(args, bins, r))
    return fig


def serving_figures(args, bins, r):
    """One round of serving_bench.py's loads of ours and the peer (--versus-only): the
    Iris 1-instance, 16-connection scenario's ratios."""
    rows_file = f"{args.out}/serving-{r}.json"
    sb = [PYTHON, os.path.join(args.repo, "tools", "bench", "serving_bench.py"), "--bin",
          bins["actorflow"], "--rounds", "1", "--versus-only", "--json", rows_file, "--peers",
          args.peers, "--out", f"{args.out}/serving-{r}"] + (["--quick"] if args.quick else [])
    run(sb, f"{args.out}/serving-{r}.log", args.repo)
    if not os.path.exists(rows_file):
        return {}
    fig = {}
    for row in json.load(open(rows_file)):
        if row.get("median") is None:
            continue
        if row["name"] == "iris 1 instance 16 conns, req/s ours ÷ peer":
            fig["serving iris ours/peer"] = row["median"]
        if row["name"] == "iris 1 instance 16 conns, our p99 ÷ peer p50":
            fig["serving iris our p99 / peer p50"] = row["median"]
    return fig


def fresh_clone_seconds(args):
    """Clones the repository's HEAD into a new folder and times the README's first
    command there, with a new Bazel output base and the disk cache turned off: what a
    user's first result costs. None when the command failed."""
    work = os.path.join(args.out, "fresh-clone")
    shutil.rmtree(work, ignore_errors=True)
    clone, base = os.path.join(work, "actorflow"), os.path.join(work, "output_base")
    subprocess.run(["git", "clone", "-q", args.repo, clone], check=True)
    command = ("tools/setup.sh && bazel --output_base=" + base + " run --disk_cache= "
               "//tools:actorflow -- train --cluster sim:ps=1,worker=2 --mode sync")
    print(f"  fresh clone: {command}", file=sys.stderr, flush=True)
    start = time.time()
    with open(f"{args.out}/fresh-clone.log", "w") as log:
        done = subprocess.run(["bash", "-c", command], cwd=clone, stdout=log, stderr=log)
    seconds = time.time() - start
    subprocess.run(["bazel", "--output_base=" + base, "shutdown"], cwd=clone,
                   capture_output=True)
    shutil.rmtree(work, ignore_errors=True)
    return seconds if done.returncode == 0 else None


def pipeline_figures(args, bins, r):
    """Pipelines of 4 equal dense stages of 2048 on 2 devices, M = 8, batch 256
    (model_parallel_bench.py's deep2048x4 group, one round): samples/s of each schedule
    ÷ the unpipelined layer split in the same round, and 1F1B's measured bubble less
    the theoretical (K-1)/(M+K-1)."""
    mp = [PYTHON, os.path.join(args.repo, "tools", "bench", "model_parallel_bench.py"),
          "--only", "deep2048x4", "--rounds", "1", "--epochs", "1" if args.quick else "2",
          "--bin", bins["actorflow"]]
    text = run(mp, f"{args.out}/pipeline-{r}.log", args.repo).strip()
    fig = {}
    if not text.startswith("["):
        return fig
    for row in json.loads(text):
        for schedule in ("gpipe", "1f1b"):
            if row["case"] == f"deep2048x4 b256 layer, pipeline 8 {schedule}":
                fig[f"pipeline {schedule} / layer split"] = row["ratio_vs_none"][1]
                if schedule == "1f1b":
                    fig["pipeline 1f1b bubble over theory"] = (row["bubble"][1] -
                                                               row["bubble_theory"])
    return fig


# name, unit, target, direction (">=": the figure must reach it; "<=": stay under it),
# and the cases (keys of one_round's figures) the row is made of.
ROWS = [
    ("Iris 4-10-10-3 b32 training steps/s, actor session ÷ PyTorch, 1 and 2 threads", "x", 10.0,
     ">=", ["iris actor/torch 1 thread", "iris actor/torch 2 threads"]),
    ("same, actor session ÷ DirectSession", "x", 0.95, ">=",
     ["iris actor/direct 1 thread", "iris actor/direct 2 threads"]),
    ("MLP 784-256-256-10 b64 and b256 samples/s ÷ PyTorch, 1 and 2 threads, actor session", "x",
     1.25, ">=", ["mlp b64 actor/torch 1 thread", "mlp b256 actor/torch 1 thread",
                  "mlp b64 actor/torch 2 threads", "mlp b256 actor/torch 2 threads"]),
    ("tensor across two processes on loopback, 1 MiB and 16 MiB", "GB/s", 2.0, ">=",
     ["tensor 1 MiB pipelined", "tensor 16 MiB pipelined", "tensor 1 MiB one in flight",
      "tensor 16 MiB one in flight"]),
    ("tensor across two processes on one host, 16 MiB, 4 in flight", "GB/s", 8.0, ">=",
     ["tensor 16 MiB pipelined"]),
    ("remote trivial step round trip (client → server → client), median", "us", 15.0, "<=",
     ["remote round trip us"]),
    ("sync data-parallel step, 2 workers + 1 ps on loopback ÷ PyTorch DDP/gloo step, same model "
     "and batch", "x", 0.8, "<=", ["sync step ours/ddp"]),
    ("async ps updates/s ÷ torch.rpc parameter server, 1 ps + 2 workers", "x", 2.5, ">=",
     ["async ups ours/rpc"]),
    ("all-reduce throughput between 2 processes ÷ gloo all_reduce, 1 MiB", "x", 1.2, ">=",
     ["allreduce 1 MiB ours/gloo"]),
    ("all-reduce throughput between 2 processes ÷ gloo all_reduce, 64 MiB", "x", 1.5, ">=",
     ["allreduce 64 MiB ours/gloo"]),
    ("all-reduce data-parallel step, 2 workers (--mode allreduce) ÷ PyTorch DDP/gloo step, "
     "same model and batch", "x", 0.7, "<=", ["allreduce step ours/ddp"]),
    ("one-network-per-device speed-up, 2 devices on 2 cores", "x", 1.9, ">=", ["tune speed-up"]),
    ("pipelined 4 dense stages of 2048 on 2 devices, M = 8, batch 256 ÷ unpipelined layer "
     "split, GPipe and 1F1B", "x", 1.2, ">=",
     ["pipeline gpipe / layer split", "pipeline 1f1b / layer split"]),
    ("the same, 1F1B's measured bubble less the theoretical (K-1)/(M+K-1)", "", 0.05, "<=",
     ["pipeline 1f1b bubble over theory"]),
    ("serving Iris, 1 instance a request, 16 connections: requests/s ÷ the Flask + PyTorch "
     "peer", "x", 10.0, ">=", ["serving iris ours/peer"]),
    ("the same, our p99 latency ÷ the peer's p50", "x", 1.0, "<=",
     ["serving iris our p99 / peer p50"]),
    ("a fresh clone's first result: the quick start's first command, empty Bazel cache", "s",
     240.0, "<=", ["fresh clone s"]),
    # Not a speed figure: the price of polling schedulers when nothing runs.
    ("idle CPU of a server with a connected, idle client (busier of two servers)", "% of a core",
     1.0, "<=", ["idle server cpu %"]),
]
# The tensor row is judged by its pipelined cases (several tensors in flight); the
# one-in-flight cases are listed beside them.
JUDGED = {"tensor across two processes on loopback, 1 MiB and 16 MiB":
          ["tensor 1 MiB pipelined", "tensor 16 MiB pipelined"]}
# Rows whose target holds only if every round meets it (judged by the worst round).
EVERY_ROUND = {
    "sync data-parallel step, 2 workers + 1 ps on loopback ÷ PyTorch DDP/gloo step, same model "
    "and batch",
    "async ps updates/s ÷ torch.rpc parameter server, 1 ps + 2 workers"}


# The floors' cases (keys of one_round's figures) and the row each is the floor of.
FLOORS = [
    ("floor tcp rtt us", "remote round trip us"),
    ("floor tcp rtt polling us", "remote round trip us"),
    ("floor caf rtt us", "remote round trip us"),
    ("floor caf rtt no polling us", "remote round trip us"),
    ("floor tcp 1 MiB GB/s", "tensor 1 MiB"),
    ("floor caf 1 MiB x1 GB/s", "tensor 1 MiB one in flight"),
    ("floor caf 1 MiB x8 GB/s", "tensor 1 MiB pipelined"),
    ("floor tcp 16 MiB GB/s", "tensor 16 MiB"),
    ("floor caf 16 MiB x1 GB/s", "tensor 16 MiB one in flight"),
    ("floor caf 16 MiB x8 GB/s", "tensor 16 MiB pipelined"),
]


def case_over_rounds(rounds, case):
    """{"case", "min", "median", "max", "rounds"} of one case, or None if no round has it."""
    values = [f[case] for f in rounds if case in f]
    if not values:
        return None
    return {"case": case, "min": min(values), "median": statistics.median(values),
            "max": max(values), "rounds": len(values)}


def summarize_floors(rounds):
    floors = []
    for case, beside in FLOORS:
        stats = case_over_rounds(rounds, case)
        if stats:
            floors.append(dict(stats, beside=beside))
    return floors


def print_floor_table(floors):
    print()
    print("floors beside the cross-process rows (no target): bare TCP and a bare CAF echo "
          "between two processes; min / median / max over rounds")
    print("| floor | min / median / max | beside |")
    print("|---|---|---|")
    if not floors:
        print("| floor_bench | no result | |")
    for f in floors:
        fmt = "{:.1f}" if f["case"].endswith(" us") else "{:.2f}"
        trip = " / ".join(fmt.format(f[k]) for k in ("min", "median", "max"))
        print(f"| {f['case'][len('floor '):]} | {trip} | {f['beside']} |")


def summarize(rounds):
    rows = []
    for name, unit, target, direction, cases in ROWS:
        case_stats = [c for c in (case_over_rounds(rounds, case) for case in cases) if c]
        judged = [c for c in case_stats if c["case"] in JUDGED.get(name, cases)]
        if not judged:
            rows.append({"name": name, "unit": unit, "min": None, "median": None, "max": None,
                         "target": target, "direction": direction, "met": False, "cases": []})
            continue
        worse = min if direction == ">=" else max
        worst = worse(judged, key=lambda c: c["median"])
        def figure(c):
            if name not in EVERY_ROUND:
                return c["median"]
            return c["min"] if direction == ">=" else c["max"]
        met = all((figure(c) >= target) if direction == ">=" else (figure(c) <= target)
                  for c in judged)
        rows.append({"name": name, "unit": unit, "min": worst["min"], "median": worst["median"],
                     "max": worst["max"], "target": target, "direction": direction, "met": met,
                     "worst_case": worst["case"], "cases": case_stats})
    return rows


def print_table(rows, rounds, blas_core):
    print(f"runtime speed, {rounds} round(s) interleaved with the peers; "
          "min / median / max over rounds; a row is judged by its worst case; "
          f"OpenBLAS kernels of every process: {blas_core}")
    print(f"| figure | min / median / max | target | met |")
    print(f"|---|---|---|---|")
    for row in rows:
        if row["median"] is None:
            print(f"| {row['name']} | no result | {row['direction']} {row['target']:g} {row['unit']} | no |")
            continue
        fmt = "{:.2f}" if row["unit"] not in ("us", "s") else "{:.1f}"
        trip = " / ".join(fmt.format(row[k]) for k in ("min", "median", "max"))
        print(f"| {row['name']} | {trip} {row['unit']} ({row['worst_case']}) | "
              f"{row['direction']} {row['target']:g} {row['unit']} | {'yes' if row['met'] else 'no'} |")
        for c in row["cases"]:
            if c["case"] == row["worst_case"]:
                continue
            trip = " / ".join(fmt.format(c[k]) for k in ("min", "median", "max"))
            print(f"|   {c['case']} | {trip} {row['unit']} | | |")


def main():
    args = parse_args()
    if not os.path.isfile(os.path.join(args.peers, "torch_mlp_bench.py")):
        sys.exit(f"run_all: no peer benchmarks in {args.peers} (use --peers DIR)")
    if subprocess.run([PYTHON, "-c", "import torch, sklearn"], capture_output=True).returncode != 0:
        sys.exit(f"run_all: {PYTHON} lacks torch or sklearn: apt-get install -y python3-torch python3-sklearn")
    global RUN_ENV
    RUN_ENV = args.env
    blas_core = openblas_core(args.env)
    print(f"OpenBLAS kernels: {blas_core}", file=sys.stderr, flush=True)
    bins = prepare_binaries(args)
    fresh = fresh_clone_seconds(args) if args.fresh_clone else None
    rounds = []
    for r in range(1, args.rounds + 1):
        print(f"round {r}/{args.rounds} (load average {open('/proc/loadavg').read().split()[0]})",
              file=sys.stderr, flush=True)
        rounds.append(one_round(args, bins, r))
    if fresh is not None:
        rounds[0]["fresh clone s"] = fresh
    with open(os.path.join(args.out, "rounds.json"), "w") as f:
        json.dump(rounds, f, indent=1)
    rows = summarize(rounds)
    print_table(rows, args.rounds, blas_core)
    floors = summarize_floors(rounds)
    print_floor_table(floors)
    with open(os.path.join(args.out, "floors.json"), "w") as f:
        json.dump(floors, f, indent=1)
        f.write("\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1, ensure_ascii=False)
            f.write("\n")
    print(f"raw outputs: {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
