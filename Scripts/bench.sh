#!/usr/bin/env bash
# Notification throughput, ours against Bumble, in the same run (issue 4's benchmark), side by side with the ratio.
#
#   Scripts/bench.sh                      # builds blue in release into the package's default .build/, then runs
#   BLUE=/path/to/blue Scripts/bench.sh   # uses that binary, no build
#   OURS_COUNT=100000 BUMBLE_COUNT=3000 SIZES="244 20" REPEAT=3 Scripts/bench.sh
#
# Each measurement runs REPEAT times (default 3); the table shows the best run and the median of the rates (the
# machine is shared: the best run is the least disturbed one).
#
# Ours: `blue bench notify --size N --count OURS_COUNT --json`: two of our host stacks on the in-process virtual
# air, one thread (ManualEventLoop, virtual time jumped to the next timer), wall clock measured.
# Bumble: Scripts/bench_bumble.py: two Bumble hosts on Bumble's two stock controllers
# (python -m bumble.apps.controllers, a subprocess), asyncio, wall clock measured.
# Both pace the sender by readiness (64 ACL packets queued at most) and count what the client received.
# Also prints `blue bench air` and `blue bench acl` (the virtual radio alone). Speed is measured, never asserted.
#
# Across processes on Bumble's controllers (issue 13 item 5): `blue bench notify --hci tcp:... --role peripheral`
# and `--role central` in two processes, each on one of Bumble's two stock controllers (python -m
# bumble.apps.controllers, one link), against Bumble's hosts on the same kind of controllers (bench_bumble.py
# above): the controllers are then the same, and the ratio says whether our host keeps up with Bumble's.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-.venv/bin/python}
ours_count=${OURS_COUNT:-100000}
bumble_count=${BUMBLE_COUNT:-3000}
sizes=${SIZES:-"244 20"}
repeat=${REPEAT:-3}

if [ -z "${BLUE:-}" ]; then
  echo "building blue (release, default scratch path .build/)" >&2
  swift build -c release --product blue >&2
  BLUE=$(swift build -c release --show-bin-path)/blue
fi
if ! "$python" -c "import bumble" 2>/dev/null; then
  echo "no Bumble in $python: run Scripts/setup-interop.sh (or set PYTHON)" >&2
  exit 1
fi

results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
for run in $(seq "$repeat"); do
  for size in $sizes; do
    echo "run $run/$repeat, ours:   notify --size $size --count $ours_count" >&2
    "$BLUE" bench notify --size "$size" --count "$ours_count" --json --quiet >>"$results/ours-$size.json"
    echo "run $run/$repeat, bumble: notify --size $size --count $bumble_count" >&2
    "$python" Scripts/bench_bumble.py --size "$size" --count "$bumble_count" --json --quiet >>"$results/bumble-$size.json"
  done
  for size in $sizes; do
    echo "run $run/$repeat, ours across two processes on Bumble's controllers: notify --size $size --count $bumble_count" >&2
    ports=$("$python" -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))')
    read -r port1 port2 <<<"$ports"
    "$python" -m bumble.apps.controllers "tcp-server:127.0.0.1:$port1" "tcp-server:127.0.0.1:$port2" >/dev/null 2>&1 &
    controllers=$!
    for _ in $(seq 100); do
      if "$python" -c "import socket,sys; socket.create_connection(('127.0.0.1', $port2), 0.2)" 2>/dev/null; then break; fi
      sleep 0.1
    done
    "$BLUE" bench notify --hci "tcp:127.0.0.1:$port1" --role peripheral --size "$size" --count "$bumble_count" \
      --timeout 30 --json --quiet >>"$results/across-sender-$size.json" &
    peripheral=$!
    "$BLUE" bench notify --hci "tcp:127.0.0.1:$port2" --role central --size "$size" --count "$bumble_count" \
      --timeout 30 --json --quiet >>"$results/across-$size.json" || echo "ours across processes failed (size $size)" >&2
    wait "$peripheral" || true
    kill "$controllers" 2>/dev/null || true
    wait "$controllers" 2>/dev/null || true
  done
  "$BLUE" bench air --reports 200000 --json --quiet >>"$results/air.json"
  "$BLUE" bench acl --count 200000 --json --quiet >>"$results/acl.json"
