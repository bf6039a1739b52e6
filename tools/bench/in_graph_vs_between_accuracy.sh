#!/bin/bash
# Test accuracy on digits (hidden [128], --normalize) of the two replication variants
# on one simulated cluster shape, local:ps=1,worker=2, the same epochs and seeds:
#   in-graph       `actorflow train --replication in-graph --cluster local:ps=1,worker=2`
#                  (one client, a tower per worker, the averaged gradient applied once)
#   between-graph  `actorflow train --cluster local:ps=1,worker=2 --mode sync`
#                  (one client per worker, gradients aggregated on the ps)
# --batch is per tower and per worker alike, so both apply one update per 2 x batch
# rows. Prints every run, the median accuracy over the seeds of each variant, and
# whether they agree within 1.5 points. When between-graph training is not available
# (its flags are refused), only the in-graph half runs and the script says so.
#
# Usage (from the repository root):
#   tools/bench/in_graph_vs_between_accuracy.sh [--epochs N] [--seeds "1 2 3"]
#       [--bin PATH] [--no-build] [--out DIR] [-- extra train flags...]
set -euo pipefail

epochs=30
seeds="1 2 3"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
bin=""
build=1
out="/tmp/in_graph_vs_between-$(date +%Y%m%d-%H%M%S)"
extra=()

while [ $# -gt 0 ]; do
  case "$1" in
    --epochs) epochs="$2"; shift 2 ;;
    --seeds) seeds="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    --no-build) build=0; shift ;;
    --out) out="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "in_graph_vs_between_accuracy.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
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

cluster="local:ps=1,worker=2"
common=(train --train examples/data/digits_training.csv --test examples/data/digits_test.csv
        --hidden 128 --normalize --epochs "$epochs" --json)
echo "digits, hidden [128], --normalize, $epochs epochs, $cluster, seeds: $seeds; logs in $out" >&2

between=1
for seed in $seeds; do
  log="$out/in-graph-s$seed"
  "$bin" "${common[@]}" --seed "$seed" --replication in-graph --cluster "$cluster" "${extra[@]}" \
    > "$log.out" 2> "$log.err" || { echo "failed: in-graph seed $seed (see $log.err)" >&2; exit 1; }
  tail -n 1 "$log.out" > "$log.json"
  if [ "$between" = 1 ]; then
    log="$out/between-graph-s$seed"
    if "$bin" "${common[@]}" --seed "$seed" --cluster "$cluster" --mode sync "${extra[@]}" \
        > "$log.out" 2> "$log.err"; then
      tail -n 1 "$log.out" > "$log.json"
    else
      status=$?
      if [ "$status" = 2 ]; then  # a usage error: this build has no between-graph training
        echo "between-graph training is not available: $(head -n 1 "$log.err")" >&2
        between=0
      else
        echo "failed: between-graph seed $seed (see $log.err)" >&2
        exit 1
      fi
    fi
  fi
done

python3 - "$out" "$epochs" "$seeds" "$between" <<'PY'
import json, statistics, sys
out, epochs, seeds, between = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4] == "1"
variants = ["in-graph"] + (["between-graph"] if between else [])
acc = {}
print(f"{'variant':14s} {'seed':>4s} {'accuracy':>9s} {'loss':>7s} {'global_step':>11s} {'seconds':>8s}")
for v in variants:
    for s in seeds:
        r = json.load(open(f"{out}/{v}-s{s}.json"))
        acc.setdefault(v, []).append(r["accuracy"])
        print(f"{v:14s} {s:>4s} {r['accuracy']:9.4f} {r['loss']:7.4f} {r['global_step']:11d} "
              f"{r['seconds']:8.1f}")
print(f"\nmedians over seeds {' '.join(seeds)} ({epochs} epochs):")
for v in variants:
    print(f"  {v}: {statistics.median(acc[v]):.4f}")
if between:
    diff = 100 * (statistics.median(acc["in-graph"]) - statistics.median(acc["between-graph"]))
    print(f"  in-graph - between-graph: {diff:+.2f} points (bound 1.5): "
          + ("met" if abs(diff) <= 1.5 else "MISSED"))
else:
    print("  between-graph: not run (not available in this build)")
PY
