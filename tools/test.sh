#!/usr/bin/env bash
# Runs the whole test suite: builds everything (benchmarks and tools included, so
# they cannot rot) and runs every test. Exit status is Bazel's.
set -uo pipefail
cd "$(dirname "$0")/.."
bazel build //... && bazel test //...
