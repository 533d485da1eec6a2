"""Issue 15 items 1 and 5: Bluetooth 5 extended advertising between Bumble's host (code we did not write) and `blue`,
through our controllers in `blue air`, with every capture read by tshark.

(a) Bumble advertises 240 octets in extended PDUs (ADV_EXT_IND + AUX_ADV_IND + AUX_CHAIN_IND) on LE 2M; `blue scan
--json` shows them whole, not legacy, on LE 1M then LE 2M. (b) `blue serve --advertising-phy 2M` advertises more than
31 octets; Bumble's extended scan hears it on LE 2M and connects. The hub's btsnoop captures hold the extended
commands and LE Extended Advertising Reports and tshark finds nothing malformed in them."""
import asyncio
import json
import os
import subprocess
import time

from air_support import BumbleHost, Hub, free_ports, tshark_count, tshark_malformed
from conftest import BLUE

from bumble import hci
from bumble.core import AdvertisingData
from bumble.device import AdvertisingEventProperties, AdvertisingParameters

ADVERTISER = "F0:0C:B1:00:00:21"
SCANNER = "F0:0C:B1:00:00:22"
NAME = "OCB-Ext-Air"


def long_data():
    """Flags, the name, and manufacturer data to 240 octets (more than one HCI report of 229)."""
    data = bytes(AdvertisingData([(AdvertisingData.FLAGS, bytes([0x04])),
                                  (AdvertisingData.COMPLETE_LOCAL_NAME, NAME.encode())]))
    room = 240 - len(data)
    payload = bytes([0xF1, 0x05]) + bytes(range(room - 4))
    return data + bytes([room - 1, AdvertisingData.MANUFACTURER_SPECIFIC_DATA]) + payload


def check_captures(hub):
    captures = hub.snoop_files()
    assert captures, "no captures"
    for capture in captures:
        assert tshark_count(capture) > 10, f"{capture}: too few packets"
        assert tshark_malformed(capture) == "", f"{capture}: malformed packets"
    return captures


def test_blue_scan_hears_bumbles_extended_advertising(tmp_path):
    hub = Hub(tmp_path, free_ports(1))
    data = long_data()
    try:
        hub.start()

        async def advertise_then_scan():
            async with BumbleHost(hub.tcp_ports[0], "advertiser", ADVERTISER) as device:
                assert device.supports_le_extended_advertising
                parameters = AdvertisingParameters(
                    advertising_event_properties=AdvertisingEventProperties(is_connectable=False, is_legacy=False),
                    primary_advertising_interval_min=50, primary_advertising_interval_max=50,
                    secondary_advertising_phy=hci.Phy.LE_2M, advertising_sid=3)
                await device.create_advertising_set(advertising_parameters=parameters, advertising_data=data)
                scan = await asyncio.create_subprocess_exec(
                    BLUE, "scan", "--hci", f"air:{hub.socket}", "--json", "--timeout", "3", "--duplicates", "--passive",
                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
                out, err = await asyncio.wait_for(scan.communicate(), 30)
                assert scan.returncode == 0, err.decode()
                return out.decode()

        output = asyncio.run(asyncio.wait_for(advertise_then_scan(), 40))
        reports = [json.loads(line) for line in output.splitlines() if line.strip().startswith("{")]
        ours = [r for r in reports if r.get("name") == NAME]
        assert ours, output[:2000]
        report = ours[0]
        assert report["advertisingData"].lower() == data.hex(), report
        assert report["legacy"] is False and report["primaryPHY"] == "1M" and report["secondaryPHY"] == "2M", report
        assert report["sid"] == 3 and report["connectable"] is False, report
        time.sleep(0.2)
        assert hub.interrupt() == 0, hub.stderr()
        captures = check_captures(hub)
        advertiser, scanner = sorted(captures)[:2]
        assert tshark_count(advertiser, "bthci_cmd.opcode == 0x2037") >= 1  # LE Set Extended Advertising Data
        assert tshark_count(scanner, "bthci_cmd.opcode == 0x2041") >= 1  # LE Set Extended Scan Parameters
        assert tshark_count(scanner, "bthci_evt.le_meta_subevent == 0x0d") >= 2  # LE Extended Advertising Report
    finally:
        hub.kill()


def test_bumble_connects_to_blue_serve_extended_advertising(tmp_path):
    hub = Hub(tmp_path, free_ports(1))
    definition = tmp_path / "server.json"
    definition.write_text(json.dumps({
        "name": "OCB-Serve-Ext",
        "advertisingData": {"manufacturer": {"company": 0x05F1, "hex": "ab" * 120}},
        "services": [{"uuid": "180F", "characteristics": [{"uuid": "2A19", "properties": ["read"], "value": {"uint8": 100}}]}],
    }))
    serve = None
    try:
        hub.start()
        serve = subprocess.Popen([BLUE, "serve", str(definition), "--hci", f"air:{hub.socket}", "--advertising-phy", "2M",
                                  "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 20
        line = serve.stdout.readline()
        while '"serving"' not in line and time.monotonic() < deadline and serve.poll() is None:
            line = serve.stdout.readline()
        assert '"serving"' in line, f"blue serve did not start: {line} {serve.stderr.read() if serve.poll() is not None else ''}"

        async def scan_and_connect():
            async with BumbleHost(hub.tcp_ports[0], "central", SCANNER) as device:
                found = asyncio.get_running_loop().create_future()
                pending = {}

                def on_advertisement(advertisement):
                    key = str(advertisement.address)
                    joined = pending.pop(key, b"") + bytes(advertisement.data_bytes)
                    if not advertisement.is_complete:
                        pending[key] = joined
                        return
                    name = AdvertisingData.from_bytes(joined).get(AdvertisingData.COMPLETE_LOCAL_NAME)
                    if name == "OCB-Serve-Ext" and not found.done():
                        found.set_result((advertisement, joined))

                device.on("advertisement", on_advertisement)
                await device.start_scanning(legacy=False, active=False, filter_duplicates=False)
                advertisement, joined = await asyncio.wait_for(found, 15)
                await device.stop_scanning()
                assert not advertisement.is_legacy and advertisement.is_connectable
                assert advertisement.secondary_phy == hci.Phy.LE_2M
                company, value = AdvertisingData.from_bytes(joined).get(AdvertisingData.MANUFACTURER_SPECIFIC_DATA)
                assert company == 0x05F1 and bytes(value) == bytes([0xAB]) * 120, (company, bytes(value).hex())
                assert len(joined) > 31
                connection = await asyncio.wait_for(device.connect(advertisement.address), 15)
                phy = await asyncio.wait_for(connection.get_phy(), 10)
                assert (phy.tx_phy, phy.rx_phy) == (hci.Phy.LE_2M, hci.Phy.LE_2M), phy
                await asyncio.wait_for(connection.disconnect(), 10)

        asyncio.run(asyncio.wait_for(scan_and_connect(), 40))
        serve.terminate()
        serve.wait(timeout=10)
        time.sleep(0.2)
        assert hub.interrupt() == 0, hub.stderr()
        captures = check_captures(hub)
        assert any(tshark_count(c, "bthci_cmd.opcode == 0x2036") >= 1 for c in captures)  # our Set Extended Advertising Parameters
        assert any(tshark_count(c, "bthci_cmd.opcode == 0x2043") >= 1 for c in captures)  # Bumble's Extended Create Connection
    finally:
        if serve is not None and serve.poll() is None:
            serve.kill()
        hub.kill()
