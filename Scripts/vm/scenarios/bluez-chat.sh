# `blue chat` (seed 002's transfer on OpenCoreBluetooth) with one end through bluetoothd (issue 16): 4 KiB of text
# sent in MTU-sized notifications, with updateValue's back-pressure. 1. The receiver (central) on bluez:hci0, the
# sender (peripheral) on our host on hci1. 2. The sender on bluez:hci0 (notifications through the socket bluetoothd
# acquires), the receiver on hci1. The text must arrive byte-identical both times.
start_btmon
start_btvirt -L -l2
wait_for_controllers 0 1
bluez_with_powered_adapter 0
head -c 3072 /dev/urandom | base64 -w 64 > /tmp/chat.txt
bytes=$(wc -c < /tmp/chat.txt)

start chat-receive-bluez bash -c "OCB_KNOWN_PEERS=off '$BLUE' chat receive --hci bluez:hci0 --timeout 150 > /tmp/received-1.txt"
sleep 3
step chat-send 180 env OCB_KNOWN_PEERS=off "$BLUE" chat send --hci hci1 --file /tmp/chat.txt --quiet --timeout 150
wait "$chat_receive_bluez_pid" || fail "the receiver on bluetoothd failed: $(tail -2 "$OUT/chat-receive-bluez.log")"
cmp /tmp/received-1.txt /tmp/chat.txt || fail "the text received through bluetoothd differs"

start chat-send-bluez env OCB_KNOWN_PEERS=off "$BLUE" chat send --hci bluez:hci0 --file /tmp/chat.txt --quiet --timeout 150
sleep 3
step chat-receive 180 bash -c "OCB_KNOWN_PEERS=off '$BLUE' chat receive --hci hci1 --timeout 150 > /tmp/received-2.txt"
wait "$chat_send_bluez_pid" || fail "the sender on bluetoothd failed: $(tail -2 "$OUT/chat-send-bluez.log")"
cmp /tmp/received-2.txt /tmp/chat.txt || fail "the text sent through bluetoothd differs"
log "blue chat moved $bytes bytes each way with one end on bluetoothd"
