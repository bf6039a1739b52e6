#!/usr/bin/env bash
# Runs N seeded simulated trainings with random fault plans (actorflow swarm) and
# prints the outcomes, the violations per invariant and a replay command for every
# hang or violation. Exits non-zero when any run hung or violated an invariant.
#
#   tools/sim_swarm.sh 1000            # seeds 1..1000
#   tools/sim_swarm.sh 200 5001        # seeds 5001..5200
set -euo pipefail
runs="${1:-100}"
first_seed="${2:-1}"
cd "$(dirname "$0")/.."
bazel build //tools:actorflow >/dev/null
exec bazel-bin/tools/actorflow swarm --runs "$runs" --first-seed "$first_seed"
