#!/usr/bin/env python3
"""A hostile HCI controller over H4 (Python 3 standard library only).

It listens on a UNIX stream socket (--unix PATH) or on TCP 127.0.0.1 port 0 (--tcp, the port is printed), takes
ONE host connection and plays a controller that answers plausibly most of the time, so that the host gets past
initialisation into scanning, advertising and connections, while it injects hostile traffic:

  random and mutated events, Command Complete / Command Status for commands never sent (credits mostly 0),
  credit starvation (every answer grants Num_HCI_Command_Packets = 0 from some moment on, after the reproducer
  04 0E 03 00 60 20), a controller that stops answering, Number Of Completed Packets for unknown handles or more
  packets than sent, ACL for unknown handles, ACL fragments that never complete, orphan continuations, garbage
  L2CAP / ATT / signaling / SMP, duplicate and bogus connection events, truncated packets, garbage H4 packet
  indicators, and closing the socket mid-stream.

Roles: --role scan (advertising reports while scanning), explore (a connectable device named by --name, LE
Connection Complete after LE Create Connection, then a small GATT server over ACL), serve (after the host
enables advertising, LE Connection Complete as peripheral, then a GATT client sending requests, good and bad).

Everything it decides comes from random.Random(--seed): the same seed gives the same hostility profile and the
same sequence of choices (the exact packets still depend on the host's timing). --trace FILE records every packet
both ways with its time; --stats FILE gets one JSON object with the counts at exit.
"""

import argparse
import heapq
import json
import os
import random
import select
import socket
import struct
import sys
import time

# Commands answered by Command Status (Core 5.4 Vol 4 Part E §7); the others by Command Complete.
STATUS_ANSWERED = {0x0406, 0x041D, 0x200D, 0x2013, 0x2016, 0x2019, 0x2025, 0x2026, 0x2032, 0x2043}

# Return parameter lengths of Command Complete (status included), as the host's table has them.
RETURN_LENGTHS = {
    0x0C01: 1, 0x0C03: 1, 0x0C2D: 4, 0x0C31: 1, 0x0C33: 1, 0x0C63: 1, 0x0C6D: 1,
    0x1001: 9, 0x1002: 65, 0x1003: 9, 0x1005: 8, 0x1009: 7, 0x1405: 4,
    0x2001: 1, 0x2002: 4, 0x2060: 7, 0x2003: 9, 0x2005: 1, 0x2006: 1, 0x2007: 2, 0x2008: 1, 0x2009: 1,
    0x200A: 1, 0x200B: 1, 0x200C: 1, 0x200E: 1, 0x200F: 2, 0x2010: 1, 0x2011: 1, 0x2012: 1, 0x2017: 17,
    0x2018: 9, 0x201A: 3, 0x201B: 3, 0x201C: 9, 0x2020: 3, 0x2021: 3, 0x2022: 3, 0x2023: 5, 0x2024: 1,
    0x2027: 1, 0x2028: 1, 0x2029: 1, 0x202D: 1, 0x202E: 1, 0x202F: 9, 0x2030: 5, 0x2031: 1,
}
KNOWN_OPCODES = sorted(RETURN_LENGTHS) + sorted(STATUS_ANSWERED)

ATT_CID, SIGNALING_CID, SMP_CID = 0x0004, 0x0005, 0x0006


def le16(value):
    return struct.pack("<H", value & 0xFFFF)


