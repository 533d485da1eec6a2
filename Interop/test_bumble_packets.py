"""Packets built by Bumble (Google's Python Bluetooth stack, code we did not write) are decoded by `blue decode`:
the recognised PDU name and field values must match what Bumble built, and our encoder must reproduce Bumble's
bytes exactly from the decoded value."""
import re

import pytest
from bumble import att, core, hci, l2cap, smp
from bumble.core import UUID

from conftest import decode_many, flatten


def words(name):
    """'ATT_Read_By_Type_Request' -> 'read by type request' (for comparing PDU names)."""
    name = re.sub(r"^(HCI_LE_|HCI_|ATT_|SMP_|L2CAP_)", "", name)
    name = re.sub(r"_(Command|Event)$", "", name)
    return name.replace("_", " ").lower()


def check(kind, cases):
    results = decode_many(kind, [bytes(case[0]) for case in cases])
    for (packet, expected_name, expected_values), result in zip(cases, results):
        data = bytes(packet)
        assert result["kind"] == kind
        assert result.get("reencoded") == data.hex(), f"{expected_name}: re-encoded {result.get('reencoded')} != {data.hex()}"
        lines = "\n".join(flatten(result["dissection"])).lower()
        assert expected_name.lower() in lines, f"{expected_name!r} not in:\n{lines}"
        for value in expected_values:
            assert str(value).lower() in lines, f"{expected_name}: {value!r} not in:\n{lines}"


def test_att_pdus_built_by_bumble():
    u16 = UUID.from_16_bits
    long_uuid = UUID("0CDBE648-EED0-11E6-BC64-92361F002671")
    cases = [
        (att.ATT_Exchange_MTU_Request(client_rx_mtu=517), "Exchange MTU Request", ["517"]),
        (att.ATT_Exchange_MTU_Response(server_rx_mtu=247), "Exchange MTU Response", ["247"]),
        (att.ATT_Error_Response(request_opcode_in_error=0x0A, attribute_handle_in_error=0x0003,
                                error_code=att.ATT_INSUFFICIENT_ENCRYPTION_ERROR), "Error Response", ["Insufficient Encryption"]),
        (att.ATT_Find_Information_Request(starting_handle=1, ending_handle=0xFFFF), "Find Information Request", ["0xffff"]),
        (att.ATT_Read_By_Group_Type_Request(starting_handle=1, ending_handle=0xFFFF, attribute_group_type=u16(0x2800)),
         "Read By Group Type Request", ["Primary Service"]),
        (att.ATT_Read_By_Type_Request(starting_handle=1, ending_handle=0xFFFF, attribute_type=u16(0x2803)),
         "Read By Type Request", ["Characteristic"]),
        (att.ATT_Read_By_Type_Request(starting_handle=1, ending_handle=0x0010, attribute_type=long_uuid),
         "Read By Type Request", ["0CDBE648-EED0-11E6-BC64-92361F002671"]),
        (att.ATT_Find_By_Type_Value_Request(starting_handle=1, ending_handle=0xFFFF, attribute_type=UUID.from_16_bits(0x2800),
                                            attribute_value=bytes([0x0D, 0x18])), "Find By Type Value Request", ["0xffff"]),
        (att.ATT_Read_Request(attribute_handle=0x0021), "Read Request", ["0x0021"]),
        (att.ATT_Read_Blob_Request(attribute_handle=0x0021, value_offset=22), "Read Blob Request", ["22"]),
        (att.ATT_Read_Multiple_Request(set_of_handles=[3, 5, 7]), "Read Multiple Request", ["0x0007"]),
        (att.ATT_Write_Request(attribute_handle=0x0004, attribute_value=bytes([1, 0])), "Write Request", ["0x0004"]),
        (att.ATT_Write_Command(attribute_handle=0x0004, attribute_value=b"hello"), "Write Command", ["hello"]),
        (att.ATT_Prepare_Write_Request(attribute_handle=0x0005, value_offset=18, part_attribute_value=b"abc"),
         "Prepare Write Request", ["18"]),
        (att.ATT_Execute_Write_Request(flags=1), "Execute Write Request", []),
        (att.ATT_Handle_Value_Notification(attribute_handle=0x000E, attribute_value=bytes([0x06, 0x48])),
         "Handle Value Notification", ["0x000e"]),
        (att.ATT_Handle_Value_Indication(attribute_handle=0x000E, attribute_value=bytes([1, 2, 3])),
         "Handle Value Indication", ["0x000e"]),
        (att.ATT_Handle_Value_Confirmation(), "Handle Value Confirmation", []),
        (att.ATT_Write_Response(), "Write Response", []),
        (att.ATT_Read_Response(attribute_value=b"Darkness"), "Read Response", ["Darkness"]),
    ]
    check("att", cases)


