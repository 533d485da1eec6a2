# Link-layer privacy driven by the Linux kernel on our controller (issue 15 item 4): bluetoothd turns on the
# kernel's experimental LL privacy (KernelExperimental = 15c0a148-..., "rpa_resolution") with Privacy = device, so
# the kernel itself loads our controller's resolving list and enables address resolution. `blue serve --privacy` on
# the same air advertises with resolvable private addresses from its own controller. bluetoothctl pairs with it
# (the IRKs are exchanged), disconnects and connects again by the identity address: the kernel puts the bond in our
# controller's resolving list, our controller resolves the server's RPA, and the LE Enhanced Connection Complete
# reports the identity (address type 0x02/0x03). The capture btmon writes must show the kernel's resolving-list commands.
start_btmon
start air "$BLUE" air --vhci --socket /tmp/air.sock --stats-interval 0
wait_for "$OUT/air.log" "vhci: the kernel's hci0" 30 || fail "blue air --vhci did not give an adapter"
wait_for_controllers 0
start serve "$BLUE" serve --hci air:/tmp/air.sock --profile heart-rate --privacy --rpa-interval 30
wait_for "$OUT/serve.log" "^serving .*resolvable private address" 60 || fail "blue serve --privacy did not start on the air"
rpa=$(sed -n 's/^serving .* as \(\([0-9A-F]\{2\}:\)\{5\}[0-9A-F]\{2\}\) (resolvable private address).*/\1/p' "$OUT/serve.log")
log "blue serve advertises as $rpa"
BLUEZ_GENERAL=$'Privacy = device\nKernelExperimental = 15c0a148-c273-11ea-b3de-0242ac130004'
bluez_with_powered_adapter 0
grep -q "15c0a148" "$OUT/bluetoothd.log" && log "bluetoothd: $(grep -m1 -i "15c0a148" "$OUT/bluetoothd.log" | cut -c1-160)"
address=$(bluez_find_device "blue heart rate") || fail "bluetoothctl did not find blue serve"
log "bluetoothctl found blue serve at $address"
[ "$address" = "$rpa" ] || log "blue serve's address changed since it started: $rpa, now $address"

btctl "pair $address"
btctl_expect "Pairing successful" 60 || fail "bluetoothctl could not pair with blue serve"
wait_for "$OUT/serve.log" "^paired: " 20 || fail "blue serve did not report the pairing"
# The server's IRK and identity arrived: bluetoothd renames the device to the identity address.
btctl_expect "Device ([0-9A-F]{2}:){5}[0-9A-F]{2} Paired: yes" 20 || fail "bluetoothctl did not report the bond"
identity=$(btctl_lines | grep -oE "Device ([0-9A-F]{2}:){5}[0-9A-F]{2} Paired: yes" | tail -1 | cut -d' ' -f2)
[ "$identity" != "$address" ] || fail "no identity address came with the bond (still $address)"
log "blue serve's identity: $identity"
btctl "disconnect $identity"
btctl_expect "Connected: no|Successful disconnected" 20 || fail "no disconnection"

# Again by identity: the kernel loads the bond into our controller's resolving list; our controller resolves the
# server's current RPA.
btctl "connect $identity"
btctl_expect "Connection successful" 60 || fail "bluetoothctl could not connect to $identity again"
wait_for "$OUT/serve.log" "^encrypted: " 30 || fail "the reconnection was not encrypted with the bond"
btctl "disconnect $identity"
btctl_expect "Connected: no|Successful disconnected" 20 || fail "no disconnection"
sleep 0.5

# btmon's text for people (btmon 5.66 can crash in its ATT decoder on such captures: not an assertion), and our
# reader of the same capture (`blue snoop show`, checked against btmon's reading in KernelMonitorCaptureTests).
btmon -r "$OUT/btmon.btsnoop" > "$OUT/btmon.txt" 2>&1 || log "btmon -r stopped with exit status $?"
"$BLUE" snoop show "$OUT/btmon.btsnoop" > "$OUT/capture.txt" 2>&1 || fail "blue snoop show could not read btmon's capture"
grep -qE "^< \[hci0\] LE Add Device To Resolving List" "$OUT/capture.txt" \
    || fail "the kernel never added a device to our controller's resolving list"
grep -q "Address_Resolution_Enable: Enabled (0x01)" "$OUT/capture.txt" || fail "the kernel never enabled address resolution in our controller"
grep -A12 "LE Enhanced Connection Complete" "$OUT/capture.txt" | grep -E "Peer_Address_Type: (Public|Random \(static\)) Identity Address" > /dev/null \
    || fail "no LE Enhanced Connection Complete named the peer by its resolved identity"
log "the kernel drove our controller's resolving list; the reconnection's peer was resolved to its identity"
