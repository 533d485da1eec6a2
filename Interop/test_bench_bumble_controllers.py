"""Issue 13 item 5: `blue bench notify|write --hci TRANSPORT --role central|peripheral` between two processes, each
on one of Bumble's two stock controllers (python -m bumble.apps.controllers: controllers we did not write, one
link between them). The receiver counts every value in order; the sender ends when the receiver disconnects. Speed is
not asserted here (Scripts/bench.sh prints it beside Bumble's own host on the same controllers)."""
import json
import subprocess

import pytest

from air_support import bumble_controllers
from conftest import BLUE


@pytest.mark.parametrize("mode", ["notify", "write"])
def test_bench_across_two_processes_on_bumbles_controllers(mode):
    with bumble_controllers(2) as (port1, port2):
        common = ["bench", mode, "--count", "500", "--size", "100", "--timeout", "30", "--json", "--quiet"]
        peripheral = subprocess.Popen([BLUE, *common, "--hci", f"tcp:127.0.0.1:{port1}", "--role", "peripheral"],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        central = subprocess.run([BLUE, *common, "--hci", f"tcp:127.0.0.1:{port2}", "--role", "central"],
                                 capture_output=True, text=True, timeout=90)
        peripheral_out, peripheral_err = peripheral.communicate(timeout=60)
        assert central.returncode == 0, central.stderr
        assert peripheral.returncode == 0, peripheral_err
        central_result, peripheral_result = json.loads(central.stdout), json.loads(peripheral_out)
        receiver, sender = (central_result, peripheral_result) if mode == "notify" else (peripheral_result, central_result)
        assert receiver["received"] == 500 and receiver["lost"] == 0 and receiver["outOfOrder"] == 0, receiver
        assert sender["sent"] == 500, sender
        assert "(receiver)" in receiver["transport"] and "(sender)" in sender["transport"]
        assert receiver["mtu"] >= 103 and receiver["packetsPerSecond"] > 0
