#!/bin/bash
# The quick start's job: `actorflow train --cluster sim:ps=1,worker=2 --mode sync`
# trains on the simulated cluster, learns Iris, breaks no invariant, and prints the
# same run twice; a bad use of --cluster sim: is refused naming the flag.
set -euo pipefail

runfiles="${TEST_SRCDIR}/${TEST_WORKSPACE:-actorflow}"
binary="${runfiles}/tools/actorflow"

run() {
  "${binary}" train --cluster sim:ps=1,worker=2 --mode sync --json "$@" ||
    { echo "FAIL: actorflow train --cluster sim: exited with status $?"; exit 1; }
}
first="$(run)"
again="$(run)"
echo "${first}"
/usr/bin/python3 - "${first}" "${again}" <<'PY'
import json, sys
first, again = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert first["accuracy"] >= 0.9, first["accuracy"]
assert first["invariant_violations"] == 0, first["violations"]
assert first["global_step"] == 1000 and first["updates_applied"] == 1000, first
for key in ("event_log_hash", "weights_hash", "virtual_seconds", "messages", "accuracy"):
    assert first[key] == again[key], (key, first[key], again[key])
PY

err="$("${binary}" train --cluster sim:ps=1,worker=0 2>&1)" && { echo "FAIL: 0 workers accepted"; exit 1; }
grep -q -- "--cluster" <<<"${err}" || { echo "FAIL: the error does not name --cluster: ${err}"; exit 1; }
echo "PASS"
