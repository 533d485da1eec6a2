#!/usr/bin/env python3
"""A hostile peer on the shared air (issue 30): joins a `blue air` hub as a host of its own (H4 over the hub's
UNIX socket, Python standard library), and attacks our host stack over a link, from either side:

- central: finds a connectable advertiser by name, connects, and sends it a barrage of mutated ATT, L2CAP
  signaling and SMP PDUs, unknown channels, broken fragmentation (a continuation without a start, a start whose
  length is never reached, lengths beyond the payload), answering nothing it is asked;
- peripheral: advertises a name, waits for a central (`blue explore NAME`), and answers every ATT request it gets
  with a mutated or wrong response (or none), while sending the same barrage.

Each session ends by its own bound: a Disconnect, or the socket closed abruptly. Deterministic for a seed (printed),
so a finding can be replayed: `hostile_peer.py --hub SOCKET --seed N ...`. The caller checks the victim: still
running, still answering (Fuzz/hostile-peer.sh, Scripts/soak.py).
"""

import argparse
import os
import random
import select
import socket
import struct
import sys
import time

# H4 packet indicators (Core 5.4 Vol 4 Part A §2).
COMMAND, ACL, EVENT = 0x01, 0x02, 0x04


class Hub:
    """A host's side of a virtual controller on the hub: H4 framing, commands with their Command Complete/Status,
    LE credits (Number Of Completed Packets), events collected for the caller."""

    def __init__(self, path, deadline):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buffer = b""
        self.deadline = deadline
        self.credits = 1
        self.events = []
        self.acl_in = []

    def alive(self):
        return time.monotonic() < self.deadline

    def send(self, data):
        self.sock.sendall(data)

    def command(self, opcode, parameters=b"", wait=True):
        self.send(bytes([COMMAND]) + struct.pack("<HB", opcode, len(parameters)) + parameters)
        if not wait:
            return None
        end = min(self.deadline, time.monotonic() + 3.0)
        while time.monotonic() < end:
            for index, (code, body) in enumerate(self.events):
                if code == 0x0E and len(body) >= 3 and struct.unpack_from("<H", body, 1)[0] == opcode:
                    del self.events[index]
                    return body[3:]
                if code == 0x0F and len(body) >= 4 and struct.unpack_from("<H", body, 2)[0] == opcode:
                    del self.events[index]
                    return body[:1]
            self.pump(0.05)
        return None

    def pump(self, timeout):
        """Reads what the controller sent within `timeout` seconds."""
        ready, _, _ = select.select([self.sock], [], [], max(0.0, timeout))
        if not ready:
            return
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("the hub closed the socket")
        self.buffer += chunk
        while self.buffer:
            kind = self.buffer[0]
            if kind == EVENT and len(self.buffer) >= 3:
                size = 3 + self.buffer[2]
                if len(self.buffer) < size:
                    return
                code, body = self.buffer[1], self.buffer[3:size]
                self.buffer = self.buffer[size:]
                if code == 0x13 and len(body) >= 1:  # Number Of Completed Packets
                    for index in range(body[0]):
                        if len(body) >= 5 + 4 * index:
                            self.credits += struct.unpack_from("<H", body, 3 + 4 * index)[0]
                else:
                    self.events.append((code, body))
            elif kind == ACL and len(self.buffer) >= 5:
                size = 5 + struct.unpack_from("<H", self.buffer, 3)[0]
                if len(self.buffer) < size:
                    return
                handle = struct.unpack_from("<H", self.buffer, 1)[0] & 0x0FFF
                self.acl_in.append((handle, self.buffer[5:size]))
                self.buffer = self.buffer[size:]
            elif kind in (EVENT, ACL):
                return
            else:
                raise ConnectionError(f"unexpected H4 indicator 0x{kind:02x}")

    def acl(self, handle, data, boundary=0x2):
        """Sends one ACL packet when the controller has a buffer (waits for a credit, within the deadline)."""
        while self.credits <= 0 and self.alive():
            self.pump(0.05)
        if self.credits <= 0:
            return
        self.credits -= 1
        self.send(bytes([ACL]) + struct.pack("<HH", (handle & 0x0FFF) | (boundary << 12), len(data)) + data)

    def le_meta(self, subevent):
        """The first LE Meta event of `subevent`, removed from the list (or None)."""
        for index, (code, body) in enumerate(self.events):
            if code == 0x3E and body and body[0] == subevent:
                del self.events[index]
                return body
        return None


