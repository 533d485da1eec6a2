"""Helpers for the `blue air` interop tests: start the hub as a subprocess, wait for it, stop it, and put Bumble
hosts (Google's Python stack, a host we did not write) on its H4/TCP ports."""
import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time

from conftest import BLUE

from bumble.device import Device
from bumble.hci import Address
from bumble.transport import open_transport


_next_port = None


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
        return low if low > 12000 else 32768
    except (OSError, ValueError, IndexError):
        return 32768


def free_ports(count):
    """`count` distinct TCP ports free on 127.0.0.1 now, from below the kernel's ephemeral range and never handed out
    twice by this process: a bind-0 port released and passed on could be given meanwhile to another listener or to
    an outgoing connection (as TestPorts in the Swift tests)."""
    global _next_port
    top = _ephemeral_low() - 1
    bottom = max(10000, top - 20000)
    if _next_port is None:
        _next_port = bottom + (os.getpid() * 131) % (top - bottom)
    ports = []
    for _ in range(20000):
        if len(ports) == count:
            break
        candidate = _next_port
        _next_port = bottom if _next_port >= top else _next_port + 1
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", candidate))
            except OSError:
                continue
        ports.append(candidate)
    if len(ports) < count:
        raise RuntimeError("no free TCP port below the ephemeral range")
    return ports


def can_connect_unix(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(1)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


def can_connect_tcp(port):
    """Whether something accepts on 127.0.0.1:port. (A hub connection that says nothing creates no device.)"""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


class Hub:
    """`blue air` as a subprocess; stdout goes to a file we read back."""

    def __init__(self, directory, tcp_ports=(), snoop=True, extra=()):
        self.directory = str(directory)
        self.socket = os.path.join(self.directory, "air.sock")
        self.snoop_dir = os.path.join(self.directory, "snoop") if snoop else None
        self.tcp_ports = list(tcp_ports)
        self.stdout_path = os.path.join(self.directory, "hub.out")
        self.stderr_path = os.path.join(self.directory, "hub.err")
        args = [BLUE, "air", "--socket", self.socket, "--stats-interval", "1"]
        for port in self.tcp_ports:
            args += ["--h4-tcp", f"127.0.0.1:{port}"]
        if self.snoop_dir:
            args += ["--snoop", self.snoop_dir]
        args += list(extra)
        self.args = args
        self.process = None

    def start(self, timeout=10):
        self._out = open(self.stdout_path, "w")
        self._err = open(self.stderr_path, "w")
        self.process = subprocess.Popen(self.args, stdout=self._out, stderr=self._err)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"blue air exited with {self.process.returncode}: {self.stderr()}")
            if can_connect_unix(self.socket) and all(can_connect_tcp(p) for p in self.tcp_ports):
                return self
            time.sleep(0.05)
        raise AssertionError(f"blue air did not listen within {timeout} s: {self.stderr()}")

    def stdout(self):
        with open(self.stdout_path) as f:
            return f.read()

    def stderr(self):
        with open(self.stderr_path) as f:
            return f.read()

    def interrupt(self, timeout=10):
        """SIGINT; returns the exit code (SIGKILL and an assertion if it does not end in time)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)
            raise AssertionError("blue air did not stop within 10 s of SIGINT")

    def kill(self):
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            with contextlib.suppress(Exception):
                self.process.wait(timeout=5)
        for f in (getattr(self, "_out", None), getattr(self, "_err", None)):
            if f is not None:
                f.close()

    def snoop_files(self):
        if not self.snoop_dir or not os.path.isdir(self.snoop_dir):
            return []
        return sorted(os.path.join(self.snoop_dir, name) for name in os.listdir(self.snoop_dir))


class BumbleHost:
    """A Bumble Device on one of the hub's TCP ports."""

    def __init__(self, port, name, address, keystore=None):
        self.port = port
        self.name = name
        self.address = address
        self.keystore = keystore
        self.transport = None
        self.device = None

    async def __aenter__(self):
        self.transport = await asyncio.wait_for(open_transport(f"tcp-client:127.0.0.1:{self.port}"), 10)
        self.device = Device.with_hci(self.name, Address(self.address), self.transport.source, self.transport.sink)
        if self.keystore is not None:
            self.device.keystore = self.keystore
        await asyncio.wait_for(self.device.power_on(), 10)
        return self.device

    async def __aexit__(self, *exc):
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.transport.close(), 5)


def tshark_malformed(path):
    """The malformed packets tshark finds in a capture ('' when none)."""
    result = subprocess.run(["tshark", "-r", path, "-Y", "_ws.malformed"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, f"tshark failed on {path}: {result.stderr}"
    return result.stdout.strip()


def tshark_count(path, display_filter=None):
    args = ["tshark", "-r", path]
    if display_filter:
        args += ["-Y", display_filter]
    result = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, f"tshark failed on {path}: {result.stderr}"
    return len([line for line in result.stdout.splitlines() if line.strip()])


@contextlib.contextmanager
def bumble_controllers(count):
    """Bumble's stock controllers (python -m bumble.apps.controllers: `count` controllers linked on one air, each an
    H4 server on a TCP port of its own), listening; yields their ports and stops them at the end."""
    ports = free_ports(count)
    process = subprocess.Popen([sys.executable, "-m", "bumble.apps.controllers", *[f"tcp-server:127.0.0.1:{port}" for port in ports]],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for port in ports:
            deadline = time.monotonic() + 15
            while not can_connect_tcp(port):
                if time.monotonic() > deadline:
                    raise AssertionError(f"Bumble's controller did not listen on {port}")
                time.sleep(0.1)
        yield ports
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
