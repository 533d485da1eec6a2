# Pairing and a bonded reconnect through the kernel's user channel: `blue pair` (LE Secure Connections Just Works)
# from hci1 with `blue serve` on hci0, reconnecting encrypted with the bond; a second run finds the stored bond and
# encrypts without pairing. Then a server that asks for an authenticated link (display-only, fixed passkey):
# passkey entry replaces our bond with an authenticated one.
start_btmon
start_btvirt -l2
wait_for_controllers 0 1
start serve "$BLUE" serve --hci hci0 --profile heart-rate
wait_for "$OUT/serve.log" "^serving" 60 || fail "blue serve did not start on hci0"
step pair 120 "$BLUE" pair --hci hci1 "blue heart rate" --method jw --reconnect --bonds /tmp/bonds --timeout 20 --json
expect_output pair '"bonded" *: *true'
expect_output pair '"usedExistingBond" *: *true'
step pair-again 90 "$BLUE" pair --hci hci1 "blue heart rate" --bonds /tmp/bonds --timeout 20 --json
expect_output pair-again '"usedExistingBond" *: *true'
kill -TERM "$serve_pid"
wait "$serve_pid" || fail "blue serve did not stop cleanly on SIGTERM"
start serve-passkey "$BLUE" serve --hci hci0 --profile heart-rate --io display-only --passkey 123456
wait_for "$OUT/serve-passkey.log" "^serving" 60 || fail "blue serve did not start again on hci0"
step pair-passkey 120 "$BLUE" pair --hci hci1 "blue heart rate" --method passkey --passkey 123456 --repair \
    --bonds /tmp/bonds --timeout 20 --json
expect_output pair-passkey '"authenticated" *: *true'
step bonds 10 "$BLUE" bonds list --directory /tmp/bonds
expect_output bonds "authenticated|MITM|mitm"
