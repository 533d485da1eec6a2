public import Foundation

/// A remote device (CoreBluetooth `CBPeer`). `identifier` is stable across runs: see ``CBPeerIdentifier``.
public class CBPeer: NSObject, NSCopying, @unchecked Sendable {
    let peer: CBBackendPeer
    let _identifier: UUID

    init(peer: CBBackendPeer) {
        self.peer = peer
        self._identifier = CBPeerIdentifier.identifier(for: peer.address)
        super.init()
    }

    /// The peer's identifier, derived from its identity address: the same in every run and process
    /// (`CBPeerIdentifier`).
    public var identifier: UUID { _identifier }

    public func copy(with zone: NSZone? = nil) -> Any { self }
}

/// A remote central connected to the local peripheral manager.
public class CBCentral: CBPeer, @unchecked Sendable {
    var mtu: Int = 23

    /// The largest value one notification or indication carries to this central: ATT_MTU - 3
    /// (Core 5.4 Vol 3 Part F §3.4.7.1); longer updates are truncated.
    public var maximumUpdateValueLength: Int { max(20, mtu - 3) }

    public override var description: String {
        "<CBCentral: \(CBManager.address(of: self)), identifier = \(identifier.uuidString), MTU = \(mtu)>"
    }
}

/// A read or write request from a remote central (ATT Read/Read Blob/Write/Prepare+Execute Write, Core 5.4 Vol 3
/// Part F §3.4.4-§3.4.6) for a dynamic characteristic. Answer each batch exactly once with
/// `CBPeripheralManager.respond(to:withResult:)`.
public class CBATTRequest: NSObject, @unchecked Sendable {
    let _central: CBCentral
    let _characteristic: CBCharacteristic
    let _offset: Int
    /// The batch this request belongs to.
    let batchID: UInt64

    init(central: CBCentral, characteristic: CBCharacteristic, offset: Int, value: Data?, batchID: UInt64) {
        _central = central
        _characteristic = characteristic
        _offset = offset
        self.value = value
        self.batchID = batchID
        super.init()
    }

    /// The central that sent the request.
    public var central: CBCentral { _central }
    /// The local characteristic to read or write.
    public var characteristic: CBCharacteristic { _characteristic }
    /// The index of the first byte to read or write (non-zero for Read Blob and long writes).
    public var offset: Int { _offset }
    /// Read: nil on arrival, set it to the bytes from `offset` before responding. Write: the bytes to write.
    public var value: Data?

    public override var description: String {
        "<CBATTRequest: \(CBManager.address(of: self)) Central = \(central.identifier.uuidString), Characteristic = \(characteristic.uuid), Offset = \(offset), Value = \(value.map { "{length = \($0.count)}" } ?? "(null)")>"
    }
}
