# BlueZ's emulator as a fourth controller implementation for our host (after ours, Bumble's and RootCanal's):
# `btvirt -s` serves btdev controllers over plain H4 on /tmp/bt-server-le, one per connection; our host on both
# sides runs the same GATT, notification and pairing scenario as on the kernel controllers.
start_btmon
start_btvirt -s
for _ in $(seq 50); do [ -S /tmp/bt-server-le ] && break; sleep 0.1; done
[ -S /tmp/bt-server-le ] || fail "btvirt -s did not create /tmp/bt-server-le"
hci=unix:/tmp/bt-server-le
start serve "$BLUE" serve --hci "$hci" --profile heart-rate
wait_for "$OUT/serve.log" "^serving" 60 || fail "blue serve did not start on btdev"
step scan 60 "$BLUE" scan --hci "$hci" --timeout 6
expect_output scan "blue heart rate"
step explore 90 "$BLUE" explore --hci "$hci" "blue heart rate" --timeout 20
expect_output explore "OpenCoreBluetooth"
step read 60 "$BLUE" read --hci "$hci" "blue heart rate" 2A38 --timeout 20
expect_output read "Chest"
step write 60 "$BLUE" write --hci "$hci" "blue heart rate" 2A39 01 --timeout 20
step subscribe 90 "$BLUE" subscribe --hci "$hci" "blue heart rate" 2A37 --count 3 --timeout 30
(( $(grep -c "bpm" "$OUT/subscribe.log") >= 3 )) || fail "fewer than 3 notifications"
step pair 120 "$BLUE" pair --hci "$hci" "blue heart rate" --method jw --reconnect --bonds /tmp/bonds --timeout 20 --json
expect_output pair '"bonded" *: *true'
expect_output pair '"usedExistingBond" *: *true'
