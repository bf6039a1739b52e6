#!/bin/bash
# Runs the slides' distributed example on a cluster of real processes on this
# machine: starts one parameter server and two workers (`actorflow server`, each on
# a free port of 127.0.0.1), runs examples/cluster/cluster_driver against them
# (client 1 on worker 0's master trains, client 2 on worker 1's master reads the
# trained variables), prints what it prints, and stops the servers on exit, also
# when something failed or the script was interrupted.
#
#   bazel build //examples/cluster:all //tools:actorflow
#   examples/cluster/run_cluster.sh        (or: bazel run //examples/cluster:run_cluster)
#
# ACTORFLOW and CLUSTER_DRIVER override the binaries' paths. Needs python3 (to
# pick free ports). Each server gets 30 s to print its ready line.
set -euo pipefail

readonly READY_TIMEOUT_S=30

# A built binary: from the runfiles (bazel test / bazel run) or bazel-bin.
find_binary() {
  local relative="$1" base
  for base in "${TEST_SRCDIR:-/nonexistent}/${TEST_WORKSPACE:-actorflow}" \
              "${RUNFILES_DIR:-/nonexistent}/actorflow" \
              "$0.runfiles/actorflow" \
              "$(cd "$(dirname "$0")/../.." && pwd)/bazel-bin"; do
    if [[ -x "${base}/${relative}" ]]; then
      echo "${base}/${relative}"
      return 0
    fi
  done
  return 1
}

actorflow="${ACTORFLOW:-$(find_binary tools/actorflow || true)}"
driver="${CLUSTER_DRIVER:-$(find_binary examples/cluster/cluster_driver || true)}"
if [[ ! -x "${actorflow}" || ! -x "${driver}" ]]; then
  echo "run_cluster.sh: build first: bazel build //tools:actorflow //examples/cluster:all" >&2
  exit 1
fi

workdir="$(mktemp -d "${TEST_TMPDIR:-${TMPDIR:-/tmp}}/actorflow_cluster.XXXXXX")"
server_pids=()

stop_servers() {
  local pid
  for pid in "${server_pids[@]}"; do kill -TERM "${pid}" 2>/dev/null || true; done
  for pid in "${server_pids[@]}"; do
    # A server exits cleanly on SIGTERM; one that does not within 10 s is killed.
    timeout 10 tail --pid="${pid}" -f /dev/null 2>/dev/null || kill -KILL "${pid}" 2>/dev/null || true
    wait "${pid}" 2>/dev/null || true
  done
  if (( ${#server_pids[@]} > 0 )); then echo "stopped servers: ${server_pids[*]}"; fi
  rm -rf "${workdir}"
}
trap stop_servers EXIT
trap 'exit 130' INT TERM

# Three ports that are free now: bound together (so they differ), then released.
read -r ps_port worker0_port worker1_port < <(python3 -c '
import socket
sockets = [socket.socket() for _ in range(3)]
for s in sockets:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in sockets))
')
cluster="${workdir}/cluster.json"
cat >"${cluster}" <<EOF
{"ps": ["127.0.0.1:${ps_port}"],
 "worker": ["127.0.0.1:${worker0_port}", "127.0.0.1:${worker1_port}"]}
EOF

# Starts one task and waits (bounded) for its ready line, read through a FIFO.
start_server() {
  local job="$1" task="$2" fifo="${workdir}/$1$2.out" fd line
  mkfifo "${fifo}"
  "${actorflow}" server --cluster "${cluster}" --job "${job}" --task "${task}" \
      >"${fifo}" 2>"${workdir}/$1$2.err" &
  server_pids+=($!)
  echo "started /job:${job}/task:${task} pid $!"
  exec {fd}<"${fifo}"
  if ! IFS= read -r -t "${READY_TIMEOUT_S}" -u "${fd}" line ||
     [[ "${line}" != "actorflow server ready: "* ]]; then
    echo "run_cluster.sh: /job:${job}/task:${task} exited or printed no ready line within ${READY_TIMEOUT_S} s; its stderr:" >&2
    cat "${workdir}/$1$2.err" >&2
    exit 1
  fi
  echo "${line}"
}

start_server ps 0
start_server worker 0
start_server worker 1

"${driver}" "actorflow://127.0.0.1:${worker0_port}" "actorflow://127.0.0.1:${worker1_port}"
