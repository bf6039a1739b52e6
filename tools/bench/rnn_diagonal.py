#!/usr/bin/env python3
"""Reads the Chrome trace of one training step of `actorflow train --model rnn
--split layer --trace FILE` (or `--model char-lstm --split layer`) and says whether
the deep RNN filled diagonally: for some time step t, layer l's cell at t ran at the
same time as layer l-1's cell at t+1 (TensorFlow 1.x's Figure 12-16).

A cell is the forward nodes named `rnn/layer<l>/t<t>/...` (the rnn) or
`lstm_<l>/step_<t>/...` (char-lstm); its interval runs from its first node's start
to its last node's end. Prints one JSON object:
  {"cells": N, "pairs": N, "overlapping_pairs": N, "max_layers_at_once": N,
   "examples": ["layer 1 t3 [a, b) overlaps layer 0 t4 [c, d)", ...]}
and exits 0 when overlapping_pairs > 0, 1 when none overlap, 2 on a bad trace.

Usage: tools/bench/rnn_diagonal.py TRACE.json [--quiet]
"""
import json
import re
import sys

CELLS = (re.compile(r"^rnn/layer(\d+)/t(\d+)/"), re.compile(r"^lstm_(\d+)/step_(\d+)/"))


def cell_intervals(events):
    cells = {}
    for event in events:
        if event.get("ph") != "X":
            continue
        name = event.get("name", "")
        match = next((m for m in (c.match(name) for c in CELLS) if m), None)
        if not match:
            continue
        key = (int(match.group(1)), int(match.group(2)))
        start, end = event["ts"], event["ts"] + event.get("dur", 0)
        low, high = cells.get(key, (start, end))
        cells[key] = (min(low, start), max(high, end))
    return cells


def max_layers_at_once(cells):
    edges = []
    for (layer, _), (start, end) in cells.items():
        edges.append((start, 1, layer))
        edges.append((end, -1, layer))
    busy, best = {}, 0
    for _, delta, layer in sorted(edges, key=lambda e: (e[0], e[1])):
        busy[layer] = busy.get(layer, 0) + delta
        best = max(best, sum(1 for count in busy.values() if count > 0))
    return best


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        with open(argv[1]) as f:
            trace = json.load(f)
    except (OSError, ValueError) as error:
        print(f"rnn_diagonal: cannot read {argv[1]}: {error}", file=sys.stderr)
        return 2
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    cells = cell_intervals(events)
    if not cells:
        print(f"rnn_diagonal: {argv[1]} has no rnn/layer<l>/t<t>/ or lstm_<l>/step_<t>/ nodes", file=sys.stderr)
        return 2
    pairs, examples = 0, []
    for (layer, step), (start, end) in sorted(cells.items()):
        earlier = cells.get((layer - 1, step + 1))
        if earlier is None:
            continue
        pairs += 1
        if start < earlier[1] and earlier[0] < end:
            examples.append(f"layer {layer} t{step} [{start}, {end}) overlaps "
                            f"layer {layer - 1} t{step + 1} [{earlier[0]}, {earlier[1]})")
    result = {"cells": len(cells), "pairs": pairs, "overlapping_pairs": len(examples),
              "max_layers_at_once": max_layers_at_once(cells), "examples": examples[:5]}
    if "--quiet" not in argv:
        print(json.dumps(result))
    return 0 if examples else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
