"""A Bumble host that pairs with our host, in either role, for the Swift security interop tests
(Tests/HostTests/SecurityInterop*Tests.swift).

    python pairing_peer.py --port P --address F0:0C:B1:00:00:03 --role peripheral|central [--peer ADDRESS]
                           --method jw|numeric|passkey|legacy-jw|legacy-passkey [--passkey N]
                           [--reject-numeric] [--keystore FILE] [--connections N] [--timeout 60] [--read-secret]

Connects as a host to the controller at tcp-client:127.0.0.1:P (Bumble's controller or our air hub).

Methods (Bumble's side; the Swift test configures ours to match):
  jw              LE SC, NoInputNoOutput, no MITM
  numeric         LE SC, DisplayYesNo, MITM; the number is confirmed automatically (and printed), or rejected
                  with --reject-numeric (Bumble 0.0.236 then sends Pairing Failed with Confirm Value Failed, 0x04,
                  not Numeric Comparison Failed: bumble/smp.py prompt_user_for_numeric_comparison)
  passkey         LE SC, KeyboardOnly, MITM; types --passkey (ours displays it)
  legacy-jw       legacy, NoInputNoOutput
  legacy-passkey  legacy, KeyboardOnly, MITM; types --passkey

Peripheral role: advertises connectably (advertising restarted after each disconnection), serves one
characteristic SECRET (read needs encryption, value SECRET_VALUE) and one PLAIN. The central pairs or encrypts.
Central role: connects to --peer (random address); on the first connection pairs (connection.pair()), on later
ones encrypts with the keystore's keys (connection.encrypt()); then disconnects. Exits after --connections.
With --read-secret (central): on the first connection reads the peer's SECRET characteristic before pairing (the
peer must answer with an ATT error, printed as "read_error"), then pairs, then reads it again ("read_value").

JSON lines (interop_gatt.emit):
  {"event": "ready", "address": ...}
  {"event": "connected", "peer": ..., "index": N}
  {"event": "pairing_start"}
  {"event": "number", "number": N, "accepted": B}      numeric comparison value Bumble confirmed (or rejected)
  {"event": "passkey_entered", "passkey": N}
  {"event": "paired", "sc": B, "authenticated": B, "keys": [...], "identity": ADDRESS}
  {"event": "pairing_failed", "reason": N}             SMP Pairing Failed reason
  {"event": "encrypted", "encryption": N, "key_size": N}
  {"event": "encryption_failed", "error": N}
  {"event": "read", "characteristic": NAME, "encrypted": B}
  {"event": "read_error", "code": N, "encrypted": B}   --read-secret: the peer refused the read (ATT error code)
  {"event": "read_value", "value": HEX, "encrypted": B} --read-secret: the value read
  {"event": "disconnected", "reason": N, "index": N}
  {"event": "done"}                                     then exit 0
  {"event": "error", "message": ...}                    then exit 1
Exits 2 when nothing finished within --timeout seconds.
"""
import argparse
import asyncio
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import interop_gatt as g  # noqa: E402
import security_peer as sp  # noqa: E402

from bumble.core import UUID  # noqa: E402
from bumble.att import ATT_Error  # noqa: E402
from bumble.device import Peer  # noqa: E402
from bumble.gatt import Characteristic, CharacteristicValue, Service  # noqa: E402
from bumble.keys import JsonKeyStore  # noqa: E402
from bumble.pairing import PairingConfig, PairingDelegate  # noqa: E402

SECURE_SERVICE = g.uuid_string(0x5E1F_2001)
SECRET = g.uuid_string(0x5E1F_2002)
PLAIN = g.uuid_string(0x5E1F_2003)
SECRET_VALUE = b"secret behind encryption"
PLAIN_VALUE = b"plain value"

IO = PairingDelegate.IoCapability
METHODS = {
    # name: (sc, mitm, io capability)
    "jw": (True, False, IO.NO_OUTPUT_NO_INPUT),
    "numeric": (True, True, IO.DISPLAY_OUTPUT_AND_YES_NO_INPUT),
    "passkey": (True, True, IO.KEYBOARD_INPUT_ONLY),
    "legacy-jw": (False, False, IO.NO_OUTPUT_NO_INPUT),
    "legacy-passkey": (False, True, IO.KEYBOARD_INPUT_ONLY),
}


