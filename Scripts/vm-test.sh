#!/usr/bin/env bash
# The real-kernel tests (issue 11): boots Debian's Linux kernel under QEMU with a small initramfs, the host's root
# shared read-only over 9p (so bluetoothd, bluetoothctl, btmon and btvirt come from the host's Debian packages),
# and runs each scenario of Scripts/vm/scenarios in a fresh VM with a static `blue`. Prints one line per scenario
# and a closing line; results, logs and a btmon capture of each scenario in .build/vm/results/NAME/.
#
# Usage: Scripts/vm-test.sh [SCENARIO...]        (default: every scenario)
# Environment: OCB_VM_ACCEL=tcg|kvm (default: kvm only when the CPU shows vmx/svm, else tcg), OCB_VM_BLUE=PATH (a
# static blue to use instead of building one), OCB_VM_TIMEOUT=SECONDS (per scenario, default 480),
# OCB_VM_INSTALL=0 (do not apt-get install what is missing), OCB_VM_JOBS=N (VMs at once, default: the machine's
# cores, at most 4; each VM is one emulated CPU and 1 GiB; on 2 cores two at a time take about half the time of one).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
work=$root/.build/vm
results=$work/results
mkdir -p "$work" "$results"

say() { echo "vm-test: $*" >&2; }

