# `blue pair --hci bluez:hci0` (issue 16): pairing through bluetoothd's Device1.Pair with our own Agent1 answering its
# prompts, against `blue serve` on hci1 through the HCI user channel. Numeric Comparison (both DisplayYesNo: our
# agent confirms the value bluetoothd shows it), then a second run that finds the bond bluetoothd keeps, --repair
# with that bond (bluetoothd forgets the device, finds it again and pairs again), then --repair with Passkey Entry
# against a new server (it displays 123456, our agent types it with --passkey).
start_btmon
start_btvirt -L -l2
wait_for_controllers 0 1
start serve "$BLUE" serve --hci hci1 --profile heart-rate --io display-yes-no --allow-repairing
wait_for "$OUT/serve.log" "^serving" 60 || fail "blue serve did not start on hci1"
bluez_with_powered_adapter 0

step pair 150 "$BLUE" pair --hci bluez:hci0 "blue heart rate" --method numeric --timeout 60
expect_output pair 'Numeric comparison: [0-9]{6} \(confirmed\)'
expect_output pair 'Paired with blue heart rate: Numeric Comparison, LE Secure Connections, authenticated'
expect_output pair '^  bonded: yes'
wait_for "$OUT/serve.log" "^paired: .*authenticated" 20 || fail "blue serve did not report an authenticated pairing"

step pair-again 150 "$BLUE" pair --hci bluez:hci0 "blue heart rate" --timeout 60 --json
expect_output pair-again '"usedExistingBond" *: *true'
step bonds 60 "$BLUE" bonds list --hci bluez:hci0
expect_output bonds '"blue heart rate": bonded'

# --repair with the bond bluetoothd holds: it forgets the device (RemoveDevice), finds it again and pairs again.
step repair-same 150 "$BLUE" pair --hci bluez:hci0 "blue heart rate" --repair --method numeric --timeout 60
expect_output repair-same 'Paired with blue heart rate: Numeric Comparison, LE Secure Connections, authenticated'
(( $(grep -c "^paired: .*authenticated" "$OUT/serve.log") >= 2 )) || fail "blue serve did not see the second pairing"

kill -TERM "$serve_pid"; wait "$serve_pid"
start serve-passkey "$BLUE" serve --hci hci1 --profile heart-rate --io display-only --passkey 123456 --allow-repairing
wait_for "$OUT/serve-passkey.log" "^serving" 60 || fail "blue serve did not start again"
step repair 150 "$BLUE" pair --hci bluez:hci0 "blue heart rate" --repair --method passkey --io keyboard-only --passkey 123456 --timeout 60
expect_output repair 'Paired with blue heart rate: Passkey Entry.*, authenticated'
expect_output repair '^  bonded: yes'
wait_for "$OUT/serve-passkey.log" "^paired: .*authenticated" 20 || fail "blue serve did not report the passkey pairing"
log "blue pair paired through bluetoothd with our agent: numeric comparison, the bond kept, passkey entry after --repair"
