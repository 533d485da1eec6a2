#!/usr/bin/env bash
# Runs every test of the project: the Swift suites (swift test) and the interoperability checks against code we
# did not write (Bumble's packet classes and Wireshark's tshark/editcap against `blue`).
#
# On a fresh machine it first installs what those checks need: tshark from Debian (when run as root) and Bumble
# and pytest from PyPI into .venv/. SKIP_INTEROP=1 runs only the Swift suites (tshark-based Swift tests then skip
# when tshark is absent; with the interop checks on, a missing tshark fails them instead).
set -euo pipefail
cd "$(dirname "$0")/.."

# Tests must not write into the user's home: CoreBluetooth managers keep known peers in memory during the run.
export OCB_KNOWN_PEERS="${OCB_KNOWN_PEERS:-off}"

if [ "${SKIP_INTEROP:-0}" != "1" ]; then
  echo "== interop setup"
  Scripts/setup-interop.sh
  export OCB_REQUIRE_INTEROP=1
fi

# Swift Testing starts every test at once; on a 2-core machine the async tests (real stacks polling with wall-clock
# limits) then wait behind dozens of CPU-bound sync tests. A bounded width keeps them responsive, total time unchanged.
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH="${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-8}"

echo "== swift test"
mkdir -p .build
set +e
# The full log stays in .build/swift-test.log; the console shows suites, failures and the closing line.
swift test 2>&1 | tee .build/swift-test.log \
  | awk '!(/^✔ Test / && !/^✔ Test run with/) && !/^(◇|􀟈) (Test|Suite) .* started\.$/'
status=${PIPESTATUS[0]}
set -e
[ "$status" = "0" ] || { echo "swift test failed (exit $status)"; exit 1; }

if [ "${SKIP_INTEROP:-0}" = "1" ]; then
  echo "== interop checks skipped (SKIP_INTEROP=1)"
  exit 0
fi

echo "== interop checks (pytest: Bumble and Wireshark against blue)"
swift build --product blue 2>&1 | grep -E "error|warning: " || true
BLUE="$(swift build --show-bin-path)/blue" .venv/bin/python -m pytest -q Interop
