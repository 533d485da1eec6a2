"""Issue 3 item 5: Bumble's host (code we did not write) runs unchanged on our virtual controllers through
`blue air --h4-tcp`: advertising with a scan response, scanning, connecting, MTU, discovery, reads, writes,
notifications, LE Secure Connections pairing, a bonded reconnect, two centrals on one peripheral. Every btsnoop
capture of the run decodes in tshark without malformed packets, the hub reports joins and connections, and it
stops cleanly on SIGINT."""
import asyncio
import os
import subprocess
import time

import pytest

from air_support import BumbleHost, Hub, free_ports, tshark_count, tshark_malformed
from conftest import BLUE

from bumble.core import UUID, AdvertisingData
from bumble.device import Peer
from bumble.gatt import Characteristic, CharacteristicValue, Service
from bumble.keys import JsonKeyStore
from bumble.pairing import PairingConfig, PairingDelegate

SERVICE_UUID = UUID("3C1D0001-7B6E-4E5C-9A3B-0C0FFEE00001")
READ_UUID = UUID("3C1D0002-7B6E-4E5C-9A3B-0C0FFEE00001")
WRITE_UUID = UUID("3C1D0003-7B6E-4E5C-9A3B-0C0FFEE00001")
NOTIFY_UUID = UUID("3C1D0004-7B6E-4E5C-9A3B-0C0FFEE00001")
SECRET_UUID = UUID("3C1D0005-7B6E-4E5C-9A3B-0C0FFEE00001")

PERIPHERAL_ADDRESS = "F0:0C:B1:00:00:01"
CENTRAL_ADDRESS = "F0:0C:B1:00:00:02"
CENTRAL2_ADDRESS = "F0:0C:B1:00:00:03"
NAME = "OCB-Bumble"
SCENARIO_TIMEOUT = 40


def just_works():
    """LE Secure Connections, Just Works, bonding. The identity address distributed is the random static address
    the devices use on the air: our controllers have a public address (0A:1B:...), which Bumble would otherwise
    distribute as the identity (with an all-zero IRK), so a reconnection to the static address would not find
    the bond."""
    return PairingConfig(sc=True, mitm=False, bonding=True, delegate=PairingDelegate(),
                         identity_address_type=PairingConfig.AddressType.RANDOM)


class GattPeripheral:
    """The Bumble peripheral's GATT server: a readable value, a writable one, a notifying one, and a value that
    needs an encrypted link."""

    def __init__(self, device):
        self.device = device
        self.writes = asyncio.Queue()
        self.read_value = b"hello from bumble"
        self.secret = b"encrypted only"
        self.read = Characteristic(READ_UUID, Characteristic.Properties.READ, Characteristic.READABLE,
                                   CharacteristicValue(read=lambda connection: self.read_value))
        self.write = Characteristic(
            WRITE_UUID, Characteristic.Properties.WRITE | Characteristic.Properties.WRITE_WITHOUT_RESPONSE,
            Characteristic.WRITEABLE, CharacteristicValue(write=lambda connection, value: self.writes.put_nowait(bytes(value))))
        self.notify = Characteristic(NOTIFY_UUID, Characteristic.Properties.READ | Characteristic.Properties.NOTIFY,
                                     Characteristic.READABLE, b"\x00")
        self.protected = Characteristic(SECRET_UUID, Characteristic.Properties.READ,
                                        Characteristic.READ_REQUIRES_ENCRYPTION,
                                        CharacteristicValue(read=lambda connection: self.secret))
        device.add_service(Service(SERVICE_UUID, [self.read, self.write, self.notify, self.protected]))
        device.pairing_config_factory = lambda connection: just_works()

    async def advertise(self, auto_restart=False):
        advertising = AdvertisingData([
            (AdvertisingData.FLAGS, bytes([0x06])),
            (AdvertisingData.COMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS, bytes(SERVICE_UUID)),
        ])
        scan_response = AdvertisingData([(AdvertisingData.COMPLETE_LOCAL_NAME, NAME.encode())])
        await self.device.start_advertising(advertising_data=bytes(advertising), scan_response_data=bytes(scan_response),
                                            auto_restart=auto_restart)


