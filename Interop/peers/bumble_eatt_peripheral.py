"""A Bumble peripheral with Enhanced ATT enabled (Core 5.4 Vol 3 Part F §3.2.11), for our central to use.

    python bumble_eatt_peripheral.py --port P --address F0:0C:B1:00:00:E2 --name OCB-Bumble-EATT [--timeout 60]

Bumble's device configuration `eatt_enabled`: its GATT service offers Server Supported Features with the EATT bit
(and Client Supported Features), and it accepts EATT bearers on SPSM 0x0027. Pairing: LE Secure Connections Just
Works. The service has SLOW (0x3C1D00E1-..., readable after encryption; each read takes 0.5 s and reports the
bearer it came on) and NOTIFY (notified over whatever bearer Bumble picks once subscribed). JSON lines on stdout
(interop_gatt.emit):
  {"event": "ready", "address": ...}
  {"event": "connected", "peer": ...}
  {"event": "encrypted"}
  {"event": "eatt", "cid": N, "mtu": N}          each EATT bearer our central opened (Bumble's local CID)
  {"event": "client-features", "value": HEX}     what the central wrote to Client Supported Features
  {"event": "read-start", "bearer": "eatt"|"att", "cid": N}
  {"event": "read-end", "bearer": ..., "cid": N}
  {"event": "subscribed"} / {"event": "notified"}
  {"event": "disconnected", "reason": N}       then it exits 0
"""
import argparse
import asyncio
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import interop_gatt as g  # noqa: E402

from bumble import att  # noqa: E402
from bumble.core import UUID, AdvertisingData  # noqa: E402
from bumble.device import Device, DeviceConfiguration  # noqa: E402
from bumble.gatt import Characteristic, Service  # noqa: E402
from bumble.hci import Address  # noqa: E402
from bumble.pairing import PairingConfig, PairingDelegate  # noqa: E402
from bumble.transport import open_transport  # noqa: E402

SERVICE = "3C1D00E0-7B6E-4E5C-9A3B-0C0FFEE00001"
SLOW = "3C1D00E1-7B6E-4E5C-9A3B-0C0FFEE00001"
NOTIFY = "3C1D00E2-7B6E-4E5C-9A3B-0C0FFEE00001"
SLOW_VALUE = b"slow over eatt"


def describe(bearer):
    if att.is_enhanced_bearer(bearer):
        return "eatt", bearer.source_cid
    return "att", 0x0004


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--address", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--timeout", type=float, default=60)
    args = parser.parse_args()

    transport = await asyncio.wait_for(open_transport(f"tcp-client:127.0.0.1:{args.port}"), 10)
    config = DeviceConfiguration(name=args.name, address=Address(args.address), eatt_enabled=True)
    device = Device.from_config_with_hci(config, transport.source, transport.sink)
    device.pairing_config_factory = lambda connection: PairingConfig(
        sc=True, mitm=False, bonding=True, delegate=PairingDelegate(),
        identity_address_type=PairingConfig.AddressType.RANDOM)

    async def read_slow(bearer):
        kind, cid = describe(bearer)
        g.emit(event="read-start", bearer=kind, cid=cid)
        await asyncio.sleep(0.5)
        g.emit(event="read-end", bearer=kind, cid=cid)
        return SLOW_VALUE

    P = Characteristic.Properties
    notify = Characteristic(UUID(NOTIFY), P.READ | P.NOTIFY, Characteristic.READABLE, b"\x00")
    device.add_service(Service(UUID(SERVICE), [
        Characteristic(UUID(SLOW), P.READ, Characteristic.READ_REQUIRES_ENCRYPTION | Characteristic.READABLE,
                       att.AttributeValueV2(read=read_slow)),
        notify,
    ]))

    server = device.l2cap_channel_manager.le_coc_servers[att.EATT_PSM]
    server.on("connection", lambda channel: g.emit(event="eatt", cid=channel.source_cid,
                                                   mtu=min(channel.mtu, channel.peer_mtu)))
    features = device.gatt_service.client_supported_features_characteristic
    done = asyncio.get_running_loop().create_future()

    def on_connection(connection):
        g.emit(event="connected", peer=str(connection.peer_address))

        def on_encryption_change():
            if connection.is_encrypted:
                g.emit(event="encrypted")

        def on_disconnection(reason):
            if features is not None:
                g.emit(event="client-features", value=bytes(features.value).hex())
            if not done.done():
                done.set_result(reason)

        connection.on("connection_encryption_change", on_encryption_change)
        connection.on("disconnection", on_disconnection)

    device.on("connection", on_connection)

    async def send_notifications(connection):
        for value in (b"\x01eatt", b"\x02eatt"):
            await device.notify_subscriber(connection, notify, value)
        g.emit(event="notified")

    def on_subscription(connection, notify_enabled, indicate_enabled):
        g.emit(event="subscribed")
        if notify_enabled:
            asyncio.get_running_loop().create_task(send_notifications(connection))

    notify.on("subscription", on_subscription)

    await asyncio.wait_for(device.power_on(), 10)
    advertising = AdvertisingData([
        (AdvertisingData.FLAGS, bytes([0x06])),
        (AdvertisingData.COMPLETE_LOCAL_NAME, args.name.encode()),
    ])
    await asyncio.wait_for(device.start_advertising(advertising_data=bytes(advertising)), 10)
    g.emit(event="ready", address=str(device.random_address))
    reason = await asyncio.wait_for(done, args.timeout)
    g.emit(event="disconnected", reason=reason)
    await asyncio.sleep(0.2)
    os._exit(0)


if __name__ == "__main__":
    g.run(main, default_timeout=90)
