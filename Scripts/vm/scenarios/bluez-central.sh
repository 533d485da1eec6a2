# BlueZ as the central: bluetoothd on kernel controller hci0 (btvirt), `blue serve` on hci1 through the HCI user
# channel. bluetoothctl scans, finds it by name, connects, lists its attributes, reads, writes and subscribes.
# `btvirt -L`: LE-only controllers without extended advertising, so that the kernel (which uses the extended
# commands when a controller has them) and our host (legacy commands) meet: btdev 5.66 does not bridge the two.
start_btmon
start_btvirt -L -l2
wait_for_controllers 0 1
start serve "$BLUE" serve --hci hci1 --profile heart-rate
wait_for "$OUT/serve.log" "^serving" 60 || fail "blue serve did not start on hci1"
bluez_with_powered_adapter 0
address=$(bluez_find_device "blue heart rate") || fail "bluetoothctl did not find blue serve"
log "bluetoothctl found blue serve at $address"
bluez_central_heart_rate "$address" "$OUT/serve.log"