def use_just_works(device):
    device.pairing_config_factory = lambda connection: just_works()


async def scan_for(central, address):
    """Scans actively until the advertiser's scan response came; returns the merged advertisement."""
    found = asyncio.get_running_loop().create_future()

    def on_advertisement(advertisement):
        if str(advertisement.address).startswith(address) and advertisement.is_scan_response and not found.done():
            found.set_result(advertisement)

    central.on("advertisement", on_advertisement)
    await central.start_scanning(active=True)
    try:
        return await asyncio.wait_for(found, 10)
    finally:
        central.remove_listener("advertisement", on_advertisement)
        await central.stop_scanning()


async def connect(central, address):
    return await asyncio.wait_for(central.connect(address), 10)


async def discover(connection):
    peer = Peer(connection)
    await asyncio.wait_for(peer.discover_all(), 10)
    return peer


def characteristic(peer, uuid):
    found = peer.get_characteristics_by_uuid(uuid)
    assert len(found) == 1, f"{uuid} not discovered"
    return found[0]


def run_with_hub(tmp_path, port_count, scenario):
    """Starts `blue air` with `port_count` H4/TCP ports and snoop, runs `scenario(hub)` (bounded), then stops the hub
    with SIGINT and checks the exit, the socket, the report and every capture."""
    hub = Hub(tmp_path, free_ports(port_count))
    try:
        hub.start()
        asyncio.run(asyncio.wait_for(scenario(hub), SCENARIO_TIMEOUT))
        time.sleep(0.2)
        code = hub.interrupt()
        assert code == 0, f"blue air exited with {code}: {hub.stderr()}"
        assert not os.path.exists(hub.socket), "the hub removed its socket"
        output = hub.stdout()
        for number in range(1, port_count + 1):
            assert f"joined: dev{number} " in output, output
        assert "connected: dev" in output, output
        assert "stopped: " in output, output
        captures = hub.snoop_files()
        assert len(captures) == port_count, captures
        for capture in captures:
            assert tshark_count(capture) > 20, f"{capture}: too few packets"
            assert tshark_malformed(capture) == "", f"{capture}: malformed packets"
        return hub, output
    finally:
        hub.kill()