def test_smp_pdus_built_by_bumble():
    cases = [
        (smp.SMP_Pairing_Request_Command(io_capability=smp.SMP_KEYBOARD_DISPLAY_IO_CAPABILITY, oob_data_flag=0,
                                         auth_req=0x2D, maximum_encryption_key_size=16,
                                         initiator_key_distribution=0x07, responder_key_distribution=0x07),
         "Pairing Request", ["KeyboardDisplay"]),
        (smp.SMP_Pairing_Response_Command(io_capability=smp.SMP_NO_INPUT_NO_OUTPUT_IO_CAPABILITY, oob_data_flag=0,
                                          auth_req=0x09, maximum_encryption_key_size=16,
                                          initiator_key_distribution=0x05, responder_key_distribution=0x07),
         "Pairing Response", ["NoInputNoOutput"]),
        (smp.SMP_Pairing_Confirm_Command(confirm_value=bytes(range(16))), "Pairing Confirm", []),
        (smp.SMP_Pairing_Random_Command(random_value=bytes(range(16, 32))), "Pairing Random", []),
        (smp.SMP_Pairing_Failed_Command(reason=smp.SMP_CONFIRM_VALUE_FAILED_ERROR), "Pairing Failed", ["Confirm Value Failed"]),
        (smp.SMP_Pairing_Public_Key_Command(public_key_x=bytes(range(32)), public_key_y=bytes(range(32, 64))),
         "Pairing Public Key", []),
        (smp.SMP_Pairing_DHKey_Check_Command(dhkey_check=bytes(16)), "DHKey Check", []),
        (smp.SMP_Encryption_Information_Command(long_term_key=bytes(range(16))), "Encryption Information", []),
        (smp.SMP_Master_Identification_Command(ediv=0x9A39, rand=bytes(range(8))), "Identification", []),
        (smp.SMP_Identity_Information_Command(identity_resolving_key=bytes(16)), "Identity Information", []),
        (smp.SMP_Identity_Address_Information_Command(addr_type=0, bd_addr=hci.Address("0A:45:00:11:22:33")),
         "Identity Address Information", ["0A:45:00:11:22:33"]),
        (smp.SMP_Signing_Information_Command(signature_key=bytes(16)), "Signing Information", []),
        (smp.SMP_Security_Request_Command(auth_req=0x0D), "Security Request", []),
    ]
    check("smp", cases)


