#!/usr/bin/env bash
# Hostile-peer fuzz of the host stack on the shared air (issue 30): Fuzz/HostilePeer/driver.py runs a private hub,
# a `blue serve` victim, and sessions of Fuzz/HostilePeer/hostile_peer.py (Python 3 standard library) that attack
# it over a link as a central (mutated ATT, L2CAP signaling and SMP, unknown channels, broken fragmentation), each
# followed by a read from a well-behaved central, and as a peripheral answering `blue explore` wrongly. The server
# must survive and keep answering; explore must end by itself.
#
#   Fuzz/hostile-peer.sh                     # 60 s (CI), seeds from the clock
#   Fuzz/hostile-peer.sh --duration 600      # 10 minutes
#   Fuzz/hostile-peer.sh --seed 4200         # sessions 4200, 4201, ... (replayable series)
#
# Exit 0 with no failure, 1 with failures (the logs kept in hostile-peer-findings/).
set -euo pipefail
private=""
cleanup() { if [[ -n "$private" ]]; then rm -rf "$private"; fi; }
trap cleanup EXIT
cd "$(dirname "$0")/.."
swift build --product blue >&2
# A private copy: another build relinking .build/.../blue during the run must not change or remove it.
private="$(mktemp -d "${TMPDIR:-/tmp}/hostile-peer-blue.XXXXXX")"
cp "$(swift build --show-bin-path)/blue" "$private/blue"
python3 Fuzz/HostilePeer/driver.py --blue "$private/blue" "$@"
