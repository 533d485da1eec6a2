# `blue` through bluetoothd (issue 16): scan, explore, read, write and subscribe with --hci bluez:hci0 (bluetoothd on
# kernel controller hci0, btvirt) against `blue serve --profile heart-rate` on hci1 through the HCI user channel.
# Each command finds the server through bluetoothd's discovery, connects with Device1.Connect and works on the GATT
# objects bluetoothd resolved; the server prints the write.
start_btmon
start_btvirt -L -l2
wait_for_controllers 0 1
start serve "$BLUE" serve --hci hci1 --profile heart-rate
wait_for "$OUT/serve.log" "^serving" 60 || fail "blue serve did not start on hci1"
bluez_with_powered_adapter 0
step scan 60 "$BLUE" scan --hci bluez:hci0 --timeout 10 --json
expect_output scan '"name" *: *"blue heart rate"'
step explore 150 "$BLUE" explore --hci bluez:hci0 "blue heart rate" --timeout 60
expect_output explore 'Heart Rate Measurement'
expect_output explore 'Body Sensor Location.*= 01'
expect_output explore 'Client Characteristic Configuration'
step read 150 "$BLUE" read --hci bluez:hci0 "blue heart rate" 2A38 --timeout 60
expect_output read '= 01'
step write 150 "$BLUE" write --hci bluez:hci0 "blue heart rate" 2A39 01 --timeout 60
expect_output write 'wrote 1 byte'
wait_for "$OUT/serve.log" 'write .* by ' 20 || fail "blue serve did not receive the write"
step subscribe 150 "$BLUE" subscribe --hci bluez:hci0 "blue heart rate" 2A37 --count 3 --timeout 60
[ "$(grep -c 'Heart Rate Measurement' "$OUT/subscribe.log")" -ge 3 ] || fail "subscribe did not print three measurements"
step_fails snoop-bluez 30 64 "$BLUE" scan --hci bluez:hci0 --snoop /tmp/bluez.btsnoop --timeout 1
expect_output snoop-bluez 'use btmon'
log "blue scan, explore, read, write and subscribe worked through bluetoothd against blue serve"
