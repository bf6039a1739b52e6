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
# pick free ports). Each server gets 30 s to print its ready line; a server whose
# port was taken between picking and listening restarts the cluster on new ports.
set -euo pipefail

readonly READY_TIMEOUT_S=30

# A built binary or an executable source file: from the runfiles (bazel test /
# bazel run), bazel-bin, or the source tree.
find_binary() {
  local relative="$1" base
  for base in "${TEST_SRCDIR:-/nonexistent}/${TEST_WORKSPACE:-actorflow}" \
              "${RUNFILES_DIR:-/nonexistent}/actorflow" \
              "$0.runfiles/actorflow" \
              "$(cd "$(dirname "$0")/../.." && pwd)/bazel-bin" \
              "$(cd "$(dirname "$0")/../.." && pwd)"; do
    if [[ -x "${base}/${relative}" ]]; then
      echo "${base}/${relative}"
      return 0
    fi
  done
  return 1
}

actorflow="${ACTORFLOW:-$(find_binary tools/actorflow || true)}"
driver="${CLUSTER_DRIVER:-$(find_binary examples/cluster/cluster_driver || true)}"
free_ports="$(find_binary tools/free_ports.py || true)"
if [[ ! -x "${actorflow}" || ! -x "${driver}" || -z "${free_ports}" ]]; then
  echo "run_cluster.sh: build first: bazel build //tools:actorflow //examples/cluster:all" >&2
  exit 1
fi

workdir="$(mktemp -d "${TEST_TMPDIR:-${TMPDIR:-/tmp}}/actorflow_cluster.XXXXXX")"
server_pids=()

# Stops the servers started so far (SIGTERM, then SIGKILL after 10 s) and forgets them.
stop_started_servers() {
  local pid
  for pid in "${server_pids[@]}"; do kill -TERM "${pid}" 2>/dev/null || true; done
  for pid in "${server_pids[@]}"; do
    # A server exits cleanly on SIGTERM; one that does not within 10 s is killed.
    timeout 10 tail --pid="${pid}" -f /dev/null 2>/dev/null || kill -KILL "${pid}" 2>/dev/null || true
    wait "${pid}" 2>/dev/null || true
  done
  if (( ${#server_pids[@]} > 0 )); then echo "stopped servers: ${server_pids[*]}"; fi
  server_pids=()
}
stop_servers() {
  stop_started_servers
  rm -rf "${workdir}"
}
trap stop_servers EXIT
trap 'exit 130' INT TERM

# Three distinct ports free now (tools/free_ports.py: below the kernel's ephemeral
# range, so no outgoing connection's source port takes one). Should another listener
# take one before its server listens, start_cluster tries again.
pick_ports() {
  read -r ps_port worker0_port worker1_port < <(python3 "${free_ports}" 3)
  cluster="${workdir}/cluster.json"
  cat >"${cluster}" <<EOF
{"ps": ["127.0.0.1:${ps_port}"],
 "worker": ["127.0.0.1:${worker0_port}", "127.0.0.1:${worker1_port}"]}
EOF
}

# Starts one task and waits (bounded) for its ready line, read through a FIFO.
# Returns 0 when ready, 2 when its port was taken, 1 on any other failure.
start_server() {
  local job="$1" task="$2" fifo="${workdir}/$1$2.out" err="${workdir}/$1$2.err" fd line
  rm -f "${fifo}" "${err}"
  mkfifo "${fifo}"
  "${actorflow}" server --cluster "${cluster}" --job "${job}" --task "${task}" \
      >"${fifo}" 2>"${err}" &
  server_pids+=($!)
  echo "started /job:${job}/task:${task} pid $!"
  exec {fd}<"${fifo}"
  if IFS= read -r -t "${READY_TIMEOUT_S}" -u "${fd}" line &&
     [[ "${line}" == "actorflow server ready: "* ]]; then
    echo "${line}"
    return 0
  fi
  exec {fd}<&-
  if grep -q "port in use" "${err}"; then
    echo "run_cluster.sh: /job:${job}/task:${task} found its port taken: $(cat "${err}")" >&2
    return 2
  fi
  echo "run_cluster.sh: /job:${job}/task:${task} exited or printed no ready line within ${READY_TIMEOUT_S} s; its stderr:" >&2
  cat "${err}" >&2
  return 1
}

# Starts the ps and both workers on fresh ports; a taken port restarts all three
# on new ones, at most MAX_START_ATTEMPTS times.
readonly MAX_START_ATTEMPTS=3
start_cluster() {
  local attempt status
  for (( attempt = 1; attempt <= MAX_START_ATTEMPTS; ++attempt )); do
    pick_ports
    status=0
    { start_server ps 0 && start_server worker 0 && start_server worker 1; } || status=$?
    if (( status == 0 )); then return 0; fi
    stop_started_servers
    if (( status != 2 )); then return 1; fi
  done
  echo "run_cluster.sh: a port was taken on each of ${MAX_START_ATTEMPTS} attempts" >&2
  return 1
}

start_cluster || exit 1

"${driver}" "actorflow://127.0.0.1:${worker0_port}" "actorflow://127.0.0.1:${worker1_port}"
