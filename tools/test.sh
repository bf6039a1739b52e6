#!/usr/bin/env bash
# Runs the whole test suite: builds everything (benchmarks and tools included, so
# they cannot rot) and runs every test, first in the default configuration, then in
# the CUDA one (--config=cuda: kernels/cuda and the binaries that link it; on a
# machine without a GPU its GPU cases are reported as skipped). Exit status is
# Bazel's. The CUDA half needs /usr/local/cuda/bin/nvcc: without it it is skipped
# with a notice, or fails when ACTORFLOW_REQUIRE_CUDA=1 (CI). First of all, no include
# may run back up a layer (tools/check_layers.py, the README's "Layout").
set -uo pipefail
cd "$(dirname "$0")/.."
python3 tools/check_layers.py || exit 1
bazel build //... && bazel test //... || exit $?

if [ ! -x /usr/local/cuda/bin/nvcc ]; then
  if [ "${ACTORFLOW_REQUIRE_CUDA:-0}" = 1 ]; then
    echo "tools/test.sh: --config=cuda needs /usr/local/cuda/bin/nvcc, which is missing" >&2
    exit 1
  fi
  echo "tools/test.sh: /usr/local/cuda/bin/nvcc not found: --config=cuda build skipped" >&2
  exit 0
fi
# Tests whose inputs the CUDA configuration does not change are cached from above.
bazel build --config=cuda //... && bazel test --config=cuda //...
