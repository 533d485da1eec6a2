#!/usr/bin/env python3
"""The `blue bench notify` scenario between two Bumble hosts on Bumble's two stock controllers (the baseline).

    .venv/bin/python Scripts/bench_bumble.py --size 244 --count 2000 [--mtu 247] [--json]
    .venv/bin/python Scripts/bench_bumble.py --controllers tcp-client:127.0.0.1:PORT ...   # on our air (blue air --h4-tcp)

Starts `python -m bumble.apps.controllers tcp-server:127.0.0.1:P1 tcp-server:127.0.0.1:P2` in a subprocess (two
controllers on one link), then in this process two Bumble hosts (bumble.device.Device) on one asyncio loop: the
peripheral serves one characteristic (notify) and advertises; the central connects (7.5 ms asked; Bumble's
controller has no radio timing anyway), exchanges MTU, discovers and subscribes. Measured (wall clock, from the
first notification sent to the last received): the peripheral sends --count notifications of --size octets
with Device.notify_subscriber, paced like ours: at most --queue-limit ACL packets pending in the host's LE ACL
queue (Bumble's DataPacketQueue), waiting for its 'flow' event when full. The central counts them and checks the
sequence number in the first 4 octets.

(`bumble-bench` would be the natural tool, but its GATT send mode crashes in 0.0.236.)

With --controllers SPEC both hosts open SPEC instead (each connection to `blue air --h4-tcp` is a controller of its
own), so Bumble's host runs on the same controllers as ours.

Prints the same fields as `blue bench notify --json` (stack "bumble"), and this process's CPU over the span (both
hosts: getrusage user and system, context switches). Exit 1 on a setup failure.
"""
import argparse
import asyncio
import json
import os
import resource
import socket
import subprocess
import sys
import time

from bumble.core import UUID, AdvertisingData
from bumble.device import ConnectionParametersPreferences, Device, Peer
from bumble.gatt import Characteristic, Service
from bumble.hci import Address, Phy
from bumble.transport import open_transport

SERVICE = UUID("BE00")
CHARACTERISTIC = UUID("BE01")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log(message):
    print(message, file=sys.stderr, flush=True)


async def open_spec_when_listening(spec, deadline):
    while True:
        try:
            return await open_transport(spec)
        except Exception:  # noqa: BLE001 - the controller process may not listen yet
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


def value_of(sequence, size):
    head = (sequence & 0xFFFFFFFF).to_bytes(4, "little")[: min(4, size)]
    return head + b"\x5a" * (size - len(head))


def sequence_of(value):
    return int.from_bytes(bytes(value[:4]), "little")