class Delegate(PairingDelegate):
    """Confirms everything automatically (the numeric value is rejected when reject_numeric); types the fixed
    passkey; prints what it was shown."""

    def __init__(self, io_capability, passkey, reject_numeric=False):
        super().__init__(io_capability=io_capability)
        self.passkey = passkey
        self.reject_numeric = reject_numeric

    async def accept(self):
        return True

    async def confirm(self, auto=False):
        return True

    async def compare_numbers(self, number, digits):
        g.emit(event="number", number=number, accepted=not self.reject_numeric)
        return not self.reject_numeric

    async def get_number(self):
        g.emit(event="passkey_entered", passkey=self.passkey)
        return self.passkey

    async def generate_passkey(self):
        return self.passkey

    async def display_number(self, number, digits):
        g.emit(event="displayed", number=number)


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, help="the controller at tcp-client:127.0.0.1:PORT")
    parser.add_argument("--transport", help="another Bumble transport for the controller (unix:PATH)")
    parser.add_argument("--address", required=True)
    parser.add_argument("--role", choices=["central", "peripheral"], required=True)
    parser.add_argument("--peer")
    parser.add_argument("--method", choices=sorted(METHODS), required=True)
    parser.add_argument("--passkey", type=int, default=123456)
    parser.add_argument("--reject-numeric", action="store_true")
    parser.add_argument("--keystore")
    parser.add_argument("--connections", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("--read-secret", action="store_true")
    args = parser.parse_args()
    if (args.port is None) == (args.transport is None):
        parser.error("give --port or --transport")

    device = await sp.open_device(args.transport or args.port, "OCB-Pairing", args.address)
    sc, mitm, io = METHODS[args.method]
    device.pairing_config_factory = lambda connection: PairingConfig(
        sc=sc, mitm=mitm, bonding=True, delegate=Delegate(io, args.passkey, args.reject_numeric),
        # We connect with our random static address: distribute it as the identity (not the controller's public
        # address, which our air sets and the peer could not link to the address it connected to).
        identity_address_type=PairingConfig.AddressType.RANDOM)
    if args.keystore:
        device.keystore = JsonKeyStore(namespace=None, filename=args.keystore)

    def reader(name, value):
        def read(connection):
            g.emit(event="read", characteristic=name, encrypted=bool(connection.encryption))
            return value
        return CharacteristicValue(read=read)

    P = Characteristic.Properties
    device.add_services([Service(UUID(SECURE_SERVICE), [
        Characteristic(UUID(SECRET), P.READ, Characteristic.READ_REQUIRES_ENCRYPTION, reader("secret", SECRET_VALUE)),
        Characteristic(UUID(PLAIN), P.READ, Characteristic.READABLE, reader("plain", PLAIN_VALUE)),
    ])])
    await asyncio.wait_for(device.power_on(), 10)

    if args.role == "peripheral":
        await peripheral(device, args)
    else:
        await central(device, args)
    g.emit(event="done")
    os._exit(0)


async def peripheral(device, args):
    await sp.serve_connections(device, "OCB-Pairing", args.connections)


async def central(device, args):
    """Pairs on the first connection (around reads of SECRET with --read-secret), encrypts with the keystore's keys
    on the later ones."""
    g.emit(event="ready", address=str(device.random_address))

    async def step(connection, index):
        if index == 0 and args.read_secret:
            await read_secret_around_pairing(connection)
        elif index == 0:
            await asyncio.wait_for(connection.pair(), 40)
        else:
            await asyncio.wait_for(connection.encrypt(), 20)

    await sp.connect_connections(device, args.peer, args.connections, step)


async def read_secret_around_pairing(connection):
    """Reads SECRET before pairing (expects an ATT error), pairs, reads it again."""
    peer = Peer(connection)
    await asyncio.wait_for(peer.discover_services([UUID(SECURE_SERVICE)]), 10)
    await asyncio.wait_for(peer.discover_characteristics(), 10)
    secret = peer.get_characteristics_by_uuid(UUID(SECRET))[0]
    try:
        value = await asyncio.wait_for(peer.read_value(secret), 10)
        g.emit(event="read_value", value=bytes(value).hex(), encrypted=bool(connection.encryption))
    except ATT_Error as error:
        g.emit(event="read_error", code=int(error.error_code), encrypted=bool(connection.encryption))
    await asyncio.wait_for(connection.pair(), 40)
    value = await asyncio.wait_for(peer.read_value(secret), 10)
    g.emit(event="read_value", value=bytes(value).hex(), encrypted=bool(connection.encryption))


if __name__ == "__main__":
    g.run(main, default_timeout=60)
