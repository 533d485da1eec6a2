#!/usr/bin/env python3
"""CPU per notification across processes on one shared air, ours beside Bumble's host (issue 31 item 2).

    .venv/bin/python Scripts/bench_cpu.py [--blue PATH] [--size 244] [--counts 1000 10000] [--repeat 1]
                                          [--whole-process] [--no-bumble] [--json]

Starts `blue air --h4-tcp` (a private socket folder, a free loopback port), then for each count runs
`blue bench notify --hci tcp:127.0.0.1:PORT --role peripheral` and `--role central` as two processes (each its own
controller on the air; ATT_MTU 247, data length 251) and `Scripts/bench_bumble.py --controllers tcp-client:...`
(Bumble's two hosts in one process on two controllers of the same air). Each program reports its own CPU over the
measured span (getrusage: user, system, context switches). The cost per notification is the difference between the
largest and the smallest count divided by the difference of the counts, so that what a run spends once (start-up,
the first packets) does not count. Figures only: nothing is asserted.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, limit=30):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"blue air does not listen on {port}")


def finish(process, timeout):
    """The output of `process` and its whole CPU (getrusage of the child, from wait4), start-up included."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            process.kill()
            raise RuntimeError("blue bench did not finish in time")
        time.sleep(0.05)
    process.returncode = os.waitstatus_to_exitcode(status)
    output, errors = process.stdout.read(), process.stderr.read()
    return output, errors, usage


