#!/bin/bash
# Runs //tools/bench:training_bench and the PyTorch peer (torch_mlp_bench.py)
# alternately in one run -- ours, torch, ours, torch, ... R rounds -- and prints the
# ratio ours/torch per round as min / median / max over the rounds, for:
#   MLP 784-256-256-10 b64 and b256 on 1 core  (ours t1 = 1 OpenBLAS thread;
#                                               torch 1/1)
#   the same on 2 cores                        (ours t2 = 2 OpenBLAS threads;
#                                               torch 1/2, Debian's default)
#   Iris 4-10-10-3 b32 steps/s, 1 and 2 cores
# through DirectSession and the actor session. Each round's figure on either side is
# the median of --inner repetitions inside that process.
#
# Usage (from the repository root):
#   tools/bench/run_training_vs_torch.sh [-r ROUNDS] [--inner N] [--peers DIR]
#       [--bin PATH] [--no-build] [--out DIR] [--session direct|actor|both]
#       [--tries N] [--quiet-wait S]
#   -r ROUNDS   rounds (default 5)
#   --inner N   repetitions inside each process per round (default 3)
#   --peers DIR where torch_mlp_bench.py lives (default ../shared/peers, relative to
#               the repository root)
#   --bin PATH  the training_bench binary (default: the -c opt build's, built with
#               `bazel build -c opt` unless --no-build)
#   --out DIR   where the raw JSON and logs go (default /tmp/training_vs_torch-<time>)
#   --tries N, --quiet-wait S  passed to both sides: a sample taken while other
#               processes used more than 0.25 cores is retaken (at most N attempts,
#               default 3); each repetition first waits up to S s (default 10) for quiet
# Needs Debian's /usr/bin/python3 with python3-torch and python3-sklearn.
set -euo pipefail

rounds=5
inner=3
repo="$(cd "$(dirname "$0")/../.." && pwd)"
peers="$repo/../shared/peers"
bin=""
build=1
session=both
tries=3
quiet_wait=10
out="/tmp/training_vs_torch-$(date +%Y%m%d-%H%M%S)"
python=/usr/bin/python3

while [ $# -gt 0 ]; do
  case "$1" in
    -r|--rounds) rounds="$2"; shift 2 ;;
    --inner) inner="$2"; shift 2 ;;
    --peers) peers="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    --no-build) build=0; shift ;;
    --out) out="$2"; shift 2 ;;
    --session) session="$2"; shift 2 ;;
    --tries) tries="$2"; shift 2 ;;
    --quiet-wait) quiet_wait="$2"; shift 2 ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "run_training_vs_torch.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done

peer="$peers/torch_mlp_bench.py"
if [ ! -f "$peer" ]; then
  echo "run_training_vs_torch.sh: no PyTorch peer at $peer (use --peers DIR)" >&2
  exit 1
fi
if ! "$python" -c "import torch, sklearn" 2>/dev/null; then
  echo "run_training_vs_torch.sh: $python lacks torch/sklearn:" \
       "apt-get install -y python3-torch python3-sklearn python3-numpy" >&2
  exit 1
fi
cd "$repo"
if [ -z "$bin" ]; then
  if [ "$build" = 1 ]; then
    bazel build -c opt //tools/bench:training_bench >&2
  fi
  # Copied so that a concurrent rebuild cannot swap the binary between rounds.
  mkdir -p "$out"
  cp -f "$(bazel info -c opt bazel-bin 2>/dev/null)/tools/bench/training_bench" \
    "$out/training_bench"
  bin="$out/training_bench"
fi
mkdir -p "$out"

echo "rounds=$rounds inner=$inner session=$session peer=$peer out=$out" >&2
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for ((r = 1; r <= rounds; r++)); do
  echo "round $r/$rounds: ours" >&2
  "$bin" --json --reps "$inner" --session "$session" --tries "$tries" \
    --quiet-wait "$quiet_wait" > "$out/ours-$r.json" 2> "$out/ours-$r.log"
  echo "round $r/$rounds: torch" >&2
  "$python" "$peer" --reps "$inner" --configs 1/1 1/2 --tries "$tries" \
    --quiet-wait "$quiet_wait" > "$out/torch-$r.log" 2>&1
  cp /tmp/peers/torch_mlp_bench.json "$out/torch-$r.json"
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

"$python" - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
ours = [json.load(open(f"{out}/ours-{r}.json")) for r in range(1, rounds + 1)]
torch = [json.load(open(f"{out}/torch-{r}.json")) for r in range(1, rounds + 1)]
print(f"training_bench vs PyTorch {torch[0]['torch']}, {rounds} rounds interleaved "
      f"(ours, torch, ...), each figure the median of {ours[0]['reps']} reps in its process")
print(f"iris data (ours): {ours[0]['iris_data']}; torch: sklearn load_iris, same 120-row split")
# Targets: MLP >= 1.0x through DirectSession; Iris >= 3x through both sessions.
rows = [("MLP b64  1 core", "mlp784 b64 t1", "mlp784 b64 1/1", {"direct": 1.0}),
        ("MLP b256 1 core", "mlp784 b256 t1", "mlp784 b256 1/1", {"direct": 1.0}),
        ("MLP b64  2 cores", "mlp784 b64 t2", "mlp784 b64 1/2", {"direct": 1.0}),
        ("MLP b256 2 cores", "mlp784 b256 t2", "mlp784 b256 1/2", {"direct": 1.0}),
        ("Iris b32 1 core", "iris b32 t1", "iris b32 1/1", {"direct": 3.0, "actor": 3.0}),
        ("Iris b32 2 cores", "iris b32 t2", "iris b32 1/2", {"direct": 3.0, "actor": 3.0})]
sessions = [s for s in ("direct", "actor") if any(k.startswith(s) for k in ours[0]["results"])]
hdr = (f"{'case':18s} {'session':7s} {'unit':10s} {'ours (med)':>11s} {'torch (med)':>11s}  "
       f"{'ratio ours/torch min / median / max':36s} {'target':>6s}  foreign max ours/torch")
print(hdr)
for label, ok, tk, targets in rows:
    for s in sessions:
        target = targets.get(s)
        key = f"{s} {ok}"
        if key not in ours[0]["results"] or tk not in torch[0]["results"]:
            continue
        o = [x["results"][key]["median"] for x in ours]
        t = [x["results"][tk]["median"] for x in torch]
        ratios = [a / b for a, b in zip(o, t)]
        fo = max(x["results"][key]["foreign_max"] for x in ours)
        ft = max(x["results"][tk]["foreign_max"] for x in torch)
        med = statistics.median(ratios)
        if target is None:
            goal = f"{'-':>6s} {'':6s}"
        else:
            goal = f">={target:.1f}x {'met' if med >= target else 'MISSED':6s}"
        print(f"{label:18s} {s:7s} {ours[0]['results'][key]['unit']:10s} "
              f"{statistics.median(o):11.0f} {statistics.median(t):11.0f}  "
              f"{min(ratios):6.2f} / {med:6.2f} / {max(ratios):6.2f}{'':14s} "
              f"{goal} {fo:.2f}/{ft:.2f}")
PY
