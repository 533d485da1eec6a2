"""Issue 29 item 5: `blue info --hci tcp:...` on Bumble's stock controller (python -m bumble.apps.controllers, a
controller we did not write): the version, manufacturer, features, buffers and commands it reports are read and
shown, in text and JSON, and agree with each other."""
import json
import subprocess

from air_support import bumble_controllers
from conftest import BLUE


def test_info_reads_bumbles_controller():
    # The app links two controllers (one per transport); blue asks the first.
    with bumble_controllers(2) as (port, _):
        hci = f"tcp:127.0.0.1:{port}"
        shown = subprocess.run([BLUE, "info", "--hci", hci, "--json", "--commands"], capture_output=True, text=True, timeout=60)
        assert shown.returncode == 0, shown.stderr
        info = json.loads(shown.stdout)
        assert info["version"]["name"].startswith("Bluetooth Core "), info
        assert info["leACLBuffers"]["count"] >= 1 and info["leACLBuffers"]["length"] >= 27, info
        assert info["supportedCommandCount"] >= len(info["supportedCommands"]) > 10, info
        assert "LE Set Scan Enable" in info["supportedCommands"], info["supportedCommands"]
        assert any(feature["name"] == "LE Encryption" for feature in info["leFeatures"]), info["leFeatures"]
        print(f"Bumble's controller: {info['version']['name']}, manufacturer {info.get('manufacturer')}, "
              f"{info['supportedCommandCount']} commands, {len(info['leFeatures'])} LE features")
        text = subprocess.run([BLUE, "info", "--hci", hci], capture_output=True, text=True, timeout=60)
        assert text.returncode == 0, text.stderr
        assert f"{info['supportedCommandCount']} supported" in text.stdout, text.stdout
        assert info["version"]["name"] in text.stdout, text.stdout
