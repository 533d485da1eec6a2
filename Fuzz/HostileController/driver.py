#!/usr/bin/env python3
"""Runs `blue scan`, `blue serve` and `blue explore` against hostile_controller.py, session after session, and
checks that each run ends by itself within a bound, or within a bound of a SIGTERM, without a crash.

A session: a seed (printed; `--replay SEED` runs that one session again) picks the command, its timeout, when a
SIGTERM is sent (always for serve, which runs until one; sometimes for the others) and the controller's hostility
profile. The controller listens on a UNIX socket in a private directory (or TCP 127.0.0.1 port 0 with --tcp) and
blue runs with --hci unix:PATH (tcp:127.0.0.1:PORT) in its own process group, HOME and XDG directories private.

Verdicts: exit 0, 1, 2 (explore: target not found), 69 (controller lost) and 128+signal after our SIGTERM are
fine. A failure is a hang (past the bound: the process group is killed with SIGKILL), a death by a signal we did
not send or by SIGSEGV/SIGILL/SIGTRAP/SIGABRT/SIGBUS (a Swift trap), or any other exit code. Each failure keeps the
session's blue output, the controller's packet trace and stats in --keep DIR.
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CONTROLLER = os.path.join(HERE, "hostile_controller.py")
OK_EXITS = {0, 1, 2, 69}
TRAPS = {signal.SIGSEGV, signal.SIGILL, signal.SIGTRAP, signal.SIGABRT, signal.SIGBUS, signal.SIGFPE}

# How long a command may run past what it was asked for. Start-up (Reset and the init sequence: a dead controller
# after Reset costs at most 2 unanswered commands of 2 s with the host's limit), the stop (one command, or a
# starvation: 2 s each), plus slack for a loaded 2-core machine.
MARGIN = 15.0
# After our SIGTERM: blue's own stop limit is 5 s.
SIGTERM_BOUND = 8.0


def plan(seed, commands):
    rng = random.Random(seed ^ 0x5EED)
    command = rng.choice(commands)
    session = {"seed": seed, "command": command}
    if command == "scan":
        session["timeout"] = round(rng.uniform(0.2, 2.5), 2)
        session["sigterm_after"] = rng.choice([None, None, None, round(rng.uniform(0.05, 3.0), 2)])
    elif command == "serve":
        session["timeout"] = None
        session["sigterm_after"] = round(rng.uniform(0.1, 4.0), 2)
    else:
        session["timeout"] = round(rng.uniform(0.5, 3.0), 2)
        session["sigterm_after"] = rng.choice([None, None, None, round(rng.uniform(0.1, 5.0), 2)])
    return session


def blue_arguments(session, hci):
    command = session["command"]
    if command == "scan":
        return ["scan", "--hci", hci, "--timeout", str(session["timeout"]), "--json", "--duplicates"]
    if command == "serve":
        return ["serve", "--hci", hci, "--profile", "battery", "--json"]
    return ["explore", "--hci", hci, "Hostile", "--timeout", str(session["timeout"])]


def bound(session):
    """Seconds the run may take without a SIGTERM. Explore: finding and connecting take --timeout each, then the
    GATT discovery, whose ATT requests time out after 30 s (Core 5.4 Vol 3 Part F §3.3.3) when unanswered."""
    if session["command"] == "scan":
        return session["timeout"] + MARGIN
    if session["command"] == "explore":
        return 2 * session["timeout"] + 30.0 + MARGIN
    return None


def kill_group(process):
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def run_session(session, blue, work, use_tcp, overrides):
    seed = session["seed"]
    directory = tempfile.mkdtemp(prefix="s%d-" % seed, dir=work)
    for sub in ("home", "data", "state"):
        os.mkdir(os.path.join(directory, sub))
    stats_path = os.path.join(directory, "stats.json")
    trace_path = os.path.join(directory, "trace.txt")
    output_path = os.path.join(directory, "blue.txt")
    controller_arguments = [sys.executable, CONTROLLER, "--seed", str(seed), "--role", session["command"],
                            "--stats", stats_path, "--trace", trace_path, "--lifetime", "150"]
    for setting in overrides:
        controller_arguments += ["--set", setting]
    if use_tcp:
        controller_arguments.append("--tcp")
    else:
        socket_path = os.path.join(directory, "hci.sock")
        controller_arguments += ["--unix", socket_path]
    controller = subprocess.Popen(controller_arguments, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  start_new_session=True, text=True)
    result = {"seed": seed, "command": session["command"], "verdict": None}
    blue_process = None
    aborted = False
    try:
        first = controller.stdout.readline().strip()
        if not first:
            result["verdict"] = "harness: the controller did not start"
            return result, directory
        hci = "tcp:127.0.0.1:%s" % first if use_tcp else "unix:%s" % socket_path
        environment = dict(os.environ, HOME=os.path.join(directory, "home"),
                           XDG_DATA_HOME=os.path.join(directory, "data"),
                           XDG_STATE_HOME=os.path.join(directory, "state"))
        with open(output_path, "w") as output:
            started = time.monotonic()
            blue_process = subprocess.Popen([blue] + blue_arguments(session, hci), stdout=output, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, env=environment, start_new_session=True)
            limit = bound(session)
            sigterm_at = session["sigterm_after"]
            sent_sigterm = None
            while True:
                code = blue_process.poll()
                elapsed = time.monotonic() - started
                if code is not None:
                    break
                if sent_sigterm is None and sigterm_at is not None and elapsed >= sigterm_at:
                    blue_process.send_signal(signal.SIGTERM)
                    sent_sigterm = elapsed
                if sent_sigterm is not None and elapsed - sent_sigterm > SIGTERM_BOUND:
                    kill_group(blue_process)
                    result["verdict"] = "hang: still running %.1f s after SIGTERM" % (elapsed - sent_sigterm)
                    break
                if sent_sigterm is None and limit is not None and elapsed > limit:
                    kill_group(blue_process)
                    result["verdict"] = "hang: still running after %.1f s (bound %.1f s)" % (elapsed, limit)
                    break
                time.sleep(0.02)
            result["elapsed"] = round(time.monotonic() - started, 3)
            result["sigterm_after"] = sent_sigterm
            result["exit"] = blue_process.returncode
            if result["verdict"] is None:
                code = blue_process.returncode
                if code < 0:
                    number = -code
                    if number in TRAPS or sent_sigterm is None or number != signal.SIGTERM:
                        result["verdict"] = "crash: killed by signal %d (%s)" % (number, signal.Signals(number).name)
                elif code in OK_EXITS or (sent_sigterm is not None and code in (130, 143)):
                    pass
                elif code in (128 + s for s in TRAPS) or code == 134:
                    result["verdict"] = "crash: exit %d" % code
                else:
                    result["verdict"] = "unexpected exit %d" % code
        return result, directory
    except BaseException:
        aborted = True
        raise
    finally:
        if blue_process is not None and blue_process.poll() is None:
            kill_group(blue_process)
        try:
            # It ends when blue's end closes the socket; at once when the session was interrupted.
            controller.wait(timeout=0.01 if aborted else 3)
        except subprocess.TimeoutExpired:
            kill_group(controller)
        if controller.stdout:
            controller.stdout.close()
        try:
            with open(stats_path) as source:
                result["controller"] = json.load(source)
        except (OSError, ValueError):
            result["controller"] = None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blue", required=True, help="the blue executable")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds to run sessions for (default 60)")
    parser.add_argument("--seed", type=int, help="the first session's seed (default: from the clock)")
    parser.add_argument("--replay", type=int, help="run the one session of this seed")
    parser.add_argument("--commands", default="scan,serve,explore")
    parser.add_argument("--jobs", type=int, default=2, help="sessions at once (default 2)")
    parser.add_argument("--tcp", action="store_true", help="H4 over TCP 127.0.0.1 instead of UNIX sockets")
    parser.add_argument("--keep", default="hostile-controller-findings", help="where failing sessions are kept")
    parser.add_argument("--summary", help="write the figures here (JSON)")
    parser.add_argument("--set", action="append", metavar="KEY=JSON",
                        help="override a key of every session's hostility profile (see hostile_controller.py)")
    args = parser.parse_args()
    commands = [c for c in args.commands.split(",") if c]
    work = tempfile.mkdtemp(prefix="hostile-controller-")
    seeds = [args.replay] if args.replay is not None else None
    base = args.seed if args.seed is not None else int(time.time()) % 1_000_000 * 1000
    print("hostile controller fuzz: blue %s, %s, first seed %d, work dir %s" % (
        args.blue, "replay of seed %d" % args.replay if seeds else "%.0f s" % args.duration, base if not seeds else args.replay, work),
        flush=True)
    totals = {"sessions": 0, "by_command": {}, "failures": [], "events_sent": 0, "acl_sent": 0, "mutated": 0,
              "commands_received": 0, "acl_received": 0, "injected": {}, "exits": {}, "longest": {}}
    deadline = time.monotonic() + args.duration
    next_index = 0
    children = {}  # pid -> (session, result path)

    def collect(pid, status):
        session, result_path = children.pop(pid)
        try:
            with open(result_path) as source:
                result = json.load(source)
        except (OSError, ValueError):
            result = {"seed": session["seed"], "command": session["command"], "verdict": "harness: no result"}
        totals["sessions"] += 1
        command = result["command"]
        totals["by_command"][command] = totals["by_command"].get(command, 0) + 1
        exit_key = "%s:%s" % (command, result.get("exit"))
        totals["exits"][exit_key] = totals["exits"].get(exit_key, 0) + 1
        if result.get("elapsed") is not None and result.get("sigterm_after") is None:
            totals["longest"][command] = max(totals["longest"].get(command, 0), result["elapsed"])
        stats = result.get("controller") or {}
        for key in ("events_sent", "acl_sent", "mutated", "commands_received", "acl_received"):
            totals[key] += stats.get(key, 0)
        for kind, count in (stats.get("injected") or {}).items():
            totals["injected"][kind] = totals["injected"].get(kind, 0) + count
        line = "seed %d %-7s exit %s in %ss%s" % (
            result["seed"], command, result.get("exit"), result.get("elapsed"),
            " (SIGTERM at %.2fs)" % result["sigterm_after"] if result.get("sigterm_after") is not None else "")
        if result.get("verdict"):
            totals["failures"].append({"seed": result["seed"], "command": command, "verdict": result["verdict"],
                                       "kept": result.get("kept")})
            print("FAIL " + line + ": " + result["verdict"] + " (kept in %s)" % result.get("kept"), flush=True)
        else:
            print("ok   " + line, flush=True)

    def start(index):
        seed = seeds[0] if seeds else base + index
        session = plan(seed, commands)
        result_path = os.path.join(work, "result-%d.json" % seed)
        pid = os.fork()
        if pid == 0:
            def interrupted(*_):
                raise SystemExit(130)
            signal.signal(signal.SIGINT, interrupted)
            signal.signal(signal.SIGTERM, interrupted)
            children.clear()
            code = 0
            try:
                result, directory = run_session(session, args.blue, work, args.tcp, args.set or [])
                if result["verdict"] or seeds:
                    os.makedirs(args.keep, exist_ok=True)
                    kept = os.path.join(args.keep, "seed-%d-%s" % (seed, session["command"]))
                    shutil.rmtree(kept, ignore_errors=True)
                    shutil.copytree(directory, kept, ignore=shutil.ignore_patterns("*.sock", "home", "data", "state"))
                    result["kept"] = kept
                shutil.rmtree(directory, ignore_errors=True)
                with open(result_path, "w") as out:
                    json.dump(result, out)
            except SystemExit:
                os._exit(130)
            except BaseException as error:  # the harness must report, not vanish
                with open(result_path, "w") as out:
                    json.dump({"seed": seed, "command": session["command"], "verdict": "harness: %r" % error}, out)
                code = 1
            os._exit(code)
        children[pid] = (session, result_path)

    def stop_everything(*_):
        for pid in list(children):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for pid in list(children):
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        shutil.rmtree(work, ignore_errors=True)
        os._exit(130)

    signal.signal(signal.SIGINT, stop_everything)
    signal.signal(signal.SIGTERM, stop_everything)
    try:
        while True:
            if seeds:
                if next_index == 0:
                    start(0)
                    next_index = 1
            else:
                while len(children) < args.jobs and time.monotonic() < deadline:
                    start(next_index)
                    next_index += 1
            if not children:
                break
            pid, status = os.wait()
            if pid in children:
                collect(pid, status)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    totals["duration"] = args.duration if not seeds else None
    totals["first_seed"] = base if not seeds else args.replay
    print("sessions %d %s; controller sent %d events and %d ACL packets (%d mutated), received %d commands and %d ACL "
          "packets; injections %s; longest unsignalled run %s; exits %s" % (
              totals["sessions"], json.dumps(totals["by_command"]), totals["events_sent"], totals["acl_sent"],
              totals["mutated"], totals["commands_received"], totals["acl_received"], json.dumps(totals["injected"], sort_keys=True),
              json.dumps(totals["longest"]), json.dumps(totals["exits"], sort_keys=True)), flush=True)
    if args.summary:
        with open(args.summary, "w") as out:
            json.dump(totals, out, indent=1)
    if totals["failures"]:
        print("%d FAILURES (replay: Fuzz/hostile-controller.sh --replay SEED):" % len(totals["failures"]))
        for failure in totals["failures"]:
            print("  seed %d %s: %s" % (failure["seed"], failure["command"], failure["verdict"]))
        return 1
    print("no failures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
