"""Issue 29 item 5: `blue clone` of a Bumble peripheral (code we did not write) on the shared air, then `blue serve` of
the clone read back by a Bumble central: the same advertisement (name, service UUID, manufacturer data), the same
services and characteristics with their properties, the same values, the user description, and the value Bumble
serves only on an encrypted link refused to an unencrypted read by the clone as by Bumble."""
import asyncio
import json
import os

from air_support import BumbleHost, Hub, free_ports
from conftest import BLUE

from bumble.att import ATT_Error, ATT_INSUFFICIENT_ENCRYPTION_ERROR
from bumble.core import UUID, AdvertisingData
from bumble.device import Peer
from bumble.gatt import Characteristic, CharacteristicValue, Descriptor, Service

SERVICE = UUID("3C1D0101-7B6E-4E5C-9A3B-0C0FFEE00001")
READ = UUID("3C1D0102-7B6E-4E5C-9A3B-0C0FFEE00001")
WRITE = UUID("3C1D0103-7B6E-4E5C-9A3B-0C0FFEE00001")
NOTIFY = UUID("3C1D0104-7B6E-4E5C-9A3B-0C0FFEE00001")
SECRET = UUID("3C1D0105-7B6E-4E5C-9A3B-0C0FFEE00001")
BATTERY_SERVICE = UUID.from_16_bits(0x180F)
BATTERY_LEVEL = UUID.from_16_bits(0x2A19)
NAME = "Bumble-Clone"
MANUFACTURER = bytes.fromhex("ffff0102030405")
TIMEOUT = 60


def bumble_services():
    described = Characteristic(READ, Characteristic.Properties.READ, Characteristic.READABLE, b"hello from bumble",
                               descriptors=[Descriptor(UUID.from_16_bits(0x2901), Descriptor.READABLE, b"Greeting")])
    return [
        Service(SERVICE, [
            described,
            Characteristic(WRITE, Characteristic.Properties.WRITE | Characteristic.Properties.WRITE_WITHOUT_RESPONSE,
                           Characteristic.WRITEABLE, CharacteristicValue(write=lambda connection, value: None)),
            Characteristic(NOTIFY, Characteristic.Properties.READ | Characteristic.Properties.NOTIFY,
                           Characteristic.READABLE, b"\x2a"),
            Characteristic(SECRET, Characteristic.Properties.READ, Characteristic.READ_REQUIRES_ENCRYPTION, b"only encrypted"),
        ]),
        Service(BATTERY_SERVICE, [Characteristic(BATTERY_LEVEL, Characteristic.Properties.READ, Characteristic.READABLE, b"\x57")]),
    ]


async def blue(hub, *arguments):
    process = await asyncio.create_subprocess_exec(
        BLUE, *arguments, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "OCB_AIR_SOCKET": hub.socket})
    out, err = await process.communicate()
    return process.returncode, out.decode(), err.decode()


async def advertisement_of(device, name):
    found = asyncio.get_running_loop().create_future()

    def on_advertisement(advertisement):
        if advertisement.data.get(AdvertisingData.COMPLETE_LOCAL_NAME) == name and not found.done():
            found.set_result(advertisement)

    device.on("advertisement", on_advertisement)
    await device.start_scanning(active=True)
    try:
        return await asyncio.wait_for(found, 15)
    finally:
        device.remove_listener("advertisement", on_advertisement)
        await device.stop_scanning()


async def read_everything(device, advertisement):
    """Connects, discovers and reads each readable value (an ATT error's code instead of a value)."""
    connection = await asyncio.wait_for(device.connect(advertisement.address), 15)
    peer = Peer(connection)
    await asyncio.wait_for(peer.discover_all(), 15)
    seen = {}
    for service in peer.services:
        if service.uuid in (UUID.from_16_bits(0x1800), UUID.from_16_bits(0x1801)):
            continue
        for characteristic in service.characteristics:
            entry = {"service": str(service.uuid), "properties": int(characteristic.properties)}
            if characteristic.properties & Characteristic.Properties.READ:
                try:
                    entry["value"] = bytes(await asyncio.wait_for(peer.read_value(characteristic), 10)).hex()
                except ATT_Error as error:
                    entry["error"] = error.error_code
            await peer.discover_descriptors(characteristic)
            for descriptor in characteristic.descriptors:
                if descriptor.type == UUID.from_16_bits(0x2901):
                    entry["description"] = bytes(await peer.read_value(descriptor)).decode()
            seen[str(characteristic.uuid)] = entry
    await connection.disconnect()
    return seen


def test_a_bumble_peripheral_cloned_and_served_reads_the_same(tmp_path):
    hub = Hub(tmp_path, free_ports(2)).start()
    clone_path = os.path.join(str(tmp_path), "clone.json")

    async def scenario():
        async with BumbleHost(hub.tcp_ports[0], "peripheral", "F0:0C:B1:00:02:01") as peripheral, \
                BumbleHost(hub.tcp_ports[1], "central", "F0:0C:B1:00:02:02") as central:
            for service in bumble_services():
                peripheral.add_service(service)
            await peripheral.start_advertising(advertising_data=bytes(AdvertisingData([
                (AdvertisingData.FLAGS, bytes([0x06])),
                (AdvertisingData.COMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS, bytes(SERVICE)),
                (AdvertisingData.MANUFACTURER_SPECIFIC_DATA, MANUFACTURER)])),
                scan_response_data=bytes(AdvertisingData([(AdvertisingData.COMPLETE_LOCAL_NAME, NAME.encode())])),
                auto_restart=True)
            original_advertisement = await advertisement_of(central, NAME)
            original = await read_everything(central, original_advertisement)

            code, out, err = await blue(hub, "clone", NAME, clone_path)
            assert code == 0, err
            assert f'cloned "{NAME}"' in out and "2 services, 5 characteristics" in out, out
            await peripheral.stop_advertising()

            server = await asyncio.create_subprocess_exec(
                BLUE, "serve", clone_path, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                env={**os.environ, "OCB_AIR_SOCKET": hub.socket})
            try:
                line = await asyncio.wait_for(server.stdout.readline(), 20)
                assert b"serving" in line, line
                clone_advertisement = await advertisement_of(central, NAME)
                replayed = await read_everything(central, clone_advertisement)
            finally:
                server.terminate()
                await asyncio.wait_for(server.wait(), 10)
            return original_advertisement, original, clone_advertisement, replayed, err

    original_advertisement, original, clone_advertisement, replayed, notes = asyncio.run(asyncio.wait_for(scenario(), TIMEOUT))
    try:
        definition = json.load(open(clone_path))
        assert definition["name"] == NAME
        assert definition["advertisingData"]["manufacturer"] == {"company": 0xFFFF, "hex": "0102030405"}
        assert [c.get("permissions") for c in definition["services"][0]["characteristics"]][3] == ["read-encrypted"]
        assert "readable only on an encrypted link" in notes, notes
        for kind in (AdvertisingData.MANUFACTURER_SPECIFIC_DATA, AdvertisingData.COMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS,
                     AdvertisingData.COMPLETE_LOCAL_NAME):
            assert clone_advertisement.data.get(kind) == original_advertisement.data.get(kind), kind
        assert original[str(SECRET)]["error"] == ATT_INSUFFICIENT_ENCRYPTION_ERROR
        assert original[str(READ)] == {"service": str(SERVICE), "properties": 0x02, "value": b"hello from bumble".hex(),
                                       "description": "Greeting"}
        assert replayed == original, f"{replayed}\nvs\n{original}"
    finally:
        hub.interrupt()
        hub.kill()
