#!/bin/bash
# rnn_diagonal.py on made-up traces (a diagonal fill, a strictly layer-by-layer run, a
# trace with no RNN cells, a file that is not JSON) and on a real traced step of
# `train --model rnn --split layer --devices cpu=3`: the analyzer must find every cell
# of the real trace; whether they overlap depends on the cores, so only the count is
# asserted there.
set -euo pipefail
script=tools/bench/rnn_diagonal.py
actorflow=tools/actorflow
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

event() {  # name ts dur
  printf '{"name":"%s","ph":"X","ts":%s,"dur":%s,"pid":0,"tid":0,"args":{}}' "$1" "$2" "$3"
}
# Two layers, three time steps. Diagonal: layer 1 t0 [20,30) runs while layer 0 t1
# [10,25) does; sequential: every layer-1 cell starts after layer 0 ended.
cat > "$dir/diagonal.json" <<JSON
{"traceEvents":[$(event rnn/layer0/t0/h 0 10),$(event rnn/layer0/t1/h 10 15),
$(event rnn/layer0/t2/h 25 10),$(event rnn/layer1/t0/input_matmul 20 5),
$(event rnn/layer1/t0/h 25 5),$(event rnn/layer1/t1/h 35 10),$(event rnn/layer1/t2/h 45 10),
$(event gradients/rnn/layer1/t2/h_grad 60 10)]}
JSON
cat > "$dir/sequential.json" <<JSON
[$(event rnn/layer0/t0/h 0 10),$(event rnn/layer0/t1/h 10 10),$(event rnn/layer0/t2/h 20 10),
$(event rnn/layer1/t0/h 30 10),$(event rnn/layer1/t1/h 40 10),$(event rnn/layer1/t2/h 50 10)]
JSON

out=$(python3 "$script" "$dir/diagonal.json") || fail "diagonal trace: exit $?"
echo "$out" | grep -q '"cells": 6, "pairs": 2, "overlapping_pairs": 1, "max_layers_at_once": 2' \
  || fail "diagonal trace: $out"
echo "$out" | grep -q 'layer 1 t0 \[20, 30) overlaps layer 0 t1 \[10, 25)' || fail "example: $out"

set +e
out=$(python3 "$script" "$dir/sequential.json"); rc=$?
set -e
[ "$rc" = 1 ] || fail "sequential trace: exit $rc, want 1 ($out)"
echo "$out" | grep -q '"overlapping_pairs": 0, "max_layers_at_once": 1' || fail "sequential: $out"

echo '[{"name":"dense/MatMul","ph":"X","ts":0,"dur":1}]' > "$dir/no_rnn.json"
echo 'not json' > "$dir/bad.json"
for bad in no_rnn bad missing; do
  set +e
  err=$(python3 "$script" "$dir/$bad.json" 2>&1 >/dev/null); rc=$?
  set -e
  [ "$rc" = 2 ] || fail "$bad: exit $rc, want 2"
  echo "$err" | grep -q "$bad.json" || fail "$bad: the error does not name the file: $err"
done

"$actorflow" train --model rnn --split layer --devices cpu=3 --epochs 1 \
  --train examples/data/digits_training.csv --test examples/data/digits_test.csv --normalize \
  --trace "$dir/real.json" > /dev/null 2>&1 || fail "train --trace failed"
set +e
out=$(python3 "$script" "$dir/real.json"); rc=$?
set -e
[ "$rc" = 0 ] || [ "$rc" = 1 ] || fail "real trace: exit $rc"
# 3 layers x 8 time steps; layers 1-2 each pair with 7 cells of the layer below.
echo "$out" | grep -q '"cells": 24, "pairs": 14' || fail "real trace: $out"

# The character LSTM split by layers: its cells are lstm_<l>/step_<t>/.
for k in $(seq 1 60); do printf 'the cat sat on the mat %s\n%%\n' $((k % 7)); done > "$dir/text.txt"
"$actorflow" train --model char-lstm --text "$dir/text.txt" --seq-len 8 --batch 4 --steps 3 \
  --hidden 8,8,8 --embedding-dim 4 --eval-chars 64 --split layer --devices cpu=3 \
  --trace "$dir/lstm.json" > /dev/null 2>&1 || fail "train --model char-lstm --trace failed"
set +e
lstm=$(python3 "$script" "$dir/lstm.json"); rc=$?
set -e
[ "$rc" = 0 ] || [ "$rc" = 1 ] || fail "char-lstm trace: exit $rc"
# 3 layers x 8 steps; layers 1-2 each pair with 7 cells of the layer below.
echo "$lstm" | grep -q '"cells": 24, "pairs": 14' || fail "char-lstm trace: $lstm"
echo "PASS: $out; char-lstm: $lstm"
