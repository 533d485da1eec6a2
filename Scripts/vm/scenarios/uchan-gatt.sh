# Our host on both ends of two kernel controllers (BlueZ's btvirt behind /dev/vhci) through the HCI user channel:
# `blue serve --hci hci0`, and scan, explore, read, write and subscribe from `--hci hci1`.
start_btmon
start_btvirt -l2
wait_for_controllers 0 1
start serve "$BLUE" serve --hci hci0 --profile heart-rate
wait_for "$OUT/serve.log" "^serving" 60 || fail "blue serve did not start on hci0"
step scan 60 "$BLUE" scan --hci hci1 --timeout 6
expect_output scan "blue heart rate"
step explore 90 "$BLUE" explore --hci hci1 "blue heart rate" --timeout 20
expect_output explore "Heart Rate"
expect_output explore "OpenCoreBluetooth"
step read 60 "$BLUE" read --hci hci1 "blue heart rate" 2A38 --timeout 20
expect_output read "01"
step write 60 "$BLUE" write --hci hci1 "blue heart rate" 2A39 01 --timeout 20
wait_for "$OUT/serve.log" "2A39|Heart Rate Control Point" 10 || fail "the server did not see the write"
step subscribe 90 "$BLUE" subscribe --hci hci1 "blue heart rate" 2A37 --count 3 --timeout 30
(( $(grep -cE "Heart Rate Measurement|2A37|bpm" "$OUT/subscribe.log") >= 3 )) || fail "fewer than 3 notifications"
