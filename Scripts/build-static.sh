#!/usr/bin/env bash
# A static `blue` (issue 11 item 6): one self-contained Linux executable (Swift runtime, Foundation and BoringSSL
# linked in, no shared libraries at all) that runs on any x86_64 or arm64 Linux of the build machine's architecture,
# such as a Raspberry Pi-class board when built on one, or inside the test VM's bare initramfs.
# Output: .build-static/release/blue (stripped copy: .build-static/blue).
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product blue -Xswiftc -static-executable --scratch-path .build-static "$@"
strip -o .build-static/blue .build-static/release/blue
ls -la .build-static/blue >&2
