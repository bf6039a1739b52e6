#!/bin/bash
# Training across three hosts made of network namespaces (multihost_training.py):
# plain and with a cluster secret; a worker's link cut mid-training and restored
# (sync: named within 3 s, then it reconnects and the run ends at its global step);
# the same with async updates (the ps task names the worker within 3 s); ps task 1's
# link cut, or its process killed, its shard failed over to the standby within 3 s;
# a worker's process stopped (SIGSTOP), named within 3 s, rejoining when resumed;
# and, elastic, 3 cuts each timed from the cut to the chief going on without the
# worker, who rejoins after each heal. Without CAP_NET_ADMIN every scenario prints
# why it skips.
set -euo pipefail
runfiles="${TEST_SRCDIR}/${TEST_WORKSPACE:-actorflow}"
driver="${runfiles}/tests/multihost/multihost_training.py"
actorflow="${runfiles}/tools/actorflow"
data="${runfiles}/examples/data"
for scenario in sync secret partition async sigstop ps-partition ps-kill; do
  /usr/bin/python3 "${driver}" "${actorflow}" "${data}" "${scenario}"
done
/usr/bin/python3 "${driver}" "${actorflow}" "${data}" partition-times --runs 3
