#!/usr/bin/env python3
"""The character language models placed over several devices, beside their run on
one device, interleaved in one run (same seed, same windows, same steps):

  lstm-split       --model char-lstm --hidden 256,256,256 --split layer --devices cpu=3
                   (a layer per device), and whether the trace of a step shows the
                   diagonal fill (tools/bench/rnn_diagonal.py);
  transformer-pipe --model char-transformer --split layer --devices cpu=2 --pipeline 4
                   (two blocks per device, 4 micro-batches);
  lstm-dp, transformer-dp
                   --cluster local:ps=1,worker=2 (a tower per worker, synchronous,
                   --batch 16 per tower) beside one device on --batch 32: the same
                   windows per step.

Prints, per case: the validation bits per character of both runs and their
difference, samples/s min / median / max over --rounds and the speed-up (placed ÷
one device). Both runs compute the same step up to float summation order, so the bpc
differ by noise only.

Usage (from the repository root):
  bazel build -c opt //tools:actorflow
  tools/bench/char_lm_parallel.py [--cases lstm-split,transformer-pipe,lstm-dp,transformer-dp]
      [--rounds 3] [--steps 300] [--text DIR] [--bin PATH]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CASES = {
    "lstm-split": (["--model", "char-lstm", "--hidden", "256,256,256"],
                   ["--split", "layer", "--devices", "cpu=3"], []),
    "transformer-pipe": (["--model", "char-transformer"],
                         ["--split", "layer", "--devices", "cpu=2", "--pipeline", "4"], []),
    "lstm-dp": (["--model", "char-lstm"],
                ["--cluster", "local:ps=1,worker=2", "--batch", "16"], ["--batch", "32"]),
    "transformer-dp": (["--model", "char-transformer"],
                       ["--cluster", "local:ps=1,worker=2", "--batch", "16"], ["--batch", "32"]),
}


def train(args, flags):
    command = [args.bin, "train", "--text", args.text, "--steps", str(args.steps),
               "--eval-chars", str(args.eval_chars), "--json"] + flags
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"char_lm_parallel: {' '.join(command)} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def spread(values):
    return "{:.1f} / {:.1f} / {:.1f}".format(min(values), statistics.median(values), max(values))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--eval-chars", type=int, default=32768)
    parser.add_argument("--text", default="/usr/share/games/fortunes")
    parser.add_argument("--bin", default="bazel-bin/tools/actorflow")
    args = parser.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    for case in args.cases.split(","):
        model, placed_flags, single_flags = CASES[case]
        placed, single, overlaps = [], [], []
        for _ in range(args.rounds):
            single.append(train(args, model + single_flags))
            with tempfile.TemporaryDirectory() as tmp:
                trace = os.path.join(tmp, "trace.json")
                extra = ["--trace", trace] if case == "lstm-split" else []
                placed.append(train(args, model + placed_flags + extra))
                if extra:
                    diagonal = subprocess.run(
                        [sys.executable, os.path.join(here, "rnn_diagonal.py"), trace],
                        capture_output=True, text=True, check=False)
                    if diagonal.stdout.strip():
                        overlaps.append(json.loads(diagonal.stdout))
        speedups = [p["samples_per_second"] / s["samples_per_second"]
                    for p, s in zip(placed, single)]
        row = {
            "case": case,
            "bpc_placed": [round(p["bits_per_char"], 4) for p in placed],
            "bpc_one_device": [round(s["bits_per_char"], 4) for s in single],
            "bpc_difference_max": round(max(abs(p["bits_per_char"] - s["bits_per_char"])
                                            for p, s in zip(placed, single)), 5),
            "samples_per_second_placed": spread([p["samples_per_second"] for p in placed]),
            "samples_per_second_one_device": spread([s["samples_per_second"] for s in single]),
            "speedup": "{:.2f} / {:.2f} / {:.2f}".format(min(speedups),
                                                         statistics.median(speedups),
                                                         max(speedups)),
            "cross_device_bytes_per_step": placed[0]["cross_device_bytes_per_step"],
        }
        if "bubble_fraction" in placed[0]:
            row["bubble_fraction"] = [round(p["bubble_fraction"], 3) for p in placed]
            row["bubble_fraction_theory"] = placed[0]["bubble_fraction_theory"]
        if overlaps:
            row["diagonal_overlapping_pairs"] = [o["overlapping_pairs"] for o in overlaps]
            row["diagonal_max_layers_at_once"] = [o["max_layers_at_once"] for o in overlaps]
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