def start(hub):
    hub.command(0x0C03)  # Reset
    hub.command(0x0C01, b"\xff" * 8)  # Set Event Mask
    hub.command(0x2001, b"\xff" * 8)  # LE Set Event Mask
    answer = hub.command(0x2002)  # LE Read Buffer Size
    if answer and len(answer) >= 4:
        hub.credits = max(1, answer[3])


def l2cap(cid, payload, length=None):
    return struct.pack("<HH", len(payload) if length is None else length, cid) + payload


def barrage_pdu(rng, mtu):
    """One hostile L2CAP frame (or a broken fragment, flagged by the returned boundary)."""
    choice = rng.random()
    if choice < 0.35:  # ATT: any opcode, random handles and lengths, plausible requests with wrong fields
        # Requests and commands mostly: a response nobody asked for ends the link (our host, as BlueZ's att.c,
        # disconnects), which would end the barrage early.
        if rng.random() < 0.95:
            opcode = rng.choice([0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x1E, 0x20, 0x52, 0xD2])
        else:
            opcode = rng.choice([0x1B, 0x1D, 0x23, 0x25, 0x01, 0x03, 0x05, 0x09, 0x0B, 0x11, 0x13, 0x17, 0x19, rng.randrange(256)])
        body = bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 2, 3, 4, 6, 18, mtu, mtu + 1, 600])))
        return 0x2, l2cap(0x0004, bytes([opcode]) + body)
    if choice < 0.55:  # LE signaling: any code, random identifiers and lengths
        code = rng.choice([0x01, 0x06, 0x07, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1A, rng.randrange(256)])
        data = bytes(rng.randrange(256) for _ in range(rng.choice([0, 2, 4, 8, 10, 12, 40])))
        declared = rng.choice([len(data), len(data) + 3, max(0, len(data) - 1), 0xFFFF])
        return 0x2, l2cap(0x0005, bytes([code, rng.randrange(256)]) + struct.pack("<H", declared) + data)
    if choice < 0.70:  # SMP: any code, random keys, confirm and random values
        code = rng.choice([0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, rng.randrange(256)])
        data = bytes(rng.randrange(256) for _ in range(rng.choice([0, 6, 16, 64, 65])))
        return 0x2, l2cap(0x0006, bytes([code]) + data)
    if choice < 0.80:  # a channel nobody opened, or a dynamic one
        cid = rng.choice([0x0000, 0x0001, 0x0003, 0x0007, 0x003F, 0x0040, 0x0041, 0x007F, rng.randrange(0x10000)])
        return 0x2, l2cap(cid, bytes(rng.randrange(256) for _ in range(rng.randrange(40))))
    if choice < 0.88:  # a start whose declared length is never reached
        return 0x2, l2cap(0x0004, b"\x0a\x01\x00", length=rng.choice([10, 100, 512, 0xFFFF]))
    if choice < 0.94:  # a continuation without a start
        return 0x1, bytes(rng.randrange(256) for _ in range(rng.randrange(1, 30)))
    return 0x2, bytes(rng.randrange(256) for _ in range(rng.randrange(0, 4)))  # shorter than a basic header


def answer_request(rng, request, mtu):
    """A peripheral's answer to an ATT request: wrong, mutated or none."""
    if not request:
        return None
    opcode = request[0]
    roll = rng.random()
    if roll < 0.2:
        return None  # no answer: the central meets its 30-second ATT timeout
    if roll < 0.4:  # the response to another request
        opcode = rng.choice([0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x10, 0x12, 0x16, 0x18])
    body = bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 2, 3, 5, 6, 7, 20, 21, mtu - 1, mtu + 10])))
    if rng.random() < 0.3:  # an Error Response naming any request and code
        return bytes([0x01, rng.randrange(256)]) + struct.pack("<H", rng.randrange(0x10000)) + bytes([rng.randrange(256)])
    return bytes([opcode + 1 if opcode % 2 == 0 else opcode]) + body


