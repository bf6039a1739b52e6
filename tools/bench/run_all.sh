#!/bin/bash
# Runs every runtime-speed figure beside its peer in one run and prints the table
# (tools/bench/run_all.py says what each row measures).
#
#   tools/bench/run_all.sh [--quick] [--json FILE] [--rounds N] [--bin-dir DIR]
#                          [--peers DIR] [--out DIR] [--fresh-clone]
#                          [--openblas-own-choice]
#   --quick      one short round (a few minutes) instead of three full ones
#   --json FILE  also write the rows as a list of {"name", "unit", "min", "median",
#                "max", "target", "met"} objects (plus "direction" and "cases")
#   --bin-dir    prebuilt -c opt binaries (training_bench, ps_bench, cluster_bench,
#                floor_bench, tune_bench, actorflow) instead of building them
#   --fresh-clone  also time the quick start's first command in a new clone with an
#                empty Bazel cache (about 10 minutes on 2 cores), before the rounds
#   --openblas-own-choice  start every process (ours and the peers') without
#                OPENBLAS_CORETYPE, so that OpenBLAS picks the kernels for this CPU;
#                the table's header names the kernels the processes ran with
# Needs Debian's /usr/bin/python3 with python3-torch and python3-sklearn (the peers' needs);
# the serving rows also python3-flask, gunicorn and wrk (tools/setup.sh installs wrk).
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/run_all.py" "$@"
