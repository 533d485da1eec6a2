#!/usr/bin/env bash
# vhci-bluez's air as a sniffer captured it (`blue air --vhci --vhci --sniff`), read on the host by Wireshark's tshark:
# the Linux kernel's connection to `blue serve` followed from its CONNECT_IND, and in its data PDUs bluetoothd's
# discovery, the read of Body Sensor Location (01), the write to the Control Point, the notifications; nothing
# malformed. Usage: vhci-bluez.sh RESULTS_DIR (run by Scripts/vm-test.sh after the scenario passed).
set -euo pipefail
capture=$1/air.pcap
[ -s "$capture" ] || { echo "no capture at $capture"; exit 1; }
command -v tshark > /dev/null || { echo "tshark is not installed (Scripts/vm-test.sh installs it)"; exit 1; }
fields=$(tshark -r "$capture" -T fields -E occurrence=a -E aggregator=, -e btle.advertising_header.pdu_type \
    -e btatt.opcode -e btatt.body_sensor_location -e _ws.malformed 2> /dev/null)
packets=$(printf '%s\n' "$fields" | wc -l)
echo "tshark read $packets packets from $capture"
malformed=$(printf '%s\n' "$fields" | awk -F'\t' '$4 != ""' | wc -l)
(( malformed == 0 )) || { echo "$malformed malformed packets:"; printf '%s\n' "$fields" | awk -F'\t' '$4 != ""' | head; exit 1; }
cut -f1 <<< "$fields" | grep -x "0x05" > /dev/null || { echo "no CONNECT_IND"; exit 1; }
opcodes=$(cut -f2 <<< "$fields" | tr ',' '\n' | sort -u | tr '\n' ' ')
echo "ATT opcodes: $opcodes"
for opcode in 0x10 0x08 0x0a 0x0b 0x12 0x13 0x1b; do
    grep -qw -- "$opcode" <<< "$opcodes" || { echo "no ATT PDU with opcode $opcode"; exit 1; }
done
# The Read Response carried Body Sensor Location = 01 (Chest), as Wireshark reads characteristic 2A38.
awk -F'\t' '$2 == "0x0b" && $3 == "0x01"' <<< "$fields" | grep -q . || { echo "no Read Response of Body Sensor Location 01"; exit 1; }
echo "the kernel's connection over our air: CONNECT_IND, discovery, read, write, notifications, nothing malformed"
