import BluetoothCore

extension HCICommand {
    /// The command's opcode.
    public var opcode: HCIOpcode {
        switch self {
        case .disconnect: .disconnect
        case .readRemoteVersionInformation: .readRemoteVersionInformation
        case .setEventMask: .setEventMask
        case .reset: .reset
        case .readTransmitPowerLevel: .readTransmitPowerLevel
        case .setControllerToHostFlowControl: .setControllerToHostFlowControl
        case .hostBufferSize: .hostBufferSize
        case .setEventMaskPage2: .setEventMaskPage2
        case .writeLEHostSupport: .writeLEHostSupport
        case .readLocalVersionInformation: .readLocalVersionInformation
        case .readLocalSupportedCommands: .readLocalSupportedCommands
        case .readLocalSupportedFeatures: .readLocalSupportedFeatures
        case .readBufferSize: .readBufferSize
        case .readBDADDR: .readBDADDR
        case .readRSSI: .readRSSI
        case .leSetEventMask: .leSetEventMask
        case .leReadBufferSize: .leReadBufferSize
        case .leReadBufferSizeV2: .leReadBufferSizeV2
        case .leReadLocalSupportedFeatures: .leReadLocalSupportedFeatures
        case .leSetRandomAddress: .leSetRandomAddress
        case .leSetAdvertisingParameters: .leSetAdvertisingParameters
        case .leReadAdvertisingPhysicalChannelTxPower: .leReadAdvertisingPhysicalChannelTxPower
        case .leSetAdvertisingData: .leSetAdvertisingData
        case .leSetScanResponseData: .leSetScanResponseData
        case .leSetAdvertisingEnable: .leSetAdvertisingEnable
        case .leSetScanParameters: .leSetScanParameters
        case .leSetScanEnable: .leSetScanEnable
        case .leCreateConnection: .leCreateConnection
        case .leCreateConnectionCancel: .leCreateConnectionCancel
        case .leReadFilterAcceptListSize: .leReadFilterAcceptListSize
        case .leClearFilterAcceptList: .leClearFilterAcceptList
        case .leAddDeviceToFilterAcceptList: .leAddDeviceToFilterAcceptList
        case .leRemoveDeviceFromFilterAcceptList: .leRemoveDeviceFromFilterAcceptList
        case .leConnectionUpdate: .leConnectionUpdate
        case .leReadRemoteFeatures: .leReadRemoteFeatures
        case .leEncrypt: .leEncrypt
        case .leRand: .leRand
        case .leEnableEncryption: .leEnableEncryption
        case .leLongTermKeyRequestReply: .leLongTermKeyRequestReply
        case .leLongTermKeyRequestNegativeReply: .leLongTermKeyRequestNegativeReply
        case .leReadSupportedStates: .leReadSupportedStates
        case .leRemoteConnectionParameterRequestReply: .leRemoteConnectionParameterRequestReply
        case .leRemoteConnectionParameterRequestNegativeReply: .leRemoteConnectionParameterRequestNegativeReply
        case .leSetDataLength: .leSetDataLength
        case .leReadSuggestedDefaultDataLength: .leReadSuggestedDefaultDataLength
        case .leWriteSuggestedDefaultDataLength: .leWriteSuggestedDefaultDataLength
        case .leReadLocalP256PublicKey: .leReadLocalP256PublicKey
        case .leGenerateDHKey: .leGenerateDHKey
        case .leAddDeviceToResolvingList: .leAddDeviceToResolvingList
        case .leRemoveDeviceFromResolvingList: .leRemoveDeviceFromResolvingList
        case .leClearResolvingList: .leClearResolvingList
        case .leReadResolvingListSize: .leReadResolvingListSize
        case .leReadPeerResolvableAddress: .leReadPeerResolvableAddress
        case .leReadLocalResolvableAddress: .leReadLocalResolvableAddress
        case .leSetPrivacyMode: .leSetPrivacyMode
        case .leSetAddressResolutionEnable: .leSetAddressResolutionEnable
        case .leSetResolvablePrivateAddressTimeout: .leSetResolvablePrivateAddressTimeout
        case .leReadMaximumDataLength: .leReadMaximumDataLength
        case .leReadPHY: .leReadPHY
        case .leSetDefaultPHY: .leSetDefaultPHY
        case .leSetPHY: .leSetPHY
        case .extended(let command): command.opcode
        case .unknown(let opcode, _): opcode
        }
    }

    /// The spec name of the command ("LE Set Advertising Parameters"), or "Unknown HCI command (0x....)".
    public var name: String { Self.table[opcode]?.name ?? opcode.description }

