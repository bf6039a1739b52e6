#!/bin/bash
# Runs the in-graph replication example and checks what it promises: exit 0, each
# tower on its own CPU device, the gradient averaging beside the variables (CPU 0),
# and a test accuracy of at least 0.9.
set -euo pipefail

binary="${TEST_SRCDIR}/${TEST_WORKSPACE:-actorflow}/examples/in_graph/in_graph"
output="$("${binary}")" || { echo "in_graph exited with status $?"; exit 1; }
echo "${output}"

cpu="/job:localhost/replica:0/task:0/device:CPU"
expect_line() {
  if ! grep -qxF "$1" <<<"${output}"; then
    echo "FAIL: no line '$1'"
    exit 1
  fi
}
expect_line "tower_0 ran on ${cpu}:0"
expect_line "tower_1 ran on ${cpu}:1"
expect_line "average_gradients ran on ${cpu}:0"
if grep -q "^tower_1 ran on ${cpu}:0$" <<<"${output}"; then
  echo "FAIL: tower 1 ran nodes on CPU 0"
  exit 1
fi

accuracy="$(sed -n 's/^Test set accuracy: \([0-9.]*\)$/\1/p' <<<"${output}")"
if [[ -z "${accuracy}" ]]; then
  echo "FAIL: no 'Test set accuracy:' line"
  exit 1
fi
if ! awk -v a="${accuracy}" 'BEGIN { exit !(a >= 0.9) }'; then
  echo "FAIL: test accuracy ${accuracy} < 0.9"
  exit 1
fi
echo "PASS"
