"""The GATT database both sides of the Swift interop tests (Tests/HostTests/Interop*Tests.swift) agree on, and the
small helpers the Bumble peer scripts share. The Swift twin is Tests/HostTests/InteropSupport/InteropDatabase.swift:
change both together.

- The main service (UUID MAIN_SERVICE) has a short readable value, a 512-octet readable value (long read), a
  value written with Write Request, one written with Write Command, one written with a long write, two written
  together by a reliable write (prepared writes), one that notifies and one that indicates.
- BIG_SERVICE_COUNT services of BIG_PER_SERVICE characteristics each (500 in all): characteristic i has the UUID
  big_uuid(i) and the value big_value(i), of length (i * 512) // 499, so the lengths run from 0 to 512.
"""
import asyncio
import json
import os
import sys
import traceback

BASE = "-7B6E-4E5C-9A3B-0C0FFEE0A11B"


def uuid_string(number):
    return f"{number:08X}{BASE}"


MAIN_SERVICE = uuid_string(0x5E1F0001)
READ = uuid_string(0x5E1F0002)
LONG_READ = uuid_string(0x5E1F0003)
WRITE = uuid_string(0x5E1F0004)
WRITE_WITHOUT_RESPONSE = uuid_string(0x5E1F0005)
LONG_WRITE = uuid_string(0x5E1F0006)
RELIABLE_1 = uuid_string(0x5E1F0007)
RELIABLE_2 = uuid_string(0x5E1F0008)
NOTIFY = uuid_string(0x5E1F0009)
INDICATE = uuid_string(0x5E1F000A)

BIG_SERVICE_COUNT = 5
BIG_PER_SERVICE = 100
BIG_COUNT = BIG_SERVICE_COUNT * BIG_PER_SERVICE

READ_VALUE = b"interop read value"
NOTIFICATIONS = [bytes([0xA0 + n]) * (10 + n) for n in range(3)]
INDICATIONS = [bytes([0xB0 + n]) * (20 + n) for n in range(2)]


def pattern(length, seed):
    return bytes((seed * 31 + j * 7 + 3) & 0xFF for j in range(length))


LONG_READ_VALUE = pattern(512, 1000)
# What the central writes (the same from either central).
WRITE_VALUE = pattern(20, 2000)
WRITE_WITHOUT_RESPONSE_VALUE = pattern(16, 2001)
LONG_WRITE_VALUE = pattern(400, 2002)
RELIABLE_1_VALUE = pattern(300, 2003)
RELIABLE_2_VALUE = pattern(150, 2004)


def big_service_uuid(s):
    return uuid_string(0x5E1F0100 + s)


def big_uuid(i):
    return uuid_string(0x5E1F1000 + i)


def big_length(i):
    return (i * 512) // (BIG_COUNT - 1)


def big_value(i):
    return pattern(big_length(i), i)


def emit(**fields):
    """One JSON line on stdout, flushed: the Swift test reads these."""
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def run(main, default_timeout=None):
    """Runs a peer script's `main()` coroutine to its end (main exits the process itself when it is done). With
    default_timeout, the script's --timeout seconds (default_timeout without it) bound it: {"event": "timeout"} and
    exit 2 past them. Any exception: {"event": "error", "message": ..., "trace": ...} and exit 1, for the test to
    fail on."""
    try:
        if default_timeout is None:
            asyncio.run(main())
            return
        timeout = float(default_timeout)
        if "--timeout" in sys.argv:
            timeout = float(sys.argv[sys.argv.index("--timeout") + 1])

        async def bounded():
            try:
                await asyncio.wait_for(main(), timeout)
            except asyncio.TimeoutError:
                emit(event="timeout")
                os._exit(2)

        asyncio.run(bounded())
    except Exception as error:  # noqa: BLE001 - reported to the test, which fails on it
        emit(event="error", message=f"{type(error).__name__}: {str(error) or repr(error)}",
             trace=traceback.format_exc())
        os._exit(1)