def run_central(hub, rng, target_name, frames):
    """Scans for `target_name`, connects, attacks."""
    hub.command(0x200B, struct.pack("<BHHBB", 0x01, 0x0010, 0x0010, 0x00, 0x00))  # LE Set Scan Parameters (active)
    hub.command(0x200C, b"\x01\x00")  # LE Set Scan Enable
    wanted = target_name.encode()
    peer = None
    while peer is None and hub.alive():
        hub.pump(0.1)
        while True:
            report = hub.le_meta(0x02)
            if report is None:
                break
            count, offset = report[1], 2
            for _ in range(count):
                if offset + 9 > len(report):
                    break
                event_type, address_type, address = report[offset], report[offset + 1], report[offset + 2:offset + 8]
                length = report[offset + 8]
                data = report[offset + 9:offset + 9 + length]
                offset += 10 + length
                if event_type in (0x00, 0x01, 0x04) and wanted in data:
                    peer = (address_type, address)
    hub.command(0x200C, b"\x00\x00")
    if peer is None:
        return "no target"
    hub.command(0x200D, struct.pack("<HHBB6sBHHHHHH", 0x0010, 0x0010, 0x00, peer[0], peer[1], 0x00,
                                    0x0006, 0x0006, 0x0000, 0x0064, 0x0000, 0x0000))
    handle = None
    while handle is None and hub.alive():
        hub.pump(0.1)
        complete = hub.le_meta(0x01) or hub.le_meta(0x0A)
        if complete is not None:
            if complete[1] != 0:
                return f"connection failed (0x{complete[1]:02x})"
            handle = struct.unpack_from("<H", complete, 2)[0]
    if handle is None:
        return "no connection"
    sent = attack(hub, rng, handle, frames, answering=False)
    return f"{sent} frames, " + finish(hub, rng, handle)


def run_peripheral(hub, rng, name, frames):
    """Advertises `name`, waits for a central, answers its requests wrongly while attacking."""
    data = bytes([len(name) + 1, 0x09]) + name.encode()
    data = data + bytes([0x02, 0x01, 0x06])
    hub.command(0x2006, struct.pack("<HHBBB6sBB", 0x0020, 0x0020, 0x00, 0x00, 0x00, b"\x00" * 6, 0x07, 0x00))
    hub.command(0x2008, bytes([len(data)]) + data.ljust(31, b"\x00"))
    hub.command(0x200A, b"\x01")
    handle = None
    while handle is None and hub.alive():
        hub.pump(0.1)
        complete = hub.le_meta(0x01) or hub.le_meta(0x0A)
        if complete is not None and complete[1] == 0:
            handle = struct.unpack_from("<H", complete, 2)[0]
    if handle is None:
        return "no central"
    sent = attack(hub, rng, handle, frames, answering=True)
    return f"{sent} frames, " + finish(hub, rng, handle)


def attack(hub, rng, handle, frames, answering):
    mtu = 23
    sent = 0
    while sent < frames and hub.alive():
        hub.pump(0.0 if rng.random() < 0.8 else 0.02)
        if any(code == 0x05 for code, _ in hub.events):
            return sent  # the victim disconnected: its answer to the barrage
        if answering:
            while hub.acl_in:
                _, frame = hub.acl_in.pop(0)
                if len(frame) >= 5 and struct.unpack_from("<H", frame, 2)[0] == 0x0004:
                    reply = answer_request(rng, frame[4:], mtu)
                    if reply is not None:
                        hub.acl(handle, l2cap(0x0004, reply))
        else:
            hub.acl_in.clear()
        boundary, pdu = barrage_pdu(rng, mtu)
        hub.acl(handle, pdu, boundary)
        sent += 1
    return sent


def finish(hub, rng, handle):
    if any(code == 0x05 for code, _ in hub.events):
        return "the victim disconnected"
    if rng.random() < 0.5:
        hub.command(0x0406, struct.pack("<HB", handle, 0x13), wait=False)  # Disconnect
        end = time.monotonic() + 2.0
        while time.monotonic() < end and not any(code == 0x05 for code, _ in hub.events):
            hub.pump(0.1)
        return "disconnected"
    return "closed"  # the socket closed with the link up: the hub drops the device


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hub", required=True, help="the hub's H4 socket (blue air --socket)")
    parser.add_argument("--role", choices=["central", "peripheral"], default="central")
    parser.add_argument("--target", default="blue heart rate", help="central: the advertised name to attack")
    parser.add_argument("--name", default="Hostile", help="peripheral: the name to advertise")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--frames", type=int, default=400, help="PDUs to send on the link")
    parser.add_argument("--duration", type=float, default=20.0, help="the session's bound, seconds")
    arguments = parser.parse_args()
    seed = arguments.seed if arguments.seed is not None else random.SystemRandom().randrange(1 << 32)
    rng = random.Random(seed)
    hub = Hub(arguments.hub, time.monotonic() + arguments.duration)
    try:
        start(hub)
        if arguments.role == "central":
            outcome = run_central(hub, rng, arguments.target, arguments.frames)
        else:
            outcome = run_peripheral(hub, rng, arguments.name, arguments.frames)
    except (ConnectionError, OSError) as error:
        outcome = f"hub connection ended: {error}"
    finally:
        hub.sock.close()
    print(f"hostile peer {arguments.role} seed {seed}: {outcome}", flush=True)


if __name__ == "__main__":
    main()
