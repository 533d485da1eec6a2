# bluetoothd as OpenCoreBluetooth's backend, peripheral role (issue 16): seed 001's iOS peripheral, unchanged but for
# the import, with OCB_HCI=bluez:hci0: its service is a GATT application registered with bluetoothd
# (GattManager1.RegisterApplication) and its advertising an LEAdvertisement1 object. Seed 001's central on hci1
# through the HCI user channel (our own host) finds it, subscribes, receives {"Hello": "Darkness"} notified through
# bluetoothd and writes {"Yo": "Lo"}, which the seed's peripheral receives through WriteValue.
peripheral=${OCB_REPO:-}/.build-static/release/Seed001Peripheral
central=${OCB_REPO:-}/.build-static/release/Seed001Central
[ -x "$peripheral" ] || fail "no static Seed001Peripheral at $peripheral (Scripts/vm-test.sh builds it)"
[ -x "$central" ] || fail "no static Seed001Central at $central (Scripts/vm-test.sh builds it)"
start_btmon
start_btvirt -L -l2
wait_for_controllers 0 1
bluez_with_powered_adapter 0
start peripheral env OCB_HCI=bluez:hci0 OCB_KNOWN_PEERS=off "$peripheral" --timeout 240
# The view controller's label (stderr, unbuffered; the seed's own prints reach stdout's file when it exits).
wait_for "$OUT/peripheral.log" "Start advertising" 90 || fail "seed 001's peripheral did not advertise through bluetoothd"
step seed001-central 200 env OCB_HCI=hci1 OCB_KNOWN_PEERS=off "$central" --timeout 180
expect_output seed001-central 'Value read is: \["Hello": "Darkness"\]'
wait_for "$OUT/peripheral.log" 'Exchange done' 30 || fail "seed 001's peripheral did not receive the write"
wait "$peripheral_pid" || fail "seed 001's peripheral did not exit 0"
grep -q 'Written value is: \["Yo": "Lo"\]' "$OUT/peripheral.log" || fail "seed 001's peripheral did not log the write"
log "seed 001's peripheral on bluetoothd exchanged both property lists with seed 001's central on our host"
