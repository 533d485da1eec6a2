# Helpers for the VM scenarios (bash, sourced by scenario-runner.sh inside the guest's chroot of the host root).
# Every wait has a bound; every background process is killed by the EXIT trap; every log lands in $OUT, which the
# host copies out.

OUT=/mnt/out
BLUE=/mnt/blue
mkdir -p "$OUT"
background_pids=()

log() { echo "[$(cut -d' ' -f1 /proc/uptime)s] $*" >&2; }

fail() {
    log "FAIL: $*"
    exit 1
}

# Runs "$@" in the background with its output in $OUT/NAME.log; the PID is in the variable NAME_pid.
start() {
    local name=$1
    shift
    "$@" > "$OUT/$name.log" 2>&1 &
    local pid=$!
    background_pids+=("$pid")
    printf -v "${name//-/_}_pid" '%s' "$pid"
    log "started $name (pid $pid): $*"
}

stop_all() {
    local pid
    for pid in "${background_pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
    sleep 0.5
    for pid in "${background_pids[@]}"; do kill -KILL "$pid" 2>/dev/null; done
}
trap stop_all EXIT

# Waits up to SECONDS for a line matching the extended regex PATTERN in FILE (ANSI colours removed).
wait_for() {
    local file=$1 pattern=$2 seconds=${3:-30}
    local deadline=$(( $(date +%s) + seconds ))
    local name pid_variable
    name=$(basename "$file" .log)
    pid_variable="${name//-/_}_pid"
    # grep reads all of sed's output (no -q): under pipefail, a grep that stopped at an early match would kill sed with
    # SIGPIPE once the file outgrows the pipe's buffer, and the pipeline would fail although the pattern is there.
    while (( $(date +%s) < deadline )); do
        if [ -f "$file" ] && sed 's/\x1b\[[0-9;]*m//g; s/\r//g' "$file" | grep -E -- "$pattern" > /dev/null; then return 0; fi
        # The process writing the file has ended: what it printed is all there will be.
        if [ -n "${!pid_variable:-}" ] && ! kill -0 "${!pid_variable}" 2>/dev/null; then
            sed 's/\x1b\[[0-9;]*m//g; s/\r//g' "$file" | grep -E -- "$pattern" > /dev/null && return 0
            log "$name ended without '$pattern'"
            break
        fi
        sleep 0.2
    done
    log "no '$pattern' in $(basename "$file") within ${seconds}s; its tail:"
    sed 's/\x1b\[[0-9;]*m//g' "$file" 2>/dev/null | tail -20 | sed 's/^/    /'
    return 1
}

# Runs a step: NAME SECONDS COMMAND...; its output in $OUT/NAME.log and on the console; fails the scenario unless it
# exits 0 within SECONDS.
step() {
    local name=$1 seconds=$2
    shift 2
    log "step $name: $*"
    local status=0
    timeout --kill-after=5 "$seconds" "$@" > "$OUT/$name.log" 2>&1 || status=$?
    sed 's/^/    /' "$OUT/$name.log" | tail -40
    (( status == 0 )) || fail "step $name exited $status"
}

# Like step, but the command must fail with exit status EXPECTED.
step_fails() {
    local name=$1 seconds=$2 expected=$3
    shift 3
    log "step $name (expects exit $expected): $*"
    local status=0
    timeout --kill-after=5 "$seconds" "$@" > "$OUT/$name.log" 2>&1 || status=$?
    sed 's/^/    /' "$OUT/$name.log" | tail -20
    (( status == expected )) || fail "step $name exited $status, expected $expected"
}

# Fails unless the output of step NAME matches the extended regex PATTERN.
expect_output() {
    local name=$1 pattern=$2
    grep -qE -- "$pattern" "$OUT/$name.log" || fail "step $name: no '$pattern' in its output"
}

# btmon records every controller's traffic (user channel included) through the kernel's monitor channel.
start_btmon() {
    start btmon btmon -w "$OUT/btmon.btsnoop"
    sleep 0.3
}

# Waits until the kernel lists hciN for every index given.
wait_for_controllers() {
    local index deadline=$(( $(date +%s) + 20 ))
    for index in "$@"; do
        until [ -e "/sys/class/bluetooth/hci$index" ]; do
            (( $(date +%s) < deadline )) || fail "no hci$index after 20 s"
            sleep 0.1
        done
    done
    log "controllers present: $(ls /sys/class/bluetooth | tr '\n' ' ')"
}

