# The async API (BluetoothLE) on bluetoothd (issue 16): the BatteryLE example in both roles, one end through
# bluetoothd (`--hci bluez:hci0`), the other on our host on hci1 (user channel). The central finds the Battery
# Service, connects (the central on bluetoothd also pairs: Device1.Pair with our agent), reads the level, takes three notifications, writes 50 and reads it back, sends a line on an
# L2CAP channel (PSM 0x0081: through bluetoothd a kernel L2CAP socket, connecting or listening on that PSM) and gets
# it echoed, disconnects; the peripheral prints the write and ends when its central has gone. bluetoothd's battery plugin reads the Battery
# Level and subscribes by itself as soon as it resolved the services (btmon shows its CCCD write before ours), so the
# level the central on bluetoothd reads may already have fallen from 100.
program=${OCB_REPO:-}/.build-static/release/BatteryLE
[ -x "$program" ] || fail "no static BatteryLE at $program (Scripts/vm-test.sh builds it)"
start_btmon
start_btvirt -L -l2
wait_for_controllers 0 1
bluez_with_powered_adapter 0

start battery-peripheral "$program" --role peripheral --hci hci1 --timeout 150
wait_for "$OUT/battery-peripheral.log" "^ready" 60 || fail "the peripheral on our host did not advertise"
step battery-central-bluez 150 "$program" --role central --hci bluez:hci0 --pair --timeout 120
expect_output battery-central-bluez '^paired: Just Works, bonded'
expect_output battery-central-bluez '^level \[[0-9]+\]'
expect_output battery-central-bluez '^notified \[\[[0-9]+\], \[[0-9]+\], \[[0-9]+\]\]'
expect_output battery-central-bluez '^read back \[50\]'
expect_output battery-central-bluez '^L2CAP echo: hello over L2CAP'
wait "$battery_peripheral_pid" || fail "the peripheral on our host failed: $(tail -2 "$OUT/battery-peripheral.log")"
expect_output battery-peripheral '^wrote \[50\]'

start battery-peripheral-bluez "$program" --role peripheral --hci bluez:hci0 --timeout 150
wait_for "$OUT/battery-peripheral-bluez.log" "^ready" 60 || fail "the peripheral on bluetoothd did not advertise"
step battery-central 150 "$program" --role central --hci hci1 --timeout 120
expect_output battery-central '^level \[100\]'
expect_output battery-central '^notified \[\[[0-9]+\], \[[0-9]+\], \[[0-9]+\]\]'
expect_output battery-central '^read back \[50\]'
expect_output battery-central '^L2CAP echo: hello over L2CAP'
wait "$battery_peripheral_bluez_pid" || fail "the peripheral on bluetoothd failed: $(tail -2 "$OUT/battery-peripheral-bluez.log")"
expect_output battery-peripheral-bluez '^wrote \[50\]'
log "the async API through bluetoothd, both roles, against our host"
