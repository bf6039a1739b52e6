#!/bin/bash
# Runs the Iris example and checks what it promises: exit 0, a test accuracy of at
# least 0.9, and the guide's three new flowers predicted as classes 0, 1, 2
# (setosa, versicolor, virginica).
set -euo pipefail

binary="${TEST_SRCDIR}/${TEST_WORKSPACE:-actorflow}/examples/iris/iris"
output="$("${binary}")" || { echo "iris exited with status $?"; exit 1; }
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

classes="$(echo "${output}" | sed -n 's/^Prediction [0-9]*: class \([0-9]*\) .*/\1/p' | tr '\n' ' ')"
if [[ "${classes}" != "0 1 2 " ]]; then
  echo "FAIL: predicted classes '${classes}', expected '0 1 2 '"
  exit 1
fi
echo "PASS"
