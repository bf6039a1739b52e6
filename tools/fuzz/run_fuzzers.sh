#!/usr/bin/env bash
# Runs every libFuzzer target of tools/fuzz/ for a given time and reports, per
# target, the inputs executed, the coverage reached and the crashes found.
#
#   tools/fuzz/run_fuzzers.sh [SECONDS_PER_TARGET] [JOBS]
#
#   SECONDS_PER_TARGET  wall-clock seconds each target runs (default 60)
#   JOBS                parallel fuzzing processes per target (default 1; >1 adds
#                       -jobs=JOBS -workers=JOBS, so a target gets JOBS x SECONDS of CPU)
#
# Environment:
#   FUZZ_WORK_DIR  where everything goes (default /tmp/actorflow_fuzz):
#                    bin/               the fuzzers, built (incrementally) by
#                                       tools/fuzz/build_fuzzers.sh
#                    corpus/<target>/   the growing corpus, seeded from
#                                       tools/fuzz/corpus/<target>/ and kept between runs
#                    crashes/<target>/  crash-*, leak-*, timeout-*, oom-* inputs
#                    logs/<target>/     libFuzzer's output
#   FUZZ_TARGETS   the targets to run (default: all), e.g. "graph_json_fuzzer wire_fuzzer"
#   BUILD_JOBS     compile jobs for the build (default: the number of CPUs)
#
# Each target runs with -max_total_time=SECONDS -rss_limit_mb=2048 -timeout=10 (so an
# input that allocates more than 2 GiB or runs longer than 10 s is a finding too), with
# tools/fuzz/json.dict as its dictionary when it reads JSON. The exit status is 1 when
# any target found a crash (the summary names the saved inputs), 2 for a usage or build
# error or a target that stopped without fuzzing (see its log), 0 otherwise.
#
# A crash is reproduced by running the fuzzer on the saved input:
#   $FUZZ_WORK_DIR/bin/graph_json_fuzzer $FUZZ_WORK_DIR/crashes/graph_json_fuzzer/crash-...
# and, once fixed, becomes a regression test beside the parser's tests (and the input a
# seed in tools/fuzz/corpus/<target>/).
#
# Seeds: tools/fuzz/corpus/<target>/ holds small inputs taken from the tests; the wire
# seeds are written by wire_seed_gen (bin/wire_seed_gen tools/fuzz/corpus/wire_fuzzer)
# after a change to a message's wire form.
set -uo pipefail

SECONDS_PER_TARGET="${1:-60}"
JOBS="${2:-1}"
case "$SECONDS_PER_TARGET$JOBS" in
  *[!0-9]*|"") echo "usage: $0 [SECONDS_PER_TARGET] [JOBS]" >&2; exit 2 ;;
esac
if [ "$JOBS" -lt 1 ] || [ "$SECONDS_PER_TARGET" -lt 1 ]; then
  echo "usage: $0 [SECONDS_PER_TARGET] [JOBS] (both >= 1)" >&2
  exit 2
fi

HERE="$(cd "$(dirname "$0")" && pwd)"
WORK="${FUZZ_WORK_DIR:-/tmp/actorflow_fuzz}"
ALL_TARGETS="graph_json_fuzzer tensor_json_fuzzer feed_json_fuzzer cluster_json_fuzzer
  tf_config_fuzzer checkpoint_fuzzer wire_fuzzer serving_json_fuzzer
  servable_manifest_fuzzer model_config_fuzzer model_spec_fuzzer"
TARGETS="${FUZZ_TARGETS:-$ALL_TARGETS}"
# Targets whose input is not (mostly) JSON text get no dictionary.
NO_DICT=" wire_fuzzer "

mkdir -p "$WORK/bin" || exit 2
echo "== building into $WORK/bin"
if ! "$HERE/build_fuzzers.sh" "$WORK/bin" $TARGETS; then
  echo "$0: build failed" >&2
  exit 2
fi

# Sanitizer reports go to the logs with stacks; UBSan findings abort (they are
# compiled with -fno-sanitize-recover), so libFuzzer saves the input.
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:symbolize=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

total_crashes=0
failed=0
summary=()
for t in $TARGETS; do
  corpus="$WORK/corpus/$t"
  crashes="$WORK/crashes/$t"
  logs="$WORK/logs/$t"
  mkdir -p "$corpus" "$crashes" "$logs"
  rm -f "$logs"/*.log
  if [ -d "$HERE/corpus/$t" ]; then
    cp -n "$HERE/corpus/$t"/* "$corpus"/ 2>/dev/null
  fi
  before="$(ls "$crashes" | sort)"

  args=(-max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=2048 -timeout=10
        -print_final_stats=1 -artifact_prefix="$crashes/")
  case "$NO_DICT" in
    *" $t "*) ;;
    *) args+=(-dict="$HERE/json.dict") ;;
  esac
  echo "== $t: ${SECONDS_PER_TARGET}s x $JOBS job(s)"
  if [ "$JOBS" -gt 1 ]; then
    # Each job writes fuzz-<n>.log into the current directory.
    (cd "$logs" && "$WORK/bin/$t" "${args[@]}" -jobs="$JOBS" -workers="$JOBS" "$corpus" \
        >"$logs/main.log" 2>&1)
  else
    "$WORK/bin/$t" "${args[@]}" "$corpus" >"$logs/fuzz-0.log" 2>&1
  fi
  rc=$?

  # Inputs executed: the sum over jobs; coverage: the highest any job reached.
  runs=0
  cov=0
  for log in "$logs"/fuzz-*.log; do
    [ -f "$log" ] || continue
    n="$(grep -a 'stat::number_of_executed_units' "$log" | tail -1 | awk '{print $2}')"
    if [ -z "$n" ]; then  # killed before its final stats: its last status line
      n="$(grep -aoE '^#[0-9]+' "$log" | tail -1 | tr -d '#')"
    fi
    c="$(grep -aoE 'cov: [0-9]+' "$log" | tail -1 | awk '{print $2}')"
    runs=$((runs + ${n:-0}))
    if [ "${c:-0}" -gt "$cov" ]; then cov="${c:-0}"; fi
  done
  new="$(comm -13 <(echo "$before") <(ls "$crashes" | sort) | grep -v '^$')"
  found=0
  if [ -n "$new" ]; then found="$(echo "$new" | wc -l)"; fi
  total_crashes=$((total_crashes + found))
  line="$(printf '%-26s runs %10d  cov %5d  crashes %d' "$t" "$runs" "$cov" "$found")"
  if [ "$rc" -ne 0 ] && [ "$found" -eq 0 ]; then
    # It stopped with an error but saved nothing: it did not fuzz (bad flag,
    # unreadable dictionary, a crash while loading the corpus...).
    line="$line  FAILED (exit $rc; see $logs)"
    failed=$((failed + 1))
  fi
  echo "$line"
  summary+=("$line")
  if [ "$found" -gt 0 ]; then
    echo "$new" | sed "s|^|    $crashes/|"
    grep -a -m3 -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error|invariant broken' \
        "$logs"/*.log | sed 's/^/    /'
  fi
done

echo "== summary (${SECONDS_PER_TARGET}s x $JOBS job(s) per target; logs in $WORK/logs)"
printf '%s\n' "${summary[@]}"
if [ "$total_crashes" -gt 0 ]; then
  echo "$total_crashes crash(es) found; inputs under $WORK/crashes" >&2
  exit 1
fi
if [ "$failed" -gt 0 ]; then
  echo "$failed target(s) did not run; see their logs" >&2
  exit 2
fi
exit 0