# 1. What the VM needs from Debian.
packages=(qemu-system-x86 linux-image-amd64 busybox-static bluez bluez-test-tools bluez-test-scripts python3-dbus python3-gi
    dbus cpio kmod util-linux tshark)
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if (( ${#missing[@]} )); then
    if [ "${OCB_VM_INSTALL:-1}" = 0 ] || [ "$(id -u)" != 0 ]; then
        say "missing Debian packages: ${missing[*]} (install them as root: apt-get install ${missing[*]})"
        exit 69
    fi
    say "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq > /dev/null 2>&1 || true
    apt-get install -y -qq --no-install-recommends "${missing[@]}" > "$work/apt.log" 2>&1 \
        || { say "apt-get install failed (log: $work/apt.log)"; exit 69; }
fi
kernel=$(ls /boot/vmlinuz-* 2>/dev/null | sort -V | tail -1)
[ -n "$kernel" ] || { say "no kernel in /boot (apt-get install linux-image-amd64)"; exit 69; }
kver=${kernel#/boot/vmlinuz-}

# Bumble for the scenarios with Bumble peers (the test command installs it too).
if ! .venv/bin/python -c "import bumble" > /dev/null 2>&1; then
    say "installing Bumble into .venv (Scripts/setup-interop.sh)"
    Scripts/setup-interop.sh > "$work/setup-interop.log" 2>&1 || { say "Scripts/setup-interop.sh failed (log: $work/setup-interop.log)"; exit 69; }
fi

# 2. A static blue.
blue=${OCB_VM_BLUE:-}
if [ -z "$blue" ]; then
    say "building a static blue (Scripts/build-static.sh)"
    Scripts/build-static.sh > "$work/build-static.log" 2>&1 || { say "static build failed:"; tail -20 "$work/build-static.log" >&2; exit 1; }
    blue=$root/.build-static/release/blue
fi
[ -x "$blue" ] || { say "no static blue at $blue"; exit 1; }
# Seed 001's two programs, the L2CAP echo and BatteryLE examples, static too, for the BlueZ backend's scenarios (the guest
# finds them through the repository share).
for seed in Seed001Central Seed001Peripheral L2CAPEcho BatteryLE; do
    if [ ! -x ".build-static/release/$seed" ] || [ -z "${OCB_VM_BLUE:-}" ]; then
        say "building a static $seed"
        Scripts/build-static.sh --product "$seed" > "$work/build-static-$seed.log" 2>&1 \
            || { say "static $seed build failed:"; tail -20 "$work/build-static-$seed.log" >&2; exit 1; }
    fi
done

# 3. The initramfs (2 s).
Scripts/vm/build-initramfs.sh "$work/initrd.gz" "$kver" 2> "$work/initramfs.log" || { cat "$work/initramfs.log" >&2; exit 1; }

# 4. Acceleration: KVM only where the CPU offers it to guests (on a nested machine without vmx/svm, /dev/kvm opens
# but the kernel's decompressor never finishes: ../shared/reference/kernel-vm.md).
accel=${OCB_VM_ACCEL:-}
if [ -z "$accel" ]; then
    accel=tcg
    if [ -r /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then accel=kvm; fi
fi

scenarios=("$@")
if (( ${#scenarios[@]} == 0 )); then
    for file in Scripts/vm/scenarios/*.sh; do scenarios+=("$(basename "$file" .sh)"); done
fi

run_scenario() {
    local name=$1 share=$work/share-$1
    rm -rf "$share" "${results:?}/$name"
    mkdir -p "$share" "$results/$name"
    cp Scripts/vm/guest-lib.sh Scripts/vm/scenario-runner.sh "$share/"
    cp -r Scripts/vm/scenarios "$share/scenarios"
    ln "$blue" "$share/blue" 2>/dev/null || cp "$blue" "$share/blue"
    local seconds=${OCB_VM_TIMEOUT:-480}
    local started=$(date +%s)
    timeout --kill-after=10 "$seconds" qemu-system-x86_64 -accel "$accel" -m 1G -smp 1 -nographic -no-reboot \
        -kernel "$kernel" -initrd "$work/initrd.gz" \
        -append "console=ttyS0 quiet loglevel=3 panic=-1 vmtest=$name vmrepo=$root" \
        -nic none \
        -virtfs "local,path=$share,mount_tag=share,security_model=none,id=share" \
        -virtfs "local,path=/,mount_tag=root,security_model=none,readonly=on,multidevs=remap,id=root" \
        -virtfs "local,path=$root,mount_tag=repo,security_model=none,readonly=on,multidevs=remap,id=repo" \
        > "$results/$name/qemu.log" 2>&1 < /dev/null
    local qemu_status=$?
    local elapsed=$(( $(date +%s) - started ))
    [ -f "$share/console.log" ] && cp "$share/console.log" "$results/$name/"
    [ -d "$share/out" ] && cp -r "$share/out/." "$results/$name/"
    local status
    status=$(cat "$share/exit-status" 2>/dev/null || echo none)
    rm -rf "$share"
    # A scenario may have its results checked on the host too (Scripts/vm/host-checks/NAME.sh RESULTS_DIR).
    if [ "$status" = 0 ] && [ -f "Scripts/vm/host-checks/$name.sh" ] \
        && ! bash "Scripts/vm/host-checks/$name.sh" "$results/$name" > "$results/$name/host-check.log" 2>&1; then
        echo "FAIL $name (${elapsed}s): the host's check of its results failed (Scripts/vm/host-checks/$name.sh)"
        tail -15 "$results/$name/host-check.log" | sed 's/^/    /'
        return 1
    fi
    if [ "$status" = 0 ]; then
        echo "PASS $name (${elapsed}s)"
        return 0
    fi
    if (( qemu_status == 124 )); then
        echo "FAIL $name (${elapsed}s): the VM did not finish within ${seconds}s"
    else
        echo "FAIL $name (${elapsed}s): scenario exit status $status"
    fi
    tail -25 "$results/$name/console.log" 2>/dev/null | sed 's/^/    /'
    [ -f "$results/$name/console.log" ] || tail -15 "$results/$name/qemu.log" | sed 's/^/    /'
    return 1
}

jobs=${OCB_VM_JOBS:-$(nproc 2>/dev/null || echo 1)}
(( jobs >= 1 )) || jobs=1
(( jobs <= 4 )) || jobs=4
say "$kver, $accel, ${#scenarios[@]} scenarios, $jobs at a time, results in $results"
passed=0
failed=0
failures=()
began=$(date +%s)
declare -A running=()
# Scenarios still running when this script is interrupted end with it (timeout passes the signal to QEMU).
trap 'for pid in "${!running[@]}"; do pkill -TERM -P "$pid" 2>/dev/null; done' EXIT
# Waits for one scenario of those running; prints its lines and counts it.
collect_one() {
    local pid name status
    wait -n -p pid "${!running[@]}"
    status=$?
    name=${running[$pid]}
    unset "running[$pid]"
    cat "$work/report-$name"
    rm -f "$work/report-$name"
    if (( status == 0 )); then passed=$((passed + 1)); else failed=$((failed + 1)); failures+=("$name"); fi
}
for name in "${scenarios[@]}"; do
    if [ ! -f "Scripts/vm/scenarios/$name.sh" ]; then
        echo "FAIL $name: no such scenario (Scripts/vm/scenarios/$name.sh)"
        failed=$((failed + 1)); failures+=("$name"); continue
    fi
    while (( ${#running[@]} >= jobs )); do collect_one; done
    run_scenario "$name" > "$work/report-$name" 2>&1 &
    running[$!]=$name
done
while (( ${#running[@]} > 0 )); do collect_one; done
echo "vm tests: $passed passed, $failed failed ($(( $(date +%s) - began ))s)${failures:+; failing: ${failures[*]}}"
(( failed == 0 ))
