#!/bin/bash
# Elastic training with real processes on 127.0.0.1 (elastic_training.py): a worker
# joins and another is killed while the training runs; a ps task holding a shard
# with a standby is killed, and one without (restored from a checkpoint); a
# mismatched model, a second process on a live task and --elastic against a fixed
# training are refused; and the time from a worker's death to the next completed
# update is measured over 3 kills.
set -euo pipefail
runfiles="${TEST_SRCDIR}/${TEST_WORKSPACE:-actorflow}"
driver="${runfiles}/tests/elastic/elastic_training.py"
actorflow="${runfiles}/tools/actorflow"
data="${runfiles}/examples/data"
for scenario in join-and-kill ps-failover ps-restore refusals; do
  /usr/bin/python3 "${driver}" "${actorflow}" "${data}" "${scenario}"
done
/usr/bin/python3 "${driver}" "${actorflow}" "${data}" kill-times --kills 3
