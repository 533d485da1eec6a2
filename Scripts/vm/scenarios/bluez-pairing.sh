# Pairing with bluetoothd, both ways, on kernel controllers (btvirt -L): bluetoothctl (with its agent) pairs with
# `blue serve` on hci1 by Just Works, reconnects encrypted with the bond, then by passkey entry (the server displays
# 123456, the agent types it); `blue pair` on hci1 pairs with bluetoothd advertising on hci0 and encrypts with the
# bond on the next connection, and again in a second run.
BTCTL_AGENT=KeyboardOnly
BTCTL_PASSKEY=123456
start_btmon
start_btvirt -L -l2
wait_for_controllers 0 1
start serve "$BLUE" serve --hci hci1 --profile heart-rate
wait_for "$OUT/serve.log" "^serving" 60 || fail "blue serve did not start on hci1"
bluez_with_powered_adapter 0
address=$(bluez_find_device "blue heart rate") || fail "bluetoothctl did not find blue serve"

# 1. bluetoothctl pairs (Just Works: our server has no input or output), bonds, reconnects encrypted.
btctl "pair $address"
btctl_expect "Pairing successful" 60 || fail "bluetoothctl could not pair with blue serve (Just Works)"
wait_for "$OUT/serve.log" "^paired: " 20 || fail "blue serve did not report the pairing"
btctl "disconnect $address"
btctl_expect "Connected: no|Successful disconnected" 20 || fail "no disconnection"
paired_lines=$(grep -c "^paired: " "$OUT/serve.log")
btctl "connect $address"
btctl_expect "Connection successful" 40 || fail "bluetoothctl could not connect again"
# bluetoothd encrypts a bonded device's link at once; our server answers with the stored key: no new pairing.
wait_for "$OUT/serve.log" "^encrypted: " 30 || fail "the reconnection was not encrypted"
sed -n '/^connected: /h; /^connected: /!H; ${x;p}' "$OUT/serve.log" | grep -q "^encrypted: " \
    || fail "the reconnection was not encrypted"
(( $(grep -c "^paired: " "$OUT/serve.log") == paired_lines )) || fail "the reconnection paired again instead of using the bond"
btctl "disconnect $address"
btctl_expect "Connected: no|Successful disconnected" 20 || fail "no disconnection"
btctl "remove $address"
btctl_expect "Device has been removed" 20 || fail "bluetoothctl could not remove the device"

# 2. Passkey entry: the server displays a fixed passkey, bluetoothctl's keyboard agent types it.
kill -TERM "$serve_pid"; wait "$serve_pid"
start serve-passkey "$BLUE" serve --hci hci1 --profile heart-rate --io display-only --passkey "$BTCTL_PASSKEY"
wait_for "$OUT/serve-passkey.log" "^serving" 60 || fail "blue serve did not start again"
address=$(bluez_find_device "blue heart rate") || fail "bluetoothctl did not find blue serve again"
btctl "pair $address"
btctl_expect "Pairing successful" 60 || fail "bluetoothctl could not pair with blue serve (passkey)"
wait_for "$OUT/serve-passkey.log" "^paired: .*authenticated" 20 || fail "blue serve did not report an authenticated pairing"
grep -q "unauthenticated" "$OUT/serve-passkey.log" && fail "the passkey pairing was not authenticated"
btctl "disconnect $address"
btctl_expect "Connected: no|Successful disconnected" 20 || fail "no disconnection"
kill -TERM "${serve_passkey_pid}"; wait "${serve_passkey_pid}"

# 3. blue pair with bluetoothd as the peripheral (its agent accepts), then a bonded reconnection, then a second run.
btctl "advertise.name vm-peripheral"
btctl "advertise.discoverable on"
btctl "advertise on"
btctl_expect "Advertising object registered" 20 || fail "bluetoothd did not advertise"
start pair "$BLUE" pair --hci hci1 vm-peripheral --method jw --reconnect --bonds /tmp/bonds --timeout 30 --json
btctl_expect "Bonded: yes|Paired: yes" 60 || log "bluetoothctl showed no bond (yet)"
wait "$pair_pid" || fail "blue pair with bluetoothd failed: $(tail -1 "$OUT/pair.log")"
expect_output pair '"bonded" *: *true'
expect_output pair '"usedExistingBond" *: *true'
start pair-again "$BLUE" pair --hci hci1 vm-peripheral --bonds /tmp/bonds --timeout 30 --json
btctl_expect "Connected: yes" 30 > /dev/null
wait "$pair_again_pid" || fail "blue pair (second run) failed: $(tail -1 "$OUT/pair-again.log")"
expect_output pair-again '"usedExistingBond" *: *true'
