"""A Bumble host for the Swift out-of-band pairing and signed-write interop tests
(Tests/HostTests/SecurityInteropOOBTests.swift, Tests/HostTests/SecurityInteropSigningTests.swift).

    python oob_signing_peer.py --port P --address F0:0C:B1:00:00:21 --role peripheral|central [--peer ADDRESS]
        --mode oob --pairing sc|legacy [--peer-oob C_HEX:R_HEX] [--tk HEX] [--go-file PATH] [--timeout 60]
    python oob_signing_peer.py --port P --address ... --role peripheral|central [--peer ADDRESS] --mode sign

Connects as a host to the controller at tcp-client:127.0.0.1:P (Bumble's controller or our air hub). All 128-bit
values are hex in the order they have on the wire (least significant octet first), as Bumble holds them.

--mode oob (Core 5.4 Vol 3 Part H §2.3.5.4 legacy TK, §2.3.5.6.4 LE Secure Connections OOB):
  sc:      PairingConfig.OobConfig(our_context=OobContext() (a fresh key pair and r), peer_data=OobSharedData(c, r)
           from --peer-oob when given, else None). Bumble's own C and r are printed as {"event": "oob"} before
           "ready", for the test to give to our host.
  legacy:  PairingConfig.OobConfig(legacy_context=OobLegacyContext(tk=--tk)).
  Central: connects to --peer and pairs; peripheral: advertises and waits for the pairing. One connection.
  --go-file PATH (central): connect only once PATH exists (the test creates it when our host holds the "oob" data
  printed here; without it Bumble could pair before our host has the data).

--mode sign (Vol 3 Part H §2.4.5 data signing, Vol 3 Part F §3.4.5.4 Signed Write Command): pairs (LE SC Just
  Works) distributing and accepting CSRKs, disconnects, reconnects WITHOUT encryption (signatures are checked only
  on unencrypted links, Vol 3 Part C §10.4.2), then:
  central (Bumble's client -> our server; Bumble 0.0.236 cannot sign): builds Signed Write Commands (0xD2) itself
    with bumble.crypto.aes_cmac and the CSRK Bumble distributed (recorded as it is sent: Bumble keeps only the
    peer's CSRK in its keystore) to the characteristic SIGNED_CHAR of the peer's SIGNED_SERVICE: a valid one
    (counter 0), the same counter again (replay), a bad MAC (counter 7), a valid one (counter 1); then reads the
    value back.
  peripheral (our client -> Bumble's server): serves SIGNED_CHAR (Write Without Response | Authenticated Signed
    Writes) and checks each 0xD2 it receives against the CSRK our host distributed, read from Bumble's keystore
    (MAC, and counter greater than the last accepted).

JSON lines (interop_gatt.emit):
  {"event": "oob", "c": HEX, "r": HEX}                  Bumble's LE SC OOB data (sc)
  {"event": "ready", "address": ...}
  {"event": "connected", "peer": ..., "index": N}
  {"event": "pairing_start"}
  {"event": "method", "method": NAME, "sc": B}          Bumble's pairing method (OOB, JUST_WORKS, ...)
  {"event": "paired", "sc": B, "authenticated": B, "keys": [...]}
  {"event": "pairing_failed", "reason": N}              SMP Pairing Failed reason
  {"event": "encrypted", "encryption": N, "key_size": N}
  {"event": "encryption_failed", "error": N}
  {"event": "csrk", "ours": HEX, "peer": HEX}           sign: the CSRK Bumble sent, the one its keystore holds
  {"event": "sent", "counter": N, "value": HEX, "valid": B}           sign central: one Signed Write Command
  {"event": "read_back", "value": HEX}                                sign central
  {"event": "signed_write", "handle": N, "value": HEX, "counter": N, "valid": B, "fresh": B, "encrypted": B}
                                                                      sign peripheral: one received 0xD2
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

from bumble import smp  # noqa: E402
from bumble.core import UUID  # noqa: E402
from bumble.crypto import aes_cmac  # noqa: E402
from bumble.gatt import Characteristic, CharacteristicValue, Service  # noqa: E402
from bumble.keys import JsonKeyStore  # noqa: E402
from bumble.pairing import OobContext, OobLegacyContext, OobSharedData, PairingConfig, PairingDelegate  # noqa: E402

SIGNED_SERVICE = g.uuid_string(0x5E1F_3001)
SIGNED_CHAR = g.uuid_string(0x5E1F_3002)
SIGNED_WRITE_COMMAND = 0xD2

KD = PairingDelegate.KeyDistribution
ALL_KEYS = KD.DISTRIBUTE_ENCRYPTION_KEY | KD.DISTRIBUTE_IDENTITY_KEY | KD.DISTRIBUTE_SIGNING_KEY

# What Bumble's SMP session sent in Signing Information (its own CSRK: the keystore keeps only the peer's).
sent_csrk = []


def record_sent_commands():
    original = smp.Session.send_command

    def send_command(self, command):
        if isinstance(command, smp.SMP_Signing_Information_Command):
            sent_csrk.append(bytes(command.signature_key))
        return original(self, command)

    smp.Session.send_command = send_command

    original_on_pairing = smp.Session.on_pairing

    async def on_pairing(self):
        g.emit(event="method", method=self.pairing_method.name, sc=bool(self.sc))
        return await original_on_pairing(self)

    smp.Session.on_pairing = on_pairing


def sign(message, counter, csrk):
    """Vol 3 Part H §2.4.5: SignCounter (4 octets LSO first) then the 64 most significant bits of
    AES-CMAC_CSRK(m || SignCounter), LSO first. Bumble's aes_cmac takes and returns big-endian byte strings, the
    wire carries everything least significant octet first."""
    counter_bytes = counter.to_bytes(4, "little")
    mac = aes_cmac((message + counter_bytes)[::-1], csrk[::-1])
    return counter_bytes + mac[:8][::-1]


async def keystore_csrk(device):
    """The CSRK the peer (our host) distributed, as Bumble's keystore holds it."""
    for _, keys in await device.keystore.get_all():
        if keys.csrk is not None:
            return bytes(keys.csrk.value)
    return None


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--address", required=True)
    parser.add_argument("--role", choices=["central", "peripheral"], required=True)
    parser.add_argument("--peer")
    parser.add_argument("--mode", choices=["oob", "sign"], required=True)
    parser.add_argument("--pairing", choices=["sc", "legacy"], default="sc")
    parser.add_argument("--peer-oob")
    parser.add_argument("--tk")
    parser.add_argument("--keystore")
    parser.add_argument("--go-file")
    parser.add_argument("--timeout", type=float, default=60)
    args = parser.parse_args()
    record_sent_commands()

    device = await sp.open_device(args.port, "OCB-OOB-Sign", args.address)
    if args.keystore:
        device.keystore = JsonKeyStore(namespace=None, filename=args.keystore)
    identity = PairingConfig.AddressType.RANDOM

    if args.mode == "oob":
        if args.pairing == "sc":
            context = OobContext()
            peer_data = None
            if args.peer_oob:
                c, r = args.peer_oob.split(":")
                peer_data = OobSharedData(c=bytes.fromhex(c), r=bytes.fromhex(r))
            shared = context.share()
            g.emit(event="oob", c=shared.c.hex(), r=shared.r.hex())
            oob = PairingConfig.OobConfig(our_context=context, peer_data=peer_data, legacy_context=None)
        else:
            oob = PairingConfig.OobConfig(our_context=None, peer_data=None,
                                          legacy_context=OobLegacyContext(tk=bytes.fromhex(args.tk)))
        device.pairing_config_factory = lambda connection: PairingConfig(
            sc=args.pairing == "sc", mitm=True, bonding=True, oob=oob, identity_address_type=identity,
            delegate=PairingDelegate(io_capability=PairingDelegate.IoCapability.NO_OUTPUT_NO_INPUT))
    else:
        device.pairing_config_factory = lambda connection: PairingConfig(
            sc=True, mitm=False, bonding=True, identity_address_type=identity,
            delegate=PairingDelegate(io_capability=PairingDelegate.IoCapability.NO_OUTPUT_NO_INPUT,
                                     local_initiator_key_distribution=ALL_KEYS,
                                     local_responder_key_distribution=ALL_KEYS))

    peripheral_state = {}
    if args.mode == "sign" and args.role == "peripheral":
        install_signed_server(device, peripheral_state)
    await asyncio.wait_for(device.power_on(), 10)

    if args.role == "peripheral":
        await peripheral(device, args, peripheral_state)
    else:
        await central(device, args)
    g.emit(event="done")
    os._exit(0)