def ours(blue, port, size, count, name, timeout, whole_process):
    common = ["bench", "notify", "--hci", f"tcp:127.0.0.1:{port}", "--size", str(size), "--count", str(count),
              "--name", name, "--timeout", "30", "--json", "--quiet"]
    # Outputs are a line of JSON each, far below a pipe's buffer, so reading them after the exit cannot block.
    sender = subprocess.Popen([blue, *common, "--role", "peripheral"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    receiver = subprocess.Popen([blue, *common, "--role", "central"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
    received, receiver_errors, receiver_usage = finish(receiver, timeout)
    sent, sender_errors, sender_usage = finish(sender, timeout)
    if receiver.returncode != 0 or sender.returncode != 0:
        raise RuntimeError(f"blue bench failed: {receiver_errors.strip()} {sender_errors.strip()}")
    ends = []
    for output, usage in ((sent, sender_usage), (received, receiver_usage)):
        figures = json.loads(output)
        if whole_process:
            # The whole process as the kernel accounted it (what the issue measured; works for a blue from before
            # `bench notify` reported its own span). Start-up cancels out in the difference between two counts.
            figures.update(cpuUserSeconds=usage.ru_utime, cpuSystemSeconds=usage.ru_stime,
                           contextSwitches=usage.ru_nvcsw + usage.ru_nivcsw,
                           residentBytes=figures.get("residentBytes", usage.ru_maxrss * 1024))
        ends.append(figures)
    return ends[0], ends[1]


def bumble(python, port, size, count, timeout):
    done = subprocess.run([python, os.path.join(ROOT, "Scripts", "bench_bumble.py"), "--controllers",
                           f"tcp-client:127.0.0.1:{port}", "--size", str(size), "--count", str(count), "--json",
                           "--quiet"], capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"bench_bumble failed: {done.stderr.strip()}")
    return json.loads(done.stdout)


def per_value(small, large, field):
    """The marginal cost per value between two runs of different counts."""
    if field not in small or field not in large:
        return float("nan")  # a blue from before the field existed
    return (large[field] - small[field]) / (large["count"] - small["count"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blue", default=os.environ.get("BLUE") or os.path.join(ROOT, ".build", "release", "blue"))
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--size", type=int, default=244)
    parser.add_argument("--counts", type=int, nargs=2, default=[1000, 10000], metavar=("SMALL", "LARGE"))
    parser.add_argument("--repeat", type=int, default=1, help="runs of each; the lowest marginal cost is kept")
    parser.add_argument("--no-bumble", action="store_true")
    parser.add_argument("--whole-process", action="store_true",
                        help="each end's CPU as the kernel accounted its whole process (wait4) rather than the span "
                             "the program measured itself; needed for a blue from before issue 31 item 1")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    small, large = sorted(args.counts)
    if small < 1 or large <= small:
        print("bench_cpu: --counts needs two different positive counts", file=sys.stderr)
        sys.exit(64)
    if not os.access(args.blue, os.X_OK):
        print(f"bench_cpu: no blue at {args.blue} (swift build -c release --product blue, or --blue)", file=sys.stderr)
        sys.exit(64)
    folder = tempfile.mkdtemp(prefix="bench-cpu-")
    port = free_port()
    hub = subprocess.Popen([args.blue, "air", "--socket", os.path.join(folder, "air.sock"), "--h4-tcp",
                            f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = {"sender": [], "receiver": [], "bumble": []}
    try:
        wait_listening(port)
        timeout = 120 + large / 100
        for run in range(args.repeat):
            runs = {}
            for count in (small, large):
                print(f"run {run + 1}/{args.repeat}: ours, {count} notifications of {args.size} B", file=sys.stderr)
                runs[count] = ours(args.blue, port, args.size, count, f"cpu-{run}-{count}", timeout, args.whole_process)
            for index, end in enumerate(("sender", "receiver")):
                a, b = runs[small][index], runs[large][index]
                results[end].append({
                    "userMicroseconds": per_value(a, b, "cpuUserSeconds") * 1e6,
                    "systemMicroseconds": per_value(a, b, "cpuSystemSeconds") * 1e6,
                    "contextSwitches": per_value(a, b, "contextSwitches"),
                    "residentBytes": b["residentBytes"], "packetsPerSecond": b["packetsPerSecond"],
                    "lost": b.get("lost", 0), "dataLength": b["dataLength"], "mtu": b["mtu"]})
            if args.no_bumble:
                continue
            bumbles = {}
            for count in (small, large):
                print(f"run {run + 1}/{args.repeat}: Bumble's host, {count} notifications", file=sys.stderr)
                bumbles[count] = bumble(args.python, port, args.size, count, timeout)
            a, b = bumbles[small], bumbles[large]
            results["bumble"].append({
                "userMicroseconds": per_value(a, b, "cpuUserSeconds") * 1e6,
                "systemMicroseconds": per_value(a, b, "cpuSystemSeconds") * 1e6,
                "contextSwitches": per_value(a, b, "contextSwitches"),
                "residentBytes": b["peakResidentBytes"], "packetsPerSecond": b["packetsPerSecond"],
                "lost": b["lost"], "dataLength": b["dataLength"], "mtu": b["mtu"]})
    finally:
        hub.terminate()
        try:
            hub.wait(10)
        except subprocess.TimeoutExpired:
            hub.kill()
        for name in os.listdir(folder):
            os.unlink(os.path.join(folder, name))
        os.rmdir(folder)
    best = {end: min(runs, key=lambda r: r["userMicroseconds"] + r["systemMicroseconds"])
            for end, runs in results.items() if runs}
    if args.json:
        print(json.dumps({"size": args.size, "counts": [small, large], "runs": args.repeat, **best}))
        return
    print(f"CPU per notification of {args.size} B across processes on one blue air (marginal cost between "
          f"{small:,} and {large:,}, best of {args.repeat})")
    print(f"{'end':<34}{'user µs':>9}{'system µs':>11}{'total µs':>10}{'switches':>10}{'resident MB':>13}"
          f"{'values/s':>10}")
    labels = {"sender": "OpenCoreBluetooth sender", "receiver": "OpenCoreBluetooth receiver",
              "bumble": "Bumble, both hosts in one process"}
    for end, r in best.items():
        print(f"{labels[end]:<34}{r['userMicroseconds']:>9.1f}{r['systemMicroseconds']:>11.1f}"
              f"{r['userMicroseconds'] + r['systemMicroseconds']:>10.1f}{r['contextSwitches']:>10.2f}"
              f"{r['residentBytes'] / 1e6:>13.1f}{r['packetsPerSecond']:>10,.0f}")


if __name__ == "__main__":
    main()
