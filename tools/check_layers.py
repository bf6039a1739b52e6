#!/usr/bin/env python3
"""Checks that no include runs back up a layer (README, "Layout").

The layers, lowest first, are the folders below; a file may include files of its own
layer and of the layers before it. A file belongs to the longest folder that holds it.
Unit tests (*_test.cc) may reach further up, to check one layer with the next; their
upward includes are listed with --tests, not refused.

  tools/check_layers.py            exit 1, naming each include that runs up
  tools/check_layers.py --tests    also list the tests' upward includes
"""
import os
import re
import subprocess
import sys

LAYERS = [
    "graph", "kernels", "placement",
    "actors/scheduler", "actors/protocol", "actors/transport", "actors/runtime", "actors/ps",
    "actors/cluster", "actors/sim",
    "training/optimizers", "training/data", "training/summary", "training/checkpoint",
    "training/monitored",
    "training/estimators", "training/distributed", "training/serving",
    "actors/serving", "actors/monitored", "actors/trainer",
    "tools/cli", "tools/train", "tools/serve", "tools", "tools/fuzz",
    "examples", "tests", "tools/bench",
]
INCLUDE = re.compile(r'\s*#\s*include\s+"([^"]+)"')


def layer_of(path):
    """Index in LAYERS of the longest folder holding `path`, or None."""
    best = None
    for i, folder in enumerate(LAYERS):
        if path.startswith(folder + "/") and (best is None or len(folder) > len(LAYERS[best])):
            best = i
    return best


def upward_includes(files):
    for path in files:
        own = layer_of(path)
        if own is None:
            continue
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                target = layer_of(m.group(1)) if m else None
                if target is not None and target > own:
                    yield f"{path}:{number}: {LAYERS[own]}/ includes {m.group(1)}"


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files = subprocess.run(["git", "ls-files", "*.h", "*.cc"], cwd=root, check=True,
                           capture_output=True, text=True).stdout.split()
    os.chdir(root)
    library = [f for f in files if not f.endswith("_test.cc")]
    bad = list(upward_includes(library))
    for line in bad:
        print(line)
    if "--tests" in sys.argv[1:]:
        for line in upward_includes([f for f in files if f.endswith("_test.cc")]):
            print("test (allowed):", line)
    if bad:
        print(f"check_layers: {len(bad)} include(s) run back up a layer (README, Layout)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
