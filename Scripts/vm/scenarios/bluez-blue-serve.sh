# `blue serve --hci bluez:hci0` (issue 16): the heart-rate server published through bluetoothd (a GATT application
# and an advertisement registered over D-Bus) on kernel controller hci0, found and used by our own host on hci1
# through the HCI user channel: explore, read, a write the server prints, three generated notifications.
start_btmon
start_btvirt -L -l2
wait_for_controllers 0 1
bluez_with_powered_adapter 0
start serve "$BLUE" serve --hci bluez:hci0 --profile heart-rate
wait_for "$OUT/serve.log" "^serving" 60 || fail "blue serve did not start through bluetoothd"
step explore 150 "$BLUE" explore --hci hci1 "blue heart rate" --timeout 60
expect_output explore 'Heart Rate Measurement'
expect_output explore 'Body Sensor Location.*= 01'
wait_for "$OUT/serve.log" 'read 2A38 Body Sensor Location by ' 20 || fail "blue serve did not print the read"
step write 150 "$BLUE" write --hci hci1 "blue heart rate" 2A39 01 --timeout 60
wait_for "$OUT/serve.log" 'write 2A39 .* by ' 20 || fail "blue serve did not print the write"
step subscribe 150 "$BLUE" subscribe --hci hci1 "blue heart rate" 2A37 --count 3 --timeout 60
[ "$(grep -c 'Heart Rate Measurement' "$OUT/subscribe.log")" -ge 3 ] || fail "subscribe did not print three measurements"
wait_for "$OUT/serve.log" 'subscribe 2A37 ' 20 || fail "blue serve did not print the subscription"
wait_for "$OUT/serve.log" '^connected: ' 5 || fail "blue serve did not print the connections"
grep -q 'by 00:00:00:00:00:00' "$OUT/serve.log" && fail "a subscription was not attributed to the connected central"
log "blue serve through bluetoothd was explored, read, written and subscribed to by our host on hci1"