done

"$python" - "$results" $sizes <<'EOF'
import json, os, platform, sys, datetime
folder, sizes = sys.argv[1], sys.argv[2:]
import statistics
def load(name):
    """The best run (highest packets/s), with the median rate of all runs added."""
    with open(os.path.join(folder, name)) as f:
        runs = [json.loads(line) for line in f.read().split("\n") if line.strip()]
    best = max(runs, key=lambda r: r["packetsPerSecond"])
    best["median"] = statistics.median(r["packetsPerSecond"] for r in runs)
    best["runs"] = len(runs)
    return best
print(f"date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}; machine: {platform.machine()}, "
      f"{os.cpu_count()} cores, {platform.platform()}; best run of {load(f'ours-{sizes[0]}.json')['runs']} and median")
print(f"{'notify':<10}{'stack':<20}{'count':>9}{'packets/s':>13}{'median':>11}{'kB/s':>11}{'lost':>7}{'seconds':>10}")
for size in sizes:
    ours, bumble = load(f"ours-{size}.json"), load(f"bumble-{size}.json")
    for r in (ours, bumble):
        print(f"{str(size) + ' B':<10}{r['stack']:<20}{r['count']:>9}{r['packetsPerSecond']:>13,.0f}{r['median']:>11,.0f}"
              f"{r['kilobytesPerSecond']:>11,.0f}{r['lost']:>7}{r['seconds']:>10.3f}")
    ratio = ours["packetsPerSecond"] / bumble["packetsPerSecond"] if bumble["packetsPerSecond"] else float("inf")
    median_ratio = ours["median"] / bumble["median"] if bumble["median"] else float("inf")
    print(f"{'':<10}{'ratio ours/bumble':<20}{'':>9}{ratio:>12,.1f}x{median_ratio:>10,.1f}x")
print("on Bumble's controllers (the same two stock controllers, one link):")
for size in sizes:
    path = os.path.join(folder, f"across-{size}.json")
    if not os.path.exists(path) or not os.path.getsize(path):
        print(f"  {size} B: ours across processes did not run")
        continue
    ours, bumble = load(f"across-{size}.json"), load(f"bumble-{size}.json")
    ratio = ours["packetsPerSecond"] / bumble["packetsPerSecond"] if bumble["packetsPerSecond"] else float("inf")
    print(f"  {size} B: ours (two processes, blue bench --hci --role) {ours['packetsPerSecond']:,.0f}/s "
          f"(median {ours['median']:,.0f}, lost {ours['lost']}), Bumble's host {bumble['packetsPerSecond']:,.0f}/s "
          f"(median {bumble['median']:,.0f}): {ratio:.2f}x")
    # Each end's own CPU over the span (getrusage) and resident size: the best run's receiver and a sender's.
    ends = [("receiver", ours)]
    sender_path = os.path.join(folder, f"across-sender-{size}.json")
    if os.path.exists(sender_path) and os.path.getsize(sender_path):
        ends.insert(0, ("sender", load(f"across-sender-{size}.json")))
    for end, r in ends:
        if "cpuUserMicrosecondsPerValue" in r:
            print(f"      {end}: {r['cpuUserMicrosecondsPerValue']:.1f} µs user + {r['cpuSystemMicrosecondsPerValue']:.1f} µs "
                  f"system per value, resident {r['residentBytes'] / 1e6:.1f} MB (peak {r['peakResidentBytes'] / 1e6:.1f} MB)")
for name in ("air", "acl"):
    r = load(f"{name}.json")
    unit = "advertising reports" if name == "air" else f"ACL packets of {r['size']} octets"
    print(f"virtual radio ({name}): {r['packetsPerSecond']:,.0f} {unit}/s wall clock "
          f"(best of {r['runs']}, median {r['median']:,.0f}; {r['received']} in {r['seconds']:.3f} s; "
          f"{r['airPacketsPerSecond']:,.0f}/s of air time)")
EOF
