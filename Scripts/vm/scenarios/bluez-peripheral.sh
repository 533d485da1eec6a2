# BlueZ as the peripheral: bluetoothctl on hci0 advertises a name and registers a GATT service (through bluetoothd's
# GattManager1 and LEAdvertisingManager1); `blue scan`, `explore`, `read`, `write` and `subscribe` on hci1 (HCI user
# channel) find and use it.
start_btmon
start_btvirt -L -l2
wait_for_controllers 0 1
bluez_with_powered_adapter 0
service=12345678-1234-5678-1234-56789abcdef0
characteristic=12345678-1234-5678-1234-56789abcdef1
btctl "gatt.register-service $service"
btctl_expect "Primary \\(yes/no\\)" 10 || fail "no service prompt"
btctl_answer "yes"
btctl_expect "UUID: $service|service0" 10 || fail "the service was not registered"
btctl "gatt.register-characteristic $characteristic read,write,notify"
btctl_expect "Enter value" 10 || fail "no characteristic value prompt"
btctl "0x42 0x6c 0x75 0x65"
btctl_expect "chrc0|UUID: $characteristic" 10 || fail "the characteristic was not registered"
btctl "gatt.register-application"
btctl_expect "Application registered" 20 || fail "bluetoothd did not register the GATT application"
btctl "advertise.name vm-peripheral"
btctl "advertise.discoverable on"
btctl "advertise.uuids $service"
btctl "advertise on"
btctl_expect "Advertising object registered" 20 || fail "bluetoothd did not register the advertisement"
step scan 60 "$BLUE" scan --hci hci1 --timeout 6
expect_output scan "vm-peripheral"
step explore 90 "$BLUE" explore --hci hci1 vm-peripheral --timeout 20
expect_output explore "$characteristic|${characteristic^^}"
step read 60 "$BLUE" read --hci hci1 vm-peripheral "$characteristic" --timeout 20
expect_output read "42 6c 75 65|Blue"
step write 60 "$BLUE" write --hci hci1 vm-peripheral "$characteristic" 0102 --timeout 20
btctl_expect "Write Value|01 02" 20 || fail "bluetoothctl did not see the write"
# Subscribing reaches bluetoothctl's application (AcquireNotify). bluetoothctl 5.66 cannot write its own (local)
# attributes, so the notifications come from BlueZ's example GATT server (bluez-test-scripts: a Heart Rate service
# whose measurement it notifies every second), registered with the same bluetoothd.
btctl_mark=$(btctl_lines | wc -l)
start subscribe-app "$BLUE" subscribe --hci hci1 vm-peripheral "$characteristic" --timeout 20
btctl_expect "Notify sock acquired|Notifying: yes" 60 || fail "blue subscribe's CCCD write did not reach bluetoothctl's application"
wait "$subscribe_app_pid"
# The example registers with the first adapter bluetoothd lists, which may be hci1 (ours, down, listed again
# whenever a blue command lets go of it): point it at hci0.
start gatt-server python3 -u -c '
import runpy
example = runpy.run_path("/usr/share/doc/bluez-test-scripts/examples/example-gatt-server", run_name="example")
example["main"].__globals__["find_adapter"] = lambda bus: "/org/bluez/hci0"
example["main"]()
'
wait_for "$OUT/gatt-server.log" "GATT application registered" 60 || fail "BlueZ's example GATT server did not register"
step subscribe 90 "$BLUE" subscribe --hci hci1 vm-peripheral 180D/2A37 --count 2 --timeout 40
(( $(grep -c "bpm" "$OUT/subscribe.log") >= 2 )) || fail "fewer than 2 Heart Rate Measurements from bluetoothd"
