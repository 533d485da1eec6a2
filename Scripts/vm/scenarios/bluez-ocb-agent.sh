# OpenCoreBluetooth's own pairing agent on bluetoothd (issue 16, OCB_BLUEZ_AGENT): seed 001's central with
# OCB_HCI=bluez:hci0 OCB_BLUEZ_AGENT=DisplayYesNo against seed 001's service served by `blue serve` on hci1 with
# encrypted read and write permissions and a DisplayYesNo IO capability. The central's write is refused with
# Insufficient Encryption; bluetoothd raises the link's security, the pairing's Numeric Comparison reaches our
# agent (the default agent while the program runs), which confirms it, and the bond is stored. bluetoothd 5.66 on
# Linux 6.1 then writes its retry while the kernel still secures the link (ENOTCONN) and the request times out
# after 30 s (found here; README says so): the first run's write fails. The second run connects with the bond,
# bluetoothd encrypts at once, and the write goes through.
central=${OCB_REPO:-}/.build-static/release/Seed001Central
[ -x "$central" ] || fail "no static Seed001Central at $central (Scripts/vm-test.sh builds it)"
cat > /tmp/encrypted-blueear.json <<'JSON'
{ "name": "Peripheral - iOS", "services": [ { "uuid": "0CDBE648-EED0-11E6-BC64-92361F002671", "characteristics": [ {
  "uuid": "199AB74C-EED0-11E6-BC64-92361F002672", "properties": ["read", "notify", "write"],
  "permissions": ["read-encrypted", "write-encrypted"],
  "value": { "plist": { "Hello": "Darkness" } }, "onSubscribe": { "plist": { "Hello": "Darkness" } } } ] } ] }
JSON
start_btmon
start_btvirt -L -l2
wait_for_controllers 0 1
start serve "$BLUE" serve --hci hci1 /tmp/encrypted-blueear.json --io display-yes-no
wait_for "$OUT/serve.log" "^serving" 60 || fail "blue serve did not start on hci1"
bluez_with_powered_adapter 0
step seed001-central 200 env OCB_HCI=bluez:hci0 OCB_KNOWN_PEERS=off OCB_BLUEZ_AGENT=DisplayYesNo "$central" --timeout 180
expect_output seed001-central 'opencorebluetooth.bluez: pairing with .*: numeric comparison [0-9]{6} \(confirmed\)'
expect_output seed001-central 'didDisconnectPeripheral'
wait_for "$OUT/serve.log" '^paired: .*Numeric Comparison' 20 || fail "blue serve did not pair by numeric comparison"
step seed001-bonded 200 env OCB_HCI=bluez:hci0 OCB_KNOWN_PEERS=off OCB_BLUEZ_AGENT=DisplayYesNo "$central" --timeout 180
expect_output seed001-bonded 'didDisconnectPeripheral'
grep -q 'numeric comparison' "$OUT/seed001-bonded.log" && fail "the second run paired again instead of using the bond"
wait_for "$OUT/serve.log" 'write .* by ' 20 || fail "blue serve did not receive the central's write"
log "bluetoothd paired through OpenCoreBluetooth's agent and the encrypted write went through"
