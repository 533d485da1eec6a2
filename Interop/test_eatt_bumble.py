"""Issue 15 item 3: Enhanced ATT (EATT, Core 5.4 Vol 3 Part F §3.2.11, Part G §7.2/§7.4) between our stack and
Bumble's host (code we did not write), on our virtual air through `blue air --h4-tcp`.

Our side is `blue serve --profile heart-rate` (our host stack, as peripheral); Bumble's device is the central with
`eatt_enabled` (its GATT service offers Server Supported Features with the EATT bit, and it accepts EATT bearers on
SPSM 0x0027). Both directions are checked:
- Bumble -> ours: before encryption our EATT server refuses the L2CAP Credit Based Connection Request with
  Insufficient Authentication (0x0005); after LE Secure Connections pairing Bumble opens two EATT bearers
  (`Client.connect_eatt`), discovers and reads over both at once, and receives heart-rate notifications over EATT.
- ours -> Bumble: once the link is encrypted our host reads Bumble's Server Supported Features by itself, writes its
  Client Supported Features (EATT + Multiple Handle Value Notifications) and opens three EATT bearers to Bumble's
  server in one request.
Every capture decodes in tshark without malformed packets. tshark 4.0 does not follow enhanced credit based
channels, so `blue snoop show` reads the EATT bearers of both captures (Bumble's host's and ours): every ATT PDU one
side sent on an EATT bearer is one the other received, Bumble's discovery ran on two bearers and our notifications
went out on one.
"""
import asyncio
import contextlib
import json
import os
import subprocess
import time

import pytest

from air_support import Hub, free_ports, tshark_count, tshark_malformed
from conftest import BLUE

from bumble import gatt_client, l2cap
from bumble.core import AdvertisingData
from bumble.device import Device, DeviceConfiguration
from bumble.hci import Address
from bumble.pairing import PairingConfig, PairingDelegate
from bumble.transport import open_transport

CENTRAL_ADDRESS = "F0:0C:B1:00:00:E1"
NAME = "OCB-EATT"
EATT_PSM = 0x0027
HEART_RATE_MEASUREMENT = 0x2A37
BODY_SENSOR_LOCATION = 0x2A38
SCENARIO_TIMEOUT = 60


def just_works():
    return PairingConfig(sc=True, mitm=False, bonding=True, delegate=PairingDelegate(),
                         identity_address_type=PairingConfig.AddressType.RANDOM)


@contextlib.asynccontextmanager
async def bumble_central(port):
    transport = await asyncio.wait_for(open_transport(f"tcp-client:127.0.0.1:{port}"), 10)
    try:
        config = DeviceConfiguration(name="bumble-eatt", address=Address(CENTRAL_ADDRESS), eatt_enabled=True)
        device = Device.from_config_with_hci(config, transport.source, transport.sink)
        device.pairing_config_factory = lambda connection: just_works()
        await asyncio.wait_for(device.power_on(), 10)
        yield device
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(transport.close(), 5)


async def scan_for_name(central, name):
    found = asyncio.get_running_loop().create_future()

    def on_advertisement(advertisement):
        if advertisement.data.get(AdvertisingData.COMPLETE_LOCAL_NAME) == name and not found.done():
            found.set_result(advertisement.address)

    central.on("advertisement", on_advertisement)
    await central.start_scanning(active=True)
    try:
        return await asyncio.wait_for(found, 15)
    finally:
        central.remove_listener("advertisement", on_advertisement)
        await central.stop_scanning()


async def discover(client):
    """Discovers every service and characteristic through `client` (its bearer)."""
    await client.discover_services()
    for service in client.services:
        await client.discover_characteristics(uuids=[], service=service)


def find(client, uuid):
    found = [c for service in client.services for c in service.characteristics if c.uuid.to_hex_str() == f"{uuid:04X}"]
    assert found, f"0x{uuid:04X} not discovered over EATT"
    return found[0]


async def read_on(client, uuid):
    """Discovers through `client` and reads the characteristic with this 16-bit UUID."""
    await discover(client)
    return bytes(await client.read_value(find(client, uuid)))