def test_hci_commands_built_by_bumble():
    cases = [
        (hci.HCI_Reset_Command(), "Reset", []),
        (hci.HCI_Read_BD_ADDR_Command(), "Read BD_ADDR", []),
        (hci.HCI_LE_Set_Scan_Parameters_Command(le_scan_type=1, le_scan_interval=0x0060, le_scan_window=0x0030,
                                                own_address_type=1, scanning_filter_policy=0),
         "LE Set Scan Parameters", ["0x0060"]),
        (hci.HCI_LE_Set_Scan_Enable_Command(le_scan_enable=1, filter_duplicates=1), "LE Set Scan Enable", []),
        (hci.HCI_LE_Set_Advertising_Data_Command(advertising_data=bytes.fromhex("020106030d18")),
         "LE Set Advertising Data", []),
        (hci.HCI_LE_Create_Connection_Command(le_scan_interval=0x0060, le_scan_window=0x0060, initiator_filter_policy=0,
                                              peer_address_type=1, peer_address=hci.Address("C4:12:34:56:78:9A"),
                                              own_address_type=1, connection_interval_min=0x0018,
                                              connection_interval_max=0x0028, max_latency=0,
                                              supervision_timeout=0x002A, min_ce_length=0, max_ce_length=0),
         "LE Create Connection", ["C4:12:34:56:78:9A"]),
        (hci.HCI_Disconnect_Command(connection_handle=0x0040, reason=0x13), "Disconnect", ["Remote User Terminated Connection"]),
        (hci.HCI_LE_Enable_Encryption_Command(connection_handle=0x0040, random_number=bytes(8), encrypted_diversifier=0,
                                              long_term_key=bytes(range(16))), "Encryption", []),
        (hci.HCI_LE_Set_Data_Length_Command(connection_handle=0x0040, tx_octets=251, tx_time=2120), "LE Set Data Length", ["251"]),
        # Extended advertising, scanning and initiating (Core 5.4 Vol 4 Part E §7.8.52-§7.8.66)
        (hci.HCI_LE_Set_Advertising_Set_Random_Address_Command(
            advertising_handle=1, random_address=hci.Address("C4:12:34:56:78:9A", hci.Address.RANDOM_DEVICE_ADDRESS)),
         "LE Set Advertising Set Random Address", ["C4:12:34:56:78:9A"]),
        (hci.HCI_LE_Set_Extended_Advertising_Parameters_Command(
            advertising_handle=1, advertising_event_properties=0x13, primary_advertising_interval_min=0x0000A0,
            primary_advertising_interval_max=0x0100F0, primary_advertising_channel_map=7, own_address_type=1,
            peer_address_type=0, peer_address=hci.Address("00:1A:7D:DA:71:13", hci.Address.PUBLIC_DEVICE_ADDRESS),
            advertising_filter_policy=0, advertising_tx_power=0x7F, primary_advertising_phy=1,
            secondary_advertising_max_skip=0, secondary_advertising_phy=2, advertising_sid=3,
            scan_request_notification_enable=1),
         "LE Set Extended Advertising Parameters", ["Legacy PDUs", "0x0100F0", "LE 2M", "no preference"]),
        (hci.HCI_LE_Set_Extended_Advertising_Data_Command(advertising_handle=1, operation=3, fragment_preference=1,
                                                          advertising_data=bytes.fromhex("020106030d18") + b"x" * 200),
         "LE Set Extended Advertising Data", ["Complete data", "206"]),
        (hci.HCI_LE_Set_Extended_Scan_Response_Data_Command(advertising_handle=1, operation=1, fragment_preference=0,
                                                            scan_response_data=bytes.fromhex("050954657374")),
         "LE Set Extended Scan Response Data", ["First fragment"]),
        (hci.HCI_LE_Set_Extended_Advertising_Enable_Command(enable=1, advertising_handles=[1, 2], durations=[500, 0],
                                                            max_extended_advertising_events=[0, 10]),
         "LE Set Extended Advertising Enable", ["5000 ms", "Num_Sets: 2"]),
        (hci.HCI_LE_Read_Maximum_Advertising_Data_Length_Command(), "LE Read Maximum Advertising Data Length", []),
        (hci.HCI_LE_Read_Number_Of_Supported_Advertising_Sets_Command(), "LE Read Number of Supported Advertising Sets", []),
        (hci.HCI_LE_Remove_Advertising_Set_Command(advertising_handle=2), "LE Remove Advertising Set", ["0x02"]),
        (hci.HCI_LE_Clear_Advertising_Sets_Command(), "LE Clear Advertising Sets", []),
        (hci.HCI_LE_Set_Extended_Scan_Parameters_Command(own_address_type=1, scanning_filter_policy=0, scanning_phys=5,
                                                         scan_types=[1, 0], scan_intervals=[0x60, 0x120],
                                                         scan_windows=[0x30, 0x90]),
         "LE Set Extended Scan Parameters", ["LE 1M, LE Coded", "0x0120", "Passive"]),
        (hci.HCI_LE_Set_Extended_Scan_Enable_Command(enable=1, filter_duplicates=2, duration=100, period=8),
         "LE Set Extended Scan Enable", ["reset for each scan period", "1000 ms", "10240 ms"]),
        (hci.HCI_LE_Extended_Create_Connection_Command(
            initiator_filter_policy=0, own_address_type=0, peer_address_type=1,
            peer_address=hci.Address("C4:12:34:56:78:9A", hci.Address.RANDOM_DEVICE_ADDRESS), initiating_phys=7,
            scan_intervals=[0x10, 0x20, 0x30], scan_windows=[0x10, 0x20, 0x30], connection_interval_mins=[6, 6, 6],
            connection_interval_maxs=[12, 12, 12], max_latencies=[0, 1, 2], supervision_timeouts=[200, 300, 400],
            min_ce_lengths=[0, 0, 0], max_ce_lengths=[0, 0, 0]),
         "LE Extended Create Connection", ["C4:12:34:56:78:9A", "LE 1M, LE 2M, LE Coded", "4000 ms"]),
    ]
    check("h4", cases)