# BlueZ's emulator: `btvirt -l2` gives the kernel two vhci controllers, `-s` opens /tmp/bt-server-*. `-L` makes
# them LE-only without extended advertising (btdev 5.66 does not bridge legacy and extended advertising).
start_btvirt() {
    start btvirt btvirt "$@"
}

# dbus-daemon and bluetoothd. AutoEnable=false keeps controllers meant for the user channel down; a scenario powers
# the ones bluetoothd should use with `btctl power on`. BLUEZ_GENERAL adds lines to main.conf's [General] section.
start_bluez() {
    mkdir -p /run/dbus /var/lib/bluetooth
    cat > /tmp/main.conf <<CONF
[General]
Name = vm-bluez
DiscoverableTimeout = 0
${BLUEZ_GENERAL:-}
[Policy]
AutoEnable=false
CONF
    dbus-daemon --system --fork --nopidfile || fail "dbus-daemon did not start"
    start bluetoothd /usr/libexec/bluetooth/bluetoothd -n -d -f /tmp/main.conf
    wait_for "$OUT/bluetoothd.log" "Bluetooth management interface" 30 || fail "bluetoothd did not start"
}

# Waits until bluetoothd publishes /org/bluez/hciN on D-Bus (it needs seconds under TCG to set an adapter up).
wait_for_adapter() {
    local index=$1 deadline=$(( $(date +%s) + 40 ))
    until busctl --system introspect org.bluez "/org/bluez/hci$index" > /dev/null 2>&1 \
        || dbus-send --system --print-reply --dest=org.bluez "/org/bluez/hci$index" \
            org.freedesktop.DBus.Properties.Get string:org.bluez.Adapter1 string:Address > /dev/null 2>&1; do
        (( $(date +%s) < deadline )) || fail "bluetoothd did not publish hci$index within 40 s"
        sleep 0.3
    done
}

# An interactive bluetoothctl fed through a FIFO (what it registers lives as long as it runs); its output in
# $OUT/bluetoothctl.log. `btctl LINE` sends a line and marks the log: `btctl_expect PATTERN [SECONDS]` then looks only
# at what came after the last line sent, answering the agent's prompts on the way ("(yes/no)" with yes, a passkey
# request with $BTCTL_PASSKEY).
btctl_mark=0
btctl_answered=0
start_bluetoothctl() {
    mkfifo /tmp/bluetoothctl.in
    start bluetoothctl bash -c 'exec bluetoothctl < /tmp/bluetoothctl.in'
    exec 7> /tmp/bluetoothctl.in
    sleep 1
    btctl "agent ${BTCTL_AGENT:-NoInputNoOutput}"
    btctl_expect "Agent registered|Agent is already registered" 20 || fail "bluetoothctl did not register its agent"
    btctl "default-agent"
    btctl_expect "Default agent request successful" 20 || fail "bluetoothctl's agent is not the default"
}

btctl_lines() { sed 's/\x1b\[[0-9;]*[a-zA-Z]//g; s/\r/\n/g; s/\x01\|\x02//g' "$OUT/bluetoothctl.log"; }

btctl() {
    log "bluetoothctl> $*"
    btctl_mark=$(btctl_lines | wc -l)
    echo "$*" >&7
}

# Answers a prompt the scenario expected itself (so that btctl_expect does not answer it too).
btctl_answer() {
    btctl_answered=$(btctl_lines | grep -cE "\\(yes/no\\)|Enter passkey|Enter PIN" || true)
    btctl "$1"
}

btctl_expect() {
    local pattern=$1 seconds=${2:-30}
    local deadline=$(( $(date +%s) + seconds ))
    while (( $(date +%s) < deadline )); do
        local fresh
        fresh=$(btctl_lines | tail -n +"$((btctl_mark + 1))")
        grep -qE -- "$pattern" <<< "$fresh" && return 0
        # The agent's prompts, answered once each.
        local prompts
        prompts=$(btctl_lines | grep -cE "\(yes/no\)|Enter passkey|Enter PIN" || true)
        if (( prompts > btctl_answered )); then
            btctl_answered=$prompts
            if btctl_lines | grep -E "\(yes/no\)|Enter passkey|Enter PIN" | tail -1 | grep -qE "passkey|PIN"; then
                log "bluetoothctl agent: typing ${BTCTL_PASSKEY:-000000}"
                echo "${BTCTL_PASSKEY:-000000}" >&7
            else
                log "bluetoothctl agent: yes"
                echo yes >&7
            fi
        fi
        sleep 0.2
    done
    log "bluetoothctl: no '$pattern' within ${seconds}s; its output since the last command:"
    btctl_lines | tail -n +"$((btctl_mark + 1))" | tail -25 | sed 's/^/    /'
    return 1
}

