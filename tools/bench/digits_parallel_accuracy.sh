#!/bin/bash
# Test accuracy of data-parallel training on digits (hidden [128], --normalize) on a
# simulated cluster (`actorflow train --cluster local:ps=1,worker=W`): 1, 2 and 4
# workers in sync mode and 2 workers in async mode, the same number of epochs (an
# epoch is one pass over the training set by all workers together), 3 seeds each.
# Prints every run and, per setting, the median accuracy and its difference to the
# median of one worker; the acceptance bounds are 1.5 points for sync and 2 for async.
#
# Usage (from the repository root):
#   tools/bench/digits_parallel_accuracy.sh [--epochs N] [--seeds "1 2 3"] [--bin PATH]
#       [--no-build] [--out DIR] [-- extra train flags...]
set -euo pipefail

epochs=30
seeds="1 2 3"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
bin=""
build=1
out="/tmp/digits_parallel-$(date +%Y%m%d-%H%M%S)"
extra=()

while [ $# -gt 0 ]; do
  case "$1" in
    --epochs) epochs="$2"; shift 2 ;;
    --seeds) seeds="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    --no-build) build=0; shift ;;
    --out) out="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "digits_parallel_accuracy.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done

cd "$repo"
mkdir -p "$out"
if [ -z "$bin" ]; then
  if [ "$build" = 1 ]; then bazel build -c opt //tools:actorflow >&2; fi
  # Copied so that a concurrent rebuild cannot swap the binary between runs.
  cp -f "$(bazel info -c opt bazel-bin 2>/dev/null)/tools/actorflow" "$out/actorflow"
  bin="$out/actorflow"
fi

settings=("sync 1" "sync 2" "sync 4" "async 2")
echo "digits, hidden [128], --normalize, $epochs epochs, seeds: $seeds; logs in $out" >&2
for setting in "${settings[@]}"; do
  read -r mode workers <<< "$setting"
  for seed in $seeds; do
    log="$out/$mode-w$workers-s$seed"
    "$bin" train --cluster "local:ps=1,worker=$workers" --mode "$mode" \
      --train examples/data/digits_training.csv --test examples/data/digits_test.csv \
      --hidden 128 --normalize --epochs "$epochs" --seed "$seed" --json "${extra[@]}" \
      > "$log.out" 2> "$log.err" || { echo "failed: $setting seed $seed (see $log.err)" >&2; exit 1; }
    tail -n 1 "$log.out" > "$log.json"
  done
done

python3 - "$out" "$epochs" "$seeds" <<'PY'
import json, statistics, sys
out, epochs, seeds = sys.argv[1], sys.argv[2], sys.argv[3].split()
settings = [("sync", 1), ("sync", 2), ("sync", 4), ("async", 2)]
acc = {}
print(f"{'setting':14s} {'seed':>4s} {'accuracy':>9s} {'updates':>8s} {'dropped':>8s} "
      f"{'staleness':>9s} {'seconds':>8s}")
for mode, w in settings:
    for s in seeds:
        r = json.load(open(f"{out}/{mode}-w{w}-s{s}.json"))
        acc.setdefault((mode, w), []).append(r["accuracy"])
        print(f"{mode + ' x' + str(w):14s} {s:>4s} {r['accuracy']:9.4f} {r['updates_applied']:8d} "
              f"{r['dropped_stale']:8d} {r['mean_staleness']:9.2f} {r['seconds']:8.1f}")
base = statistics.median(acc[("sync", 1)])
print(f"\nmedians over seeds {' '.join(seeds)} ({epochs} epochs):")
for mode, w in settings:
    med = statistics.median(acc[(mode, w)])
    diff = 100 * (med - base)
    bound = 2.0 if mode == "async" else 1.5
    verdict = "" if (mode, w) == ("sync", 1) else (
        f"  {diff:+.2f} points vs 1 worker (bound {bound}): " + ("met" if abs(diff) <= bound or diff > 0 else "MISSED"))
    print(f"  {mode} x{w}: {med:.4f}{verdict}")
PY
