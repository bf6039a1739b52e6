#!/usr/bin/env bash
# Chaos run of supervised between-graph training with real processes: 1 ps + 3 workers
# train the digits (async, coordinated checkpoints) while a random task is SIGKILLed
# every few seconds and started again; then checks completion, a monotone global step,
# readable checkpoints, the accuracy against an undisturbed run and that no process is
# left. The driver is tools/chaos.py (Debian's python3, standard library only); see its
# header for the checks and flags.
#
#   bazel build //tools:actorflow
#   tools/chaos.sh [--duration-s 180] [--kill-every-s 5] [--seed 1] [--keep]
#
# Exit 0 when every check passed, 1 when one failed (the work directory is kept), 2 for
# a usage error.
set -euo pipefail
exec /usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/chaos.py" "$@"
