#!/usr/bin/env python3
"""The soak a release is judged by (issue 30): the shared air for a while with a dozen programs on it.

A hub of its own (`blue air`, in a private 0700 folder) and two GATT servers (`blue serve --profile heart-rate`,
clients of the hub) that stay for the whole run, and workers that connect, pair, chat, subscribe, explore, scan and
benchmark in cycles, while faults change the air every few seconds (loss, dropped links, radios off and on, moves),
a hostile peer attacks the servers over links (Fuzz/HostilePeer) and the hostile-controller fuzzer runs its own
sessions beside them. Every second the resident memory and open
descriptors of the long-lived programs are sampled (/proc), and the hub's heap in use from its statistics lines.

It fails on: a crash (a program ended by a signal we did not send), a hang (a program past its bound), a lost or
corrupted transfer (a chat whose receiver printed other text, or whose sender said it was sent while the receiver
got nothing), a long-lived program gone, or growth after warm-up beyond the stated slope (resident memory, least
squares over the samples after warm-up), of the hub's heap in use, or of descriptors. A cycle that fails with the tool's own error under a
fault (a link dropped mid-pairing) is counted, not a failure: faults are there to make such errors happen.

Only the Python standard library; Linux (/proc).
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

# After warm-up, resident memory may grow at most this fast (KiB per minute, least squares) and the floor of open
# descriptors (the fewest seen in the last third against the first third) at most this much; memory is judged only
# when the span after warm-up is at least a minute.
RSS_SLOPE_LIMIT_KIB_PER_MIN = 1024
# The hub's heap in use (what it allocated and did not free, from its own statistics lines), after warm-up: growth
# here is memory the hub holds, not memory its allocator keeps for reuse. It follows the hosts joined at the moment
# (hundreds of KiB either way within a minute), so it is judged only over at least ten minutes after warm-up.
HEAP_SLOPE_LIMIT_KIB_PER_MIN = 64
HEAP_JUDGED_AFTER_SECONDS = 600
FD_GROWTH_LIMIT = 8
# A host on the hub: its socket and the wake pipe of the socket's reader (measured: three `blue scan` add nine).
HUB_DESCRIPTORS_PER_HOST = 3
# Exit codes a cycle may end with under faults: done, failed (1), not found (2), unreachable (69). Anything else (a
# usage error, a crash) is a failure.
TOLERATED_EXITS = {0, 1, 2, 69}
# The hostile peer of the air (issue 30): mutated ATT, L2CAP signaling and SMP over a link to a server.
HOSTILE_PEER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Fuzz", "HostilePeer", "hostile_peer.py")


class Soak:
    def __init__(self, blue, duration, seed, hostile, keep):
        self.blue = blue
        self.duration = duration
        self.random = random.Random(seed)
        self.seed = seed
        self.hostile = hostile
        self.keep = keep
        self.folder = tempfile.mkdtemp(prefix="ocb-soak-")  # 0700
        self.socket = os.path.join(self.folder, "air.sock")
        self.env = dict(os.environ, XDG_RUNTIME_DIR=self.folder, OCB_AIR_SOCKET=self.socket,
                        XDG_DATA_HOME=os.path.join(self.folder, "data"), XDG_STATE_HOME=os.path.join(self.folder, "state"),
                        OCB_KNOWN_PEERS="off", OCB_RESTORATION="off", OCB_LOG_LEVEL="error")
        self.hci = "air:" + self.socket
        self.lock = threading.Lock()
        self.failures = []
        self.cycles = {}
        self.faults = {}
        self.samples = {}  # name -> [(seconds, rss KiB, fds)]
        self.hub_heap = []  # [(seconds, heap in use KiB)] from the hub's statistics lines
        self.hub_log_offset = 0
        self.long_lived = {}  # name -> Popen
        self.stopping = threading.Event()
        self.start = time.monotonic()
        self.progress = sys.stderr.isatty()

    # MARK: Bookkeeping

    def elapsed(self):
        return time.monotonic() - self.start

    def fail(self, text):
        with self.lock:
            self.failures.append(f"{self.elapsed():.0f}s: {text}")
        print(f"soak: FAIL {text}", file=sys.stderr, flush=True)

    def count(self, worker, outcome):
        with self.lock:
            self.cycles.setdefault(worker, {}).setdefault(outcome, 0)
            self.cycles[worker][outcome] += 1

    def log_path(self, name):
        return os.path.join(self.folder, "logs", name)

    # MARK: Programs

    def spawn(self, name, arguments, stdin=None):
        os.makedirs(os.path.join(self.folder, "logs"), exist_ok=True)
        out = open(self.log_path(name + ".out"), "ab")
        err = open(self.log_path(name + ".err"), "ab")
        process = subprocess.Popen([self.blue] + arguments, env=self.env, stdin=stdin or subprocess.DEVNULL,
                                   stdout=out, stderr=err, start_new_session=True)
        out.close()
        err.close()
        return process

    def run(self, worker, arguments, bound):
        """Runs one cycle's program within `bound` seconds; its exit code, or None after a hang or a crash."""
        process = self.spawn(worker, arguments)
        try:
            code = process.wait(timeout=bound)
        except subprocess.TimeoutExpired:
            self.terminate(process)
            self.fail(f"{worker}: `blue {' '.join(arguments)}` still ran after {bound} s (hang)")
            self.count(worker, "hang")
            return None
        return self.judge(worker, arguments, code)

    def judge(self, worker, arguments, code):
        if code < 0:
            self.fail(f"{worker}: `blue {' '.join(arguments)}` ended by signal {-code} (crash)")
            self.count(worker, "crash")
            return None
        if code not in TOLERATED_EXITS:
            self.fail(f"{worker}: `blue {' '.join(arguments)}` exited {code}")
            self.count(worker, f"exit {code}")
            return None
        self.count(worker, "ok" if code == 0 else f"failed under faults (exit {code})")
        return code

    @staticmethod
    def terminate(process):
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()

    def start_long_lived(self, name, arguments):
        self.long_lived[name] = self.spawn(name, arguments)

    # MARK: Workers (each a thread running cycles until the end)

    def cycle(self, worker, body):
        def loop():
            while not self.stopping.is_set():
                body(worker)
                self.stopping.wait(self.random.uniform(0.2, 1.0))
        thread = threading.Thread(target=loop, name=worker, daemon=True)
        thread.start()
        return thread

    def chat(self, worker):
        text = "".join(self.random.choice("abcdefghijklmnopqrstuvwxyz \n") for _ in range(self.random.randint(50, 4000)))
        path = os.path.join(self.folder, "chat.txt")
        with open(path, "w") as file:
            file.write(text)
        received_path = self.log_path("chat-receive.out")
        if os.path.exists(received_path):
            os.remove(received_path)
        receiver = self.spawn("chat-receive", ["chat", "receive", "--hci", self.hci, "--timeout", "40"])
        sender = self.run("chat-send", ["chat", "send", "--hci", self.hci, "--file", path, "--quiet", "--timeout", "40"], 60)
        try:
            code = receiver.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.terminate(receiver)
            self.fail("chat-receive: still ran 30 s after the sender ended (hang)")
            return
        code = self.judge("chat-receive", ["chat", "receive"], code)
        with open(received_path, errors="replace") as file:
            received = file.read()
        if code == 0 and received.rstrip("\n") != text.rstrip("\n"):
            self.fail(f"chat: the receiver printed {len(received)} characters, not the {len(text)} sent (corrupted transfer)")
            shutil.copy(path, self.log_path(f"chat-corrupted-{int(self.elapsed())}.txt"))
        elif sender == 0 and code != 0:
            self.fail("chat: the sender said the text was sent, the receiver did not get it (lost transfer)")

    def pair(self, worker):
        target = self.random.choice(["soak-hr-1", "soak-hr-2"])
        self.run(worker, ["pair", target, "--hci", self.hci, "--method", "jw", "--repair", "--timeout", "20",
                          "--bonds", os.path.join(self.folder, "bonds")], 90)

    def subscribe(self, worker):
        self.run(worker, ["subscribe", "soak-hr-2", "2A37", "--hci", self.hci, "--count", "3", "--timeout", "20"], 60)

    def explore(self, worker):
        self.run(worker, ["explore", self.random.choice(["soak-hr-1", "soak-hr-2"]), "--hci", self.hci, "--timeout", "15"], 60)

    def scan(self, worker):
        self.run(worker, ["scan", "--hci", self.hci, "--timeout", "3"], 30)

    def hostile_peer(self, worker):
        """A hostile peer (Fuzz/HostilePeer/hostile_peer.py) attacks one of the servers over a link; the servers are
        long-lived, so a crash fails the soak at its end, and the explore and subscribe cycles check they serve."""
        seed = self.random.randrange(1 << 31)
        arguments = [sys.executable, HOSTILE_PEER, "--hub", self.socket, "--target", self.random.choice(["soak-hr-1", "soak-hr-2"]),
                     "--seed", str(seed), "--frames", "150", "--duration", "20"]
        out = open(self.log_path("hostile-peer.out"), "ab")
        process = subprocess.Popen(arguments, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        out.close()
        try:
            code = process.wait(timeout=40)
        except subprocess.TimeoutExpired:
            self.terminate(process)
            self.fail(f"{worker}: the hostile peer (seed {seed}) still ran after 40 s")
            return
        self.count(worker, "ok" if code == 0 else f"peer exit {code}")

    def bench(self, worker):
        name = f"soak-bench-{self.random.randint(0, 1 << 30)}"
        common = ["--hci", self.hci, "--name", name, "--count", "500", "--size", "100", "--quiet", "--timeout", "30"]
        peripheral = self.spawn("bench-peripheral", ["bench", "notify", "--role", "peripheral"] + common)
        self.run("bench-central", ["bench", "notify", "--role", "central"] + common, 90)
        try:
            self.judge("bench-peripheral", ["bench", "notify", "--role", "peripheral"], peripheral.wait(timeout=40))
        except subprocess.TimeoutExpired:
            self.terminate(peripheral)
            self.fail("bench-peripheral: still ran 40 s after the central ended (hang)")

    # MARK: Faults

    def devices(self):
        listed = subprocess.run([self.blue, "fault", "devices"], env=self.env, capture_output=True, text=True, timeout=20)
        return re.findall(r"^(dev\d+) ", listed.stdout, re.MULTILINE)

    def fault(self, arguments):
        try:
            done = subprocess.run([self.blue, "fault"] + arguments, env=self.env, capture_output=True, text=True, timeout=20)
        except subprocess.TimeoutExpired:
            self.fail(f"`blue fault {' '.join(arguments)}` still ran after 20 s (hang)")
            return
        if done.returncode < 0:
            self.fail(f"`blue fault {' '.join(arguments)}` ended by signal {-done.returncode} (crash)")
        kind = arguments[0] if arguments[0] != "power" else f"power {arguments[2]}"
        with self.lock:
            self.faults[kind] = self.faults.get(kind, 0) + 1

    def faulting(self):
        while not self.stopping.wait(self.random.uniform(2, 5)):
            try:
                devices = self.devices()
            except subprocess.TimeoutExpired:
                self.fail("`blue fault devices` still ran after 20 s (hang)")
                continue
            # The long-lived programs keep their radios; the others get every fault.
            choice = self.random.random()
            if choice < 0.25:
                self.fault(["loss", str(self.random.choice([5, 10, 20]))])
                self.stopping.wait(self.random.uniform(1, 3))
                self.fault(["loss", "0"])
            elif choice < 0.45:
                self.fault(["drop", "all"])
            elif choice < 0.7 and devices:
                device = self.random.choice(devices)
                self.fault(["power", device, "off"])
                self.stopping.wait(self.random.uniform(0.5, 2))
                self.fault(["power", device, "on"])
            elif devices:
                device = self.random.choice(devices)
                self.fault(["move", device, f"{self.random.uniform(0, 8):.1f}", f"{self.random.uniform(0, 8):.1f}"])

    # MARK: Sampling

    def hosts_on_the_hub(self):
        """The hosts joined and not gone, by the hub's own lines ("joined: devN", "left: devN")."""
        try:
            with open(self.log_path("hub.out")) as log:
                lines = log.read().splitlines()
        except OSError:
            return 0
        return sum(line.startswith("joined: ") for line in lines) - sum(line.startswith("left: ") for line in lines)

    def sample_hub_heap(self):
        """The heap in use of the hub's statistics lines written since the last look ("...; heap N KiB in use")."""
        try:
            with open(self.log_path("hub.out"), errors="replace") as log:
                log.seek(self.hub_log_offset)
                text = log.read()
        except OSError:
            return
        complete = text[:text.rfind("\n") + 1]
        self.hub_log_offset += len(complete.encode())
        for match in re.finditer(r"^traffic: .*; heap (\d+) KiB in use$", complete, re.MULTILINE):
            self.hub_heap.append((self.elapsed(), int(match.group(1))))

    @staticmethod
    def slope_per_minute(points):
        """Least squares slope of (seconds, value) points, per minute."""
        mean_t = sum(t for t, _ in points) / len(points)
        mean_v = sum(v for _, v in points) / len(points)
        variance = sum((t - mean_t) ** 2 for t, _ in points)
        return (sum((t - mean_t) * (v - mean_v) for t, v in points) / variance if variance else 0) * 60

    def sampling(self):
        while not self.stopping.wait(1):
            self.sample_hub_heap()
            for name, process in list(self.long_lived.items()):
                if process.poll() is not None:
                    continue
                try:
                    with open(f"/proc/{process.pid}/status") as status:
                        rss = int(re.search(r"VmRSS:\s+(\d+)", status.read()).group(1))
                    fds = len(os.listdir(f"/proc/{process.pid}/fd"))
                    if name == "hub":
                        # Each host joined at the moment holds HUB_DESCRIPTORS_PER_HOST: what is left is what the hub
                        # holds itself, so that a leak shows and the clients coming and going of a short run do not.
                        fds -= HUB_DESCRIPTORS_PER_HOST * max(0, self.hosts_on_the_hub())
                except (OSError, AttributeError):
                    continue
                with self.lock:
                    self.samples.setdefault(name, []).append((self.elapsed(), rss, fds))
            if self.progress and int(self.elapsed()) % 10 == 0:
                with self.lock:
                    done = sum(sum(outcomes.values()) for outcomes in self.cycles.values())
                print(f"soak: {self.elapsed():.0f}/{self.duration} s, {done} cycles, {len(self.failures)} failures",
                      file=sys.stderr, flush=True)

    def memory_report(self, warm_up):
        report = {}
        for name, samples in sorted(self.samples.items()):
            after = [sample for sample in samples if sample[0] >= warm_up]
            entry = {"startKiB": samples[0][1], "endKiB": samples[-1][1], "startFds": samples[0][2], "endFds": samples[-1][2]}
            if len(after) >= 2:
                entry["afterWarmUpKiB"] = after[0][1]
                entry["afterWarmUpFds"] = after[0][2]
                slope = self.slope_per_minute([(t, r) for t, r, _ in after])
                entry["slopeKiBPerMinute"] = round(slope, 1)
                span = after[-1][0] - after[0][0]
                if span >= 60 and slope > RSS_SLOPE_LIMIT_KIB_PER_MIN:
                    self.fail(f"{name}: resident memory grows {slope:.0f} KiB/min after warm-up "
                              f"(limit {RSS_SLOPE_LIMIT_KIB_PER_MIN})")
                # Descriptors come and go with the clients connected at the moment (the hub's are counted without
                # those of the hosts joined): a leak raises the floor, so the lowest count of the last third is
                # compared with the lowest of the first third after warm-up.
                third = max(1, len(after) // 3)
                floor_start, floor_end = min(f for _, _, f in after[:third]), min(f for _, _, f in after[-third:])
                entry["descriptorFloors"] = [floor_start, floor_end]
                if floor_end > floor_start + FD_GROWTH_LIMIT:
                    self.fail(f"{name}: at least {floor_end - floor_start} more open descriptors at the end than after "
                              f"warm-up (floors {floor_start} and {floor_end}; limit {FD_GROWTH_LIMIT})")
            if name == "hub" and self.hub_heap:
                heap_after = [point for point in self.hub_heap if point[0] >= warm_up]
                entry["heapStartKiB"], entry["heapEndKiB"] = self.hub_heap[0][1], self.hub_heap[-1][1]
                if len(heap_after) >= 2:
                    entry["heapAfterWarmUpKiB"] = heap_after[0][1]
                    heap_slope = self.slope_per_minute(heap_after)
                    entry["heapSlopeKiBPerMinute"] = round(heap_slope, 1)
                    if heap_after[-1][0] - heap_after[0][0] >= HEAP_JUDGED_AFTER_SECONDS and heap_slope > HEAP_SLOPE_LIMIT_KIB_PER_MIN:
                        self.fail(f"hub: heap in use grows {heap_slope:.0f} KiB/min after warm-up "
                                  f"(limit {HEAP_SLOPE_LIMIT_KIB_PER_MIN})")
            report[name] = entry
        return report

    # MARK: The run

    def go(self):
        self.start_long_lived("hub", ["air", "--socket", self.socket])
        deadline = time.monotonic() + 20
        while not os.path.exists(self.socket) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not os.path.exists(self.socket):
            self.fail("the hub did not listen within 20 s")
            return self.finish(0)
        for index in (1, 2):
            self.start_long_lived(f"serve-{index}", ["serve", "--hci", self.hci, "--profile", "heart-rate",
                                                     "--name", f"soak-hr-{index}", "--allow-repairing"])
        threads = [threading.Thread(target=self.sampling, daemon=True), threading.Thread(target=self.faulting, daemon=True)]
        for thread in threads:
            thread.start()
        hostile = None
        if self.hostile:
            hostile = subprocess.Popen([sys.executable, self.hostile, "--blue", self.blue, "--duration", str(self.duration),
                                        "--jobs", "1", "--keep", os.path.join(self.folder, "hostile-findings")],
                                       stdout=open(self.log_path("hostile.out"), "ab"), stderr=subprocess.STDOUT,
                                       start_new_session=True)
        workers = [self.cycle("chat", self.chat), self.cycle("pair", self.pair), self.cycle("subscribe", self.subscribe),
                   self.cycle("explore", self.explore), self.cycle("scan", self.scan), self.cycle("bench", self.bench),
                   self.cycle("hostile-peer", self.hostile_peer)]
        self.stopping.wait(self.duration)
        self.stopping.set()
        for worker in workers:
            worker.join(timeout=150)
            if worker.is_alive():
                self.fail(f"{worker.name}: its cycle did not end within 150 s of the end")
        if hostile is not None:
            try:
                code = hostile.wait(timeout=180)
            except subprocess.TimeoutExpired:
                self.terminate(hostile)
                code = None
            if code != 0:
                self.fail(f"the hostile-controller fuzzer found failures (exit {code}; {self.log_path('hostile.out')})")
        return self.finish(min(max(self.duration * 0.2, 30), self.duration / 2))

    def finish(self, warm_up):
        for name, process in self.long_lived.items():
            code = process.poll()
            if code is not None:
                self.fail(f"{name}: ended before the soak did (exit {code})")
        memory = self.memory_report(warm_up)
        for process in self.long_lived.values():
            if process.poll() is None:
                self.terminate(process)
        return {"seconds": round(self.elapsed()), "seed": self.seed, "warmUpSeconds": round(warm_up), "memory": memory,
                "cycles": self.cycles, "faults": self.faults, "failures": self.failures, "folder": self.folder}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--blue", required=True, help="the blue executable")
    parser.add_argument("--duration", type=int, default=1800, help="seconds (default 1800)")
    parser.add_argument("--seed", type=int, default=None, help="the faults' and workers' seed (default: from the clock)")
    parser.add_argument("--hostile", default=None, help="Fuzz/HostileController/driver.py, to run beside (optional)")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    parser.add_argument("--keep", action="store_true", help="keep the soak's folder (logs) even when it passed")
    arguments = parser.parse_args()
    seed = arguments.seed if arguments.seed is not None else int(time.time())
    soak = Soak(arguments.blue, arguments.duration, seed, arguments.hostile, arguments.keep)
    result = soak.go()
    passed = not result["failures"]
    if arguments.json:
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        print(f"soak: {result['seconds']} s, seed {seed}, warm-up {result['warmUpSeconds']} s")
        for name, entry in result["memory"].items():
            print(f"  {name}: resident {entry['startKiB']} KiB at start, {entry.get('afterWarmUpKiB', '-')} after warm-up, "
                  f"{entry['endKiB']} at the end ({entry.get('slopeKiBPerMinute', '-')} KiB/min after warm-up); "
                  f"{'descriptors besides its hosts' if name == 'hub' else 'descriptors'} "
                  f"{entry['startFds']} / {entry.get('afterWarmUpFds', '-')} / {entry['endFds']}, "
                  f"floors after warm-up {entry.get('descriptorFloors', '-')}")
            if "heapStartKiB" in entry:
                print(f"  {name}: heap in use {entry['heapStartKiB']} KiB at start, {entry.get('heapAfterWarmUpKiB', '-')} "
                      f"after warm-up, {entry['heapEndKiB']} at the end ({entry.get('heapSlopeKiBPerMinute', '-')} KiB/min "
                      f"after warm-up)")
        for worker, outcomes in sorted(result["cycles"].items()):
            print(f"  {worker}: " + ", ".join(f"{count} {outcome}" for outcome, count in sorted(outcomes.items())))
        print("  faults: " + ", ".join(f"{count} {kind}" for kind, count in sorted(result["faults"].items())))
        for failure in result["failures"]:
            print(f"  FAIL {failure}")
        print(f"soak: {'passed' if passed else 'FAILED'} (logs: {result['folder']})" if not passed or arguments.keep
              else "soak: passed")
    if passed and not arguments.keep:
        shutil.rmtree(result["folder"], ignore_errors=True)
    sys.exit(0 if passed else 1)


if __name__ == "__main__":
    main()
