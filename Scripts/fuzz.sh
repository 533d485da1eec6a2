#!/usr/bin/env bash
# Builds every libFuzzer entry point in Fuzz/Sources (ASan + libFuzzer) and runs each one, seeded from the
# golden vectors in Fuzz/Seeds/<Name>.txt (one hex packet per line).
#
#   Scripts/fuzz.sh [RUNS] [NAME...]      RUNS executions per entry point (default 10000); all entries by default
#
# Prints one line per entry point with the executions done, and exits non-zero on any crash, leak or sanitizer
# report. Crash inputs are kept in Fuzz/artifacts/<Name>/: turn each into a regression test.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-10000}
shift || true
cd "$root/Fuzz"

if [ "$#" -gt 0 ]; then
  names=("$@")
else
  names=()
  for dir in Sources/Fuzz*/; do names+=("$(basename "$dir")"); done
fi

echo "fuzz: building ${#names[@]} entry points (release, -sanitize=fuzzer,address)"
for name in "${names[@]}"; do
  swift build -c release --product "$name" -Xswiftc -sanitize=fuzzer,address -Xswiftc -use-ld=lld \
    2>&1 | grep -E "error|warning: |Build" | grep -v "^Building" || true
  [ -x ".build/release/$name" ] || { echo "fuzz: $name did not build" >&2; exit 1; }
done

status=0
summary=()
for name in "${names[@]}"; do
  corpus="corpus/$name"
  artifacts="artifacts/$name"
  mkdir -p "$corpus" "$artifacts"
  if [ -f "Seeds/$name.txt" ]; then
    python3 - "Seeds/$name.txt" "$corpus" <<'PY'
import sys
seeds, corpus = sys.argv[1], sys.argv[2]
for number, line in enumerate(open(seeds, encoding="utf-8"), 1):
    text = "".join(line.split("#", 1)[0].split()).replace(":", "")
    if text:
        try:
            data = bytes.fromhex(text)
        except ValueError:
            sys.exit(f"{seeds}:{number}: not hex")
        open(f"{corpus}/seed-{number}", "wb").write(data)
PY
  fi
  log="artifacts/$name.log"
  start=$(date +%s)
  if ".build/release/$name" -runs="$runs" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
       -artifact_prefix="$artifacts/" "$corpus" > "$log" 2>&1; then
    result=ok
  else
    result=FAILED
    status=1
    tail -40 "$log" >&2
  fi
  seconds=$(( $(date +%s) - start ))
  done_runs=$(grep -oE "Done [0-9]+ runs" "$log" | grep -oE "[0-9]+" || echo 0)
  line=$(printf '%-22s %10s executions in %4ss  %s' "$name" "$done_runs" "$seconds" "$result")
  echo "fuzz: $line"
  summary+=("$line")
done

echo
echo "fuzz summary ($(date -u +%Y-%m-%d), $runs runs requested per entry point):"
printf '  %s\n' "${summary[@]}"
exit $status