# Scans with bluetoothctl until a device named NAME appears (up to three discovery sessions: a report that reaches
# kernel 6.1 before its discovery runs is dropped); prints its address.
bluez_find_device() {
    local name=$1 attempt address
    for attempt in 1 2 3; do
        btctl "scan le"
        if btctl_expect "Device ([0-9A-F]{2}:){5}[0-9A-F]{2} $name" 12 > /dev/null; then
            address=$(btctl_lines | grep -oE "Device ([0-9A-F]{2}:){5}[0-9A-F]{2} $name" | tail -1 | cut -d' ' -f2)
            btctl "scan off"
            btctl_expect "Discovery stopped|Discovering: no" 10 > /dev/null
            echo "$address"
            return 0
        fi
        btctl "scan off"
        sleep 1
    done
    return 1
}

# A full 128-bit UUID from a 16-bit one.
uuid128() { echo "0000${1,,}-0000-1000-8000-00805f9b34fb"; }

# bluetoothd and an interactive bluetoothctl with hciN selected and powered on.
bluez_with_powered_adapter() {
    local index=$1
    start_bluez
    wait_for_adapter "$index"
    start_bluetoothctl
    btctl "select $(adapter_address "$index")"
    btctl "power on"
    btctl_expect "Changing power on succeeded" 30 || fail "bluetoothd could not power hci$index on"
}

# The Nth controller's address as bluetoothd knows it.
adapter_address() {
    cat "/sys/kernel/debug/bluetooth/hci$1/identity" 2>/dev/null | cut -d' ' -f1
}

# bluetoothctl as the central of `blue serve --profile heart-rate` at ADDRESS: connect, list the GATT attributes,
# read Body Sensor Location, write the Heart Rate Control Point (the server must print it), subscribe to the Heart
# Rate Measurement and see notifications, unsubscribe, disconnect.
bluez_central_heart_rate() {
    local address=$1 serve_log=$2
    btctl "connect $address"
    btctl_expect "Connection successful" 40 || fail "bluetoothctl could not connect to $address"
    btctl_expect "ServicesResolved: yes" 40 || fail "bluetoothd did not resolve the services of $address"
    btctl "gatt.list-attributes $address"
    btctl_expect "Heart Rate Control Point" 20 || fail "the GATT attributes do not list the Heart Rate service"
    btctl "gatt.select-attribute $(uuid128 2A38)"
    btctl_expect "\\]#|char" 10 > /dev/null
    btctl "gatt.read"
    btctl_expect "^ +01 " 20 || fail "bluetoothctl did not read Body Sensor Location = 01"
    btctl "gatt.select-attribute $(uuid128 2A39)"
    btctl_expect "\\]#|char" 10 > /dev/null
    btctl "gatt.write 0x01"
    btctl_expect "Attempting to write" 20 || fail "bluetoothctl did not write the control point"
    wait_for "$serve_log" "2A39|Heart Rate Control Point" 20 || fail "the server did not receive the write"
    btctl "gatt.select-attribute $(uuid128 2A37)"
    btctl_expect "\\]#|char" 10 > /dev/null
    btctl "gatt.notify on"
    btctl_expect "Notify started" 20 || fail "bluetoothctl could not subscribe"
    btctl_expect "Value:" 20 || fail "no notification reached bluetoothctl"
    sleep 2.5
    local values
    values=$(btctl_lines | tail -n +"$((btctl_mark + 1))" | grep -c "Value:")
    log "bluetoothctl received $values Heart Rate Measurement notifications"
    (( values >= 2 )) || fail "fewer than 2 notifications reached bluetoothctl"
    btctl "gatt.notify off"
    btctl_expect "Notify stopped" 20 || fail "bluetoothctl could not unsubscribe"
    btctl "disconnect $address"
    btctl_expect "Successful disconnected|Disconnection successful|Connected: no" 20 || fail "bluetoothctl did not disconnect"
}
