"""Bumble (Google's host, which we did not write) on one end of a link whose PHY changes (issue 15 items 2 and 5).

    python bumble_phy_peer.py --port P --address F0:0C:B1:00:00:21 peripheral --name NAME
    python bumble_phy_peer.py --port P --address F0:0C:B1:00:00:22 central --target ADDRESS --request 2M|CODED

peripheral: legacy connectable advertising with NAME in the advertising data; prints {"event": "ready"}, then
  {"event": "connected", "address"} when a central connects, and for every LE PHY Update Complete Bumble's host
  receives {"event": "phy", "txPhy", "rxPhy"} (1 = LE 1M, 2 = LE 2M, 3 = LE Coded) followed by what LE Read PHY
  answers then, {"event": "readPhy", "txPhy", "rxPhy"}; {"event": "done"} and exit 0 when the link ends.

central: connects to ADDRESS (LE Create Connection, or the extended one when the controller has it), asks for the PHY
  --request in both directions (LE Set PHY), waits for the LE PHY Update Complete and prints
  {"event": "phy", "txPhy", "rxPhy"}, then {"event": "readPhy", ...} (LE Read PHY); then it waits for the other side
  to end the link and prints {"event": "done"}.

A PHY update that fails prints {"event": "phyFailed", "status"}. Errors: {"event": "error", ...} and exit 1; nothing
within --timeout: exit 2.
"""
import argparse
import asyncio
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import interop_gatt as g  # noqa: E402

from bumble import hci  # noqa: E402
from bumble.core import AdvertisingData  # noqa: E402
from bumble.device import Device  # noqa: E402
from bumble.hci import Address  # noqa: E402
from bumble.transport import open_transport  # noqa: E402

PHYS = {"1M": hci.Phy.LE_1M, "2M": hci.Phy.LE_2M, "CODED": hci.Phy.LE_CODED}


def follow(connection):
    """Prints every PHY update of `connection` (with what LE Read PHY says right after it); the future ends with the
    link."""
    ended = asyncio.get_running_loop().create_future()

    def on_update(phy):
        g.emit(event="phy", txPhy=int(phy.tx_phy), rxPhy=int(phy.rx_phy))
        asyncio.get_running_loop().create_task(read_phy(connection))

    def on_failure(error):
        g.emit(event="phyFailed", status=int(error))

    def on_disconnection(reason):
        if not ended.done():
            ended.set_result(reason)

    connection.on("connection_phy_update", on_update)
    connection.on("connection_phy_update_failure", on_failure)
    connection.on("disconnection", on_disconnection)
    return ended


async def read_phy(connection):
    try:
        phy = await asyncio.wait_for(connection.get_phy(), 10)
    except Exception as error:  # noqa: BLE001 - reported to the test
        g.emit(event="readPhyFailed", message=f"{type(error).__name__}: {error}")
        return
    g.emit(event="readPhy", txPhy=int(phy.tx_phy), rxPhy=int(phy.rx_phy))


async def peripheral(device, args):
    connected = asyncio.get_running_loop().create_future()
    device.on("connection", lambda connection: connected.done() or connected.set_result(connection))
    advertising = AdvertisingData([
        (AdvertisingData.FLAGS, bytes([0x06])),
        (AdvertisingData.COMPLETE_LOCAL_NAME, args.name.encode()),
    ])
    await asyncio.wait_for(device.start_advertising(advertising_data=bytes(advertising), auto_restart=False), 10)
    g.emit(event="ready")
    connection = await connected
    ended = follow(connection)
    g.emit(event="connected", address=str(connection.peer_address))
    await ended


async def central(device, args):
    target = Address(args.target)
    connection = await asyncio.wait_for(device.connect(target), 20)
    ended = follow(connection)
    g.emit(event="connected", address=str(connection.peer_address))
    phy = PHYS[args.request.upper()]
    await asyncio.wait_for(connection.set_phy(tx_phys=[phy], rx_phys=[phy]), 10)
    await ended


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True, help="the controller at tcp-client:127.0.0.1:PORT")
    parser.add_argument("--address", required=True)
    parser.add_argument("--timeout", type=float, default=60)
    sub = parser.add_subparsers(dest="mode", required=True)
    serving = sub.add_parser("peripheral")
    serving.add_argument("--name", required=True)
    connecting = sub.add_parser("central")
    connecting.add_argument("--target", required=True, help="the peripheral's address, e.g. C0:CB:00:00:00:21/P")
    connecting.add_argument("--request", default="2M", choices=["1M", "2M", "CODED", "1m", "2m", "coded"])
    args = parser.parse_args()

    transport = await asyncio.wait_for(open_transport(f"tcp-client:127.0.0.1:{args.port}"), 10)
    device = Device.with_hci("ocb-phy-peer", Address(args.address), transport.source, transport.sink)
    await asyncio.wait_for(device.power_on(), 10)
    if args.mode == "peripheral":
        await peripheral(device, args)
    else:
        await central(device, args)
    g.emit(event="done")
    os._exit(0)


if __name__ == "__main__":
    g.run(main, default_timeout=60)