class Controller:
    def __init__(self, args):
        self.args = args
        self.seed = args.seed
        self.rng = random.Random(args.seed)
        rng = self.rng
        self.role = args.role
        self.name = args.name.encode()
        # The session's hostility profile.
        self.profile = {
            "mutate": rng.choice([0.0, 0.0, 0.01, 0.03, 0.1]),
            "inject_per_second": rng.choice([0, 1, 5, 20, 80]),
            "starve_at": rng.choice([None, None, None, rng.uniform(0.0, 4.0)]),
            "dead_at": rng.choice([None, None, None, None, rng.uniform(0.0, 4.0)]),
            "close_at": rng.choice([None, None, None, None, None, rng.uniform(0.05, 5.0)]),
            "garbage_at": rng.choice([None] * 7 + [rng.uniform(0.05, 5.0)]),
            "ack_acl": rng.choice([1.0, 1.0, 0.9, 0.5, 0.0]),
            "credits": rng.choice([1, 1, 1, 2, 5]),
            "buffer_length": rng.choice([27, 27, 64, 251, rng.randint(1, 1021)]),
            "buffer_count": rng.choice([1, 3, 8, rng.randint(0, 20)]),
            "supports_v2": rng.random() < 0.3,
            "ignore_command_p": rng.choice([0.0, 0.0, 0.02, 0.1]),
            "fail_command_p": rng.choice([0.0, 0.0, 0.02, 0.1]),
            "connect_fails": rng.random() < 0.1,
            "drop_link_after": rng.choice([None, None, rng.uniform(0.2, 3.0)]),
            "unfinished_fragments": rng.random() < 0.2,
            # The GATT server of explore lies about handles now and then: the same entries whatever was asked,
            # handles going backwards, an end handle of 0xFFFF, entry lengths that do not divide the data.
            "gatt_lies": rng.choice([0.0, 0.0, 0.1, 0.5, 1.0]),
            # Probability that a Disconnect gets its Command Status but never a Disconnection Complete (the host
            # gives up after the supervision timeout plus a command timeout: finding of seed 7044, fixed).
            "disconnect_never_completes": rng.choice([0.0, 0.0, 0.05, 0.5]),
            # Whether a dead controller ignores LE Create Connection Cancel too (the host abandons the connect when
            # its cancel fails: finding of seed 200230, fixed).
            "dead_ignores_cancel": rng.random() < 0.5,
        }
        if rng.random() < 0.25:
            # A calm session: a plausible controller with a little noise, so that runs get deep into GATT.
            self.profile.update(mutate=0.0, inject_per_second=rng.choice([0, 1]), starve_at=None, dead_at=None,
                                close_at=None, garbage_at=None, ack_acl=1.0, ignore_command_p=0.0,
                                fail_command_p=0.0, connect_fails=False, drop_link_after=None)
            if self.profile["buffer_count"] == 0:
                self.profile["buffer_count"] = 3
        for setting in args.set or []:
            key, _, value = setting.partition("=")
            if key not in self.profile:
                raise SystemExit("--set: no profile key %r (keys: %s)" % (key, ", ".join(sorted(self.profile))))
            self.profile[key] = json.loads(value)
        self.stats = {
            "seed": self.seed, "role": self.role, "profile": self.profile,
            "commands_received": 0, "acl_received": 0, "events_sent": 0, "acl_sent": 0, "bytes_sent": 0,
            "mutated": 0, "injected": {}, "end": None,
        }
        self.sock = None
        self.inbuf = bytearray()
        self.start = None
        self.timers = []  # (time, sequence, callable)
        self.sequence = 0
        self.scanning = False
        self.advertising = False
        self.starving = False
        self.dead = False
        self.closed = False
        self.connections = {}  # handle -> {"role": 0/1, "peer": bytes, "sent_unacked": int, "rx": bytearray|None}
        self.pending_connect = None
        self.devices = [bytes(rng.randrange(256) for _ in range(6)) for _ in range(rng.randint(1, 6))]
        self.target_address = bytes(rng.randrange(256) for _ in range(5)) + bytes([0xC0 | rng.randrange(64)])
        self.client_script = []
        self.trace = open(args.trace, "w") if args.trace else None

    # MARK: time and timers

    def now(self):
        return time.monotonic() - self.start

    def after(self, delay, action):
        self.sequence += 1
        heapq.heappush(self.timers, (self.now() + max(0.0, delay), self.sequence, action))

    # MARK: output

    def log(self, direction, data):
        if self.trace:
            self.trace.write("%.4f %s %s\n" % (self.now(), direction, data.hex()))

    def write(self, data, counted="events_sent"):
        if self.closed:
            return
        self.log(">", data)
        try:
            self.sock.sendall(data)
        except OSError:
            self.end("host closed (send failed)")
            return
        self.stats[counted] += 1
        self.stats["bytes_sent"] += len(data)

    def mutate(self, packet):
        """A few random byte changes, a truncation or an extension (the H4 length fields stay as they were, or are
        fixed up, at random)."""
        rng = self.rng
        data = bytearray(packet)
        kind = rng.randrange(5)
        if kind == 0 and len(data) > 1:
            for _ in range(rng.randint(1, 3)):
                index = rng.randrange(1, len(data))
                data[index] ^= 1 << rng.randrange(8)
        elif kind == 1 and len(data) > 1:
            data[rng.randrange(1, len(data))] = rng.choice([0x00, 0xFF, 0x7F, 0x80, rng.randrange(256)])
        elif kind == 2 and len(data) > 3:
            data = data[: rng.randrange(3, len(data))]
            self.fix_length(data)
        elif kind == 3:
            data += bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
            if rng.random() < 0.97:  # a wrong length desynchronises the H4 stream, which the host then closes
                self.fix_length(data)
        else:
            if len(data) > 3:
                data = data[: rng.randrange(3, len(data))]
                self.fix_length(data)
                if len(data) > 3:
                    data[rng.randrange(3, len(data))] ^= 0xFF
        self.stats["mutated"] += 1
        return bytes(data)

    @staticmethod
    def fix_length(data):
        if data[0] == 0x04 and len(data) >= 3:
            data[2] = min(255, len(data) - 3)
        elif data[0] == 0x02 and len(data) >= 5:
            data[3:5] = le16(len(data) - 5)

    def event(self, code, params, mutable=True):
        params = bytes(params)[:255]
        packet = bytes([0x04, code, len(params)]) + params
        if mutable and self.rng.random() < self.profile["mutate"]:
            packet = self.mutate(packet)
        self.write(packet)

    def meta(self, subevent, params, mutable=True):
        self.event(0x3E, bytes([subevent]) + bytes(params), mutable)

    def acl(self, handle, pb, data, mutable=True):
        packet = bytes([0x02]) + le16((handle & 0x0FFF) | (pb << 12)) + le16(len(data)) + bytes(data)
        if mutable and self.rng.random() < self.profile["mutate"]:
            packet = self.mutate(packet)
        self.write(packet, "acl_sent")

    def l2cap(self, handle, cid, payload, mutable=True):
        """An L2CAP PDU in ACL fragments of the buffer size the host reads (27 octets by default)."""
        pdu = le16(len(payload)) + le16(cid) + bytes(payload)
        size = 27 if self.rng.random() < 0.8 else self.rng.randint(1, 64)
        first = True
        for offset in range(0, len(pdu), size):
            self.acl(handle, 0b10 if first else 0b01, pdu[offset: offset + size], mutable)
            first = False

    def credits(self):
        if self.starving:
            return 0
        return self.profile["credits"]

    # MARK: input

    def pump(self):
        while True:
            if len(self.inbuf) < 1:
                return
            indicator = self.inbuf[0]
            if indicator == 0x01:
                if len(self.inbuf) < 4:
                    return
                total = 4 + self.inbuf[3]
                if len(self.inbuf) < total:
                    return
                packet = bytes(self.inbuf[:total])
                del self.inbuf[:total]
                self.log("<", packet)
                self.stats["commands_received"] += 1
                opcode = struct.unpack_from("<H", packet, 1)[0]
                self.command(opcode, packet[4:])
            elif indicator == 0x02:
                if len(self.inbuf) < 5:
                    return
                total = 5 + struct.unpack_from("<H", self.inbuf, 3)[0]
                if len(self.inbuf) < total:
                    return
                packet = bytes(self.inbuf[:total])
                del self.inbuf[:total]
                self.log("<", packet)
                self.stats["acl_received"] += 1
                header = struct.unpack_from("<H", packet, 1)[0]
                self.host_acl(header & 0x0FFF, (header >> 12) & 0x3, packet[5:])
            else:
                self.end("host sent H4 indicator 0x%02x" % indicator)
                return

    # MARK: commands

    def command(self, opcode, params):
        rng = self.rng
        if self.dead and not (opcode == 0x200E and not self.profile["dead_ignores_cancel"]):
            return
        if rng.random() < self.profile["ignore_command_p"]:
            return
        if opcode in STATUS_ANSWERED:
            status = 0x00
            if opcode == 0x0406 and len(params) >= 2 and struct.unpack_from("<H", params, 0)[0] & 0x0FFF not in self.connections:
                status = 0x02  # Unknown Connection Identifier: no Disconnection Complete will follow
            elif rng.random() < self.profile["fail_command_p"]:
                status = rng.choice([0x01, 0x0C, 0x12, 0x1F, rng.randrange(256)])
            self.event(0x0F, bytes([status, self.credits()]) + le16(opcode))
            if status == 0:
                self.after_status(opcode, params)
            return
        returned = self.return_parameters(opcode, params)
        if rng.random() < self.profile["fail_command_p"] and opcode != 0x0C03:
            returned = bytes([rng.choice([0x01, 0x0C, 0x12, 0x1F])]) + returned[1:]
        self.event(0x0E, bytes([self.credits()]) + le16(opcode) + returned)
        self.after_complete(opcode, params)

    def return_parameters(self, opcode, params):
        rng = self.rng
        profile = self.profile
        handle = params[:2] if len(params) >= 2 else b"\x00\x00"
        if opcode == 0x1001:
            return bytes([0, 0x0D]) + le16(1) + bytes([0x0D]) + le16(0x05F1) + le16(2)
        if opcode == 0x1002:
            mask = bytearray([0xFF] * 64)
            if not profile["supports_v2"]:
                mask[41] &= ~(1 << 5) & 0xFF
            return bytes([0]) + bytes(mask)
        if opcode == 0x1003:
            return bytes([0]) + bytes([0, 0, 0, 0, 0x60, 0, 0, 0])
        if opcode == 0x2002:
            return bytes([0]) + le16(profile["buffer_length"]) + bytes([min(255, profile["buffer_count"])])
        if opcode == 0x2060:
            return bytes([0]) + le16(profile["buffer_length"]) + bytes([min(255, profile["buffer_count"])]) + b"\x00\x00\x00"
        if opcode == 0x1005:
            return bytes([0]) + le16(1021) + bytes([0]) + le16(8) + le16(0)
        if opcode == 0x1009:
            return bytes([0]) + bytes(rng.randrange(256) for _ in range(6))
        if opcode == 0x2003:
            return bytes([0, 0x3F, 0, 0, 0, 0, 0, 0, 0])
        if opcode in (0x2018, 0x201C):
            return bytes([0]) + bytes(rng.randrange(256) for _ in range(8))
        if opcode == 0x2017:
            return bytes([0]) + bytes(rng.randrange(256) for _ in range(16))
        if opcode == 0x2007:
            return bytes([0, 0x04])
        if opcode == 0x200F:
            return bytes([0, 8])
        if opcode == 0x1405:
            return bytes([0]) + handle + bytes([0xD6])
        if opcode == 0x0C2D:
            return bytes([0]) + handle + bytes([0x04])
        if opcode in (0x201A, 0x201B, 0x2020, 0x2021, 0x2022):
            return bytes([0]) + handle
        if opcode == 0x2023:
            return bytes([0]) + le16(27) + le16(328)
        if opcode == 0x202F:
            return bytes([0]) + le16(251) + le16(2120) + le16(251) + le16(2120)
        if opcode == 0x2030:
            return bytes([0]) + handle + bytes([1, 1])
        length = RETURN_LENGTHS.get(opcode, 1)
        return bytes([0]) + bytes(length - 1)

    def after_complete(self, opcode, params):
        rng = self.rng
        if opcode == 0x200C and len(params) >= 1:  # LE Set Scan Enable
            was = self.scanning
            self.scanning = params[0] == 1
            if self.scanning and not was:
                self.after(rng.uniform(0.0, 0.05), self.advertise_report)
        elif opcode == 0x200A and len(params) >= 1:  # LE Set Advertising Enable
            was = self.advertising
            self.advertising = params[0] == 1
            if self.advertising and not was and self.role == "serve":
                self.after(rng.uniform(0.02, 0.6), self.central_connects)
        elif opcode == 0x200E and self.pending_connect is not None:  # LE Create Connection Cancel
            self.pending_connect = None
            self.after(rng.uniform(0.0, 0.05), lambda: self.meta(0x01, bytes([0x02]) + bytes(17)))
        elif opcode == 0x0C03:  # Reset
            self.scanning = False
            self.advertising = False

    def after_status(self, opcode, params):
        rng = self.rng
        if opcode == 0x200D and len(params) >= 12:  # LE Create Connection
            peer_type, peer = params[5], params[6:12]
            self.pending_connect = (peer_type, peer)
            if rng.random() < 0.1:
                return  # never connects: the host cancels after its own time limit
            self.after(rng.uniform(0.01, 0.3), self.connection_completes)
        elif opcode == 0x0406 and len(params) >= 3:  # Disconnect
            handle = struct.unpack_from("<H", params, 0)[0] & 0x0FFF
            if handle in self.connections and rng.random() >= self.profile["disconnect_never_completes"]:
                self.after(rng.uniform(0.0, 0.1), lambda: self.disconnected(handle, 0x16))
        elif opcode == 0x2013 and len(params) >= 14:  # LE Connection Update
            handle = struct.unpack_from("<H", params, 0)[0]
            self.after(rng.uniform(0.0, 0.2), lambda: self.meta(
                0x03, bytes([0]) + le16(handle) + params[2:4] + params[6:8] + params[8:10]))
        elif opcode == 0x2016 and len(params) >= 2:  # LE Read Remote Features
            self.after(rng.uniform(0.0, 0.1), lambda: self.meta(0x04, bytes([0]) + params[:2] + bytes([0x3F] + [0] * 7)))
        elif opcode == 0x2019 and len(params) >= 2:  # LE Enable Encryption
            status = rng.choice([0x00, 0x06, 0x3D])
            self.after(rng.uniform(0.0, 0.2), lambda: self.event(0x08, bytes([status]) + params[:2] + bytes([1 if status == 0 else 0])))
        # LE Set PHY and the P-256 commands: ignored, as Bumble's controller does.

    # MARK: links

    def new_handle(self):
        rng = self.rng
        for _ in range(100):
            handle = rng.choice([0x0000, 0x0001, 0x0040, rng.randrange(0x0F00)])
            if handle not in self.connections:
                return handle
        return rng.randrange(0x0F00)

    def connection_complete(self, handle, role, peer_type, peer, status=0):
        params = bytes([status]) + le16(handle) + bytes([role, peer_type & 0x03]) + bytes(peer)[:6].ljust(6, b"\0")
        params += le16(0x0018) + le16(0) + le16(0x01F4) + bytes([0])
        if status == 0:
            self.connections[handle] = {"role": role, "sent_unacked": 0, "rx": None, "opened": self.now()}
        self.meta(0x01, params)
        if status == 0:
            if role == 1:
                self.after(self.rng.uniform(0.0, 0.2), lambda: self.client_step(handle))
            if self.profile["drop_link_after"] is not None:
                self.after(self.profile["drop_link_after"], lambda: self.disconnected(handle, 0x08))

    def connection_completes(self):
        if self.pending_connect is None:
            return
        peer_type, peer = self.pending_connect
        self.pending_connect = None
        if self.profile["connect_fails"]:
            self.connection_complete(0, 0, peer_type, peer, status=self.rng.choice([0x3E, 0x08, 0x02]))
            return
        self.connection_complete(self.new_handle(), 0, peer_type, peer)

    def central_connects(self):
        if not self.advertising:
            return
        self.advertising = False
        self.connection_complete(self.new_handle(), 1, 1, bytes(self.rng.randrange(256) for _ in range(6)))

    def disconnected(self, handle, reason):
        if handle not in self.connections:
            return
        del self.connections[handle]
        self.event(0x05, bytes([0]) + le16(handle) + bytes([reason]))

    def host_acl(self, handle, pb, data):
        rng = self.rng
        connection = self.connections.get(handle)
        if rng.random() < self.profile["ack_acl"] and not self.dead:
            # Number Of Completed Packets for it; now and then for more packets than sent.
            count = 1 if rng.random() < 0.97 else rng.randint(2, 300)
            self.after(rng.uniform(0.0, 0.02), lambda: self.event(0x13, bytes([1]) + le16(handle) + le16(count)))
        if connection is None:
            return
        if pb in (0b00, 0b10):
            connection["rx"] = bytearray(data)
        elif connection["rx"] is not None:
            connection["rx"] += data
        rx = connection["rx"]
        if rx is None or len(rx) < 4:
            return
        length, cid = struct.unpack_from("<HH", rx, 0)
        if len(rx) < 4 + length:
            return
        payload = bytes(rx[4: 4 + length])
        connection["rx"] = None
        if cid == ATT_CID:
            if connection["role"] == 0:
                self.server_answers(handle, payload)
            else:
                self.client_hears(handle, payload)
        elif cid == SIGNALING_CID:
            self.signaling(handle, payload)
        elif cid == SMP_CID and payload:
            if payload[0] in (0x01, 0x0B):  # Pairing Request / Security Request
                self.after(rng.uniform(0.0, 0.05), lambda: self.l2cap(handle, SMP_CID, bytes([0x05, 0x05])))

    def signaling(self, handle, payload):
        if len(payload) < 4:
            return
        code, identifier = payload[0], payload[1]
        if code == 0x12:  # Connection Parameter Update Request: accepted
            self.l2cap(handle, SIGNALING_CID, bytes([0x13, identifier]) + le16(2) + le16(0))
        elif code in (0x14, 0x16, 0x17):  # LE credit based connection request...: refused
            self.l2cap(handle, SIGNALING_CID, bytes([0x15, identifier]) + le16(10) + le16(0) * 4 + le16(0x0002))
        elif code % 2 == 0 and code not in (0x06,):
            self.l2cap(handle, SIGNALING_CID, bytes([0x01, identifier]) + le16(2) + le16(0))

    # MARK: the GATT server played for explore (peer role 0: the host is central)

    SERVICES = [(0x0001, 0x0005, 0x1800), (0x0006, 0x0009, 0x180F)]
    CHARACTERISTICS = [(0x0002, 0x02, 0x0003, 0x2A00), (0x0004, 0x02, 0x0005, 0x2A01), (0x0007, 0x12, 0x0008, 0x2A19)]

    def att_error(self, handle, request, attribute, code):
        self.l2cap(handle, ATT_CID, bytes([0x01, request]) + le16(attribute) + bytes([code]))

    def server_answers(self, handle, pdu):
        rng = self.rng
        if not pdu:
            return
        opcode = pdu[0]
        if rng.random() < 0.03:
            return  # never answered: the host's ATT timeout
        if rng.random() < 0.05:
            self.l2cap(handle, ATT_CID, bytes(rng.randrange(256) for _ in range(rng.randint(0, 30))))
            return
        start = struct.unpack_from("<H", pdu, 1)[0] if len(pdu) >= 3 else 0
        end = struct.unpack_from("<H", pdu, 3)[0] if len(pdu) >= 5 else 0
        if opcode in (0x04, 0x06, 0x08, 0x10) and rng.random() < self.profile["gatt_lies"]:
            self.stats["injected"]["gatt_lie"] = self.stats["injected"].get("gatt_lie", 0) + 1
            return self.gatt_lie(handle, opcode, start, end)
        if opcode == 0x02:
            self.l2cap(handle, ATT_CID, bytes([0x03]) + le16(rng.choice([23, 23, 185, 517, 0, 1, 0xFFFF])))
        elif opcode == 0x10:
            found = [s for s in self.SERVICES if start <= s[0] <= end]
            if not found:
                return self.att_error(handle, opcode, start, 0x0A)
            body = b"".join(le16(a) + le16(b) + le16(u) for a, b, u in found)
            self.l2cap(handle, ATT_CID, bytes([0x11, 6]) + body)
        elif opcode == 0x08:
            found = [c for c in self.CHARACTERISTICS if start <= c[0] <= end]
            if not found:
                return self.att_error(handle, opcode, start, 0x0A)
            body = b"".join(le16(d) + bytes([p]) + le16(v) + le16(u) for d, p, v, u in found)
            self.l2cap(handle, ATT_CID, bytes([0x09, 7]) + body)
        elif opcode == 0x04:
            if start <= 9 <= end:
                self.l2cap(handle, ATT_CID, bytes([0x05, 0x01]) + le16(9) + le16(0x2902))
            else:
                self.att_error(handle, opcode, start, 0x0A)
        elif opcode == 0x0A:
            values = {3: self.name, 5: b"\x00\x00", 8: b"\x64", 9: b"\x00\x00"}
            if start in values:
                self.l2cap(handle, ATT_CID, bytes([0x0B]) + values[start])
            else:
                self.att_error(handle, opcode, start, 0x01)
        elif opcode == 0x0C:
            self.l2cap(handle, ATT_CID, bytes([0x0D]))
        elif opcode == 0x12:
            self.l2cap(handle, ATT_CID, bytes([0x13]))
        elif opcode == 0x1E:
            pass  # confirmation
        elif opcode in (0x52, 0xD2):
            pass  # commands
        else:
            self.att_error(handle, opcode, 0, 0x06)
        if rng.random() < 0.1:
            # An unsolicited notification or indication, for a handle that may not exist.
            self.l2cap(handle, ATT_CID, bytes([rng.choice([0x1B, 0x1D])]) + le16(rng.choice([8, 0, 0xFFFF])) + b"\x2A")

    def gatt_lie(self, handle, opcode, start, end):
        rng = self.rng
        a = rng.choice([1, start, max(0, start - 1), end, 0xFFFF, 0])
        b = rng.choice([a, max(0, a - 1), 0xFFFF, end, 0])
        if opcode == 0x10:  # Read By Group Type
            entries = [(a, b, 0x1800), (rng.choice([a, b, 2]), rng.choice([1, b, 0xFFFF]), 0x180F)]
            size = rng.choice([6, 6, 6, 20, 0, 4, 7])
            body = b"".join(le16(x) + le16(y) + le16(u) for x, y, u in entries[: rng.randint(1, 2)])
            self.l2cap(handle, ATT_CID, bytes([0x11, size]) + body)
        elif opcode == 0x08:  # Read By Type (characteristics)
            size = rng.choice([7, 7, 21, 0, 2, 8])
            body = le16(a) + bytes([rng.randrange(256)]) + le16(b) + le16(0x2A19)
            if rng.random() < 0.5:
                body += le16(rng.choice([a, start])) + b"\x02" + le16(0) + le16(0x2A00)
            self.l2cap(handle, ATT_CID, bytes([0x09, size]) + body)
        elif opcode == 0x04:  # Find Information
            fmt = rng.choice([1, 2, 0, 3])
            entry = le16(rng.choice([a, start, 0xFFFF])) + (le16(0x2902) if fmt != 2 else bytes(16))
            self.l2cap(handle, ATT_CID, bytes([0x05, fmt]) + entry * rng.randint(1, 3))
        else:  # Find By Type Value
            self.l2cap(handle, ATT_CID, bytes([0x07]) + le16(a) + le16(b))

    # MARK: the GATT client played for serve (peer role 1: the host is peripheral)

    def client_requests(self):
        rng = self.rng
        handle = rng.choice([0x0000, 0x0001, 0x0003, 0x0005, 0x0010, 0xFFFF, rng.randrange(1, 0x30)])
        return rng.choice([
            bytes([0x02]) + le16(rng.choice([23, 247, 517, 0, 22, 0xFFFF])),
            bytes([0x10]) + le16(1) + le16(0xFFFF) + le16(0x2800),
            bytes([0x08]) + le16(1) + le16(0xFFFF) + le16(0x2803),
            bytes([0x04]) + le16(1) + le16(0xFFFF),
            bytes([0x06]) + le16(1) + le16(0xFFFF) + le16(0x2800) + le16(0x180F),
            bytes([0x0A]) + le16(handle),
            bytes([0x0C]) + le16(handle) + le16(rng.randrange(600)),
            bytes([0x0E]) + le16(handle) + le16(handle + 1),
            bytes([0x12]) + le16(handle) + bytes(rng.randrange(256) for _ in range(rng.randint(0, 40))),
            bytes([0x52]) + le16(handle) + b"\x01\x00",
            bytes([0x16]) + le16(handle) + le16(0) + b"abc",
            bytes([0x18, rng.choice([0, 1, 2])]),
            bytes([0x12]) + le16(handle + 1) + b"\x01\x00",  # a CCCD, perhaps
            bytes([rng.randrange(256)]) + bytes(rng.randrange(256) for _ in range(rng.randint(0, 20))),
            b"",
        ])

    def client_step(self, handle):
        if handle not in self.connections or self.closed:
            return
        rng = self.rng
        self.l2cap(handle, ATT_CID, self.client_requests())
        if rng.random() < 0.05:
            self.l2cap(handle, SMP_CID, bytes([0x01, 0x03, 0x00, 0x01, 0x10, 0x07, 0x07]))
        if rng.random() < 0.05:
            self.l2cap(handle, SIGNALING_CID, bytes([rng.randrange(256), rng.randrange(256)]) + le16(4) + bytes(4))
        if rng.random() < 0.03 and handle in self.connections:
            self.after(rng.uniform(0.0, 0.1), lambda: self.disconnected(handle, 0x13))
            return
        self.after(rng.uniform(0.005, 0.15), lambda: self.client_step(handle))

    def client_hears(self, handle, pdu):
        if pdu and pdu[0] == 0x1D:  # indication: confirm (mostly)
            if self.rng.random() < 0.9:
                self.l2cap(handle, ATT_CID, bytes([0x1E]))
        elif pdu and pdu[0] == 0x02:  # the host's Exchange MTU
            self.l2cap(handle, ATT_CID, bytes([0x03]) + le16(self.rng.choice([23, 247])))

    # MARK: advertising reports

    def advertise_report(self):
        if not self.scanning or self.closed:
            return
        rng = self.rng
        reports = []
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            if self.role == "explore" and rng.random() < 0.6:
                address, address_type = self.target_address, 1
                data = bytes([2, 0x01, 0x06, len(self.name) + 1, 0x09]) + self.name
                event_type = rng.choice([0x00, 0x00, 0x04])
            else:
                address, address_type = rng.choice(self.devices), rng.choice([0, 1])
                name = b"dev-%d" % rng.randrange(100)
                data = rng.choice([
                    bytes([2, 0x01, 0x06, len(name) + 1, 0x09]) + name,
                    bytes([3, 0x03, 0x0F, 0x18]),
                    bytes([5, 0xFF, 0x4C, 0x00, 0x02, 0x15]),
                    bytes(rng.randrange(256) for _ in range(rng.randint(0, 31))),
                    bytes([0x1F, 0x09]) + b"x" * 3,  # a structure longer than the data
                ])
                event_type = rng.choice([0x00, 0x02, 0x03, 0x04, rng.randrange(256)])
            data = data[:31]
            reports.append(bytes([event_type, address_type]) + address + bytes([len(data)]) + data + bytes([rng.randrange(256)]))
        self.meta(0x02, bytes([len(reports)]) + b"".join(reports))
        self.after(rng.uniform(0.01, 0.12), self.advertise_report)

    # MARK: injections

    def inject(self):
        if self.closed:
            return
        rng = self.rng
        kinds = [
            ("random_event", 6), ("random_meta", 6), ("mutated_event", 8), ("cc_unsent", 6), ("cs_unsent", 3),
            ("nocp_unknown", 4), ("nocp_too_many", 4), ("acl_unknown_handle", 4), ("fragment_never_completes", 4),
            ("orphan_continuation", 3), ("l2cap_garbage", 5), ("connection_complete_bogus", 3),
            ("disconnection_bogus", 3), ("truncated_packet", 1), ("hardware_error", 1), ("many_reports", 2),
            ("encryption_change_bogus", 2), ("ltk_request", 2), ("parameter_request", 2), ("data_length_phy", 2),
        ]
        total = sum(weight for _, weight in kinds)
        pick = rng.uniform(0, total)
        for kind, weight in kinds:
            pick -= weight
            if pick <= 0:
                break
        self.stats["injected"][kind] = self.stats["injected"].get(kind, 0) + 1
        handles = list(self.connections) or [0x0001]
        known = rng.choice(handles)
        unknown = rng.choice([0x0EFF, 0x0FFF, 0x0123, rng.randrange(0x1000)])
        if kind == "random_event":
            self.event(rng.randrange(256), bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 2, 5, rng.randrange(256)]))), False)
        elif kind == "random_meta":
            self.meta(rng.randrange(0x30), bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 10, 18, rng.randrange(254)]))), False)
        elif kind == "mutated_event":
            catalog = [
                bytes([0x04, 0x3E, 19, 0x01, 0x00]) + le16(known) + bytes([0, 1]) + bytes(6) + le16(24) + le16(0) + le16(500) + b"\0",
                bytes([0x04, 0x13, 5, 1]) + le16(known) + le16(1),
                bytes([0x04, 0x05, 4, 0]) + le16(known) + b"\x13",
                bytes([0x04, 0x0E, 4, 1]) + le16(rng.choice(KNOWN_OPCODES)) + b"\0",
                bytes([0x04, 0x0F, 4, 0, 1]) + le16(rng.choice(KNOWN_OPCODES)),
                bytes([0x04, 0x3E, 12, 0x02, 1, 0, 0]) + bytes(6) + b"\x00\xC5",
                bytes([0x04, 0x08, 4, 0]) + le16(known) + b"\x01",
            ]
            self.write(self.mutate(rng.choice(catalog)))
        elif kind == "cc_unsent":
            opcode = rng.choice(KNOWN_OPCODES + [0x0000, rng.randrange(0x10000)])
            credits = rng.choice([0, 0, 0, 1, 2, 255])
            length = rng.choice([0, 1, RETURN_LENGTHS.get(opcode, 1), rng.randrange(20)])
            self.event(0x0E, bytes([credits]) + le16(opcode) + bytes(rng.randrange(256) for _ in range(length)), False)
        elif kind == "cs_unsent":
            self.event(0x0F, bytes([rng.choice([0, 0x0C]), rng.choice([0, 0, 1, 255])]) + le16(rng.choice(KNOWN_OPCODES)), False)
        elif kind == "nocp_unknown":
            count = rng.randint(1, 4)
            body = b"".join(le16(rng.choice([unknown, known])) + le16(rng.choice([1, 0xFFFF, rng.randrange(0x10000)])) for _ in range(count))
            self.event(0x13, bytes([rng.choice([count, count + 1, 0, 255])]) + body, False)
        elif kind == "nocp_too_many":
            self.event(0x13, bytes([1]) + le16(known) + le16(rng.choice([2, 100, 0xFFFF])), False)
        elif kind == "acl_unknown_handle":
            self.acl(unknown, rng.choice([0, 1, 2, 3]), bytes(rng.randrange(256) for _ in range(rng.randrange(40))), False)
        elif kind == "fragment_never_completes":
            claimed = rng.choice([100, 512, 0xFFFF, 65535])
            self.acl(known, 0b10, le16(claimed) + le16(rng.choice([ATT_CID, SIGNALING_CID, SMP_CID, 0x0040])) + b"\x0A\x01", False)
        elif kind == "orphan_continuation":
            self.acl(known, 0b01, bytes(rng.randrange(256) for _ in range(rng.randint(0, 27))), False)
        elif kind == "l2cap_garbage":
            cid = rng.choice([ATT_CID, ATT_CID, SIGNALING_CID, SMP_CID, 0x0040, rng.randrange(0x10000)])
            self.l2cap(known, cid, bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 3, 23, rng.randrange(300)]))), False)
        elif kind == "connection_complete_bogus":
            handle = rng.choice([known, unknown])
            self.connection_complete(handle, rng.choice([0, 1, 7]), rng.randrange(4), bytes(rng.randrange(256) for _ in range(6)),
                                     status=rng.choice([0, 0, 0x3E, 0x02]))
        elif kind == "disconnection_bogus":
            self.event(0x05, bytes([rng.choice([0, 0, 0x0C])]) + le16(rng.choice([known, unknown])) + bytes([rng.randrange(256)]), False)
            self.connections.pop(known, None) if rng.random() < 0.5 else None
        elif kind == "truncated_packet":
            if rng.random() < 0.5:
                self.write(bytes([0x04, 0x0E, 200, 1, 0x03]))
            else:
                self.write(bytes([0x02]) + le16(known) + le16(300) + b"\x01\x02")
        elif kind == "hardware_error":
            self.event(rng.choice([0x10, 0x1A]), bytes([rng.randrange(256)]), False)
        elif kind == "many_reports":
            report = bytes([0, 0]) + bytes(6) + bytes([0]) + b"\xC0"
            self.meta(0x02, bytes([rng.choice([25, 0, 255])]) + report * 25, False)
        elif kind == "encryption_change_bogus":
            self.event(rng.choice([0x08, 0x30, 0x59]), bytes([rng.choice([0, 6])]) + le16(rng.choice([known, unknown])) + bytes([rng.randrange(3)]), False)
        elif kind == "ltk_request":
            self.meta(0x05, le16(rng.choice([known, unknown])) + bytes(8) + le16(0), False)
        elif kind == "parameter_request":
            self.meta(0x06, le16(rng.choice([known, unknown])) + le16(6) + le16(rng.choice([6, 0, 0xFFFF])) + le16(0) + le16(rng.choice([10, 0])), False)
        elif kind == "data_length_phy":
            if rng.random() < 0.5:
                self.meta(0x07, le16(known) + le16(rng.choice([27, 251, 0, 0xFFFF])) + le16(328) + le16(251) + le16(2120), False)
            else:
                self.meta(0x0C, bytes([0]) + le16(known) + bytes([rng.randrange(4), rng.randrange(4)]), False)

    def schedule_injections(self):
        rate = self.profile["inject_per_second"]
        if rate <= 0 or self.closed:
            return
        self.inject()
        self.after(self.rng.expovariate(rate), self.schedule_injections)

    def begin_starvation(self):
        # The reproducer first: Command Complete for LE Read Buffer Size [v2], never sent, no credit, no status.
        self.starving = True
        self.stats["injected"]["starvation"] = 1
        self.write(bytes.fromhex("040E03006020"))

    def go_dead(self):
        self.dead = True
        self.stats["injected"]["dead"] = 1

    def close_mid_stream(self):
        self.stats["injected"]["close"] = 1
        if self.rng.random() < 0.5:
            self.write(bytes([0x04, 0x3E, 40, 0x02, 1]))  # half an event first
        self.end("closed mid-stream on purpose")

    def garbage_indicator(self):
        self.stats["injected"]["garbage_indicator"] = 1
        self.write(bytes([self.rng.choice([0x00, 0x05, 0x07, 0xFF, 0x55])]) + bytes(self.rng.randrange(256) for _ in range(8)))

    # MARK: session

    def end(self, why):
        if self.closed:
            return
        self.closed = True
        self.stats["end"] = why
        try:
            self.sock.close()
        except OSError:
            pass

    def serve(self, listener, lifetime):
        listener.settimeout(lifetime)
        try:
            self.sock, _ = listener.accept()
        except socket.timeout:
            self.stats["end"] = "no host connected"
            return
        listener.close()
        self.sock.setblocking(False)
        self.start = time.monotonic()
        profile = self.profile
        for key, action in (("starve_at", self.begin_starvation), ("dead_at", self.go_dead),
                            ("close_at", self.close_mid_stream), ("garbage_at", self.garbage_indicator)):
            if profile[key] is not None:
                self.after(profile[key], action)
        self.after(self.rng.uniform(0.0, 0.5), self.schedule_injections)
        while not self.closed:
            if self.now() > lifetime:
                self.end("lifetime over")
                break
            timeout = 0.2
            if self.timers:
                timeout = max(0.0, min(timeout, self.timers[0][0] - self.now()))
            try:
                readable, _, _ = select.select([self.sock], [], [], timeout)
            except (OSError, ValueError):
                self.end("select failed")
                break
            if readable:
                try:
                    data = self.sock.recv(65536)
                except BlockingIOError:
                    data = None
                except OSError:
                    data = b""
                if data == b"":
                    self.end("host closed")
                    break
                if data:
                    self.inbuf += data
                    self.pump()
            while self.timers and self.timers[0][0] <= self.now() and not self.closed:
                _, _, action = heapq.heappop(self.timers)
                action()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--unix", metavar="PATH", help="listen on this UNIX socket path")
    where.add_argument("--tcp", action="store_true", help="listen on 127.0.0.1, port 0; prints the port")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--role", choices=["scan", "serve", "explore"], required=True)
    parser.add_argument("--name", default="Hostile", help="the advertised name of the explore target")
    parser.add_argument("--lifetime", type=float, default=120.0, help="seconds before giving up on the session")
    parser.add_argument("--stats", help="write the session's counts here (JSON)")
    parser.add_argument("--trace", help="write every packet here")
    parser.add_argument("--set", action="append", metavar="KEY=JSON",
                        help="override one key of the hostility profile (repeatable): --set starve_at=1.0")
    args = parser.parse_args()
    controller = Controller(args)
    if args.unix:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(args.unix)
    else:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    if args.tcp:
        print(listener.getsockname()[1], flush=True)
    else:
        print("ready", flush=True)
    try:
        controller.serve(listener, args.lifetime)
    finally:
        if args.unix:
            try:
                os.unlink(args.unix)
            except OSError:
                pass
        if controller.trace:
            controller.trace.close()
        if args.stats:
            with open(args.stats, "w") as out:
                json.dump(controller.stats, out)


if __name__ == "__main__":
    main()
