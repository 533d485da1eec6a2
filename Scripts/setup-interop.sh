#!/usr/bin/env bash
# Installs the external peers the interop checks use, idempotently: tshark, dbus-daemon, GLib's gdbus, chromium and
# chromium-driver (Debian), Bumble, RootCanal, pytest, selenium and schemathesis (PyPI, in .venv/).
set -euo pipefail
cd "$(dirname "$0")/.."

# The D-Bus client's tests run a real dbus-daemon and call and are called by GLib's gdbus.
if ! command -v dbus-daemon >/dev/null 2>&1 || ! command -v gdbus >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ]; then
    echo "installing dbus-daemon and gdbus (Debian)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dbus-daemon libglib2.0-bin >/dev/null
  else
    echo "dbus-daemon or gdbus is missing: run 'sudo apt-get install dbus-daemon libglib2.0-bin' (needed by the D-Bus checks)" >&2
    exit 1
  fi
fi

if ! command -v tshark >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ]; then
    echo "installing tshark (Debian)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tshark >/dev/null
  else
    echo "tshark is missing: run 'sudo apt-get install tshark' (needed by the interop checks)" >&2
    exit 1
  fi
fi

# gdb, for diagnostics only: a test whose command did not end records that process's threads before killing it
# (ControllerLossTests). Not needed to pass; a machine without it just records less.
if ! command -v gdb >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
  echo "installing gdb (Debian; diagnostics of a command that does not end)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gdb; } >/dev/null 2>&1 || echo "gdb not installed: diagnostics only, going on" >&2
fi

# The air console's browser check drives Debian's chromium through its chromium-driver (selenium).
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ]; then
    echo "installing chromium and chromium-driver (Debian; the air console's browser check)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
  else
    echo "chromium is missing: run 'sudo apt-get install chromium chromium-driver' (needed by the console's browser check)" >&2
    exit 1
  fi
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
if ! .venv/bin/python -c "import bumble, pytest, rootcanal, selenium, schemathesis, websocket" >/dev/null 2>&1; then
  echo "installing bumble, rootcanal, pytest, selenium and schemathesis into .venv (PyPI)"
  .venv/bin/python -m pip install -q --disable-pip-version-check "bumble==0.0.236" "rootcanal==1.10.0" pytest \
    "selenium==4.51.0" "schemathesis==4.32.5" "websocket-client==1.9.2"
fi
# The wheel's RootCanal binary loses its execute bit on some installs.
rootcanal_bin=$(.venv/bin/python -c "import os, rootcanal; print(os.path.join(os.path.dirname(rootcanal.__file__), 'bin', 'linux-x86_64', 'rootcanal'))")
chmod +x "$rootcanal_bin"
echo "interop peers: $(tshark --version | head -1); $(chromium --version 2>/dev/null | head -1); $(dbus-daemon --version | head -1); bumble $(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("bumble"))'); rootcanal at $rootcanal_bin"
