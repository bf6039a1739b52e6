#!/bin/bash
# `actorflow` (its sources compiled as unity translation units, tools/unity.bzl) and
# `actorflow_per_file` (one translation unit a source) run the same deterministic
# simulated trainings: sync and async parameter servers, all-reduce, and a chaos
# schedule. Equal event-log and weight hashes mean the unity build resolved every
# name as the per-file build did (a file-local overload picked up from a neighbour
# source would change a result or a message).
set -euo pipefail

runfiles="${TEST_SRCDIR}/${TEST_WORKSPACE:-actorflow}"
unity="${runfiles}/tools/actorflow"
per_file="${runfiles}/tools/actorflow_per_file"

compare() {
  local a b
  a="$("${unity}" train --json "$@")" || { echo "FAIL: actorflow train $* exited $?"; exit 1; }
  b="$("${per_file}" train --json "$@")" ||
    { echo "FAIL: actorflow_per_file train $* exited $?"; exit 1; }
  /usr/bin/python3 - "$*" "${a}" "${b}" <<'PY'
import json, sys
args, unity, per_file = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
assert unity.get("global_step", 0) > 0, (args, unity)
for key in ("event_log_hash", "weights_hash", "messages", "accuracy", "loss"):
    if key in unity or key in per_file:
        assert unity.get(key) == per_file.get(key), (args, key, unity.get(key), per_file.get(key))
print("same:", args, unity.get("event_log_hash"), unity.get("weights_hash"))
PY
}

compare --cluster sim:ps=1,worker=2 --mode sync
compare --cluster sim:ps=2,worker=3 --mode async
compare --cluster sim:worker=3 --mode allreduce
echo "PASS"
