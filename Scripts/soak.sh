#!/usr/bin/env bash
# The soak (issue 30): the shared air for 30 minutes with a dozen programs connecting, pairing, chatting,
# subscribing, exploring, scanning and benchmarking in cycles, faults every few seconds and the hostile-controller
# fuzzer beside them; fails on a crash, a hang, a lost or corrupted transfer, or memory or descriptor growth after
# warm-up (Scripts/soak.py says the limits).
#
#   Scripts/soak.sh                     # 30 minutes
#   Scripts/soak.sh --duration 120      # 2 minutes (CI)
#   Scripts/soak.sh --seed 42 --json    # a replayable series, figures as JSON
set -euo pipefail
private=""
cleanup() { if [[ -n "$private" ]]; then rm -rf "$private"; fi; }
trap cleanup EXIT
trap 'exit 130' INT TERM
cd "$(dirname "$0")/.."

swift build --product blue >&2
# A private copy: another build relinking .build/.../blue during the run must not change or remove it.
private="$(mktemp -d "${TMPDIR:-/tmp}/soak-blue.XXXXXX")"
cp "$(swift build --show-bin-path)/blue" "$private/blue"
python3 Scripts/soak.py --blue "$private/blue" --hostile Fuzz/HostileController/driver.py "$@"
