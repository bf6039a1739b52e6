#!/usr/bin/env python3
"""Model parallelism on 2 devices, measured: samples/s of each (model, split,
pipeline) relative to the same model on one device (`--split none`) in the same
round (the deep2048 pipelines: relative to their unpipelined layer split), the bytes
that cross devices per step, and for pipelines the measured bubble beside the
theoretical (K-1)/(M+K-1). deep2048 is 4 hidden layers of 2048 at batch 128 (the
first hidden layer takes the 64 pixels, so three layers carry the work: 2 on one
device, 1 on the other); deep2048x4 has four equal 2048x2048 layers, two per device,
at batch 256.

Every case is `actorflow train --json` on the bundled digits with one OpenBLAS
thread per process (OPENBLAS_NUM_THREADS=1), so that 2 devices can use the 2 cores;
samples/s = global_step * batch / seconds (seconds from --json: building the model,
training and evaluating). Rounds interleave the cases (none, then the splits of that
model) so that drift of the machine hits them alike; the table gives min / median /
max over rounds.

Usage (from the repository root, after `bazel build -c opt //tools:actorflow`):
  tools/bench/model_parallel_bench.py [--rounds 3] [--bin bazel-bin/tools/actorflow]
                                      [--epochs 2] [--markdown]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

DATA = ["--train", "examples/data/digits_training.csv", "--test", "examples/data/digits_test.csv",
        "--normalize"]

# (name, model flags, devices, the baseline's name)
MLP = ["--model", "mlp", "--hidden", "1024,1024,1024,1024", "--batch", "64", "--optimizer", "sgd",
       "--lr", "0.05"]
DEEP = ["--model", "mlp", "--hidden", "2048,2048,2048,2048", "--batch", "128", "--optimizer",
        "sgd", "--lr", "0.02"]
# Four equal 2048x2048 layers (the first hidden layer takes the 64 pixels), two per
# device, at batch 256 (micro-batches of 32 rows).
DEEP4 = ["--model", "mlp", "--hidden", "2048,2048,2048,2048,2048", "--batch", "256",
         "--optimizer", "sgd", "--lr", "0.02"]
CASES = [
    ("mlp none", MLP + ["--split", "none"], "cpu=1", None),
    ("mlp layer", MLP + ["--split", "layer"], "cpu=2", "mlp none"),
    ("mlp vertical", MLP + ["--split", "vertical"], "cpu=2", "mlp none"),
    ("mlp layer, pipeline 8 gpipe", MLP + ["--split", "layer", "--pipeline", "8", "--schedule",
                                           "gpipe"], "cpu=2", "mlp none"),
    ("mlp layer, pipeline 8 1f1b", MLP + ["--split", "layer", "--pipeline", "8", "--schedule",
                                          "1f1b"], "cpu=2", "mlp none"),
    ("cnn none", ["--model", "cnn", "--split", "none"], "cpu=1", None),
    ("cnn towers", ["--model", "cnn", "--split", "towers"], "cpu=2", "cnn none"),
    ("cnn layer", ["--model", "cnn", "--split", "layer"], "cpu=2", "cnn none"),
    ("rnn none", ["--model", "rnn", "--split", "none"], "cpu=1", None),
    ("rnn layer", ["--model", "rnn", "--split", "layer"], "cpu=2", "rnn none"),
    # The pipeline target: 4 equal dense stages of 2048 units on 2 devices, M = 8,
    # against the same layer split unpipelined (its baseline, not `none`).
    ("deep2048 layer", DEEP + ["--split", "layer"], "cpu=2", None),
    ("deep2048 layer, pipeline 8 gpipe", DEEP + ["--split", "layer", "--pipeline", "8",
                                                 "--schedule", "gpipe"], "cpu=2", "deep2048 layer"),
    ("deep2048 layer, pipeline 8 1f1b", DEEP + ["--split", "layer", "--pipeline", "8",
                                                "--schedule", "1f1b"], "cpu=2", "deep2048 layer"),
    ("deep2048x4 b256 layer", DEEP4 + ["--split", "layer"], "cpu=2", None),
    ("deep2048x4 b256 layer, pipeline 8 gpipe", DEEP4 + ["--split", "layer", "--pipeline", "8",
                                                         "--schedule", "gpipe"], "cpu=2",
     "deep2048x4 b256 layer"),
    ("deep2048x4 b256 layer, pipeline 8 1f1b", DEEP4 + ["--split", "layer", "--pipeline", "8",
                                                        "--schedule", "1f1b"], "cpu=2",
     "deep2048x4 b256 layer"),
]


def batch_of(flags):
    return int(flags[flags.index("--batch") + 1]) if "--batch" in flags else 32


def run_case(binary, flags, devices, epochs):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    cmd = [binary, "train"] + DATA + flags + ["--devices", devices, "--epochs", str(epochs),
                                               "--json"]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    result["samples_per_second"] = result["global_step"] * batch_of(flags) / result["seconds"]
    return result


def triple(values):
    return (min(values), statistics.median(values), max(values))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bin", default="bazel-bin/tools/actorflow")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ap.add_argument("--only", default="", help="run only the cases whose name starts with this "
                    "(with their baselines), e.g. deep2048")
    args = ap.parse_args()
    global CASES
    if args.only:
        wanted = {name for name, *_ in CASES if name.startswith(args.only)}
        wanted |= {base for name, _, _, base in CASES if name in wanted and base}
        CASES = [case for case in CASES if case[0] in wanted]
        if not CASES:
            sys.exit(f"model_parallel_bench: no case starts with {args.only!r}")
    samples = {name: [] for name, *_ in CASES}
    ratios = {name: [] for name, *_ in CASES}
    extra = {}
    bubbles = {name: [] for name, *_ in CASES}
    for r in range(args.rounds):
        print(f"round {r + 1}/{args.rounds}", file=sys.stderr)
        this_round = {}
        for name, flags, devices, baseline in CASES:
            result = run_case(args.bin, flags, devices, args.epochs)
            this_round[name] = result["samples_per_second"]
            samples[name].append(result["samples_per_second"])
            if baseline:
                ratios[name].append(this_round[name] / this_round[baseline])
            extra[name] = {"bytes": result.get("cross_device_bytes_per_step", 0),
                           "accuracy": result["accuracy"]}
            if "bubble_fraction" in result:
                bubbles[name].append(result["bubble_fraction"])
                extra[name]["theory"] = result["bubble_fraction_theory"]
    rows = []
    for name, flags, devices, baseline in CASES:
        row = {"case": name, "devices": devices,
               "samples_per_second": triple(samples[name]),
               "ratio_vs_none": triple(ratios[name]) if ratios[name] else None,
               "cross_device_bytes_per_step": extra[name]["bytes"],
               "accuracy": extra[name]["accuracy"]}
        if bubbles[name]:
            row["bubble"] = triple(bubbles[name])
            row["bubble_theory"] = extra[name]["theory"]
        rows.append(row)
    if not args.markdown:
        print(json.dumps(rows))
        return
    print("| case | devices | samples/s (min / median / max) | ÷ baseline, same round | "
          "bytes across devices per step | bubble measured (theory) |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        s = " / ".join(f"{v:.0f}" for v in row["samples_per_second"])
        ratio = " / ".join(f"{v:.2f}" for v in row["ratio_vs_none"]) if row["ratio_vs_none"] else "1"
        bubble = ""
        if "bubble" in row:
            bubble = " / ".join(f"{v:.3f}" for v in row["bubble"]) + f" ({row['bubble_theory']:.3f})"
        print(f"| {row['case']} | {row['devices']} | {s} | {ratio} | "
              f"{row['cross_device_bytes_per_step']} | {bubble} |")


if __name__ == "__main__":
    main()
