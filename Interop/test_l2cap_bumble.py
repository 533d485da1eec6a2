"""Issue 29 item 5: `blue l2cap listen|connect` against Bumble's LE credit-based channels (code we did not write),
both on the shared air (`blue air --h4-tcp`). Bumble's server takes 100 kB from `blue l2cap connect` and answers
with their digest and 30 kB of its own before it closes the channel; Bumble's client, with a 512-octet MTU (so we
must cut our SDUs to its size), takes 50 kB from `blue l2cap listen` and answers with a line before closing. The
bytes on both sides are compared whole, and both captures decode in tshark without malformed packets."""
import asyncio
import hashlib
import os

from air_support import BumbleHost, Hub, free_ports, tshark_count, tshark_malformed
from conftest import BLUE

from bumble import l2cap
from bumble.core import AdvertisingData
from bumble.hci import Address

BUMBLE_ADDRESS = "F0:0C:B1:00:01:01"
TIMEOUT = 60


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, TIMEOUT))


async def blue(hub, arguments, data, stderr_path=None, feed_after=None):
    """Runs `blue ARGUMENTS` on the hub with DATA on standard input; returns (code, stdout, stderr). With
    `stderr_path`, standard error goes to that file as it is written (kept when the test gives up on the program);
    with `feed_after` (a future), DATA is written only once it is done."""
    errors = open(stderr_path, "wb") if stderr_path else asyncio.subprocess.PIPE
    process = await asyncio.create_subprocess_exec(
        BLUE, *arguments, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=errors, env={**os.environ, "OCB_AIR_SOCKET": hub.socket})
    try:
        if feed_after is not None:
            await feed_after
        out, err = await process.communicate(data)
    except asyncio.CancelledError:
        process.kill()
        await process.wait()
        raise
    finally:
        if stderr_path:
            errors.close()
    if stderr_path:
        with open(stderr_path, "rb") as f:
            err = f.read()
    return process.returncode, out, err.decode(errors="replace")


def test_connect_to_a_bumble_channel_server(tmp_path):
    hub = Hub(tmp_path, free_ports(1)).start()
    try:
        sent = os.urandom(100_000)
        reply = os.urandom(30_000)
        received = bytearray()

        async def scenario():
            async with BumbleHost(hub.tcp_ports[0], "server", BUMBLE_ADDRESS) as device:
                finished = asyncio.get_running_loop().create_future()

                def on_channel(channel):
                    def on_sdu(sdu):
                        received.extend(sdu)
                        if len(received) == len(sent) and not finished.done():
                            finished.set_result(channel)
                    channel.sink = on_sdu

                device.create_l2cap_server(spec=l2cap.LeCreditBasedChannelSpec(psm=0x0080, mtu=2048), handler=on_channel)
                await device.start_advertising(advertising_data=bytes(AdvertisingData([
                    (AdvertisingData.FLAGS, bytes([0x06])),
                    (AdvertisingData.COMPLETE_LOCAL_NAME, b"Bumble-CoC")])))

                async def answer():
                    channel = await finished
                    answer_bytes = hashlib.sha256(bytes(received)).digest() + reply
                    for offset in range(0, len(answer_bytes), 1000):
                        channel.write(answer_bytes[offset:offset + 1000])
                    await channel.drain()
                    await channel.disconnect()

                answering = asyncio.create_task(answer())
                code, out, err = await blue(hub, ["l2cap", "connect", "Bumble-CoC", "0x0080", "--stay", "-v"], sent)
                if code == 0:
                    await asyncio.wait_for(answering, 10)
                answering.cancel()
                return code, out, err

        code, out, err = run(scenario())
        assert code == 0, err
        assert bytes(received) == sent
        assert out == hashlib.sha256(sent).digest() + reply, f"{len(out)} bytes out; {err}"
        assert "sent 100000 bytes" in err and "received 30032 bytes" in err, err
        assert "closed by the peer" in err, err
    finally:
        hub.interrupt()
        hub.kill()
    for capture in hub.snoop_files():
        assert tshark_malformed(capture) == "", capture
    assert any(tshark_count(capture, "btl2cap.le_psm == 0x0080") > 0 for capture in hub.snoop_files())


def test_a_bumble_client_opens_a_channel_to_blue_l2cap_listen(tmp_path):
    hub = Hub(tmp_path, free_ports(1)).start()
    try:
        sent = os.urandom(50_000)
        received = bytearray()
        sdu_sizes = []

        async def scenario():
            # Standard input is fed once Bumble's channel has its sink: Bumble drops a PDU that arrives before
            # (`create_l2cap_channel` returns after the response, and our first SDUs can be in the same read).
            ready = asyncio.get_running_loop().create_future()
            listener = asyncio.create_task(
                blue(hub, ["l2cap", "listen", "0x0081", "--name", "OCB-CoC", "--stay", "-v"], sent,
                     stderr_path=os.path.join(str(tmp_path), "listen.err"), feed_after=ready))
            async with BumbleHost(hub.tcp_ports[0], "client", BUMBLE_ADDRESS) as device:
                found = asyncio.get_running_loop().create_future()

                def on_advertisement(advertisement):
                    name = advertisement.data.get(AdvertisingData.COMPLETE_LOCAL_NAME)
                    if name == "OCB-CoC" and not found.done():
                        found.set_result(advertisement.address)

                device.on("advertisement", on_advertisement)
                await device.start_scanning()
                address = await asyncio.wait_for(found, 20)
                await device.stop_scanning()
                connection = await device.connect(address, timeout=20)
                channel = await connection.create_l2cap_channel(spec=l2cap.LeCreditBasedChannelSpec(psm=0x0081, mtu=512))
                done = asyncio.get_running_loop().create_future()

                def on_sdu(sdu):
                    sdu_sizes.append(len(sdu))
                    received.extend(sdu)
                    if len(received) >= len(sent) and not done.done():
                        done.set_result(None)
                channel.sink = on_sdu
                ready.set_result(None)
                try:
                    await asyncio.wait_for(done, 40)
                except asyncio.TimeoutError:
                    listener.cancel()
                    raise AssertionError(f"{len(received)} of {len(sent)} bytes within 40 s, SDUs {sdu_sizes[-5:]}; "
                                         f"blue's log in {tmp_path}/listen.err")
                channel.write(b"thank you, blue\n")
                await channel.drain()
                await channel.disconnect()
                return await asyncio.wait_for(listener, 15)

        code, out, err = run(scenario())
        assert code == 0, err
        assert bytes(received) == sent
        assert max(sdu_sizes) <= 512, sdu_sizes
        assert out == b"thank you, blue\n", err
        assert "MTU 2048 here and 512 there" in err, err
    finally:
        hub.interrupt()
        hub.kill()
    for capture in hub.snoop_files():
        assert tshark_malformed(capture) == "", capture
