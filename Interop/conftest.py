"""Shared helpers for the interop checks: run the `blue` binary and parse its JSON."""
import json
import os
import subprocess

import pytest

BLUE = os.environ.get("BLUE") or os.path.join(os.path.dirname(__file__), "..", ".build", "debug", "blue")


def run_blue(*args, stdin=None, check=True):
    result = subprocess.run([BLUE, *args], input=stdin, capture_output=True, text=True, timeout=120)
    if check and result.returncode != 0:
        raise AssertionError(f"blue {' '.join(args)} failed ({result.returncode}): {result.stderr}")
    return result


def decode_many(kind, packets):
    """Decodes every packet (bytes) with `blue decode - --json --as KIND` in one process."""
    stdin = "".join(packet.hex() + "\n" for packet in packets)
    result = run_blue("decode", "-", "--json", "--as", kind, stdin=stdin, check=False)
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert result.returncode == 0, f"blue decode failed: {result.stderr}"
    assert len(lines) == len(packets), f"expected {len(packets)} results, got {len(lines)}: {result.stderr}"
    return lines


def flatten(node, prefix=""):
    """All 'label: value' strings of a dissection tree."""
    text = node["label"] + (": " + node["value"] if "value" in node else "")
    out = [text]
    for child in node.get("children", []):
        out.extend(flatten(child))
    return out


@pytest.fixture(scope="session")
def blue():
    assert os.path.exists(BLUE), f"build blue first: {BLUE}"
    return run_blue
