#!/bin/bash
# Runs the Iris cluster example and checks what it promises: exit 0 and a test
# accuracy of at least 0.9 (the model trains through a ps and a worker task).
set -euo pipefail

binary="${TEST_SRCDIR}/${TEST_WORKSPACE:-actorflow}/examples/iris_cluster/iris_cluster"
output="$("${binary}")" || { echo "iris_cluster exited with status $?"; exit 1; }
echo "${output}"

accuracy="$(echo "${output}" | sed -n 's/^Test set accuracy: \([0-9.]*\)$/\1/p')"
if [[ -z "${accuracy}" ]]; then
  echo "FAIL: no 'Test set accuracy:' line"
  exit 1
fi
if ! awk -v a="${accuracy}" 'BEGIN { exit !(a >= 0.9) }'; then
  echo "FAIL: test accuracy ${accuracy} < 0.9"
  exit 1
fi
echo "PASS"