def test_hci_events_built_by_bumble():
    cases = [
        (hci.HCI_Command_Complete_Event(num_hci_command_packets=1, command_opcode=hci.HCI_RESET_COMMAND,
                                        return_parameters=bytes([0])), "Command Complete", ["Reset"]),
        (hci.HCI_Command_Status_Event(status=0, num_hci_command_packets=1,
                                      command_opcode=hci.HCI_LE_CREATE_CONNECTION_COMMAND), "Command Status", ["LE Create Connection"]),
        (hci.HCI_Disconnection_Complete_Event(status=0, connection_handle=0x0040, reason=0x08), "Disconnection Complete",
         ["Connection Timeout"]),
        (hci.HCI_Number_Of_Completed_Packets_Event(connection_handles=[0x40, 0x41], num_completed_packets=[3, 1]),
         "Number Of Completed Packets", ["0x0041"]),
        (hci.HCI_Encryption_Change_Event(status=0, connection_handle=0x0040, encryption_enabled=1), "Encryption Change", []),
        (hci.HCI_Command_Complete_Event(
            num_hci_command_packets=1, command_opcode=hci.HCI_LE_SET_EXTENDED_ADVERTISING_PARAMETERS_COMMAND,
            return_parameters=hci.HCI_LE_Set_Extended_Advertising_Parameters_ReturnParameters(status=0, selected_tx_power=-4)),
         "Command Complete", ["LE Set Extended Advertising Parameters", "Selected_TX_Power: -4 dBm"]),
        (hci.HCI_Command_Complete_Event(
            num_hci_command_packets=1, command_opcode=hci.HCI_LE_READ_MAXIMUM_ADVERTISING_DATA_LENGTH_COMMAND,
            return_parameters=hci.HCI_LE_Read_Maximum_Advertising_Data_Length_ReturnParameters(
                status=0, max_advertising_data_length=1650)),
         "Command Complete", ["1650 octets"]),
        (hci.HCI_Command_Status_Event(status=0, num_hci_command_packets=1,
                                      command_opcode=hci.HCI_LE_EXTENDED_CREATE_CONNECTION_COMMAND),
         "Command Status", ["LE Extended Create Connection"]),
        (hci.HCI_LE_Advertising_Set_Terminated_Event(status=0x3C, advertising_handle=1, connection_handle=0,
                                                     num_completed_extended_advertising_events=4),
         "LE Advertising Set Terminated", ["Advertising Timeout", "Num_Completed_Extended_Advertising_Events: 4"]),
        # Bumble has no class for these two: its generic LE Meta event with the spec's parameters.
        (hci.HCI_LE_Meta_Event(subevent_code=hci.HCI_LE_SCAN_TIMEOUT_EVENT,
                               parameters=bytes([hci.HCI_LE_SCAN_TIMEOUT_EVENT])), "LE Scan Timeout", []),
        (hci.HCI_LE_Meta_Event(subevent_code=hci.HCI_LE_SCAN_REQUEST_RECEIVED_EVENT,
                               parameters=bytes([hci.HCI_LE_SCAN_REQUEST_RECEIVED_EVENT, 1, 1])
                               + bytes(hci.Address("C4:12:34:56:78:9A", hci.Address.RANDOM_DEVICE_ADDRESS))),
         "LE Scan Request Received", ["C4:12:34:56:78:9A"]),
    ]
    check("h4", cases)


def test_signaling_and_l2cap_frames_built_by_bumble():
    cases = [
        (l2cap.L2CAP_PDU(cid=0x0005, payload=bytes(l2cap.L2CAP_Connection_Parameter_Update_Request(
            identifier=1, interval_min=6, interval_max=12, latency=0, timeout=400))),
         "Connection Parameter Update Request", ["400"]),
        (l2cap.L2CAP_PDU(cid=0x0005, payload=bytes(l2cap.L2CAP_LE_Credit_Based_Connection_Request(
            identifier=2, le_psm=0x0080, source_cid=0x0040, mtu=512, mps=247, initial_credits=10))),
         "LE Credit Based Connection Request", ["512"]),
        (l2cap.L2CAP_PDU(cid=0x0004, payload=bytes(att.ATT_Read_Request(attribute_handle=3))), "Read Request", ["0x0003"]),
    ]
    check("l2cap", cases)


def test_advertising_data_built_by_bumble():
    ad = core.AdvertisingData([
        (core.AdvertisingData.FLAGS, bytes([0x06])),
        (core.AdvertisingData.COMPLETE_LIST_OF_16_BIT_SERVICE_CLASS_UUIDS, bytes([0x0D, 0x18, 0x0F, 0x18])),
        (core.AdvertisingData.COMPLETE_LOCAL_NAME, b"Bumble HR"),
        (core.AdvertisingData.TX_POWER_LEVEL, bytes([0xF8])),
        (core.AdvertisingData.MANUFACTURER_SPECIFIC_DATA, bytes([0x4C, 0x00, 0x01, 0x02])),
    ])
    check("ad", [(ad, "Complete Local Name", ["Bumble HR", "Heart Rate", "Battery", "Apple, Inc.", "-8"])])