def test_eatt_both_directions(tmp_path):
    hub = Hub(tmp_path, free_ports(1))
    serve = None
    monitor = None
    facts = {}
    try:
        hub.start()
        # blue monitor watches the whole exchange live, with one capture reader per device.
        monitor_out = open(tmp_path / "monitor.out", "w")
        monitor = subprocess.Popen([BLUE, "monitor", "--hci", f"air:{hub.socket}", "--layer", "att"],
                                   stdout=monitor_out, stderr=subprocess.STDOUT)
        serve_out = open(tmp_path / "serve.out", "w")
        serve_err = open(tmp_path / "serve.err", "w")
        serve = subprocess.Popen([BLUE, "serve", "--hci", f"air:{hub.socket}", "--profile", "heart-rate",
                                  "--name", NAME, "--json"], stdout=serve_out, stderr=serve_err)

        async def scenario():
            async with bumble_central(hub.tcp_ports[0]) as central:
                # Our stack's EATT bearers towards Bumble's server arrive here.
                ours = []
                central.l2cap_channel_manager.le_coc_servers[EATT_PSM].on("connection", ours.append)

                address = await scan_for_name(central, NAME)
                connection = await asyncio.wait_for(central.connect(address), 10)

                # Unencrypted: our EATT server refuses (all connections refused, insufficient authentication).
                with pytest.raises(l2cap.L2capError) as refused:
                    await asyncio.wait_for(gatt_client.Client.connect_eatt(connection, count=1), 10)
                facts["refusal"] = refused.value.error_code

                await asyncio.wait_for(connection.pair(), 20)
                assert connection.is_encrypted

                # ours -> Bumble: our host opens three bearers by itself after reading Server Supported Features.
                for _ in range(200):
                    if len(ours) >= 3:
                        break
                    await asyncio.sleep(0.05)
                facts["ours"] = len(ours)
                facts["our_mtus"] = sorted({channel.peer_mtu for channel in ours})
                features = central.gatt_service.client_supported_features_characteristic
                facts["client_features"] = bytes(features.value) if features is not None else None

                # Bumble -> ours: two bearers in one request, used at the same time.
                clients = await asyncio.wait_for(gatt_client.Client.connect_eatt(connection, count=2), 10)
                facts["theirs"] = len(clients)
                results = await asyncio.wait_for(
                    asyncio.gather(*(read_on(client, BODY_SENSOR_LOCATION) for client in clients)), 20)
                facts["reads"] = list(results)

                # Notifications over EATT: subscribe through both bearers (ours picks one of Bumble's bearers).
                notifications = asyncio.Queue()
                for client in clients:
                    measurement = find(client, HEART_RATE_MEASUREMENT)
                    await asyncio.wait_for(client.subscribe(measurement, notifications.put_nowait), 10)
                facts["notification"] = bytes(await asyncio.wait_for(notifications.get(), 10))
                await asyncio.wait_for(connection.disconnect(), 10)

        # The monitor is connected once it names blue serve (live or in the hub's greeting): before any EATT traffic.
        deadline = time.monotonic() + 20
        while "via blue serve" not in open(tmp_path / "monitor.out").read() and time.monotonic() < deadline:
            time.sleep(0.05)
        asyncio.run(asyncio.wait_for(scenario(), SCENARIO_TIMEOUT))
        time.sleep(0.3)
    finally:
        if serve is not None and serve.poll() is None:
            serve.terminate()
            with contextlib.suppress(Exception):
                serve.wait(timeout=10)
        code = hub.interrupt() if hub.process is not None else None
        hub.kill()
        if monitor is not None:
            with contextlib.suppress(Exception):
                monitor.wait(timeout=10)
            if monitor.poll() is None:
                monitor.kill()
                monitor.wait()

    serve_output = open(tmp_path / "serve.out").read()
    assert code == 0, hub.stderr()
    assert facts.get("refusal") == 0x0005, (facts, serve_output)
    assert facts.get("ours") == 3, (facts, serve_output)
    assert facts.get("our_mtus") == [517], facts
    assert facts.get("client_features") is not None and facts["client_features"][0] & 0x06 == 0x06, facts
    assert facts.get("theirs") == 2, facts
    assert len(facts.get("reads", [])) == 2 and len(set(facts["reads"])) == 1, facts
    assert len(facts.get("notification", b"")) >= 2, facts
    captures = hub.snoop_files()
    assert captures
    for capture in captures:
        assert tshark_malformed(capture) == "", f"{capture}: malformed packets"
    # The signaling of enhanced credit based mode is in the capture: our request (3 channels) and Bumble's (2, then 1).
    assert any(tshark_count(capture, "btl2cap.cmd_code == 0x17") >= 2 for capture in captures), captures

    eatt = {os.path.basename(str(capture)): eatt_pdus(capture) for capture in captures}
    ours = next(pdus for name, pdus in eatt.items() if "blue-serve" in name)
    bumbles = next(pdus for name, pdus in eatt.items() if "blue-serve" not in name)
    assert ours and bumbles, eatt
    sent = lambda pdus, direction: sorted(name for d, _, name in pdus if d == direction)
    assert sent(ours, "sent") == sent(bumbles, "received"), eatt
    assert sent(ours, "received") == sent(bumbles, "sent"), eatt
    discovery = {cid for direction, cid, name in ours if direction == "received" and name == "Read By Group Type Request"}
    assert len(discovery) >= 2, ours
    assert any(direction == "sent" and name == "Handle Value Notification" for direction, _, name in ours), ours
    # The monitor's lines name the EATT bearers' ATT PDUs on both devices (its --layer att keeps them).
    monitored = open(tmp_path / "monitor.out").read()
    eatt_lines = [line for line in monitored.splitlines() if " EATT Dynamic LE channel " in line]
    assert any("blue serve > ACL" in line and "Read By Group Type Request" in line for line in eatt_lines), monitored[-3000:]
    assert any("blue serve < ACL" in line and "Handle Value Notification" in line for line in eatt_lines), monitored[-3000:]


def eatt_pdus(capture):
    """(direction, CID, ATT PDU name) of every ATT PDU `blue snoop show --json` decodes on an EATT bearer."""
    output = subprocess.run([BLUE, "snoop", "show", "--json", str(capture)], capture_output=True, text=True, timeout=60)
    assert output.returncode == 0, output.stderr
    pdus = []
    for line in output.stdout.splitlines():
        record = json.loads(line)
        frame = next((c for c in record["dissection"].get("children", []) if c["label"] == "L2CAP Basic Frame"), None)
        if frame is None:
            continue
        cid = next(c["value"] for c in frame["children"] if c["label"] == "Channel ID")
        for child in frame["children"]:
            if child["label"] == "K-frame" and child["children"][0]["value"].endswith(" EATT"):
                decoded = [c["label"] for c in child["children"] if c.get("children")]
                pdus += [(record["direction"], cid, name) for name in decoded]
    return pdus
