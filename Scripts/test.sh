#!/usr/bin/env bash
# Runs every test of the project: the Swift suites (swift test) and the interoperability checks against code we
# did not write (Bumble's Python parsers, Wireshark's dissectors via tshark).
#
# On a fresh machine it first installs what those checks need: tshark from Debian (when run as root) and Bumble
# from PyPI into .venv/. Set SKIP_INTEROP=1 to run only the Swift suites.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== swift test"
swift test 2>&1 | tee .build/swift-test.log | grep -vE "^(◇|􀟈) Test .* started\.$" || { echo "swift test failed"; exit 1; }
tail -1 .build/swift-test.log | grep -q "passed" || { echo "swift test did not pass"; exit 1; }

if [ "${SKIP_INTEROP:-0}" = "1" ]; then
  echo "== interop checks skipped (SKIP_INTEROP=1)"
  exit 0
fi

echo "== interop setup"
Scripts/setup-interop.sh

echo "== interop checks (pytest: Bumble and tshark against blue)"
swift build --product blue 2>&1 | grep -E "error|warning: " || true
BLUE="$PWD/.build/debug/blue" .venv/bin/python -m pytest -q Interop
