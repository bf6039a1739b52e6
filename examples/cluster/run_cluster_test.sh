#!/bin/bash
# Runs examples/cluster/run_cluster.sh and checks what it promises: exit 0, three
# servers that got ready, the model trained to w = 3, b = 2 by client 1, client 2
# (another master) seeing the same values, and no server left running afterwards.
# Then runs it again with a server that finds its port taken on the first try: the
# script restarts the cluster on new ports and keeps every promise.
set -euo pipefail

script="${TEST_SRCDIR}/${TEST_WORKSPACE:-actorflow}/examples/cluster/run_cluster.sh"
real_actorflow="${TEST_SRCDIR}/${TEST_WORKSPACE:-actorflow}/tools/actorflow"

fail() { echo "FAIL: $*"; exit 1; }

# Checks one run's output: the promises above, counted from its last attempt.
check_run() {
  local output="$1" last_attempt ready loss0 loss200 pid
  last_attempt="$(awk '/^started \/job:ps\/task:0 /{ text = "" } { text = text $0 "\n" } END { printf "%s", text }' <<<"${output}")"
  ready="$(grep -c '^actorflow server ready: actorflow://127.0.0.1:[0-9]* job=' <<<"${last_attempt}" || true)"
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
}

status=0
output="$("${script}" 2>&1)" || status=$?
echo "${output}"
(( status == 0 )) || fail "run_cluster.sh exited with status ${status}"
check_run "${output}"

# An actorflow whose second server start (worker 0) fails as a taken port does,
# once; every other start runs the real binary.
fake_dir="$(mktemp -d "${TEST_TMPDIR:-/tmp}/taken_port.XXXXXX")"
cat >"${fake_dir}/actorflow" <<EOF
#!/bin/bash
count="\$(cat "${fake_dir}/starts" 2>/dev/null || echo 0)"
echo \$(( count + 1 )) >"${fake_dir}/starts"
if (( count == 1 )); then
  echo "actorflow: Unavailable: cannot listen on 127.0.0.1:1 for /job:worker/replica:0/task:0 (port in use?)" >&2
  exit 1
fi
exec "${real_actorflow}" "\$@"
EOF
chmod +x "${fake_dir}/actorflow"
status=0
output="$(ACTORFLOW="${fake_dir}/actorflow" "${script}" 2>&1)" || status=$?
echo "${output}"
(( status == 0 )) || fail "run_cluster.sh with a taken port exited with status ${status}"
grep -q "found its port taken" <<<"${output}" || fail "the taken port went unreported"
[[ "$(grep -c '^started /job:ps/task:0 ' <<<"${output}")" == 2 ]] ||
  fail "expected the cluster started twice"
check_run "${output}"
echo "PASS"
