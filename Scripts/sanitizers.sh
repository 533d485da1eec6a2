#!/usr/bin/env bash
# The Swift test suites under ThreadSanitizer and AddressSanitizer (issue 30), each in a build folder of its own
# (.build-thread, .build-address), so anyone can repeat them:
#
#   Scripts/sanitizers.sh                  # thread, then address
#   Scripts/sanitizers.sh thread           # one of them
#   Scripts/sanitizers.sh address --filter HostTests   # swift test's own options after the sanitizer
#
# Reports go to files (TSAN_OPTIONS / ASAN_OPTIONS log_path), not to standard error, so that the tests that read a
# `blue` subprocess's one error line still read it; each run then lists its distinct reports (the first frames that
# name our code) and fails when a test failed or any report was written. Leak checking is off: the suites end with
# live loops by design.
set -uo pipefail
cd "$(dirname "$0")/.."

sanitizers=()
while [[ $# -gt 0 && ( "$1" == thread || "$1" == address ) ]]; do sanitizers+=("$1"); shift; done
[[ ${#sanitizers[@]} -gt 0 ]] || sanitizers=(thread address)

status=0
for sanitizer in "${sanitizers[@]}"; do
    reports="$PWD/.build-$sanitizer/reports"
    rm -rf "$reports" && mkdir -p "$reports"
    echo "== swift test --sanitize=$sanitizer (reports in $reports)" >&2
    # At most as many tests at once as the machine has cores (Swift Testing starts every test at once by default):
    # a test's wall-clock bound assumes its waiting task resumes soon, but on the cooperative pool (one thread per
    # core) a resumed task queues behind every job of every test in flight, and under a sanitizer each job takes
    # several times longer, so bounds that hold in a normal run expired by minutes (tests that only sleep 10 ms at a
    # time took 130 s). OCB_SANITIZER tells the tests which figures a sanitizer's allocator does not keep.
    OCB_SANITIZER="$sanitizer" SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH="${OCB_SANITIZER_TEST_WIDTH:-$(nproc)}" \
    TSAN_OPTIONS="halt_on_error=0 log_path=$reports/report" \
    ASAN_OPTIONS="halt_on_error=0 detect_leaks=0 log_path=$reports/report" \
        swift test --sanitize="$sanitizer" --scratch-path ".build-$sanitizer" "$@" > ".build-$sanitizer/test.log" 2>&1
    tests=$?
    tail -3 ".build-$sanitizer/test.log" >&2
    # One line per distinct report: its kind and the first frame in our sources.
    python3 - "$reports" <<'PY'
import os, re, sys
folder = sys.argv[1]
seen = {}
for name in sorted(os.listdir(folder)):
    text = open(os.path.join(folder, name), errors="replace").read()
    for report in re.split(r"={10,}\n", text):
        kind = re.search(r"(WARNING: ThreadSanitizer: [^\n(]+|ERROR: AddressSanitizer: [^\n(]+)", report)
        if not kind:
            continue
        frame = re.search(r"#\d+ .*? (/\S*/(?:Sources|Tests)/\S+)", report)
        key = (kind.group(1).strip(), frame.group(1) if frame else "(no frame in our code)")
        seen.setdefault(key, name)
for (kind, frame), first in sorted(seen.items()):
    print(f"  {kind} at {frame} (first in {first})")
print(f"{len(seen)} distinct reports", file=sys.stderr)
sys.exit(1 if seen else 0)
PY
    found=$?
    if [[ $tests -ne 0 || $found -ne 0 ]]; then status=1; fi
done
exit $status