    /// The parameter block (without opcode and length). Unknown commands longer than 255 octets are truncated.
    public var parameters: [UInt8] {
        var w = ByteWriter()
        switch self {
        case .disconnect(let handle, let reason):
            w.hciWriteHandle(handle)
            w.write(reason.rawValue)
        case .readRemoteVersionInformation(let handle), .readRSSI(let handle), .leReadRemoteFeatures(let handle),
             .leLongTermKeyRequestNegativeReply(let handle), .leReadPHY(let handle):
            w.hciWriteHandle(handle)
        case .setEventMask(let mask), .setEventMaskPage2(let mask), .leSetEventMask(let mask):
            w.write(mask)
        case .reset, .readLocalVersionInformation, .readLocalSupportedCommands, .readLocalSupportedFeatures,
             .readBufferSize, .readBDADDR, .leReadBufferSize, .leReadBufferSizeV2, .leReadLocalSupportedFeatures,
             .leReadAdvertisingPhysicalChannelTxPower, .leCreateConnectionCancel, .leReadFilterAcceptListSize,
             .leClearFilterAcceptList, .leRand, .leReadSupportedStates, .leReadSuggestedDefaultDataLength,
             .leReadLocalP256PublicKey, .leClearResolvingList, .leReadMaximumDataLength, .leReadResolvingListSize:
            break
        case .readTransmitPowerLevel(let handle, let type):
            w.hciWriteHandle(handle)
            w.write(type)
        case .setControllerToHostFlowControl(let value):
            w.write(value)
        case .hostBufferSize(let size):
            w.write(size.aclDataPacketLength)
            w.write(size.synchronousDataPacketLength)
            w.write(size.totalNumACLDataPackets)
            w.write(size.totalNumSynchronousDataPackets)
        case .writeLEHostSupport(let supported, let unused):
            w.write(supported)
            w.write(unused)
        case .leSetRandomAddress(let address):
            w.hciWrite(address)
        case .leSetAdvertisingParameters(let p):
            w.write(p.intervalMin)
            w.write(p.intervalMax)
            w.write(p.advertisingType.rawValue)
            w.write(p.ownAddressType.rawValue)
            w.write(p.peerAddressType.rawValue)
            w.hciWrite(p.peerAddress)
            w.write(p.channelMap)
            w.write(p.filterPolicy)
        case .leSetAdvertisingData(let data), .leSetScanResponseData(let data):
            let significant = Array(data.prefix(Self.maximumAdvertisingDataLength))
            w.write(UInt8(significant.count))
            w.hciWriteFixed(significant, count: Self.maximumAdvertisingDataLength)
        case .leSetAdvertisingEnable(let enable), .leSetAddressResolutionEnable(let enable):
            w.write(UInt8(enable ? 1 : 0))
        case .leSetScanParameters(let p):
            w.write(p.scanType)
            w.write(p.interval)
            w.write(p.window)
            w.write(p.ownAddressType.rawValue)
            w.write(p.filterPolicy)
        case .leSetScanEnable(let enable, let filterDuplicates):
            w.write(UInt8(enable ? 1 : 0))
            w.write(UInt8(filterDuplicates ? 1 : 0))
        case .leCreateConnection(let p):
            w.write(p.scanInterval)
            w.write(p.scanWindow)
            w.write(p.initiatorFilterPolicy)
            w.write(p.peerAddressType.rawValue)
            w.hciWrite(p.peerAddress)
            w.write(p.ownAddressType.rawValue)
            p.connection.encode(into: &w)
        case .leAddDeviceToFilterAcceptList(let type, let address),
             .leRemoveDeviceFromFilterAcceptList(let type, let address),
             .leRemoveDeviceFromResolvingList(let type, let address),
             .leReadPeerResolvableAddress(let type, let address), .leReadLocalResolvableAddress(let type, let address):
            w.write(type.rawValue)
            w.hciWrite(address)
        case .leSetPrivacyMode(let type, let address, let mode):
            w.write(type.rawValue)
            w.hciWrite(address)
            w.write(mode)
        case .leConnectionUpdate(let handle, let parameters),
             .leRemoteConnectionParameterRequestReply(let handle, let parameters):
            w.hciWriteHandle(handle)
            parameters.encode(into: &w)
        case .leEncrypt(let key, let plaintext):
            w.hciWriteFixed(key, count: 16)
            w.hciWriteFixed(plaintext, count: 16)
        case .leEnableEncryption(let handle, let random, let ediv, let ltk):
            w.hciWriteHandle(handle)
            w.write(random)
            w.write(ediv)
            w.hciWriteFixed(ltk, count: 16)
        case .leLongTermKeyRequestReply(let handle, let ltk):
            w.hciWriteHandle(handle)
            w.hciWriteFixed(ltk, count: 16)
        case .leRemoteConnectionParameterRequestNegativeReply(let handle, let reason):
            w.hciWriteHandle(handle)
            w.write(reason.rawValue)
        case .leSetDataLength(let handle, let octets, let time):
            w.hciWriteHandle(handle)
            w.write(octets)
            w.write(time)
        case .leWriteSuggestedDefaultDataLength(let octets, let time):
            w.write(octets)
            w.write(time)
        case .leGenerateDHKey(let x, let y):
            w.hciWriteFixed(x, count: 32)
            w.hciWriteFixed(y, count: 32)
        case .leAddDeviceToResolvingList(let entry):
            w.write(entry.peerIdentityAddressType.rawValue)
            w.hciWrite(entry.peerIdentityAddress)
            w.hciWriteFixed(entry.peerIRK, count: 16)
            w.hciWriteFixed(entry.localIRK, count: 16)
        case .leSetResolvablePrivateAddressTimeout(let timeout):
            w.write(timeout)
        case .leSetDefaultPHY(let all, let tx, let rx):
            w.write(all)
            w.write(tx)
            w.write(rx)
        case .leSetPHY(let handle, let all, let tx, let rx, let options):
            w.hciWriteHandle(handle)
            w.write(all)
            w.write(tx)
            w.write(rx)
            w.write(options)
        case .extended(let command):
            w.write(command.parameters.prefix(Self.maximumParameterLength))
        case .unknown(_, let parameters):
            w.write(parameters.prefix(Self.maximumParameterLength))
        }
        return w.bytes
    }

    /// The whole command packet: opcode (LE), parameter length, parameters (no H4 indicator).
    public func encode() -> [UInt8] {
        let parameters = self.parameters
        var w = ByteWriter(capacity: 3 + parameters.count)
        w.write(opcode.rawValue)
        w.write(UInt8(truncatingIfNeeded: parameters.count))
        w.write(parameters)
        return w.bytes
    }
}
