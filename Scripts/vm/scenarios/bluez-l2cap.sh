# L2CAP credit-based channels through the kernel's L2CAP sockets on bluetoothd's links (issue 16): the L2CAPEcho
# CoreBluetooth example in both roles. 1. The peripheral on our host (hci1, user channel) publishes a channel; the
# central with OCB_HCI=bluez:hci0 connects through bluetoothd and opens the channel with a kernel socket (connect),
# sends a line, gets the echo. 2. The peripheral with OCB_HCI=bluez:hci0 publishes on a listening kernel socket
# (the kernel picks the PSM); the central on our host opens it and gets the echo.
echo_program=${OCB_REPO:-}/.build-static/release/L2CAPEcho
[ -x "$echo_program" ] || fail "no static L2CAPEcho at $echo_program (Scripts/vm-test.sh builds it)"
start_btmon
start_btvirt -L -l2
wait_for_controllers 0 1
bluez_with_powered_adapter 0

start echo-peripheral env OCB_HCI=hci1 "$echo_program" --role peripheral --once --timeout 150
wait_for "$OUT/echo-peripheral.log" "^ready PSM" 60 || fail "the peripheral on our host did not publish"
step echo-central-bluez 150 env OCB_HCI=bluez:hci0 OCB_KNOWN_PEERS=off "$echo_program" --role central --timeout 120
expect_output echo-central-bluez '^received echo: hello over L2CAP'
wait "$echo_peripheral_pid" || fail "the peripheral on our host did not echo"

start echo-peripheral-bluez env OCB_HCI=bluez:hci0 "$echo_program" --role peripheral --once --timeout 150
wait_for "$OUT/echo-peripheral-bluez.log" "^ready PSM" 60 || fail "the peripheral on bluetoothd did not publish"
step echo-central 150 env OCB_HCI=hci1 OCB_KNOWN_PEERS=off "$echo_program" --role central --text "through the kernel" --timeout 120
expect_output echo-central '^received echo: through the kernel'
wait "$echo_peripheral_bluez_pid" || fail "the peripheral on bluetoothd did not echo"
log "L2CAP channels through kernel sockets on bluetoothd's links, both roles, against our host"
