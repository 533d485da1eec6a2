"""Bumble (Google's host, which we did not write) with Bluetooth 5 extended advertising, for our host to meet.

    python bumble_extended_peer.py --port P --address F0:0C:B1:00:00:01 advertise --length N [--phy 1M|2M|CODED]
    python bumble_extended_peer.py --port P --address F0:0C:B1:00:00:02 scan --name NAME [--connect]

advertise: one non-connectable extended advertising set (ADV_EXT_IND and its auxiliary chain, not legacy PDUs) whose
data is Flags, the complete local name "OCB-Ext" and manufacturer data filling it to N octets (several structures of
at most 255 octets), its secondary PHY --phy; prints {"event": "ready", "data": HEX} and advertises until --timeout.

scan: extended scanning (passive); pieces of one advertiser are joined until one is complete (Bumble reports each
piece); for an advertisement whose name is NAME prints
  {"event": "advertisement", "address", "data": HEX, "legacy", "connectable", "primaryPhy", "secondaryPhy", "sid",
   "truncated"}
with --watch SECONDS it goes on for that long and prints every advertisement of NAME from an address not printed
before (to follow an advertiser's private addresses), then {"event": "done"}; with --connect it then connects to it (LE Extended Create Connection, as Bumble does when the controller has it),
prints {"event": "connected", "txPhy", "rxPhy"} (LE Read PHY), disconnects and exits 0.
Errors: {"event": "error", ...} and exit 1; nothing within --timeout: exit 2.
"""
import argparse
import asyncio
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import interop_gatt as g  # noqa: E402

from bumble import hci  # noqa: E402
from bumble.core import AdvertisingData  # noqa: E402
from bumble.device import AdvertisingEventProperties, AdvertisingParameters, Device  # noqa: E402
from bumble.hci import Address  # noqa: E402
from bumble.transport import open_transport  # noqa: E402

NAME = "OCB-Ext"
PHYS = {"1M": hci.Phy.LE_1M, "2M": hci.Phy.LE_2M, "CODED": hci.Phy.LE_CODED}


def long_data(length):
    """Flags, the name, then manufacturer data structures (company 0x05F1) until `length` octets."""
    structures = [(AdvertisingData.FLAGS, bytes([0x04])), (AdvertisingData.COMPLETE_LOCAL_NAME, NAME.encode())]
    data = bytes(AdvertisingData(structures))
    counter = 0
    while len(data) < length:
        room = min(255, length - len(data))
        if room < 4:
            break
        payload = bytes([0xF1, 0x05]) + bytes((counter + k) & 0xFF for k in range(room - 4))
        counter += 1
        data += bytes([room - 1, AdvertisingData.MANUFACTURER_SPECIFIC_DATA]) + payload
    return data


async def advertise(device, args):
    data = long_data(args.length)
    phy = PHYS[args.phy.upper()]
    parameters = AdvertisingParameters(
        advertising_event_properties=AdvertisingEventProperties(is_connectable=False, is_scannable=False, is_legacy=False),
        primary_advertising_interval_min=100, primary_advertising_interval_max=100,
        primary_advertising_phy=hci.Phy.LE_CODED if phy == hci.Phy.LE_CODED else hci.Phy.LE_1M,
        secondary_advertising_phy=phy, advertising_sid=5)
    await asyncio.wait_for(device.create_advertising_set(advertising_parameters=parameters, advertising_data=data), 10)
    g.emit(event="ready", data=data.hex())
    await asyncio.sleep(args.timeout)


async def scan(device, args):
    pending = {}
    found = asyncio.get_running_loop().create_future()

    def on_advertisement(advertisement):
        key = (str(advertisement.address), advertisement.sid, advertisement.is_scan_response)
        data = pending.pop(key, b"") + bytes(advertisement.data_bytes)
        if not advertisement.is_complete and not advertisement.is_truncated:
            pending[key] = data
            return
        name = AdvertisingData.from_bytes(data).get(AdvertisingData.COMPLETE_LOCAL_NAME)
        if name != args.name or found.done():
            return
        if args.watch:
            if str(advertisement.address) in seen:
                return
            seen.add(str(advertisement.address))
        g.emit(event="advertisement", address=str(advertisement.address), data=data.hex(),
               legacy=advertisement.is_legacy, connectable=advertisement.is_connectable,
               primaryPhy=int(advertisement.primary_phy), secondaryPhy=int(advertisement.secondary_phy),
               sid=advertisement.sid, truncated=advertisement.is_truncated)
        if not advertisement.is_truncated and not args.watch:
            found.set_result(advertisement)

    seen = set()
    device.on("advertisement", on_advertisement)
    await device.start_scanning(legacy=False, active=False, filter_duplicates=False)
    if args.watch:
        await asyncio.sleep(args.watch)
        await device.stop_scanning()
        return
    advertisement = await found
    await device.stop_scanning()
    if not args.connect:
        return
    connection = await asyncio.wait_for(device.connect(advertisement.address), 15)
    phy = await asyncio.wait_for(connection.get_phy(), 10)
    g.emit(event="connected", txPhy=int(phy.tx_phy), rxPhy=int(phy.rx_phy))
    await asyncio.wait_for(connection.disconnect(), 10)


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True, help="the controller at tcp-client:127.0.0.1:PORT")
    parser.add_argument("--address", required=True)
    parser.add_argument("--timeout", type=float, default=60)
    sub = parser.add_subparsers(dest="mode", required=True)
    advertising = sub.add_parser("advertise")
    advertising.add_argument("--length", type=int, required=True)
    advertising.add_argument("--phy", default="2M", choices=["1M", "2M", "CODED", "1m", "2m", "coded"])
    scanning = sub.add_parser("scan")
    scanning.add_argument("--name", required=True)
    scanning.add_argument("--connect", action="store_true")
    scanning.add_argument("--watch", type=float, default=0)
    args = parser.parse_args()

    transport = await asyncio.wait_for(open_transport(f"tcp-client:127.0.0.1:{args.port}"), 10)
    device = Device.with_hci("ocb-ext-peer", Address(args.address), transport.source, transport.sink)
    await asyncio.wait_for(device.power_on(), 10)
    if not device.supports_le_extended_advertising:
        g.emit(event="error", message="the controller has no LE Extended Advertising")
        os._exit(1)
    if args.mode == "advertise":
        await advertise(device, args)
    else:
        await scan(device, args)
    g.emit(event="done")
    os._exit(0)


if __name__ == "__main__":
    g.run(main, default_timeout=60)
