#!/bin/bash
# `actorflow train --logdir` on a local cluster of 2 workers, read back by an
# independent reader (read_event_files.py, Debian's python3-protobuf): one event
# file per worker run directory, valid CRCs, loss scalars, and the accuracy that
# --json printed.
set -euo pipefail

runfiles="${TEST_SRCDIR}/${TEST_WORKSPACE:-actorflow}"
binary="${runfiles}/tools/actorflow"
reader="${runfiles}/tools/read_event_files.py"
logdir="${TEST_TMPDIR}/L"
rm -rf "${logdir}"

result="$("${binary}" train --cluster local:ps=1,worker=2 --logdir "${logdir}" --epochs 2 \
  --lr 0.05 --json)" || { echo "FAIL: actorflow train exited with status $?"; exit 1; }
echo "${result}"
echo "${result}" > "${TEST_TMPDIR}/result.json"
accuracy="$(echo "${result}" | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["accuracy"])')"
/usr/bin/python3 "${reader}" "${logdir}" 2 "${accuracy}" "${TEST_TMPDIR}/result.json" 0.05

# An unwritable logdir is a warning; training still succeeds.
blocked="${TEST_TMPDIR}/blocked"
echo x > "${blocked}"
err="$("${binary}" train --logdir "${blocked}/L" --steps 20 --json 2>&1 >/dev/null)" ||
  { echo "FAIL: train with an unwritable --logdir exited with status $?"; exit 1; }
if ! grep -q "warning: --logdir: .*${blocked}/L" <<<"${err}"; then
  echo "FAIL: no --logdir warning naming ${blocked}/L in: ${err}"
  exit 1
fi
echo "PASS"
