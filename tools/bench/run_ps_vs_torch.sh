#!/bin/bash
# Runs //tools/bench:ps_bench and the PyTorch distributed peer dist_bench.py (modes
# ddp and ps; an external script, not part of this repository: --peers DIR, default
# ../shared/peers beside the repository) alternately in one run -- ours,
# torch, ours, torch, ... R rounds -- and prints, per round and as min / median / max
# over the rounds:
#   sync:  our ms per global step (1 ps + 2 workers, every update averages both
#          gradients) / DDP's ms per step (gloo, 2 processes)      target <= 1.5, goal 1.0
#   async: our updates/s at the ps / the torch.rpc parameter server's
#                                                                  target >= 1, goal 3
# and both as ratios to one local process in the same run (ours: the same compute
# without a ps; torch: DDP/single samples/s, rpc updates/s / local steps/s).
# Setup of both: 127.0.0.1, MLP 784-256-256-10, batch 64 per worker, SGD lr 0.1,
# one BLAS thread per process.
#
# Usage (from the repository root):
#   tools/bench/run_ps_vs_torch.sh [-r ROUNDS] [--reps N] [--peers DIR] [--bin PATH]
#       [--no-build] [--out DIR] [--session actor|direct]
# Needs Debian's /usr/bin/python3 with python3-torch.
set -euo pipefail

rounds=3
reps=5
repo="$(cd "$(dirname "$0")/../.." && pwd)"
peers="$repo/../shared/peers"
bin=""
build=1
session=actor
out="/tmp/ps_vs_torch-$(date +%Y%m%d-%H%M%S)"
python=/usr/bin/python3

while [ $# -gt 0 ]; do
  case "$1" in
    -r|--rounds) rounds="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --peers) peers="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    --no-build) build=0; shift ;;
    --out) out="$2"; shift 2 ;;
    --session) session="$2"; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "run_ps_vs_torch.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done

peer="$peers/dist_bench.py"
if [ ! -f "$peer" ]; then
  echo "run_ps_vs_torch.sh: no PyTorch peer at $peer (use --peers DIR)" >&2
  exit 1
fi
if ! "$python" -c "import torch" 2>/dev/null; then
  echo "run_ps_vs_torch.sh: $python lacks torch: apt-get install -y python3-torch" >&2
  exit 1
fi
cd "$repo"
mkdir -p "$out"
actorflow_bin=""
if [ -z "$bin" ]; then
  if [ "$build" = 1 ]; then
    bazel build -c opt //tools/bench:ps_bench //tools:actorflow >&2
  fi
  # Copied so that a concurrent rebuild cannot swap the binaries between rounds.
  bazel_bin="$(bazel info -c opt bazel-bin 2>/dev/null)"
  cp -f "$bazel_bin/tools/bench/ps_bench" "$out/ps_bench"
  cp -f "$bazel_bin/tools/actorflow" "$out/actorflow"
  bin="$out/ps_bench"
  actorflow_bin="$out/actorflow"
fi

echo "rounds=$rounds reps=$reps session=$session peer=$peer out=$out" >&2
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for ((r = 1; r <= rounds; r++)); do
  echo "round $r/$rounds: ours" >&2
  args=(--json --reps "$reps" --session "$session")
  [ -n "$actorflow_bin" ] && args+=(--actorflow "$actorflow_bin")
  "$bin" "${args[@]}" > "$out/ours-$r.json" 2> "$out/ours-$r.log"
  echo "round $r/$rounds: torch ddp + ps" >&2
  "$python" "$peer" ddp --reps "$reps" > "$out/torch-ddp-$r.log" 2>&1
  "$python" "$peer" ps --reps "$reps" > "$out/torch-ps-$r.log" 2>&1
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

"$python" - "$out" "$rounds" <<'PY'
import json, re, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])

def triple(line):
    m = re.search(r"min ([\d.]+) / median ([\d.]+) / max ([\d.]+)", line)
    return [float(x) for x in m.groups()] if m else None

def torch_round(r):
    ddp = open(f"{out}/torch-ddp-{r}.log").read().splitlines()
    ps = open(f"{out}/torch-ps-{r}.log").read().splitlines()
    res = {}
    for line in ddp:
        s = line.strip()
        if s.startswith("ddp ") and "step ms" in s: res["ddp_ms"] = triple(s)[1]
        if s.startswith("single ") and "step ms" in s: res["single_ms"] = triple(s)[1]
    for line in ps:
        s = line.strip()
        if s.startswith("server updates/s"): res["rpc_ups"] = triple(s)[1]
        if s.startswith("local steps/s"): res["rpc_local"] = triple(s.split(":", 1)[1])[1]
    return res

def mmm(v, f="{:.2f}"):
    return f"{f.format(min(v))} / {f.format(statistics.median(v))} / {f.format(max(v))}"

ours = [json.load(open(f"{out}/ours-{r}.json")) for r in range(1, rounds + 1)]
torch = [torch_round(r) for r in range(1, rounds + 1)]
print(f"ps_bench ({ours[0]['session']} session) vs PyTorch dist_bench.py, {rounds} rounds "
      f"interleaved; per round each side's figure is the median of its repetitions")
rows = []
for k, (o, t) in enumerate(zip(ours, torch), 1):
    missing = [key for key in ("ddp_ms", "single_ms", "rpc_ups", "rpc_local") if key not in t]
    if missing:
        print(f"round {k}: the peer gave no {', '.join(missing)} (see its log); round skipped")
        continue
    sync_ms = o["sync"]["step_ms_stats"]["median"]
    ups = o["async"]["updates_per_s_stats"]["median"]
    rows.append({
        "sync_ms": sync_ms, "ddp_ms": t.get("ddp_ms"),
        "sync_ratio": sync_ms / t["ddp_ms"],
        "ours_sync_vs_local": o["sync"]["ratio_to_local_samples"],
        "ddp_vs_single": 2 * t["single_ms"] / t["ddp_ms"],
        "async_ups": ups, "rpc_ups": t.get("rpc_ups"),
        "async_ratio": ups / t["rpc_ups"],
        "ours_async_vs_local": o["async"]["ratio_to_local_steps"],
        "rpc_vs_local": t["rpc_ups"] / t["rpc_local"],
        "local": o["local_steps_per_s"]["median"],
    })
if not rows:
    sys.exit("no complete round")
for k, r in enumerate(rows, 1):
    print(f"round {k}: sync {r['sync_ms']:.3f} ms vs DDP {r['ddp_ms']:.3f} ms (ratio {r['sync_ratio']:.2f}); "
          f"async {r['async_ups']:.0f} vs rpc {r['rpc_ups']:.0f} updates/s (ratio {r['async_ratio']:.2f}); "
          f"our local {r['local']:.0f} steps/s")
col = lambda k: [r[k] for r in rows]
print(f"sync step time ours/DDP        min / median / max {mmm(col('sync_ratio'))}   target <= 1.5, goal 1.0")
print(f"async updates/s ours/torch.rpc min / median / max {mmm(col('async_ratio'))}   target >= 1, goal 3")
print(f"as ratio to one local process (samples/s for sync, ideal 2; updates/s vs steps/s for async, ideal 2):")
print(f"  sync : ours {mmm(col('ours_sync_vs_local'))}   DDP/single {mmm(col('ddp_vs_single'))}")
print(f"  async: ours {mmm(col('ours_async_vs_local'))}   torch.rpc  {mmm(col('rpc_vs_local'))}")
PY
