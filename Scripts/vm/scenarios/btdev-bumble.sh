# Bumble's host as our peer on BlueZ's emulator (`btvirt -s`, H4 on /tmp/bt-server-le; each connection a new btdev
# controller): the same Bumble peers as the Swift interop suites (Interop/peers, from the repository's .venv).
# Bumble as the GATT server: `blue explore` reads its database (500 characteristics and more) and `blue subscribe`
# gets its notifications; Bumble as the pairing peripheral: `blue pair` bonds and reconnects encrypted; Bumble as
# the central: it pairs with `blue serve` and reconnects encrypted with the bond.
python=${OCB_REPO:-}/.venv/bin/python
peers=${OCB_REPO:-}/Interop/peers
[ -x "$python" ] && "$python" -c "import bumble" 2> /dev/null \
    || fail "no Bumble in ${OCB_REPO:-?}/.venv (Scripts/setup-interop.sh installs it)"
notify_uuid=$("$python" -c "import sys; sys.path.insert(0, '$peers'); import interop_gatt as g; print(g.NOTIFY)")
start_btmon
start_btvirt -s
for _ in $(seq 50); do [ -S /tmp/bt-server-le ] && break; sleep 0.1; done
[ -S /tmp/bt-server-le ] || fail "btvirt -s did not create /tmp/bt-server-le"
hci=unix:/tmp/bt-server-le

# 1. Bumble's GATT server (it ends when the central disconnects: one run per command).
start bumble-server "$python" "$peers/bumble_gatt_server.py" --transport "$hci" --address F0:0C:B1:00:00:01 \
    --name OCB-Bumble --timeout 200
wait_for "$OUT/bumble-server.log" '"event": "ready"' 120 || fail "Bumble's GATT server did not start"
step explore 180 "$BLUE" explore --hci "$hci" OCB-Bumble --timeout 30
expect_output explore "interop read value"
wait "$bumble_server_pid" || fail "Bumble's GATT server failed: $(tail -2 "$OUT/bumble-server.log")"
start bumble-server-notify "$python" "$peers/bumble_gatt_server.py" --transport "$hci" --address F0:0C:B1:00:00:01 \
    --name OCB-Bumble --timeout 200
wait_for "$OUT/bumble-server-notify.log" '"event": "ready"' 120 || fail "Bumble's GATT server did not start again"
step subscribe 180 "$BLUE" subscribe --hci "$hci" OCB-Bumble "$notify_uuid" --count 3 --timeout 60
expect_output subscribe "a0 a0 a0"
expect_output subscribe "a2 a2 a2"

# 2. Bumble as the pairing peripheral (two connections: pairing, then encryption with the bond).
start bumble-pairing "$python" "$peers/pairing_peer.py" --transport "$hci" --address F0:0C:B1:00:00:02 \
    --role peripheral --method jw --connections 2 --timeout 200
wait_for "$OUT/bumble-pairing.log" '"event": "ready"' 120 || fail "Bumble's pairing peripheral did not start"
step pair 180 "$BLUE" pair --hci "$hci" OCB-Pairing --method jw --reconnect --bonds /tmp/bonds --timeout 30 --json
expect_output pair '"bonded" *: *true'
expect_output pair '"usedExistingBond" *: *true'

# 3. Bumble as the central: pairs with blue serve, then encrypts with the bond on a second connection.
start serve "$BLUE" serve --hci "$hci" --profile heart-rate
wait_for "$OUT/serve.log" "^serving" 60 || fail "blue serve did not start on btdev"
address=$(sed -n 's/^serving .* as \([0-9A-F:]\{17\}\).*/\1/p' "$OUT/serve.log" | head -1)
step bumble-central 200 "$python" "$peers/pairing_peer.py" --transport "$hci" --address F0:0C:B1:00:00:03 \
    --role central --peer "$address" --method jw --connections 2 --timeout 150
expect_output bumble-central '"event": "done"'
wait_for "$OUT/serve.log" "^paired: " 10 || fail "blue serve did not report the pairing"
(( $(grep -c "^encrypted: " "$OUT/serve.log") >= 2 )) || fail "the second connection was not encrypted"
(( $(grep -c "^paired: " "$OUT/serve.log") == 1 )) || fail "the second connection paired again"
