#!/usr/bin/python3
"""CPU Conv2D forward+backward: ours (//tools/bench:conv_bench) beside PyTorch, 1 thread each.

What is measured, per case (3x3 filter, stride 1, SAME padding, float32):
  ours   conv_bench: the CPU kernels Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter
         computed directly (NHWC input, HWIO filter), OPENBLAS_NUM_THREADS=1;
  torch  y = conv2d(x, w, padding=1); y.backward(dy) with x and w requiring grad
         (NCHW, OIHW), torch.set_num_threads(1), grads reset to None before each pass
         so that both sides allocate their outputs.
Cases (conv_bench's): digits1 x [32,8,8,1] -> 8 channels and digits2 x [32,4,4,8] -> 16
channels (the two convs of `actorflow train --model cnn` at its default --batch 32), and
wide x [8,32,32,64] -> 64 channels.

Each side runs in its own subprocess, alternately (ours, torch, torch, ours, ...: the first
side swaps every round), R rounds. Within a process a sample is the mean of `inner`
passes (sized so that a sample lasts >= --min-sample-ms), and the process reports the
median of --reps samples after warm-up. Per round, ratio = torch ms / our ms (our speed
relative to torch; > 1 means ours is faster); the table gives min / median / max over the
rounds. Target: ratio >= 0.8, judged on the median. The machine may be shared: before
each side the script waits (at most --quiet-wait s) for a half second in which other
processes used < 0.25 cores, and "foreign" is the median load (cores) that they put on
the machine while a side ran (/proc/stat busy time minus the child's CPU time, per wall
second), so that noise stays visible.

Usage (from the repository root):
  bazel build -c opt //tools/bench:conv_bench && tools/bench/conv_vs_torch.py --rounds 5
  tools/bench/conv_vs_torch.py [--rounds R] [--reps N] [--min-sample-ms M]
                               [--case digits1|digits2|wide|all] [--bin PATH]
                               [--quiet-wait S] [--json FILE]
Needs Debian's /usr/bin/python3 with python3-torch.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

TARGET = 0.8
CASES = {  # name -> (N, H, W, C, O, K), as in conv_bench.cc
    "digits1": (32, 8, 8, 1, 8, 3),
    "digits2": (32, 4, 4, 8, 16, 3),
    "wide": (8, 32, 32, 64, 64, 3),
}
ONE_THREAD_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def torch_worker(case_names, reps, min_sample_ms):
    """Runs inside the torch subprocess: one JSON line per case, like conv_bench --json."""
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(7)
    for name in case_names:
        n, h, w_, c, o, k = CASES[name]
        x = (torch.rand(n, c, h, w_, generator=gen) * 2 - 1).requires_grad_()
        w = (torch.rand(o, c, k, k, generator=gen) * 2 - 1).requires_grad_()
        dy = torch.rand(n, o, h, w_, generator=gen) * 2 - 1

        def step():
            x.grad = None
            w.grad = None
            y = F.conv2d(x, w, padding=k // 2)
            y.backward(dy)

        for _ in range(3):
            step()
        t0 = time.perf_counter()
        step()
        one_ms = max(1e3 * (time.perf_counter() - t0), 1e-4)
        inner = max(1, int(min_sample_ms / one_ms + 0.5))
        samples = []
        for _ in range(reps):
            t0 = time.perf_counter()
            for _ in range(inner):
                step()
            samples.append(1e3 * (time.perf_counter() - t0) / inner)
        flops = 3 * 2.0 * n * h * w_ * k * k * c * o
        print(json.dumps({"case": name, "ms_median": statistics.median(samples),
                          "ms_min": min(samples), "ms_max": max(samples), "reps": reps,
                          "inner": inner, "flops": flops,
                          "threads": torch.get_num_threads()}), flush=True)


def machine_busy_s():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / os.sysconf("SC_CLK_TCK")


def children_cpu_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def wait_quiet(max_wait_s, threshold=0.25, window_s=0.5):
    """Waits (at most max_wait_s) for a window in which others used < threshold cores."""
    deadline = time.perf_counter() + max_wait_s
    while time.perf_counter() < deadline:
        busy0, own0, t0 = machine_busy_s(), time.process_time(), time.perf_counter()
        time.sleep(window_s)
        wall = time.perf_counter() - t0
        if (machine_busy_s() - busy0 - (time.process_time() - own0)) / wall < threshold:
            return


def run_side(cmd):
    """Runs one side; returns ({case: json line}, foreign load in cores)."""
    env = dict(os.environ, **ONE_THREAD_ENV)
    busy0, own0, t0 = machine_busy_s(), children_cpu_s(), time.perf_counter()
    out = subprocess.run(cmd, env=env, check=True, stdout=subprocess.PIPE, text=True).stdout
    wall = time.perf_counter() - t0
    foreign = max(0.0, (machine_busy_s() - busy0) - (children_cpu_s() - own0)) / wall
    lines = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    return {l["case"]: l for l in lines}, foreign


def triple(values, fmt):
    return " / ".join(fmt % v for v in (min(values), statistics.median(values), max(values)))


def main():
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--reps", type=int, default=21, help="samples per case per process")
    p.add_argument("--min-sample-ms", type=float, default=2.0)
    p.add_argument("--case", default="all", choices=sorted(CASES) + ["all"])
    p.add_argument("--bin", default=os.path.join(repo, "bazel-bin/tools/bench/conv_bench"))
    p.add_argument("--quiet-wait", type=float, default=10.0,
                   help="seconds to wait, before each side, for others to use < 0.25 cores")
    p.add_argument("--json", metavar="FILE", help="also write the rows and raw rounds")
    p.add_argument("--torch-worker", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    names = list(CASES) if a.case == "all" else [a.case]
    if a.torch_worker:
        torch_worker(names, a.reps, a.min_sample_ms)
        return 0
    if a.rounds < 1 or a.reps < 1:
        p.error("--rounds and --reps must be >= 1")
    if not os.access(a.bin, os.X_OK):
        p.error("%s is not built: bazel build -c opt //tools/bench:conv_bench" % a.bin)

    common = ["--case", a.case, "--reps", str(a.reps), "--min-sample-ms", str(a.min_sample_ms)]
    sides = {"ours": [a.bin, "--json"] + common,
             "torch": ["/usr/bin/python3", os.path.abspath(__file__), "--torch-worker"] + common}
    rounds = []
    for r in range(a.rounds):
        order = ["ours", "torch"] if r % 2 == 0 else ["torch", "ours"]
        got = {}
        for side in order:
            wait_quiet(a.quiet_wait)
            got[side] = run_side(sides[side])
        rounds.append(got)
        print("round %d/%d: %s" % (r + 1, a.rounds, "  ".join(
            "%s %.4f/%.4f ms" % (n, got["ours"][0][n]["ms_median"], got["torch"][0][n]["ms_median"])
            for n in names)), file=sys.stderr, flush=True)

    rows = []
    print("| case | shape (NHWC -> O, 3x3) | ours ms min / median / max | "
          "torch ms min / median / max | torch/ours min / median / max | target | met | "
          "foreign ours / torch |")
    print("|---|---|---|---|---|---|---|---|")
    for n in names:
        ours = [g["ours"][0][n]["ms_median"] for g in rounds]
        torch_ms = [g["torch"][0][n]["ms_median"] for g in rounds]
        ratios = [t / o for t, o in zip(torch_ms, ours)]
        foreign = [statistics.median(g[s][1] for g in rounds) for s in ("ours", "torch")]
        N, H, W, C, O, _ = CASES[n]
        met = statistics.median(ratios) >= TARGET
        print("| %s | %dx%dx%dx%d -> %d | %s | %s | %s | >= %.1fx | %s | %.2f / %.2f |" % (
            n, N, H, W, C, O, triple(ours, "%.4f"), triple(torch_ms, "%.4f"),
            triple(ratios, "%.2f"), TARGET, "yes" if met else "NO", foreign[0], foreign[1]))
        rows.append({"case": n, "ours_ms": ours, "torch_ms": torch_ms, "ratio": ratios,
                     "ratio_median": statistics.median(ratios), "target": TARGET, "met": met,
                     "flops": rounds[0]["ours"][0][n]["flops"],
                     "foreign_ours": foreign[0], "foreign_torch": foreign[1]})
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rows": rows, "rounds": [{s: g[s][0] for s in g} for g in rounds]}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
