"""btsnoop captures written by `blue snoop make` are read by Wireshark's tshark (code we did not write), and a capture
re-written by Wireshark's editcap is read back by `blue snoop show`. tshark's field decoding must agree with ours."""
import json
import os
import shutil
import subprocess

import pytest
from bumble import att, hci, l2cap, smp

from conftest import flatten, run_blue

def acl(cid, pdu, pb_flag=2):
    data = bytes(l2cap.L2CAP_PDU(cid, bytes(pdu)))
    return hci.HCI_AclDataPacket(connection_handle=0x40, pb_flag=pb_flag, bc_flag=0, data_total_length=len(data), data=data)


PACKETS = [
    # (H4 bytes, expected tshark field checks, text our dissection must contain)
    (bytes(hci.HCI_Reset_Command()), {"bthci_cmd.opcode": "0x0c03"}, "Reset"),
    (bytes(hci.HCI_Command_Complete_Event(num_hci_command_packets=1, command_opcode=hci.HCI_RESET_COMMAND,
                                          return_parameters=bytes([0]))),
     {"bthci_evt.code": "0x0e"}, "Command Complete"),
    (bytes(hci.HCI_LE_Set_Scan_Enable_Command(le_scan_enable=1, filter_duplicates=0)), {"bthci_cmd.opcode": "0x200c"},
     "LE Set Scan Enable"),
    (bytes(acl(0x0004, att.ATT_Exchange_MTU_Request(client_rx_mtu=247), pb_flag=0)),
     {"btatt.opcode": "0x02", "btatt.client_rx_mtu": "247"}, "Exchange MTU Request"),
    (bytes(acl(0x0004, att.ATT_Read_By_Type_Request(starting_handle=1, ending_handle=0xFFFF,
                                                    attribute_type=att.UUID.from_16_bits(0x2803)))),
     {"btatt.opcode": "0x08", "btatt.starting_handle": "0x0001"}, "Read By Type Request"),
    (bytes(acl(0x0006, smp.SMP_Pairing_Request_Command(
        io_capability=3, oob_data_flag=0, auth_req=0x09, maximum_encryption_key_size=16,
        initiator_key_distribution=0x0D, responder_key_distribution=0x0F))),
     {"btsmp.opcode": "0x01"}, "Pairing Request"),
]


@pytest.fixture(scope="module")
def tshark():
    path = shutil.which("tshark")
    assert path, "tshark is required (Scripts/setup-interop.sh installs it)"
    return path


def tshark_fields(capture, fields):
    args = ["tshark", "-r", capture, "-T", "fields", "-E", "separator=|"]
    for field in fields:
        args += ["-e", field]
    result = subprocess.run(args, capture_output=True, text=True, timeout=60, check=True)
    return [line.split("|") for line in result.stdout.splitlines()]


def test_tshark_reads_what_blue_writes(tmp_path, tshark):
    capture = str(tmp_path / "made.btsnoop")
    run_blue("snoop", "make", capture, stdin="".join(packet.hex() + "\n" for packet, _, _ in PACKETS))
    all_fields = sorted({field for _, checks, _ in PACKETS for field in checks})
    rows = tshark_fields(capture, ["frame.number", "hci_h4.direction"] + all_fields)
    assert len(rows) == len(PACKETS)
    for row, (packet, checks, _) in zip(rows, PACKETS):
        values = dict(zip(["frame.number", "hci_h4.direction"] + all_fields, row))
        expected_direction = "0x01" if packet[0] == 0x04 else "0x00"
        assert values["hci_h4.direction"] == expected_direction, values
        for field, expected in checks.items():
            assert values[field].lower() == expected, f"{field}: tshark says {values[field]!r}, expected {expected!r}"


def test_blue_reads_what_wireshark_writes(tmp_path, tshark):
    made = str(tmp_path / "made.btsnoop")
    pcapng = str(tmp_path / "converted.pcapng")
    back = str(tmp_path / "wireshark.btsnoop")
    run_blue("snoop", "make", made, stdin="".join(packet.hex() + "\n" for packet, _, _ in PACKETS))
    # Wireshark's own writer: btsnoop -> pcapng -> btsnoop (its btsnoop writer, not ours).
    subprocess.run(["editcap", "-F", "pcapng", made, pcapng], check=True, capture_output=True)
    subprocess.run(["editcap", "-F", "btsnoop", pcapng, back], check=True, capture_output=True)
    result = run_blue("snoop", "show", back, "--json")
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(records) == len(PACKETS)
    for record, (packet, _, text) in zip(records, PACKETS):
        assert bytes.fromhex(record["bytes"]) == packet
        assert record["direction"] == ("received" if packet[0] == 0x04 else "sent")
        assert any(text in line for line in flatten(record["dissection"])), (text, record)
    shown = run_blue("snoop", "show", back).stdout
    assert "< " in shown and "> " in shown and "#6 " in shown


def test_truncated_capture_is_reported_after_the_good_records(tmp_path):
    made = tmp_path / "made.btsnoop"
    run_blue("snoop", "make", str(made), stdin="".join(packet.hex() + "\n" for packet, _, _ in PACKETS))
    data = made.read_bytes()
    cut = tmp_path / "cut.btsnoop"
    cut.write_bytes(data[:-3])
    result = run_blue("snoop", "show", str(cut), check=False)
    assert result.returncode == 1
    assert "#5 " in result.stdout and "#6 " not in result.stdout
    assert "stopped after 5 records" in result.stderr
    garbage = tmp_path / "garbage.btsnoop"
    garbage.write_bytes(b"not a capture at all")
    result = run_blue("snoop", "show", str(garbage), check=False)
    assert result.returncode == 1 and "not a btsnoop capture" in result.stderr
