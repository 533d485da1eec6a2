"""A Bumble central that runs every GATT client procedure against a peripheral serving the interop database
(interop_gatt.py) — our host's GATT server in the Swift interop tests.

    python bumble_gatt_central.py --port P --address F0:0C:B1:00:00:02 --peer C3:...:01 --name OCB-Host
                                  [--mtu 247] [--timeout 90]

Connects as a host to the controller at tcp-client:127.0.0.1:P, scans (bounded) for the advertised name, connects
to --peer (random address), then: MTU exchange, discovery, reads (short, long, 500 characteristics whole), Write
Request, Write Command, long write (prepared writes), a reliable write of two characteristics (Prepare Write
Requests of both, each echo checked, one Execute Write), reads back what it wrote, subscribes to notifications and
indications. Prints JSON lines: {"event": "ready"}, {"event": "connected"}, {"event": "subscribed", ...}, then
{"event": "result", ...} with everything it saw, and exits 0; {"event": "error", ...} and exit 1 on a failure.
"""
import argparse
import asyncio
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import interop_gatt as g  # noqa: E402

from bumble import att  # noqa: E402
from bumble.device import ConnectionParametersPreferences, Device, Peer  # noqa: E402
from bumble.hci import Address, Phy  # noqa: E402
from bumble.transport import open_transport  # noqa: E402

STEP = 20  # seconds any one step may take


async def step(awaitable, seconds=STEP):
    return await asyncio.wait_for(awaitable, seconds)


async def scan_for_name(device, name, seconds):
    found = asyncio.get_running_loop().create_future()

    def on_advertisement(advertisement):
        local_name = advertisement.data.get(0x09) or advertisement.data.get(0x08)
        if isinstance(local_name, bytes):
            local_name = local_name.decode(errors="replace")
        if local_name == name and not found.done():
            found.set_result(str(advertisement.address))

    device.on("advertisement", on_advertisement)
    await step(device.start_scanning(active=True))
    try:
        return await asyncio.wait_for(found, seconds)
    except asyncio.TimeoutError:
        return None
    finally:
        device.remove_listener("advertisement", on_advertisement)
        await step(device.stop_scanning())


