"""What the Bumble security peers (pairing_peer.py, oob_signing_peer.py) share: opening the device on the
controller, the events of a connection's pairing and encryption, the peripheral's advertise-and-accept loop and the
central's connect-step-disconnect loop. Events are JSON lines (interop_gatt.emit) read by the Swift security interop
tests (Tests/HostTests/SecurityInterop*Tests.swift).
"""
import asyncio

import interop_gatt as g

from bumble.core import AdvertisingData
from bumble.device import Device
from bumble.hci import Address
from bumble.transport import open_transport

KEY_NAMES = ("ltk", "ltk_central", "ltk_peripheral", "irk", "csrk", "link_key")


async def open_device(port, name, address):
    """A Bumble device named `name` with `address`, a host on the controller at tcp-client:127.0.0.1:PORT, or at
    the Bumble transport `port` names when it is a string (unix:/tmp/bt-server-le: BlueZ's emulator in the VM)."""
    spec = port if isinstance(port, str) else f"tcp-client:127.0.0.1:{port}"
    transport = await asyncio.wait_for(open_transport(spec), 10)
    return Device.with_hci(name, Address(address), transport.source, transport.sink)


def key_names(keys):
    """The keys a pairing distributed or stored, by their Bumble names."""
    return [name for name in KEY_NAMES if getattr(keys, name, None) is not None]


def key_authenticated(keys):
    """Whether the LTK is authenticated (MITM). Bumble's connection.authenticated is not usable: it becomes True on
    any LE encryption change with encryption 1."""
    for name in ("ltk", "ltk_central", "ltk_peripheral"):
        key = getattr(keys, name, None)
        if key is not None:
            return bool(key.authenticated)
    return None


def watch(connection, index, done):
    """Emits the connection's pairing and encryption events; `done` gets the disconnection reason."""
    connection.on("pairing_start", lambda: g.emit(event="pairing_start"))
    connection.on("pairing", lambda keys: g.emit(
        event="paired", sc=bool(connection.sc), authenticated=key_authenticated(keys), keys=key_names(keys)))
    connection.on("pairing_failure", lambda reason: g.emit(event="pairing_failed", reason=int(reason)))
    connection.on("connection_encryption_change", lambda: g.emit(
        event="encrypted", encryption=int(connection.encryption), key_size=int(connection.encryption_key_size)))
    connection.on("connection_encryption_failure", lambda error: g.emit(event="encryption_failed", error=int(error)))

    def on_disconnection(reason):
        g.emit(event="disconnected", reason=int(reason), index=index)
        if not done.done():
            done.set_result(reason)

    connection.on("disconnection", on_disconnection)


async def serve_connections(device, name, count, on_connected=None):
    """Peripheral: advertises connectably as `name` (flags 0x06) `count` times, one connection each, watched until
    it ends. "ready" (with the address) before the first, "advertising" before the next ones;
    `await on_connected(connection, index)` once each is watched."""
    advertising = bytes(AdvertisingData([
        (AdvertisingData.FLAGS, bytes([0x06])),
        (AdvertisingData.COMPLETE_LOCAL_NAME, name.encode()),
    ]))
    for index in range(count):
        done = asyncio.get_running_loop().create_future()
        connected = asyncio.get_running_loop().create_future()

        def on_connection(connection):
            if not connected.done():
                connected.set_result(connection)

        device.on("connection", on_connection)
        await asyncio.wait_for(device.start_advertising(advertising_data=advertising), 10)
        if index == 0:
            g.emit(event="ready", address=str(device.random_address))
        else:
            g.emit(event="advertising", index=index)
        connection = await connected
        device.remove_listener("connection", on_connection)
        g.emit(event="connected", peer=str(connection.peer_address), index=index)
        watch(connection, index, done)
        if on_connected is not None:
            await on_connected(connection, index)
        await done


async def connect_connections(device, peer, count, step):
    """Central: connects to `peer` (random address) `count` times; on each connection `await step(connection,
    index)` (a failure or timeout is an event: the test decides), then disconnects and waits for the end."""
    for index in range(count):
        done = asyncio.get_running_loop().create_future()
        connection = await asyncio.wait_for(device.connect(Address(peer), timeout=15), 20)
        g.emit(event="connected", peer=str(connection.peer_address), index=index)
        watch(connection, index, done)
        try:
            await step(connection, index)
        except asyncio.TimeoutError:
            g.emit(event="step_timeout", index=index)
        except Exception as error:  # noqa: BLE001 - the failure events say why; the test decides
            g.emit(event="step_failed", index=index, message=f"{type(error).__name__}: {error}")
        await asyncio.sleep(0.5)
        if not done.done():
            await asyncio.wait_for(connection.disconnect(), 10)
        await asyncio.wait_for(done, 10)
        await asyncio.sleep(0.3)
