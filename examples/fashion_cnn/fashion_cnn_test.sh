#!/bin/bash
# Writes Fashion-MNIST as TFRecord shards with `actorflow convert`, runs the example on
# them for 60 steps per worker and checks what it promises: exit 0 and a test accuracy
# of at least 0.7 (the tutorial CNN learns through a ps and two workers).
set -euo pipefail

if [[ ! -d /usr/share/datasets/fashion-mnist ]]; then
  echo "SKIP: Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)"
  exit 0
fi
root="${TEST_SRCDIR}/${TEST_WORKSPACE:-actorflow}"
shards="${TEST_TMPDIR}/fashion_records"
"${root}/tools/actorflow" convert --dataset fashion-mnist --out "${shards}" --shards 2
output="$("${root}/examples/fashion_cnn/fashion_cnn" "${shards}" 60)" ||
  { echo "fashion_cnn exited with status $?"; exit 1; }
echo "${output}"

accuracy="$(echo "${output}" | sed -n 's/^Test set accuracy: \([0-9.]*\)$/\1/p')"
if [[ -z "${accuracy}" ]]; then
  echo "FAIL: no 'Test set accuracy:' line"
  exit 1
fi
if ! awk -v a="${accuracy}" 'BEGIN { exit !(a >= 0.7) }'; then
  echo "FAIL: test accuracy ${accuracy} < 0.7"
  exit 1
fi
echo "PASS"
