"""The air console for the interop checks: `blue air --console` on a private socket with two `blue` programs connected
on it (a heart-rate server and a subscriber), its address and token read from the hub's first lines."""
import contextlib
import os
import re
import subprocess
import time

from air_support import Hub
from conftest import BLUE


class ConsoleAir:
    def __init__(self, directory):
        self.directory = str(directory)
        self.hub = Hub(directory, snoop=False, extra=["--console", "127.0.0.1:0"])
        self.programs = []
        self.url = None

    def start(self):
        self.hub.start()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and self.url is None:
            match = re.search(r"console: (http://127\.0\.0\.1:(\d+)/\?token=([0-9a-f]{64}))", self.hub.stdout())
            if match:
                self.url, self.port, self.token = match.group(1), int(match.group(2)), match.group(3)
            time.sleep(0.05)
        assert self.url, f"blue air printed no console address: {self.hub.stdout()} {self.hub.stderr()}"
        self.base = f"http://127.0.0.1:{self.port}"
        return self

    def run(self, name, *args):
        """Starts `blue ARGS` on this air; its output goes to NAME.out / NAME.err in the directory."""
        out = open(os.path.join(self.directory, f"{name}.out"), "w")
        err = open(os.path.join(self.directory, f"{name}.err"), "w")
        env = dict(os.environ, OCB_AIR_SOCKET=self.hub.socket)
        process = subprocess.Popen([BLUE, *args], stdout=out, stderr=err, env=env)
        self.programs.append((process, out, err))
        return process

    def output(self, name):
        text = ""
        for suffix in ("out", "err"):
            path = os.path.join(self.directory, f"{name}.{suffix}")
            if os.path.exists(path):
                with open(path) as f:
                    text += f.read()
        return text

    def wait_for(self, predicate, what, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.1)
        raise AssertionError(f"{what} within {timeout} s; hub: {self.hub.stdout()[-2000:]}")

    def connect_pair(self):
        """A heart-rate server and a subscriber to it, connected (the hub reports the link at both ends)."""
        self.run("server", "serve", "--profile", "heart-rate")
        self.wait_for(lambda: "joined: dev1" in self.hub.stdout(), "the server joined")
        self.run("subscriber", "subscribe", "blue heart rate", "2A37")
        self.wait_for(lambda: self.hub.stdout().count("connected: dev") >= 2, "the subscriber connected")
        self.wait_for(lambda: "Heart Rate Measurement" in self.output("subscriber"), "a notification arrived")

    def stop(self):
        for process, out, err in self.programs:
            if process.poll() is None:
                process.terminate()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=10)
            if process.poll() is None:
                process.kill()
                process.wait(timeout=5)
            out.close()
            err.close()
        code = self.hub.interrupt()
        self.hub.kill()
        return code


@contextlib.contextmanager
def console_air(directory, connected=True):
    air = ConsoleAir(directory).start()
    try:
        if connected:
            air.connect_pair()
        yield air
    finally:
        air.stop()
