#!/usr/bin/env bash
# Hostile-controller fuzz of the host stack through blue (issue 10): `blue scan`, `blue serve` and `blue explore`
# run against Fuzz/HostileController/hostile_controller.py (Python 3 standard library), which answers like a
# controller most of the time and injects random and mutated events and ACL data, credit starvation, Command
# Complete for commands never sent, Number Of Completed Packets for unknown handles or too many packets,
# fragments that never complete, truncated packets, garbage H4 indicators and a socket closed mid-stream. Each
# run must end by itself within a bound (or within a bound of a SIGTERM) without a crash.
#
#   Fuzz/hostile-controller.sh                    # 60 s (CI), seeds from the clock
#   Fuzz/hostile-controller.sh --duration 600     # 10 minutes
#   Fuzz/hostile-controller.sh --seed 4200        # sessions 4200, 4201, ... (replayable series)
#   Fuzz/hostile-controller.sh --replay 4207      # that one session again, kept in hostile-controller-findings/
#   Fuzz/hostile-controller.sh --tcp              # H4 over TCP 127.0.0.1 (port 0) instead of UNIX sockets
#
# Other options (--commands, --jobs, --keep, --summary): Fuzz/HostileController/driver.py --help.
# Exit 0 with no failures, 1 with failures (each kept, with blue's output and the controller's packet trace).
set -euo pipefail
private=""
driver=""
cleanup() {
    if [[ -n "$driver" ]] && kill -0 "$driver" 2>/dev/null; then
        kill -TERM "$driver" 2>/dev/null || true
        wait "$driver" 2>/dev/null || true
    fi
    if [[ -n "$private" ]]; then rm -rf "$private"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cd "$(dirname "$0")/.."

swift build --product blue >&2
# A private copy: another build relinking .build/.../blue during the run must not change or remove it.
private="$(mktemp -d "${TMPDIR:-/tmp}/hostile-controller-blue.XXXXXX")"
cp "$(swift build --show-bin-path)/blue" "$private/blue"
blue="$private/blue"

python3 Fuzz/HostileController/driver.py --blue "$blue" "$@" &
driver=$!
status=0
wait "$driver" || status=$?
driver=""
exit "$status"
