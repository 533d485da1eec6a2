#!/usr/bin/env bash
# The lean `blue` (issue 31 item 4): built without the package's default trait CoreBluetoothPrograms, it must link
# FoundationEssentials and no Foundation, FoundationInternationalization or ICU (a library that imports Foundation
# again would bring all three back), still work (`blue info --json` on its own air, a server found by a scan), and
# refuse `blue demo` in one line with exit 69. Debug build in .build/lean-check (about 6 minutes from nothing).
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=.build/lean-check
mkdir -p .build
echo "== lean blue: building (swift build --product blue --disable-default-traits)"
swift build --product blue --disable-default-traits --scratch-path "$scratch" > "$scratch.log" 2>&1 \
    || { tail -30 "$scratch.log" >&2; echo "lean blue: build failed" >&2; exit 1; }
blue=$(swift build --product blue --disable-default-traits --scratch-path "$scratch" --show-bin-path)/blue
needed=$(readelf -d "$blue" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p')
fail() { echo "lean blue: $*" >&2; exit 1; }
grep -qx "libFoundationEssentials.so" <<< "$needed" || fail "does not link FoundationEssentials (the check would prove nothing): $needed"
for library in libFoundation.so libFoundationInternationalization.so lib_FoundationICU.so; do
    if grep -qx "$library" <<< "$needed"; then fail "links $library (a library under blue imports Foundation again)"; fi
done
info=$(timeout 60 "$blue" info --hci in-process --json)
grep -q '"supportedCommandCount":' <<< "$info" || fail "blue info --json printed: $info"
status=0
refusal=$(timeout 30 "$blue" demo 2>&1 >/dev/null) || status=$?
[ "$status" = 69 ] || fail "blue demo exited $status, not 69: $refusal"
grep -q "CoreBluetoothPrograms" <<< "$refusal" || fail "blue demo said: $refusal"
# A server found by a scan, on a private shared air.
folder=$(mktemp -d)
# The cleanup must not fail: under set -e a failing command in an EXIT trap becomes the script's exit status.
cleanup() { kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$folder"; }
trap cleanup EXIT
export OCB_AIR_SOCKET=$folder/air.sock OCB_KNOWN_PEERS=off
"$blue" air --socket "$OCB_AIR_SOCKET" > "$folder/air.log" 2>&1 &
for _ in $(seq 100); do [ -S "$OCB_AIR_SOCKET" ] && break; sleep 0.1; done
"$blue" serve --profile heart-rate --name LeanCheck > "$folder/serve.log" 2>&1 &
found=$(timeout 60 "$blue" scan --name LeanCheck --timeout 8 --json 2>"$folder/scan.err") || fail "scan: $(cat "$folder/scan.err")"
grep -q '"name":"LeanCheck"' <<< "$found" || fail "scan printed: $found"
echo "lean blue: links $(grep -c . <<< "$needed") libraries, no Foundation or ICU; info, serve and scan work; demo refused (69)"
