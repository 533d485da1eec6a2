#!/usr/bin/env bash
# A static `blue` (issue 11 item 6): one self-contained Linux executable (Swift runtime, Foundation and BoringSSL
# linked in, no shared libraries at all) that runs on any x86_64 or arm64 Linux of the build machine's architecture,
# such as a Raspberry Pi-class board when built on one, or inside the test VM's bare initramfs.
# Output: .build-static/release/blue (stripped copy: .build-static/blue). `--product NAME` builds another product
# of the package the same way (.build-static/release/NAME), e.g. an example program for the VM.
set -euo pipefail
cd "$(dirname "$0")/.."
product=blue
if [ "${1:-}" = "--product" ] && [ -n "${2:-}" ]; then
    product=$2
    shift 2
fi
swift build -c release --product "$product" -Xswiftc -static-executable --scratch-path .build-static "$@"
strip -o ".build-static/$product" ".build-static/release/$product"
ls -la ".build-static/$product" >&2
