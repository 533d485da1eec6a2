#!/usr/bin/env python3
"""Hostile-peer sessions against our host on a private shared air (issue 30), until --duration is over.

A private `blue air` hub (in a 0700 folder) and a victim server, `blue serve --profile heart-rate`, for the whole
run. Sessions alternate, each with its seed (printed; `hostile_peer.py --seed N` replays the peer's side):

- central: hostile_peer.py connects to the server and sends its barrage; then `blue read` of Body Sensor Location
  from a well-behaved central must still answer 01 (the server kept serving);
- peripheral: hostile_peer.py advertises "Hostile" and answers wrongly; `blue explore Hostile` must end by itself
  within its bound (ATT's 30-second timeout and a margin) with an exit code of its own (not a signal).

A failure: the server gone (a crash), a health read that fails, an explore that hangs or dies by a signal. Exit 0
with no failure, 1 otherwise; the logs of a failed run are kept in --keep DIR.
"""

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PEER = os.path.join(HERE, "hostile_peer.py")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blue", required=True)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=None, help="the first session's seed (then +1 each)")
    parser.add_argument("--keep", default="hostile-peer-findings")
    arguments = parser.parse_args()
    seed = arguments.seed if arguments.seed is not None else random.SystemRandom().randrange(1 << 31)
    folder = tempfile.mkdtemp(prefix="ocb-hostile-peer-")
    os.chmod(folder, 0o700)
    socket_path = os.path.join(folder, "air.sock")
    environment = dict(os.environ, OCB_AIR_SOCKET=socket_path, HOME=folder, XDG_STATE_HOME=folder + "/state",
                       XDG_DATA_HOME=folder + "/data", XDG_RUNTIME_DIR=folder)
    environment.pop("OCB_HCI", None)
    logs = []

    def log(name):
        path = os.path.join(folder, name)
        logs.append(path)
        return open(path, "ab")

    hub = subprocess.Popen([arguments.blue, "air", "--socket", socket_path, "--stats-interval", "0"], env=environment,
                           stdout=log("hub.log"), stderr=subprocess.STDOUT)
    server = None
    failures = []
    sessions = {"central": 0, "peripheral": 0}
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(socket_path) and time.monotonic() < deadline:
            time.sleep(0.1)
        server = subprocess.Popen([arguments.blue, "serve", "--profile", "heart-rate"], env=environment,
                                  stdout=log("server.log"), stderr=subprocess.STDOUT)
        time.sleep(2.0)
        end = time.monotonic() + arguments.duration
        number = 0
        while time.monotonic() < end and not failures:
            session_seed = seed + number
            role = "central" if number % 3 != 2 else "peripheral"
            number += 1
            sessions[role] += 1
            if role == "central":
                peer = subprocess.run([sys.executable, PEER, "--hub", socket_path, "--seed", str(session_seed),
                                       "--frames", "300", "--duration", "20"], env=environment, capture_output=True,
                                      text=True, timeout=40)
                print(peer.stdout.strip(), flush=True)
                if server.poll() is not None:
                    failures.append(f"seed {session_seed}: the server ended (exit {server.returncode}) under the barrage")
                    break
                read = subprocess.run([arguments.blue, "read", "blue heart rate", "2A38", "--timeout", "15"], env=environment,
                                      capture_output=True, text=True, timeout=60)
                if read.returncode != 0 or "= 01" not in read.stdout:
                    failures.append(f"seed {session_seed}: the server did not answer a read after the barrage "
                                    f"(exit {read.returncode}): {read.stdout.strip()} {read.stderr.strip()}")
            else:
                peer = subprocess.Popen([sys.executable, PEER, "--hub", socket_path, "--role", "peripheral", "--seed",
                                         str(session_seed), "--frames", "200", "--duration", "45"], env=environment,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                time.sleep(0.5)
                started = time.monotonic()
                explore = subprocess.Popen([arguments.blue, "explore", "Hostile", "--timeout", "10"], env=environment,
                                           stdout=log(f"explore-{session_seed}.log"), stderr=subprocess.STDOUT,
                                           start_new_session=True)
                try:
                    code = explore.wait(timeout=10 + 30 + 15)
                    if code < 0 or code not in (0, 1, 2):
                        failures.append(f"seed {session_seed}: blue explore ended with {code} against the hostile peripheral")
                except subprocess.TimeoutExpired:
                    os.killpg(explore.pid, signal.SIGKILL)
                    explore.wait()
                    failures.append(f"seed {session_seed}: blue explore did not end within 55 s against the hostile peripheral")
                print(f"hostile peer peripheral seed {session_seed}: blue explore ended with {explore.returncode} "
                      f"after {time.monotonic() - started:.1f} s", flush=True)
                peer.kill()
                peer.wait()
        if server.poll() is not None and not failures:
            failures.append(f"the server ended (exit {server.returncode})")
    finally:
        for process in (server, hub):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
    print(f"hostile peer: {sessions['central']} sessions as central, {sessions['peripheral']} as peripheral, "
          f"seeds from {seed}: {'no failure' if not failures else str(len(failures)) + ' failure(s)'}", flush=True)
    if failures:
        os.makedirs(arguments.keep, exist_ok=True)
        for path in logs:
            if os.path.exists(path):
                shutil.copy(path, arguments.keep)
        for failure in failures:
            print("FAILED: " + failure, file=sys.stderr)
    shutil.rmtree(folder, ignore_errors=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