def test_scan_connect_gatt(tmp_path):
    """(a) name, service UUID and RSSI in the scan; MTU, discovery, read, writes, notifications."""
    result = {}

    async def scenario(hub):
        async with BumbleHost(hub.tcp_ports[0], "peripheral", PERIPHERAL_ADDRESS) as peripheral_device, \
                BumbleHost(hub.tcp_ports[1], "central", CENTRAL_ADDRESS) as central:
            peripheral = GattPeripheral(peripheral_device)
            await peripheral.advertise()
            advertisement = await scan_for(central, PERIPHERAL_ADDRESS)
            assert advertisement.data.get(AdvertisingData.COMPLETE_LOCAL_NAME) == NAME
            assert SERVICE_UUID in advertisement.data.get(AdvertisingData.COMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS)
            # 2 m apart at 0 dBm: -46 dBm (no jitter).
            assert -90 <= advertisement.rssi <= -20, advertisement.rssi
            result["rssi"] = advertisement.rssi

            connection = await connect(central, PERIPHERAL_ADDRESS)
            peer = await discover(connection)
            mtu = await asyncio.wait_for(peer.request_mtu(247), 10)
            assert mtu == 247
            value = await asyncio.wait_for(characteristic(peer, READ_UUID).read_value(), 10)
            assert bytes(value) == b"hello from bumble"

            writable = characteristic(peer, WRITE_UUID)
            await asyncio.wait_for(writable.write_value(b"with response", with_response=True), 10)
            assert await asyncio.wait_for(peripheral.writes.get(), 10) == b"with response"
            await asyncio.wait_for(writable.write_value(b"without response", with_response=False), 10)
            assert await asyncio.wait_for(peripheral.writes.get(), 10) == b"without response"
            long_value = bytes(range(200))  # one ATT PDU of 203 octets: several LL fragments at 27 octets
            await asyncio.wait_for(writable.write_value(long_value, with_response=True), 10)
            assert await asyncio.wait_for(peripheral.writes.get(), 10) == long_value

            notifications = asyncio.Queue()
            await asyncio.wait_for(characteristic(peer, NOTIFY_UUID).subscribe(notifications.put_nowait), 10)
            for index in range(5):
                await peripheral_device.notify_subscribers(peripheral.notify, bytes([index]) * 20)
            received = [bytes(await asyncio.wait_for(notifications.get(), 10)) for _ in range(5)]
            assert received == [bytes([index]) * 20 for index in range(5)]
            await asyncio.wait_for(connection.disconnect(), 10)

    hub, output = run_with_hub(tmp_path, 2, scenario)
    assert "connected: dev2 handle 0x0001 as central to dev1 F0:0C:B1:00:00:01" in output, output
    assert "disconnected: dev" in output, output
    assert "traffic: 2 devices" in output, output  # the periodic summary (every second here)
    # The captures show the ATT traffic in both directions.
    central_capture = os.path.join(hub.snoop_dir, "dev2.btsnoop")
    assert tshark_count(central_capture, "btatt.opcode == 0x1b") == 5  # notifications
    assert tshark_count(central_capture, "btatt.opcode == 0x52") == 1  # write command


def test_secure_connections_pairing_and_bonded_reconnect(tmp_path):
    """(b) LE Secure Connections pairing, then an encrypted read; (c) a bonded reconnect re-encrypts with the
    stored key (both keystores in temporary JSON files)."""

    async def scenario(hub):
        peripheral_keys = JsonKeyStore(namespace=None, filename=str(tmp_path / "peripheral-keys.json"))
        central_keys = JsonKeyStore(namespace=None, filename=str(tmp_path / "central-keys.json"))
        async with BumbleHost(hub.tcp_ports[0], "peripheral", PERIPHERAL_ADDRESS, peripheral_keys) as peripheral_device, \
                BumbleHost(hub.tcp_ports[1], "central", CENTRAL_ADDRESS, central_keys) as central:
            use_just_works(central)
            peripheral = GattPeripheral(peripheral_device)
            await peripheral.advertise()
            connection = await connect(central, PERIPHERAL_ADDRESS)
            peer = await discover(connection)
            assert not connection.is_encrypted
            await asyncio.wait_for(connection.pair(), 20)
            assert connection.is_encrypted
            value = await asyncio.wait_for(characteristic(peer, SECRET_UUID).read_value(), 10)
            assert bytes(value) == b"encrypted only"
            await asyncio.wait_for(connection.disconnect(), 10)
            await asyncio.sleep(0.2)

            stored = await central_keys.get_all()
            assert len(stored) == 1, stored
            assert stored[0][1].ltk is not None

            # (c) Reconnect: the central starts encryption with the stored LTK; the peripheral's host answers the
            # LTK request from its keystore.
            await peripheral.advertise()
            connection = await connect(central, PERIPHERAL_ADDRESS)
            encrypted = asyncio.get_running_loop().create_future()
            connection.on("connection_encryption_change", lambda: encrypted.done() or encrypted.set_result(True))
            await asyncio.wait_for(connection.encrypt(), 10)
            assert connection.is_encrypted
            peer = await discover(connection)
            value = await asyncio.wait_for(characteristic(peer, SECRET_UUID).read_value(), 10)
            assert bytes(value) == b"encrypted only"
            await asyncio.wait_for(connection.disconnect(), 10)

    hub, output = run_with_hub(tmp_path, 2, scenario)
    assert output.count("encryption: dev2 handle 0x0001 on") == 1, output  # first connection's handle
    assert output.count("encryption: dev2 handle") == 2, output
    assert output.count("encryption: dev1 handle") == 2, output
    # SMP pairing in the central's capture: Pairing Request, Public Key, DHKey Check.
    central_capture = os.path.join(hub.snoop_dir, "dev2.btsnoop")
    assert tshark_count(central_capture, "btsmp.opcode == 0x01") == 1
    assert tshark_count(central_capture, "btsmp.opcode == 0x0c") == 2
    assert tshark_count(central_capture, "bthci_cmd.opcode == 0x2019") == 2  # LE Enable Encryption, twice


