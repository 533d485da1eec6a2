#!/usr/bin/env bash
# Runs every test of the project: the Swift suites (swift test) and the interoperability checks against code we
# did not write (Bumble's packet classes and Wireshark's tshark/editcap against `blue`).
#
# On a fresh machine it first installs what those checks need: tshark, chromium and chromium-driver from Debian (when
# run as root) and Bumble, RootCanal, pytest, selenium and schemathesis from PyPI into .venv/. SKIP_INTEROP=1 runs only the Swift suites (tshark-based Swift tests
# then skip when tshark is absent; with the interop checks on, a missing tshark fails them instead).
#
# Both halves always run, and the last lines say how each went, naming every failing test. Whatever the tests
# start is ended when the run ends, also when the test process crashes: every child carries OCB_TEST_RUN in its
# environment and the script kills what still carries it (Bumble's controllers ignore SIGTERM, hubs detach into
# their own process group). Temporary files go to a folder of the run's own ($TMPDIR), removed at the end.
set -uo pipefail
cd "$(dirname "$0")/.."

# Tests must not write into the user's home: CoreBluetooth managers keep known peers in memory during the run.
export OCB_KNOWN_PEERS="${OCB_KNOWN_PEERS:-off}"

run_id="ocb-test-$$-$RANDOM$RANDOM"
export OCB_TEST_RUN="$run_id"
run_tmp=$(mktemp -d "${TMPDIR:-/tmp}/ocb-run.XXXXXX")
export TMPDIR="$run_tmp"
# The shared air of this run: a program or command a test starts without naming a hub meets this one (started on
# demand, reaped at the end), never the user's.
export OCB_AIR_SOCKET="$run_tmp/air.sock"
mkdir -p .build
swift_log=.build/swift-test.log
interop_log=.build/interop-test.log
summary=()

# The processes of this run still alive (their environment carries our marker), this shell and its own aside.
run_processes() {
  local entry pid
  for entry in /proc/[0-9]*; do
    pid=${entry#/proc/}
    [ "$pid" = "$$" ] && continue
    grep -qzxF "OCB_TEST_RUN=$run_id" "$entry/environ" 2>/dev/null && echo "$pid"
  done
}

# Kills what the tests left running and says what it was (a test that leaks a process is a bug to fix).
reap() {
  local label=$1 pids pid names=()
  pids=$(export -n OCB_TEST_RUN; run_processes)
  [ -z "$pids" ] && return 0
  for pid in $pids; do
    names+=("$pid:$(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | cut -c1-80)")
    kill -KILL "$pid" 2>/dev/null
  done
  echo "== reaped ${#names[@]} process(es) left running after $label:"
  printf '   %s\n' "${names[@]}"
}

finish() {
  reap "the run" >&2
  rm -rf "$run_tmp"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ "${SKIP_INTEROP:-0}" != "1" ]; then
  echo "== interop setup"
  if ! Scripts/setup-interop.sh; then
    echo "interop setup failed: the interop checks cannot run"
    exit 1
  fi
  export OCB_REQUIRE_INTEROP=1
fi

# Swift Testing starts every test at once; on a 2-core machine the async tests (real stacks polling with wall-clock
# limits) then wait behind dozens of CPU-bound sync tests. A bounded width keeps them responsive, total time unchanged.
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH="${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-8}"

echo "== swift test"
# The full log stays in .build/swift-test.log; the console shows suites, failures and the closing line.
swift test 2>&1 | tee "$swift_log" \
  | awk '!(/^✔ Test / && !/^✔ Test run with/) && !/^(◇|􀟈) (Test|Suite) .* started\.$/'
swift_status=${PIPESTATUS[0]}
reap "swift test"

# What the Swift half did, from its log: the closing line, the failing tests, the known issues, and, when the test
# process died, the tests that had started and never ended (one of them took it down).
swift_closing=$(grep -E "Test run with [0-9]+ tests?" "$swift_log" | tail -1)
mapfile -t swift_failed < <(grep -E "^✘ Test .* (failed|timed out) after " "$swift_log" | grep -v "^✘ Test run with" \
  | sed -E 's/^✘ Test (.*) (failed|timed out) after .*/\1/' | sort -u)
mapfile -t known_issues < <(grep -E "recorded a known issue" "$swift_log" | sed -E 's/^[^ ]+ Test (.*) recorded a known issue at ([^:]+:[0-9]+).*/\1 (\2)/' | sort -u)
if [ "$swift_status" = "0" ] && [ -n "$swift_closing" ]; then
  summary+=("swift test: passed — ${swift_closing#* }")
else
  summary+=("swift test: FAILED (exit $swift_status)${swift_closing:+ — ${swift_closing#* }}")
  for name in "${swift_failed[@]}"; do summary+=("  failed: $name"); done
  if [ -z "$swift_closing" ]; then
    mapfile -t unfinished < <(awk '
      /^(◇|􀟈) Test .* started\.$/ && !/ Test (run|case) / { name = $0; sub(/^[^ ]+ Test /, "", name); sub(/ started\.$/, "", name); open[name] = 1 }
      /^[^ ]+ Test .* (passed|failed|timed out) after / { name = $0; sub(/^[^ ]+ Test /, "", name); sub(/ (passed|failed|timed out) after .*$/, "", name); sub(/ with [0-9]+ test cases?$/, "", name); delete open[name] }
      END { for (name in open) print name }' "$swift_log" | sort)
    summary+=("  the test process ended without its closing line (crash or kill); tests still running then:")
    for name in "${unfinished[@]}"; do summary+=("    $name"); done
    summary+=("  last lines of $swift_log:")
    while IFS= read -r line; do summary+=("    $line"); done < <(grep -v "^✔\|^◇\|^􀟈" "$swift_log" | tail -8)
  fi
fi
if [ "${#known_issues[@]}" -gt 0 ]; then
  summary+=("  known issues (failures a test expects, recorded with withKnownIssue; not failures of the run):")
  for name in "${known_issues[@]}"; do summary+=("    $name"); done
fi

interop_status=0
if [ "${SKIP_INTEROP:-0}" = "1" ]; then
  summary+=("interop checks: not run (SKIP_INTEROP=1)")
else
  echo "== interop checks (pytest: Bumble and Wireshark against blue)"
  if swift build --product blue > .build/blue-build.log 2>&1; then
    BLUE="$(swift build --show-bin-path)/blue" .venv/bin/python -m pytest -q -p no:cacheprovider Interop 2>&1 \
      | tee "$interop_log"
    interop_status=${PIPESTATUS[0]}
  else
    interop_status=1
    cat .build/blue-build.log > "$interop_log"
    grep -E "error" .build/blue-build.log | head -20
  fi
  reap "the interop checks"
  interop_closing=$(grep -E "^[0-9]+ (passed|failed)|^=+ .*(passed|failed|error)" "$interop_log" | tail -1 | tr -d '=' | xargs)
  if [ "$interop_status" = "0" ]; then
    summary+=("interop checks: passed — $interop_closing")
  else
    summary+=("interop checks: FAILED (exit $interop_status)${interop_closing:+ — $interop_closing}")
    while IFS= read -r line; do summary+=("  failed: ${line#FAILED }"); done < <(grep -E "^(FAILED|ERROR) " "$interop_log")
  fi
fi

echo
echo "== summary"
printf '%s\n' "${summary[@]}"
if [ "$swift_status" != "0" ] || [ "$interop_status" != "0" ]; then
  exit 1
fi
