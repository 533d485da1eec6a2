#!/usr/bin/env bash
# A static `blue` (issue 11 item 6): one self-contained Linux executable (Swift runtime, Foundation and BoringSSL
# linked in, no shared libraries at all) that runs on any x86_64 or arm64 Linux of the build machine's architecture,
# such as a Raspberry Pi-class board when built on one, or inside the test VM's bare initramfs.
# Output: .build-static/release/blue (stripped copy: .build-static/blue). `--product NAME` builds another product
# of the package the same way (.build-static/release/NAME), e.g. an example program for the VM. `--lean` builds
# without the package's default trait (no `blue demo`/`chat`, so no OpenCoreBluetooth, Foundation or ICU: what a
# device that only serves or scans deploys) into .build-static-lean instead.
set -euo pipefail
cd "$(dirname "$0")/.."
product=blue
scratch=.build-static
traits=()
while [ $# -gt 0 ]; do
    case "$1" in
        --product) [ -n "${2:-}" ] || { echo "build-static.sh: --product needs a name" >&2; exit 64; }; product=$2; shift 2 ;;
        --lean) scratch=.build-static-lean; traits=(--disable-default-traits); shift ;;
        *) break ;;
    esac
done
swift build -c release --product "$product" -Xswiftc -static-executable --scratch-path "$scratch" ${traits[@]+"${traits[@]}"} "$@"
strip -o "$scratch/$product" "$scratch/release/$product"
ls -la "$scratch/$product" >&2
