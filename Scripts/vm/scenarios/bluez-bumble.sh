# Bumble's GATT server as the peer of `blue --hci bluez:hci0` (issue 16): bluetoothd on kernel controller hci0
# (btvirt -L) and Bumble's host on a btdev controller of the same emulator (btvirt -s, H4 on /tmp/bt-server-le).
# Through bluetoothd, `blue explore` reads Bumble's whole database (500 characteristics and more: each value a
# ReadValue). One Bumble run only (it takes over a minute to start under emulation; notifications through
# bluetoothd are checked against our host in bluez-blue-commands).
python=${OCB_REPO:-}/.venv/bin/python
peers=${OCB_REPO:-}/Interop/peers
[ -x "$python" ] && "$python" -c "import bumble" 2> /dev/null \
    || fail "no Bumble in ${OCB_REPO:-?}/.venv (Scripts/setup-interop.sh installs it)"
start_btmon
start_btvirt -L -l1 -s
for _ in $(seq 50); do [ -S /tmp/bt-server-le ] && break; sleep 0.1; done
[ -S /tmp/bt-server-le ] || fail "btvirt -s did not create /tmp/bt-server-le"
wait_for_controllers 0
bluez_with_powered_adapter 0

start bumble-server "$python" "$peers/bumble_gatt_server.py" --transport unix:/tmp/bt-server-le --address F0:0C:B1:00:00:01 \
    --name OCB-Bumble --timeout 300
wait_for "$OUT/bumble-server.log" '"event": "ready"' 120 || fail "Bumble's GATT server did not start"
step explore 200 "$BLUE" explore --hci bluez:hci0 OCB-Bumble --timeout 60
expect_output explore "interop read value"
wait "$bumble_server_pid" || fail "Bumble's GATT server failed: $(tail -2 "$OUT/bumble-server.log")"
log "blue through bluetoothd explored Bumble's GATT server"