async def reliable_write(client, items):
    """Vol 3 Part G §4.9.5 by hand (Bumble's client has no reliable write): Prepare Write Requests for every part of
    every value, each echo compared, then one Execute Write Request (flags 0x01)."""
    part_size = client.mtu - 5
    prepares = 0
    for handle, value in items:
        for offset in range(0, len(value), part_size):
            part = value[offset:offset + part_size]
            response = await step(client.send_request(att.ATT_Prepare_Write_Request(
                attribute_handle=handle, value_offset=offset, part_attribute_value=part)))
            if response.op_code == att.Opcode.ATT_ERROR_RESPONSE:
                raise att.ATT_Error(error_code=response.error_code, message=response)
            if (response.attribute_handle, response.value_offset, bytes(response.part_attribute_value)) != (
                    handle, offset, part):
                await step(client.send_request(att.ATT_Execute_Write_Request(flags=0x00)))
                raise RuntimeError(f"prepare write echo mismatch at handle {handle:#06x} offset {offset}")
            prepares += 1
    response = await step(client.send_request(att.ATT_Execute_Write_Request(flags=0x01)))
    if response.op_code == att.Opcode.ATT_ERROR_RESPONSE:
        raise att.ATT_Error(error_code=response.error_code, message=response)
    return prepares


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--address", required=True)
    parser.add_argument("--peer", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--mtu", type=int, default=247)
    parser.add_argument("--scan-seconds", type=float, default=5)
    parser.add_argument("--interval", type=float, default=7.5, help="connection interval (ms)")
    args = parser.parse_args()

    transport = await step(open_transport(f"tcp-client:127.0.0.1:{args.port}"))
    device = Device.with_hci("OCB-Bumble-Central", Address(args.address), transport.source, transport.sink)
    await step(device.power_on())
    g.emit(event="ready", address=str(device.random_address))
    result = {}

    result["scanned"] = await scan_for_name(device, args.name, args.scan_seconds)
    preferences = ConnectionParametersPreferences(
        connection_interval_min=args.interval, connection_interval_max=args.interval, supervision_timeout=5000)
    connection = await step(device.connect(Address(args.peer), connection_parameters_preferences={
        Phy.LE_1M: preferences}))
    g.emit(event="connected", peer=str(connection.peer_address))
    peer = Peer(connection)
    client = peer.gatt_client

    result["mtu"] = await step(peer.request_mtu(args.mtu))

    services = await step(peer.discover_services())
    result["services"] = [str(service.uuid) for service in services]
    by_uuid = {}
    for service in services:
        for characteristic in await step(service.discover_characteristics()):
            by_uuid[str(characteristic.uuid).upper()] = characteristic

    def find(uuid):
        characteristic = by_uuid.get(uuid.upper())
        if characteristic is None:
            raise RuntimeError(f"characteristic {uuid} not discovered (found {len(by_uuid)})")
        return characteristic

    result["characteristics"] = len(by_uuid)

    result["read"] = (await step(client.read_value(find(g.READ)))).hex()
    result["longRead"] = (await step(client.read_value(find(g.LONG_READ)))).hex()

    await step(client.write_value(find(g.WRITE), g.WRITE_VALUE, with_response=True))
    await step(client.write_value(find(g.WRITE_WITHOUT_RESPONSE), g.WRITE_WITHOUT_RESPONSE_VALUE, with_response=False))
    await step(client.write_value(find(g.LONG_WRITE), g.LONG_WRITE_VALUE, with_response=True))
    result["reliablePrepares"] = await reliable_write(client, [
        (find(g.RELIABLE_1).handle, g.RELIABLE_1_VALUE), (find(g.RELIABLE_2).handle, g.RELIABLE_2_VALUE)])
    result["readBack"] = {
        name: (await step(client.read_value(find(uuid)))).hex()
        for name, uuid in [("write", g.WRITE), ("writeWithoutResponse", g.WRITE_WITHOUT_RESPONSE),
                           ("longWrite", g.LONG_WRITE), ("reliable1", g.RELIABLE_1), ("reliable2", g.RELIABLE_2)]
    }

    # The 500 characteristics, each read whole (Read Request, then Read Blob Requests while parts come full).
    mismatches, total_bytes, read_count = [], 0, 0
    for i in range(g.BIG_COUNT):
        value = await step(client.read_value(find(g.big_uuid(i))))
        read_count += 1
        total_bytes += len(value)
        if value != g.big_value(i):
            mismatches.append({"index": i, "length": len(value), "expected": g.big_length(i)})
    result["bigRead"] = read_count
    result["bigBytes"] = total_bytes
    result["bigMismatches"] = mismatches[:10]

    # Notifications and indications: subscribing makes the peripheral (the test) send them.
    notifications, indications = [], []
    got_all = asyncio.get_running_loop().create_future()

    def check_done():
        if len(notifications) >= len(g.NOTIFICATIONS) and len(indications) >= len(g.INDICATIONS) \
                and not got_all.done():
            got_all.set_result(True)

    def on_notification(value):
        notifications.append(bytes(value).hex())
        check_done()

    def on_indication(value):
        indications.append(bytes(value).hex())
        check_done()

    await step(client.subscribe(find(g.NOTIFY), on_notification))
    g.emit(event="subscribed", characteristic="notify")
    await step(client.subscribe(find(g.INDICATE), on_indication))
    g.emit(event="subscribed", characteristic="indicate")
    try:
        await asyncio.wait_for(got_all, 10)
    except asyncio.TimeoutError:
        pass
    result["notifications"] = notifications
    result["indications"] = indications

    # Let the last Handle Value Confirmation leave before the link goes: a controller may drop queued ACL data
    # when it is told to disconnect.
    await asyncio.sleep(0.5)
    await step(connection.disconnect())
    g.emit(event="result", **result)
    os._exit(0)


if __name__ == "__main__":
    g.run(main)
