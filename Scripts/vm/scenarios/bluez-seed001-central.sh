# bluetoothd as OpenCoreBluetooth's backend (issue 16): seed 001's macOS central, unchanged but for the import, with
# OCB_HCI=bluez:hci0 (bluetoothd on kernel controller hci0, btvirt), against `blue serve --profile blueear` (seed
# 001's peripheral) on hci1 through the HCI user channel. Through Adapter1, Device1 and the GATT objects it
# discovers the peripheral, connects, subscribes, receives {"Hello": "Darkness"}, writes {"Yo": "Lo"} (the server
# prints it) and disconnects.
central=${OCB_REPO:-}/.build-static/release/Seed001Central
[ -x "$central" ] || fail "no static Seed001Central at $central (Scripts/vm-test.sh builds it)"
start_btmon
start_btvirt -L -l2
wait_for_controllers 0 1
start serve "$BLUE" serve --hci hci1 --profile blueear
wait_for "$OUT/serve.log" "^serving" 60 || fail "blue serve did not start on hci1"
bluez_with_powered_adapter 0
step seed001-central 200 env OCB_HCI=bluez:hci0 OCB_KNOWN_PEERS=off "$central" --timeout 180
expect_output seed001-central 'Value read is: \["Hello": "Darkness"\]'
expect_output seed001-central 'didDisconnectPeripheral'
wait_for "$OUT/serve.log" 'write .* by ' 20 || fail "blue serve did not receive the central's write"
log "seed 001's central on bluetoothd exchanged both property lists with blue serve"
