#!/usr/bin/env bash
# Builds the test VM's initramfs: busybox-static with an applet link for every command, the kernel modules the
# Bluetooth tests need (with their dependencies, resolved by modprobe) and Scripts/vm/init as PID 1.
# Usage: Scripts/vm/build-initramfs.sh OUT.cpio.gz KERNEL_VERSION
set -euo pipefail
out=$1
kver=$2
here=$(cd "$(dirname "$0")" && pwd)
staging=$(mktemp -d "${TMPDIR:-/tmp}/ocb-initramfs.XXXXXX")
trap 'rm -rf "$staging"' EXIT
mkdir -p "$staging"/{bin,sbin,etc,proc,sys,dev,tmp,run,newroot,share,lib/modules}
cp /bin/busybox "$staging/bin/busybox"
for applet in $(/bin/busybox --list); do
    [ -e "$staging/bin/$applet" ] || ln -s busybox "$staging/bin/$applet"
done
# Order matters: the crypto the kernel's SMP (ECDH with a DRBG) and btvirt (AF_ALG) ask for, then Bluetooth, then
# the virtio transport of the 9p shares.
modules="ctr sha512_generic hmac jitterentropy_rng drbg ecdh_generic af_alg algif_hash algif_skcipher ecb cmac aesni_intel
bluetooth hci_vhci virtio_pci 9pnet_virtio 9p"
: > "$staging/etc/vm-modules"
for module in $modules; do
    # Built-in modules print "builtin"; a module missing from this kernel is left out with a note.
    if ! deps=$(modprobe -S "$kver" --show-depends "$module" 2>/dev/null); then
        echo "build-initramfs: no module $module in $kver (left out)" >&2
        continue
    fi
    while read -r kind path _; do
        [ "$kind" = insmod ] || continue
        mkdir -p "$staging$(dirname "$path")"
        cp -n "$path" "$staging$path"
    done <<< "$deps"
    echo "$module" >> "$staging/etc/vm-modules"
done
cp /lib/modules/"$kver"/modules.{order,builtin,builtin.modinfo} "$staging/lib/modules/$kver/" 2>/dev/null || true
depmod -b "$staging" "$kver"
install -m 0755 "$here/init" "$staging/init"
(cd "$staging" && find . | cpio -o -H newc --quiet | gzip -1) > "$out"
