#!/bin/bash
# Runs the two-tower CNN example and checks what it promises: exit 0, a test
# accuracy of at least 0.95, and a training step that moved bytes between the two
# CPU devices (the towers are on different devices and meet at the dense head).
set -euo pipefail

binary="${TEST_SRCDIR}/${TEST_WORKSPACE:-actorflow}/examples/two_tower_cnn/two_tower_cnn"
output="$("${binary}")" || { echo "two_tower_cnn exited with status $?"; exit 1; }
echo "${output}"

accuracy="$(echo "${output}" | sed -n 's/^Test set accuracy: \([0-9.]*\)$/\1/p')"
if [[ -z "${accuracy}" ]]; then
  echo "FAIL: no 'Test set accuracy:' line"
  exit 1
fi
if ! awk -v a="${accuracy}" 'BEGIN { exit !(a >= 0.95) }'; then
  echo "FAIL: test accuracy ${accuracy} < 0.95"
  exit 1
fi

bytes="$(echo "${output}" | sed -n 's/^Cross-device bytes per step: \([0-9]*\)$/\1/p')"
if [[ -z "${bytes}" ]]; then
  echo "FAIL: no 'Cross-device bytes per step:' line"
  exit 1
fi
if (( bytes <= 0 )); then
  echo "FAIL: one training step sent ${bytes} bytes between the devices; expected > 0"
  exit 1
fi
echo "PASS"