def install_signed_server(device, state):
    """Serves SIGNED_CHAR and checks every Signed Write Command against our host's CSRK (from the keystore)."""
    P = Characteristic.Properties
    value = CharacteristicValue(read=lambda connection: state.get("value", b""))
    characteristic = Characteristic(UUID(SIGNED_CHAR), P.READ | P.WRITE_WITHOUT_RESPONSE | P.AUTHENTICATED_SIGNED_WRITES,
                                    Characteristic.READABLE | Characteristic.WRITEABLE, value)
    device.add_services([Service(UUID(SIGNED_SERVICE), [characteristic])])
    state["handle"] = lambda: characteristic.handle

    def on_signed_write(connection, pdu):
        raw = bytes(pdu)
        if len(raw) < 3 + 12:
            g.emit(event="signed_write_malformed", length=len(raw))
            return
        message, signature = raw[:-12], raw[-12:]
        handle = int.from_bytes(message[1:3], "little")
        counter = int.from_bytes(signature[:4], "little")
        csrk = state.get("csrk")
        valid = csrk is not None and sign(message, counter, csrk) == signature
        last = state.get("last_counter")
        fresh = last is None or counter > last
        if valid and fresh:
            state["last_counter"] = counter
            if handle == characteristic.handle:
                state["value"] = message[3:]
        g.emit(event="signed_write", handle=handle, value=message[3:].hex(), counter=counter, valid=valid,
               fresh=fresh, encrypted=bool(connection.encryption))

    # Bumble's GATT server has no handler for 0xD2 (it ignores it): add one. Its dispatch looks up
    # on_<pdu name> on the server; the bearer is the connection for the fixed ATT channel.
    device.gatt_server.on_att_signed_write_command = on_signed_write


