# `blue` through bluetoothd (issue 16): scan, explore, read, write and subscribe with --hci bluez:hci0 (bluetoothd on
# kernel controller hci0, btvirt) against `blue serve --profile heart-rate` on hci1 through the HCI user channel.
# Each command finds the server through bluetoothd's discovery, connects with Device1.Connect and works on the GATT
# objects bluetoothd resolved; the server prints the write. `blue monitor --hci hci0` (the kernel's monitor channel,
# as btmon reads it) shows bluetoothd's traffic on hci0 meanwhile, and `--hci kernel --json` both controllers'.
start_btmon
start_btvirt -L -l2
wait_for_controllers 0 1
start serve "$BLUE" serve --hci hci1 --profile heart-rate
wait_for "$OUT/serve.log" "^serving" 60 || fail "blue serve did not start on hci1"
bluez_with_powered_adapter 0
start monitor "$BLUE" monitor --hci hci0 --timeout 400
start monitor-all "$BLUE" monitor --hci kernel --json --layer att --timeout 400
sleep 0.5
step scan 60 "$BLUE" scan --hci bluez:hci0 --timeout 10 --json
expect_output scan '"name" *: *"blue heart rate"'
step explore 150 "$BLUE" explore --hci bluez:hci0 "blue heart rate" --timeout 60
expect_output explore 'Heart Rate Measurement'
expect_output explore 'Body Sensor Location.*= 01'
expect_output explore 'Client Characteristic Configuration'
step read 150 "$BLUE" read --hci bluez:hci0 "blue heart rate" 2A38 --timeout 60
expect_output read '= 01'
wait_for "$OUT/monitor.log" 'hci0 < ACL 0x[0-9A-F]{4} ATT Read Request' 20 || fail "blue monitor did not show the read on hci0"
grep -q 'hci1 ' "$OUT/monitor.log" && fail "blue monitor --hci hci0 showed hci1's traffic"
wait_for "$OUT/monitor-all.log" '"controller":"hci1"' 20 || fail "blue monitor --hci kernel did not show hci1 (blue serve's user channel)"
grep -q '"controller":"hci0"' "$OUT/monitor-all.log" || fail "blue monitor --hci kernel did not show hci0"
step_fails monitor-device 30 64 "$BLUE" monitor --hci hci0 --device 2 --timeout 1
step write 150 "$BLUE" write --hci bluez:hci0 "blue heart rate" 2A39 01 --timeout 60
expect_output write 'wrote 1 byte'
wait_for "$OUT/serve.log" 'write .* by ' 20 || fail "blue serve did not receive the write"
step subscribe 150 "$BLUE" subscribe --hci bluez:hci0 "blue heart rate" 2A37 --count 3 --timeout 60
[ "$(grep -c 'Heart Rate Measurement' "$OUT/subscribe.log")" -ge 3 ] || fail "subscribe did not print three measurements"
step_fails snoop-bluez 30 64 "$BLUE" scan --hci bluez:hci0 --snoop /tmp/bluez.btsnoop --timeout 1
expect_output snoop-bluez 'use btmon'
log "blue scan, explore, read, write and subscribe worked through bluetoothd against blue serve; blue monitor showed hci0 and both controllers"
