# `blue air --vhci --vhci`: two controllers of our virtual air under the kernel (hci0, hci1). bluetoothd takes them;
# bluetoothctl powers hci0, scans, finds `blue serve` (another device on the same air), connects, lists, reads,
# writes and subscribes. Both adapters disappear when the hub stops. The hub sniffs its air (--sniff): the host
# checks the capture with tshark afterwards (Scripts/vm/host-checks/vhci-bluez.sh).
start_btmon
start air "$BLUE" air --vhci --vhci --socket /tmp/air.sock --stats-interval 0 --sniff "$OUT/air.pcap"
wait_for "$OUT/air.log" "vhci: the kernel's hci1" 30 || fail "blue air --vhci --vhci did not give two adapters"
wait_for_controllers 0 1
start serve "$BLUE" serve --hci air:/tmp/air.sock --profile heart-rate
wait_for "$OUT/serve.log" "^serving" 60 || fail "blue serve did not start on the air"
start_bluez
wait_for_adapter 0
start_bluetoothctl
btctl "select $(adapter_address 0)"
btctl "power on"
btctl_expect "Changing power on succeeded" 30 || fail "bluetoothd could not power hci0 (our controller) on"
address=$(bluez_find_device "blue heart rate") || fail "bluetoothctl did not find blue serve"
log "bluetoothctl found blue serve at $address"
bluez_central_heart_rate "$address" "$OUT/serve.log"
# The hub stops: the kernel's adapter goes with it.
kill -TERM "$air_pid"
wait "$air_pid" || fail "blue air did not stop cleanly"
for _ in $(seq 50); do [ -e /sys/class/bluetooth/hci0 ] || [ -e /sys/class/bluetooth/hci1 ] || break; sleep 0.1; done
[ ! -e /sys/class/bluetooth/hci0 ] && [ ! -e /sys/class/bluetooth/hci1 ] || fail "an adapter is still there after the hub stopped"
log "hci0 and hci1 left with the hub"
