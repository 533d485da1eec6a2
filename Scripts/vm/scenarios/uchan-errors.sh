# What the kernel requires of the HCI user channel, each refusal one clear line and exit 69: an adapter that does
# not exist; a user without CAP_NET_ADMIN; an adapter bluetoothd has powered (EBUSY, with what to do). Once the
# adapter is down our host takes it; while we hold it, bluetoothd cannot power it; when we let go, it can again.
start_btmon
start_btvirt -L -l1
wait_for_controllers 0
step_fails no-adapter 30 69 "$BLUE" scan --hci hci7 --timeout 1
expect_output no-adapter "no adapter hci7"
step_fails no-capability 30 69 setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$BLUE" scan --hci hci0 --timeout 1
expect_output no-capability "CAP_NET_ADMIN"
start_bluez
wait_for_adapter 0
start_bluetoothctl
btctl "power on"
btctl_expect "Changing power on succeeded" 30 || fail "bluetoothd could not power hci0 on"
step_fails adapter-up 30 69 "$BLUE" scan --hci hci0 --timeout 1
expect_output adapter-up "in use by the kernel's Bluetooth stack"
expect_output adapter-up "btmgmt --index 0 power off"
btctl "power off"
btctl_expect "Changing power off succeeded" 30 || fail "bluetoothd could not power hci0 off"
# While our host holds hci0 the kernel withdraws it from bluetoothd (mgmt Index Removed); when we let go it returns.
btctl_mark=$(btctl_lines | wc -l)
start scan "$BLUE" scan --hci hci0 --timeout 60
btctl_expect "DEL\] Controller" 30 || fail "bluetoothd still lists hci0 while our host holds it"
btctl "power on"
btctl_expect "No default controller|not available|Failed" 20 || fail "bluetoothd powered hci0 while our host held it"
# The mark before the stop: the controller can come back before `wait` returns.
btctl_mark=$(btctl_lines | wc -l)
kill -TERM "$scan_pid"
wait "$scan_pid" || fail "blue scan on hci0 did not stop cleanly"
btctl_expect "NEW\] Controller" 30 || fail "hci0 did not come back to bluetoothd"
btctl "select $(adapter_address 0)"
btctl "power on"
btctl_expect "Changing power on succeeded" 30 || fail "bluetoothd could not take hci0 back"