async def peripheral(device, args, state):
    async def on_connected(connection, index):
        if args.mode == "sign" and index == 1:
            state["csrk"] = await keystore_csrk(device)
            g.emit(event="csrk", ours=sent_csrk[-1].hex() if sent_csrk else None,
                   peer=state["csrk"].hex() if state["csrk"] else None)

    await sp.serve_connections(device, "OCB-OOB-Sign", 2 if args.mode == "sign" else 1, on_connected)


async def central(device, args):
    """Pairs on the first connection; in sign mode sends the Signed Write Commands on the second."""
    g.emit(event="ready", address=str(device.random_address))
    if args.go_file:
        while not os.path.exists(args.go_file):
            await asyncio.sleep(0.02)

    async def step(connection, index):
        if index == 0:
            await asyncio.wait_for(connection.pair(), 40)
        else:
            await send_signed_writes(device, connection)

    await sp.connect_connections(device, args.peer, 2 if args.mode == "sign" else 1, step)


async def send_signed_writes(device, connection):
    """Bumble's client -> our server: valid (0), replay (0), bad MAC (7), valid (1); then reads the value back."""
    csrk = sent_csrk[-1] if sent_csrk else None
    g.emit(event="csrk", ours=csrk.hex() if csrk else None, peer=(await keystore_csrk(device) or b"").hex())
    if csrk is None:
        raise RuntimeError("Bumble distributed no CSRK")
    client = connection.gatt_client
    services = await asyncio.wait_for(client.discover_service(UUID(SIGNED_SERVICE)), 10)
    if not services:
        raise RuntimeError("the signed service was not found")
    characteristics = await asyncio.wait_for(client.discover_characteristics([UUID(SIGNED_CHAR)], services[0]), 10)
    if not characteristics:
        raise RuntimeError("the signed characteristic was not found")
    characteristic = characteristics[0]
    handle = characteristic.handle
    writes = [(0, b"\x01signed-one", True), (0, b"\x02replayed", True), (7, b"\x03bad-mac", False),
              (1, b"\x04signed-two", True)]
    for counter, value, valid in writes:
        message = bytes([SIGNED_WRITE_COMMAND]) + handle.to_bytes(2, "little") + value
        signature = sign(message, counter, csrk)
        if not valid:
            signature = signature[:4] + bytes(b ^ 0xFF for b in signature[4:])
        client.send_gatt_pdu(message + signature)
        g.emit(event="sent", counter=counter, value=value.hex(), valid=valid, handle=handle)
        await asyncio.sleep(0.2)
    value = await asyncio.wait_for(client.read_value(handle), 10)
    g.emit(event="read_back", value=bytes(value).hex())


if __name__ == "__main__":
    g.run(main, default_timeout=60)
