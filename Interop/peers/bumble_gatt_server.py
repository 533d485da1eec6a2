"""A Bumble peripheral with the interop GATT database (interop_gatt.py), for our central to use.

    python bumble_gatt_server.py --port P --address F0:0C:B1:00:00:01 --name OCB-Bumble [--timeout 60]

Connects as a host to the controller at tcp-client:127.0.0.1:P (Bumble's, RootCanal's or our air hub), advertises
connectably with the name in the advertising data, and prints JSON lines (interop_gatt.emit):
  {"event": "ready", "address": ...}           advertising
  {"event": "connected", "peer": ...}
  {"event": "mtu", "mtu": N}
  {"event": "write", "characteristic": NAME, "value": HEX}     every value written, whatever the procedure
  {"event": "subscribed", "characteristic": NAME, "notify": B, "indicate": B}
  {"event": "notified", "count": N}            after the notifications of NOTIFY were sent
  {"event": "indicated", "count": N}           after each indication of INDICATE was confirmed
  {"event": "disconnected", "reason": N}       then it exits 0
  {"event": "error", "message": ...}           then it exits 1
Exits 2 when nothing happened within --timeout seconds.
"""
import argparse
import asyncio
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import interop_gatt as g  # noqa: E402

from bumble.core import UUID, AdvertisingData  # noqa: E402
from bumble.device import Device  # noqa: E402
from bumble.gatt import Characteristic, CharacteristicValue, Service  # noqa: E402
from bumble.hci import Address  # noqa: E402
from bumble.transport import open_transport  # noqa: E402


class Store:
    """Values kept per characteristic name; every write is reported."""

    def __init__(self):
        self.values = {}

    def value(self, name, initial=b""):
        self.values[name] = initial

        def read(connection):
            return self.values[name]

        def write(connection, value):
            self.values[name] = bytes(value)
            g.emit(event="write", characteristic=name, value=bytes(value).hex())

        return CharacteristicValue(read=read, write=write)


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, help="the controller at tcp-client:127.0.0.1:PORT")
    parser.add_argument("--transport", help="another Bumble transport for the controller (unix:PATH)")
    parser.add_argument("--address", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--timeout", type=float, default=60)
    args = parser.parse_args()
    if (args.port is None) == (args.transport is None):
        parser.error("give --port or --transport")

    spec = args.transport or f"tcp-client:127.0.0.1:{args.port}"
    transport = await asyncio.wait_for(open_transport(spec), 10)
    device = Device.with_hci(args.name, Address(args.address), transport.source, transport.sink)
    store = Store()
    P = Characteristic.Properties
    RW = Characteristic.READABLE | Characteristic.WRITEABLE

    notify = Characteristic(UUID(g.NOTIFY), P.READ | P.NOTIFY, Characteristic.READABLE, b"\x00")
    indicate = Characteristic(UUID(g.INDICATE), P.READ | P.INDICATE, Characteristic.READABLE, b"\x00")
    main_service = Service(UUID(g.MAIN_SERVICE), [
        Characteristic(UUID(g.READ), P.READ, Characteristic.READABLE, g.READ_VALUE),
        Characteristic(UUID(g.LONG_READ), P.READ, Characteristic.READABLE, g.LONG_READ_VALUE),
        Characteristic(UUID(g.WRITE), P.READ | P.WRITE, RW, store.value("write")),
        Characteristic(UUID(g.WRITE_WITHOUT_RESPONSE), P.READ | P.WRITE_WITHOUT_RESPONSE, RW,
                       store.value("writeWithoutResponse")),
        Characteristic(UUID(g.LONG_WRITE), P.READ | P.WRITE, RW, store.value("longWrite")),
        Characteristic(UUID(g.RELIABLE_1), P.READ | P.WRITE | P.EXTENDED_PROPERTIES, RW, store.value("reliable1")),
        Characteristic(UUID(g.RELIABLE_2), P.READ | P.WRITE | P.EXTENDED_PROPERTIES, RW, store.value("reliable2")),
        notify,
        indicate,
    ])
    services = [main_service]
    for s in range(g.BIG_SERVICE_COUNT):
        characteristics = []
        for k in range(g.BIG_PER_SERVICE):
            i = s * g.BIG_PER_SERVICE + k
            characteristics.append(Characteristic(UUID(g.big_uuid(i)), P.READ, Characteristic.READABLE, g.big_value(i)))
        services.append(Service(UUID(g.big_service_uuid(s)), characteristics))
    device.add_services(services)

    done = asyncio.get_running_loop().create_future()

    def on_connection(connection):
        g.emit(event="connected", peer=str(connection.peer_address))
        connection.on("connection_att_mtu_update", lambda: g.emit(event="mtu", mtu=connection.att_mtu))

        def on_disconnection(reason):
            if not done.done():
                done.set_result(reason)

        connection.on("disconnection", on_disconnection)

    device.on("connection", on_connection)

    async def send_notifications(connection):
        for value in g.NOTIFICATIONS:
            await device.notify_subscriber(connection, notify, value)
        g.emit(event="notified", count=len(g.NOTIFICATIONS))

    async def send_indications(connection):
        for n, value in enumerate(g.INDICATIONS):
            await asyncio.wait_for(device.indicate_subscriber(connection, indicate, value), 10)
            g.emit(event="indicated", count=n + 1)

    def subscription(name, sender):
        def on_subscription(connection, notify_enabled, indicate_enabled):
            g.emit(event="subscribed", characteristic=name, notify=notify_enabled, indicate=indicate_enabled)
            if notify_enabled or indicate_enabled:
                asyncio.get_running_loop().create_task(sender(connection))
        return on_subscription

    notify.on("subscription", subscription("notify", send_notifications))
    indicate.on("subscription", subscription("indicate", send_indications))

    await asyncio.wait_for(device.power_on(), 10)
    advertising = AdvertisingData([
        (AdvertisingData.FLAGS, bytes([0x06])),
        (AdvertisingData.COMPLETE_LOCAL_NAME, args.name.encode()),
    ])
    scan_response = AdvertisingData([
        (AdvertisingData.COMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS, bytes(UUID(g.MAIN_SERVICE))),
    ])
    await asyncio.wait_for(device.start_advertising(advertising_data=bytes(advertising),
                                                    scan_response_data=bytes(scan_response)), 10)
    g.emit(event="ready", address=str(device.random_address))
    try:
        reason = await asyncio.wait_for(done, args.timeout)
    except asyncio.TimeoutError:
        g.emit(event="timeout")
        os._exit(2)
    g.emit(event="disconnected", reason=reason)
    os._exit(0)


if __name__ == "__main__":
    g.run(main)
