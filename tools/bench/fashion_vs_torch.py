#!/usr/bin/python3
"""Fashion-MNIST training: `actorflow train --dataset fashion-mnist` beside the PyTorch
peer (../shared/peers/fashion_peer.py: the same models, batch 100, Adam 1e-3, pixels in
[0, 1]), interleaved in one run.

Figures (ratio = ours / peer, so above 1 is faster than PyTorch; min / median / max over
the rounds):
  speed     training samples/s of convnet, convnet-bn and mlp (256-128-100) at 1 thread
            (OPENBLAS_NUM_THREADS=1 and torch.set_num_threads(1), both pinned to one core
            with taskset) and 2 threads (2 OpenBLAS threads; torch 2 threads), each side
            training --speed-steps batches of the first --speed-steps*100 images;
  accuracy  with --accuracy EPOCHS: each model trained EPOCHS epochs on the whole
            training set at 2 threads, the test accuracy after every epoch on both
            sides, and for convnet the training seconds until the test accuracy first
            reached 0.90 (time to 0.90).
The sides alternate (ours, peer, peer, ours, ...) so that drifts of this shared machine
hit both. Each side's samples/s is its own training time only (evaluation excluded).

Usage (from the repository root):
  bazel build -c opt //tools:actorflow
  tools/bench/fashion_vs_torch.py [--rounds R] [--speed-steps N] [--models convnet,...]
                                  [--accuracy EPOCHS] [--json FILE] [--bin PATH]
Needs Debian's /usr/bin/python3 with python3-torch and python3-numpy, and the
dataset-fashion-mnist package.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEER = os.path.join(REPO, "..", "shared", "peers", "fashion_peer.py")
PEER_MODEL = {"convnet": "tfcnn", "convnet-bn": "bncnn", "mlp": "mlp"}
OURS_HIDDEN = {"convnet": "1024", "convnet-bn": "1024", "mlp": "256,128,100"}
TARGETS = {"convnet": 1.2, "convnet-bn": 1.2, "mlp": 1.25}
BATCH = 100


def run_json(cmd, env_extra, pin):
    env = dict(os.environ, **env_extra)
    if pin:
        cmd = ["taskset", "-c", "0"] + cmd
    done = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    if done.returncode != 0:
        sys.exit(f"fashion_vs_torch: {' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def ours(binary, model, threads, steps=None, epochs=None):
    cmd = [binary, "train", "--dataset", "fashion-mnist", "--model", model, "--hidden",
           OURS_HIDDEN[model], "--batch", str(BATCH), "--optimizer", "adam", "--lr", "0.001",
           "--json"]
    cmd += ["--steps", str(steps)] if steps else ["--epochs", str(epochs)]
    env = {"OPENBLAS_NUM_THREADS": str(threads)}
    return run_json(cmd, env, pin=threads == 1)


def peer(model, threads, steps=None, epochs=None):
    cmd = ["/usr/bin/python3", PEER, "--model", PEER_MODEL[model], "--threads", str(threads),
           "--batch", str(BATCH), "--json"]
    cmd += ["--epochs", "1", "--limit", str(steps * BATCH)] if steps else ["--epochs", str(epochs)]
    env = {"OMP_NUM_THREADS": str(threads), "OPENBLAS_NUM_THREADS": str(threads)}
    return run_json(cmd, env, pin=threads == 1)


def spread(values):
    return [min(values), statistics.median(values), max(values)]


def time_to(accuracies, seconds, target):
    for a, s in zip(accuracies, seconds):
        if a >= target:
            return s
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--speed-steps", type=int, default=60)
    ap.add_argument("--models", default="convnet,convnet-bn,mlp")
    ap.add_argument("--accuracy", type=int, default=0, help="epochs of the accuracy runs")
    ap.add_argument("--bin", default=os.path.join(REPO, "bazel-bin", "tools", "actorflow"))
    ap.add_argument("--json", help="also write the figures here")
    a = ap.parse_args()
    models = a.models.split(",")
    figures = {}
    for model in models:
        for threads in (1, 2):
            ratios = []
            for r in range(a.rounds):
                pair = []
                for side in (("ours", "peer") if r % 2 == 0 else ("peer", "ours")):
                    if side == "ours":
                        pair.append(("ours", ours(a.bin, model, threads, steps=a.speed_steps)))
                    else:
                        pair.append(("peer", peer(model, threads, steps=a.speed_steps)))
                got = dict(pair)
                ratios.append(got["ours"]["samples_per_second"] / got["peer"]["samples_per_second"])
                print(f"{model} {threads}t round {r + 1}: ours {got['ours']['samples_per_second']:.0f}"
                      f" peer {got['peer']['samples_per_second']:.0f} samples/s", file=sys.stderr)
            figures[f"{model} samples/s ours/peer {threads}t"] = spread(ratios)
    if a.accuracy:
        for model in models:
            o = ours(a.bin, model, 2, epochs=a.accuracy)
            p = peer(model, 2, epochs=a.accuracy)
            figures[f"{model} accuracy by epoch ours"] = o["accuracy_by_epoch"]
            figures[f"{model} accuracy by epoch peer"] = p["accuracy_by_epoch"]
            figures[f"{model} seconds by epoch ours"] = o["seconds_by_epoch"]
            figures[f"{model} seconds by epoch peer"] = p["seconds_by_epoch"]
            if model == "convnet":
                figures["convnet seconds to 0.90 ours"] = time_to(
                    o["accuracy_by_epoch"], o["seconds_by_epoch"], 0.90)
                figures["convnet seconds to 0.90 peer"] = time_to(
                    p["accuracy_by_epoch"], p["seconds_by_epoch"], 0.90)
    print("| figure | min / median / max (or value) | target |")
    print("|---|---|---|")
    for name, value in figures.items():
        target = ""
        for model, t in TARGETS.items():
            if name.startswith(model + " samples/s"):
                target = f">= {t}x"
        if isinstance(value, list) and len(value) == 3 and "samples/s" in name:
            print(f"| {name} | {value[0]:.2f} / {value[1]:.2f} / {value[2]:.2f} | {target} |")
        else:
            print(f"| {name} | {value} | |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(figures, f, indent=1)


if __name__ == "__main__":
    main()