async def run(args):
    if args.controllers:
        deadline = time.monotonic() + 15
        return await scenario(args, lambda: open_spec_when_listening(args.controllers, deadline))
    ports = (free_port(), free_port())
    controllers = subprocess.Popen(
        [sys.executable, "-m", "bumble.apps.controllers", f"tcp-server:127.0.0.1:{ports[0]}",
         f"tcp-server:127.0.0.1:{ports[1]}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 15
        opened = iter(ports)
        return await scenario(args, lambda: open_spec_when_listening(f"tcp-client:127.0.0.1:{next(opened)}", deadline))
    finally:
        controllers.terminate()
        try:
            controllers.wait(5)
        except subprocess.TimeoutExpired:
            controllers.kill()


def usage():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime, ru.ru_stime, ru.ru_nvcsw + ru.ru_nivcsw


async def scenario(args, open_controller):
    peripheral_transport = await open_controller()
    central_transport = await open_controller()
    # Bumble's controllers all have the public address 0: the hosts use distinct random static addresses.
    peripheral = Device.with_hci("bench-peripheral", Address("F0:0B:E0:00:00:01"),
                                 peripheral_transport.source, peripheral_transport.sink)
    central = Device.with_hci("bench-central", Address("F0:0B:E0:00:00:02"),
                              central_transport.source, central_transport.sink)
    characteristic = Characteristic(CHARACTERISTIC, Characteristic.Properties.READ | Characteristic.Properties.NOTIFY,
                                    Characteristic.READABLE, b"\x00")
    peripheral.add_services([Service(SERVICE, [characteristic])])
    peripheral.advertising_data = bytes(AdvertisingData([
        (AdvertisingData.FLAGS, bytes([0x06])), (AdvertisingData.COMPLETE_LOCAL_NAME, b"bench")]))
    await asyncio.wait_for(peripheral.power_on(), 10)
    await asyncio.wait_for(central.power_on(), 10)

    subscribed = asyncio.get_running_loop().create_future()
    peripheral_connections = []
    peripheral.on("connection", peripheral_connections.append)

    def on_subscription(connection, notify_enabled, indicate_enabled):
        if notify_enabled and not subscribed.done():
            subscribed.set_result(connection)

    characteristic.on("subscription", on_subscription)
    await peripheral.start_advertising(auto_restart=False, advertising_interval_min=20, advertising_interval_max=20)

    preferences = ConnectionParametersPreferences(connection_interval_min=7.5, connection_interval_max=7.5,
                                                  supervision_timeout=5000)
    connection = await asyncio.wait_for(
        central.connect(Address("F0:0B:E0:00:00:01"), connection_parameters_preferences={Phy.LE_1M: preferences}), 10)
    peer = Peer(connection)
    mtu = await asyncio.wait_for(peer.request_mtu(args.mtu), 10)
    await asyncio.wait_for(peer.discover_services([SERVICE]), 10)
    await asyncio.wait_for(peer.discover_characteristics(), 10)
    remote = peer.get_characteristics_by_uuid(CHARACTERISTIC)
    if not remote:
        raise RuntimeError("characteristic not discovered")

    count, size = args.count, args.size
    state = {"received": 0, "outOfOrder": 0, "last": None}
    done = asyncio.get_running_loop().create_future()
    mask = 0xFFFFFFFF if size >= 4 else (1 << (8 * size)) - 1

    def on_notification(value):
        if sequence_of(value) != state["received"] & mask:
            state["outOfOrder"] += 1
        state["received"] += 1
        if state["received"] >= count and not done.done():
            state["last"] = time.perf_counter()
            done.set_result(True)

    await asyncio.wait_for(peer.subscribe(remote[0], on_notification), 10)
    server_connection = await asyncio.wait_for(subscribed, 10)
    if args.size > mtu - 3:
        raise RuntimeError(f"--size {args.size} does not fit ATT_MTU {mtu}")

    queue = peripheral.host.get_data_packet_queue(server_connection.handle)
    flow = asyncio.Event()
    queue.on("flow", flow.set)
    sent = 0
    next_progress = time.monotonic() + 1
    start = time.perf_counter()
    start_usage = usage()
    while sent < count:
        while queue.pending >= args.queue_limit:
            flow.clear()
            await flow.wait()
        await peripheral.notify_subscriber(server_connection, characteristic, value_of(sent, size))
        sent += 1
        if not args.quiet and time.monotonic() >= next_progress:
            log(f"bumble notify: {sent} sent, {state['received']} received of {count}")
            next_progress = time.monotonic() + 1
    try:
        await asyncio.wait_for(done, max(10.0, count / 100))
    except asyncio.TimeoutError:
        pass
    end = state["last"] or time.perf_counter()
    end_usage = usage()
    cpu_user, cpu_system = end_usage[0] - start_usage[0], end_usage[1] - start_usage[1]
    seconds = end - start
    received = state["received"]
    data_length = 27  # Bumble's host does not ask for a longer data length (Bumble's controller refuses it anyway)
    rate = received / seconds if seconds > 0 else 0.0
    return {
        "benchmark": "notify", "stack": "bumble", "transport": args.controllers or "bumble.apps.controllers (two stock controllers, TCP)",
        "loop": "asyncio, one thread (controllers in a second process)", "size": size, "count": count, "mtu": mtu,
        "dataLength": data_length, "sent": sent, "received": received, "lost": max(0, sent - received),
        "outOfOrder": state["outOfOrder"], "seconds": round(seconds, 6), "airSeconds": 0.0,
        "packetsPerSecond": round(rate, 3), "bytesPerSecond": round(rate * size, 3),
        "kilobytesPerSecond": round(rate * size / 1000, 3), "airPacketsPerSecond": 0.0,
        "cpuUserSeconds": round(cpu_user, 6), "cpuSystemSeconds": round(cpu_system, 6),
        "cpuUserMicrosecondsPerValue": round(cpu_user * 1e6 / count, 3),
        "cpuSystemMicrosecondsPerValue": round(cpu_system * 1e6 / count, 3),
        "contextSwitches": end_usage[2] - start_usage[2],
        "peakResidentBytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=244)
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--mtu", type=int, default=247)
    parser.add_argument("--queue-limit", type=int, default=64,
                        help="ACL packets pending in the host queue before waiting (ours: sendQueueLimit 64)")
    parser.add_argument("--controllers", metavar="SPEC",
                        help="open both hosts' controllers with this Bumble transport (tcp-client:127.0.0.1:PORT of "
                             "blue air --h4-tcp) instead of starting Bumble's")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    if not 4 <= args.size <= args.mtu - 3 or args.count < 1:
        print(f"bench_bumble: --size must be 4...{args.mtu - 3} and --count at least 1", file=sys.stderr)
        sys.exit(64)
    try:
        result = asyncio.run(asyncio.wait_for(run(args), 60 + args.count / 50))
    except Exception as error:  # noqa: BLE001 - reported, exit 1
        print(f"bench_bumble: {type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(1)
    if args.json:
        print(json.dumps(result))
    else:
        print(f"notify (bumble): {result['received']} of {result['sent']} packets of {result['size']} octets in "
              f"{result['seconds']:.3f} s (wall clock)\n  {round(result['packetsPerSecond'])} packets/s, "
              f"{round(result['kilobytesPerSecond'])} kB/s; lost {result['lost']}\n  ATT_MTU {result['mtu']}, "
              f"LE data length {result['dataLength']}")
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