def test_two_centrals_on_one_peripheral(tmp_path):
    """(d) two Bumble centrals connected to one Bumble peripheral at once, each reading and getting notified."""

    async def scenario(hub):
        async with BumbleHost(hub.tcp_ports[0], "peripheral", PERIPHERAL_ADDRESS) as peripheral_device, \
                BumbleHost(hub.tcp_ports[1], "central-1", CENTRAL_ADDRESS) as first, \
                BumbleHost(hub.tcp_ports[2], "central-2", CENTRAL2_ADDRESS) as second:
            peripheral = GattPeripheral(peripheral_device)
            await peripheral.advertise()
            connections, queues = [], []
            for central in (first, second):
                connection = await connect(central, PERIPHERAL_ADDRESS)
                peer = await discover(connection)
                value = await asyncio.wait_for(characteristic(peer, READ_UUID).read_value(), 10)
                assert bytes(value) == b"hello from bumble"
                queue = asyncio.Queue()
                await asyncio.wait_for(characteristic(peer, NOTIFY_UUID).subscribe(queue.put_nowait), 10)
                connections.append(connection)
                queues.append(queue)
                if central is first:
                    # Legacy advertising stops when a connection is made: advertise again for the second central.
                    await peripheral.advertise()
            assert len(peripheral_device.connections) == 2
            await peripheral_device.notify_subscribers(peripheral.notify, b"to both")
            for queue in queues:
                assert bytes(await asyncio.wait_for(queue.get(), 10)) == b"to both"
            await peripheral_device.stop_advertising()
            for connection in connections:
                await asyncio.wait_for(connection.disconnect(), 10)

    hub, output = run_with_hub(tmp_path, 3, scenario)
    assert "connected: dev2 handle 0x0001 as central to dev1" in output, output
    assert "connected: dev3 handle 0x0001 as central to dev1" in output, output
    assert "connected: dev1 handle 0x0002 as peripheral to dev3" in output, output


def test_second_hub_fails_fast(tmp_path):
    """A second hub on the same socket exits 1 at once with a clear error; the first is unharmed."""
    hub = Hub(tmp_path, [], snoop=False)
    try:
        hub.start()
        started = time.monotonic()
        second = subprocess.run([BLUE, "air", "--socket", hub.socket], capture_output=True, text=True, timeout=10)
        assert time.monotonic() - started < 5
        assert second.returncode == 1
        assert f"another blue air is already running on {hub.socket}" in second.stderr
        assert hub.process.poll() is None
        assert hub.interrupt() == 0
        assert not os.path.exists(hub.socket)
    finally:
        hub.kill()


def test_sigterm_stops_cleanly(tmp_path):
    hub = Hub(tmp_path, free_ports(1), snoop=False, extra=["--json"])
    try:
        hub.start()
        hub.process.terminate()
        assert hub.process.wait(timeout=10) == 0
        assert not os.path.exists(hub.socket)
        import json
        events = [json.loads(line) for line in hub.stdout().splitlines() if line.strip()]
        assert [e["event"] for e in events if e["event"] == "listening"] == ["listening", "listening"]
        assert events[-1]["event"] == "stopped"
    finally:
        hub.kill()
