#!/bin/bash
# Runs examples/cluster/run_cluster.sh and checks what it promises: exit 0, three
# servers that got ready, the model trained to w = 3, b = 2 by client 1, client 2
# (another master) seeing the same values, and no server left running afterwards.
set -euo pipefail

script="${TEST_SRCDIR}/${TEST_WORKSPACE:-actorflow}/examples/cluster/run_cluster.sh"
output="$("${script}" 2>&1)" || { echo "${output}"; echo "FAIL: run_cluster.sh exited with status $?"; exit 1; }
echo "${output}"

fail() { echo "FAIL: $*"; exit 1; }

ready="$(grep -c '^actorflow server ready: actorflow://127.0.0.1:[0-9]* job=' <<<"${output}" || true)"
[[ "${ready}" == 3 ]] || fail "expected 3 ready servers, saw ${ready}"

grep -q '^client 1 (actorflow://127.0.0.1:[0-9]*): w = 3.0000 b = 2.0000$' <<<"${output}" ||
  fail "client 1 did not train w = 3.0000 b = 2.0000"
grep -q '^client 2 (actorflow://127.0.0.1:[0-9]*): w = 3.0000 b = 2.0000$' <<<"${output}" ||
  fail "client 2 did not see client 1's w = 3.0000 b = 2.0000"

loss0="$(sed -n 's/^step 0: loss \(.*\)$/\1/p' <<<"${output}")"
loss200="$(sed -n 's/^step 200: loss \(.*\)$/\1/p' <<<"${output}")"
[[ -n "${loss0}" && -n "${loss200}" ]] || fail "missing the loss of step 0 or step 200"
awk -v a="${loss0}" -v b="${loss200}" 'BEGIN { exit !(b < a / 1000) }' ||
  fail "the loss did not fall: ${loss0} -> ${loss200}"

for pid in $(sed -n 's/^started .* pid \([0-9]*\)$/\1/p' <<<"${output}"); do
  if kill -0 "${pid}" 2>/dev/null; then fail "server pid ${pid} still runs after the script ended"; fi
done
echo "PASS"
