"""The air console's control API fuzzed by schemathesis (a property-based API tester we did not write) from
Docs/air-console.openapi.json, against `blue air --console` with two connected programs: every response must be
what the document says (status, content type, schema), bad input a 4xx, valid input accepted, the token enforced,
undeclared methods a 405; and the hub must survive it and still answer."""
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request

from console_support import console_air

DOCUMENT = os.path.join(os.path.dirname(__file__), "..", "Docs", "air-console.openapi.json")


def schemathesis_command():
    found = shutil.which("schemathesis", path=os.path.dirname(sys.executable))
    assert found, "schemathesis is missing from the interop venv (Scripts/setup-interop.sh installs it)"
    return found


def test_schemathesis_finds_nothing(tmp_path):
    with console_air(tmp_path) as air:
        # /api/events is a WebSocket (OpenAPI cannot describe one): a plain GET gets 426, which schemathesis would count
        # as a valid request refused; the browser test and test_events_need_the_token exercise it.
        result = subprocess.run(
            [schemathesis_command(), "run", DOCUMENT, "--url", air.base, "-H", f"Authorization: Bearer {air.token}",
             "--checks", "all", "--max-examples", "25", "--workers", "1", "--seed", "1",
             "--exclude-path", "/api/events", "--no-color"],
            capture_output=True, text=True, timeout=600, cwd=str(tmp_path))
        summary = result.stdout[-4000:]
        assert result.returncode == 0, f"schemathesis found failures:\n{summary}\n{result.stderr[-2000:]}"
        assert "generated" in summary
        # The hub lived through it and still answers, with the token.
        request = urllib.request.Request(air.base + "/api/air", headers={"Authorization": f"Bearer {air.token}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200
            # The server is still on the air (the subscriber ends when schemathesis's faults end its link).
            assert 1 in {device["number"] for device in json.load(response)["devices"]}
        assert air.hub.process.poll() is None
    assert "fault: move: dev" in air.hub.stdout(), "schemathesis's moves are reported as blue fault's are"


def test_events_need_the_token(tmp_path):
    import websocket  # websocket-client, installed with selenium

    with console_air(tmp_path, connected=False) as air:
        ws_url = f"ws://127.0.0.1:{air.port}/api/events"
        for bad in ("", "?token=", "?token=" + "0" * 64):
            try:
                websocket.create_connection(ws_url + bad, timeout=5).close()
                raise AssertionError(f"the event stream accepted {bad!r}")
            except websocket.WebSocketBadStatusException as error:
                assert error.status_code == 401
        ws = websocket.create_connection(f"{ws_url}?token={air.token}", timeout=10)
        try:
            message = json.loads(ws.recv())
            assert message["type"] == "air"
            assert message["air"]["devices"] == []
        finally:
            ws.close()


def test_connections_beyond_the_limit_are_closed_and_the_console_still_answers(tmp_path):
    import socket

    with console_air(tmp_path, connected=False) as air:
        held = []
        try:
            for _ in range(300):
                held.append(socket.create_connection(("127.0.0.1", air.port), timeout=5))
            closed = 0
            for connection in held[256:]:
                connection.settimeout(5)
                try:
                    closed += connection.recv(1) == b""
                except ConnectionResetError:
                    closed += 1
            assert closed == len(held) - 256, "connections beyond the console's limit were kept open"
        finally:
            for connection in held:
                connection.close()
        request = urllib.request.Request(air.base + "/api/devices", headers={"Authorization": f"Bearer {air.token}"})
        for _ in range(50):
            try:
                with urllib.request.urlopen(request, timeout=5) as response:
                    assert json.load(response) == []
                    break
            except OSError:
                time.sleep(0.1)
        else:
            raise AssertionError("the console did not answer after the connections closed")
