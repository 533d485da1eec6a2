#!/usr/bin/env python3
"""Resident memory of a `blue` program that only serves or only scans, by part (issue 31 item 4).

    python3 Scripts/bench_memory.py [--blue PATH ...] [--settle 2.5] [--json]

For each `blue` given (default: the release build, and when they were made, the lean one, `swift build -c release
--product blue --disable-default-traits --scratch-path .build/lean`, and the static ones, Scripts/build-static.sh
[--lean]), starts
a private shared air (`blue air --socket DIR/air.sock` in a folder of its own), then `blue serve --profile
heart-rate` and, once it advertises, `blue scan`; when the scan has reported the server, reads each program's
/proc/PID/smaps: resident (Rss), proportional (Pss: shared pages divided among the processes mapping them), private
dirty (what this process alone adds to the machine: its heap, stacks and relocated data) and the same by part (the
program's own file, the Swift runtime, FoundationEssentials, the rest of Foundation with ICU, the C and C++ libraries, the heap, other anonymous
memory: thread stacks and malloc arenas). Also the executable's size on disk. Figures only: nothing is asserted.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIELDS = ("Rss", "Pss", "Private_Dirty")


def part_of(path, program):
    """The part of the program a mapping belongs to."""
    if path == program:
        return "the program's own file"
    name = os.path.basename(path)
    if path == "[heap]":
        return "heap (malloc's main arena)"
    if path == "" or path == "[stack]" or path.startswith("[anon"):
        return "other anonymous (stacks, arenas)"
    if path.startswith("["):
        return "kernel ([vdso] and such)"
    if name.startswith("libFoundationEssentials"):
        return "FoundationEssentials"
    if "Foundation" in name:
        return "Foundation (full) and ICU"
    if name.startswith("libswift") or name.startswith("libdispatch") or name.startswith("libBlocksRuntime"):
        return "Swift runtime, Concurrency, Dispatch"
    return "C and C++ libraries"


def smaps(pid, program):
    """Totals and parts of /proc/PID/smaps, in kB."""
    totals = dict.fromkeys(FIELDS, 0)
    parts = {}
    path = ""
    with open(f"/proc/{pid}/smaps") as file:
        for line in file:
            head = line.split(None, 1)[0]
            if "-" in head and not head.endswith(":"):
                fields = line.split(None, 5)
                path = fields[5].strip() if len(fields) > 5 else ""
                continue
            key = head.rstrip(":")
            if key in FIELDS:
                kilobytes = int(line.split()[1])
                totals[key] += kilobytes
                part = parts.setdefault(part_of(path, program), dict.fromkeys(FIELDS, 0))
                part[key] += kilobytes
    with open(f"/proc/{pid}/status") as file:
        threads = next(int(line.split()[1]) for line in file if line.startswith("Threads:"))
    return {"kB": totals, "parts": parts, "threads": threads}


def wait_for_line(process, needle, limit):
    """Reads `process`'s stdout until a line holds `needle` (False when it ends or `limit` passes)."""
    deadline = time.monotonic() + limit
    os.set_blocking(process.stdout.fileno(), False)
    buffered = b""
    while time.monotonic() < deadline:
        try:
            chunk = os.read(process.stdout.fileno(), 65536)
        except BlockingIOError:
            chunk = None
        if chunk:
            buffered += chunk
            if needle.encode() in buffered:
                return True
        elif chunk == b"" or process.poll() is not None:
            return False
        else:
            time.sleep(0.05)
    return False


def measure(blue, settle):
    program = os.path.realpath(blue)
    with tempfile.TemporaryDirectory(prefix="ocb-memory-") as folder:
        os.chmod(folder, 0o700)
        environment = dict(os.environ, OCB_AIR_SOCKET=os.path.join(folder, "air.sock"), OCB_KNOWN_PEERS="off")
        started = []
        try:
            server = subprocess.Popen([blue, "serve", "--profile", "heart-rate", "--name", "memory-bench"],
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=environment)
            started.append(server)
            if not wait_for_line(server, "advertising", 60):
                raise RuntimeError(f"{blue} serve did not start advertising")
            scanner = subprocess.Popen([blue, "scan", "--timeout", "60"], stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL, env=environment)
            started.append(scanner)
            if not wait_for_line(scanner, "memory-bench", 60):
                raise RuntimeError(f"{blue} scan did not report the server")
            time.sleep(settle)
            return {"program": blue, "bytesOnDisk": os.path.getsize(blue),
                    "serve": smaps(server.pid, program), "scan": smaps(scanner.pid, program)}
        finally:
            for process in started:
                process.terminate()
            for process in started:
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
            # The hub the programs started ends when its socket folder is gone and it has no hosts left.
            subprocess.run(["pkill", "-f", f"air --socket {folder}"], check=False)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    defaults = [os.path.join(ROOT, ".build", "release", "blue")]
    # The lean builds (no CoreBluetoothPrograms trait: FoundationEssentials only) and the static ones, when made.
    for optional in ((".build", "lean", "release", "blue"), (".build-static", "blue"), (".build-static-lean", "blue")):
        path = os.path.join(ROOT, *optional)
        if os.path.exists(path):
            defaults.append(path)
    parser.add_argument("--blue", action="append", help="a blue executable (repeatable)")
    parser.add_argument("--settle", type=float, default=2.5, help="seconds to wait after the scan found the server")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = []
    for blue in args.blue or defaults:
        if not os.path.exists(blue):
            sys.exit(f"bench_memory: no executable at {blue} (swift build -c release --product blue)")
        if not args.json and sys.stderr.isatty():
            print(f"measuring {blue} ...", file=sys.stderr)
        try:
            results.append(measure(blue, args.settle))
        except RuntimeError as error:
            sys.exit(f"bench_memory: {error}")
    if args.json:
        print(json.dumps(results, indent=1))
        return
    for result in results:
        print(f"{result['program']}  ({result['bytesOnDisk'] / 1e6:.1f} MB on disk)")
        for role in ("serve", "scan"):
            figures = result[role]
            kilobytes = figures["kB"]
            print(f"  blue {role}: resident {kilobytes['Rss'] / 1024:.1f} MB, proportional {kilobytes['Pss'] / 1024:.1f} MB, "
                  f"private dirty {kilobytes['Private_Dirty'] / 1024:.2f} MB, {figures['threads']} threads")
            for part, values in sorted(figures["parts"].items(), key=lambda item: -item[1]["Rss"]):
                if values["Rss"] == 0:
                    continue
                print(f"    {part:40} resident {values['Rss']:6d} kB  private dirty {values['Private_Dirty']:6d} kB")


if __name__ == "__main__":
    main()
