import SystemInterface

/// One D-Bus message (D-Bus Specification, "Message Format"): a fixed header (byte order, type, flags, version 1,
/// body length, serial), the header fields `a(yv)`, padding to 8, then the body whose types the SIGNATURE field
/// names.
public struct DBusMessage: Hashable, Sendable, CustomStringConvertible {
    /// The message type (header octet 1).
    public enum Kind: UInt8, Hashable, Sendable {
        case methodCall = 1
        case methodReturn = 2
        case error = 3
        case signal = 4
    }

    /// Header flags (octet 2).
    public struct Flags: OptionSet, Hashable, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let noReplyExpected = Flags(rawValue: 0x1)
        public static let noAutoStart = Flags(rawValue: 0x2)
        public static let allowInteractiveAuthorization = Flags(rawValue: 0x4)
    }

    /// The header field codes ("Header Fields").
    enum FieldCode: UInt8 {
        case path = 1, interface, member, errorName, replySerial, destination, sender, signature, unixFDs
    }

    /// The largest message, in octets.
    public static let maximumLength = 128 << 20

    /// The most file descriptors one message may carry, sent or received (the receive buffer's room: 64 ints of
    /// SCM_RIGHTS per read). The specification sets no number; dbus-daemon's default limit is lower (16 on the
    /// system bus), and bluetoothd sends one at a time.
    public static let maximumFileDescriptors = 64

    public var kind: Kind
    public var flags: Flags
    /// Nonzero; set by the connection when it sends.
    public var serial: UInt32
    public var path: String?
    public var interface: String?
    public var member: String?
    public var errorName: String?
    public var replySerial: UInt32?
    public var destination: String?
    public var sender: String?
    /// How many file descriptors accompany the message (the UNIX_FDS header field). When ``fileDescriptors`` is
    /// not empty, its count is what is encoded and sent, whatever this says.
    public var unixFDs: UInt32?
    public var body: [DBusValue]
    /// The file descriptors that travel with the message (D-Bus Specification, "Type System": UNIX_FD; sent as
    /// SCM_RIGHTS ancillary data with the message's bytes): ``DBusValue/unixFD(_:)`` values of the body are indexes
    /// into it (``fileDescriptor(at:)``). Not part of the marshaled bytes: only their count is, in the header.
    ///
    /// Ownership: a message you send keeps your descriptors yours (the kernel gives the receiver copies; close yours
    /// when you like). A reply that ``DBusConnection/call(_:timeout:completion:)`` delivers gives its descriptors to
    /// the caller, who must close them or hand them on; a call to an exported object and a signal only lend theirs
    /// to the handlers (the connection closes them when the handler has returned: `fcntl(F_DUPFD_CLOEXEC)` one to
    /// keep it); see ``DBusConnection`` for the rest.
    public var fileDescriptors: [Int32]

    public init(kind: Kind, flags: Flags = [], serial: UInt32 = 0, path: String? = nil, interface: String? = nil,
                member: String? = nil, errorName: String? = nil, replySerial: UInt32? = nil, destination: String? = nil,
                sender: String? = nil, unixFDs: UInt32? = nil, body: [DBusValue] = [], fileDescriptors: [Int32] = []) {
        self.kind = kind
        self.flags = flags
        self.serial = serial
        self.path = path
        self.interface = interface
        self.member = member
        self.errorName = errorName
        self.replySerial = replySerial
        self.destination = destination
        self.sender = sender
        self.unixFDs = unixFDs
        self.body = body
        self.fileDescriptors = fileDescriptors
    }

    /// A method call (with `fileDescriptors` for the body's ``DBusValue/unixFD(_:)`` values).
    public static func call(destination: String?, path: String, interface: String?, member: String,
                            body: [DBusValue] = [], flags: Flags = [], fileDescriptors: [Int32] = []) -> DBusMessage {
        DBusMessage(kind: .methodCall, flags: flags, path: path, interface: interface, member: member,
                    destination: destination, body: body, fileDescriptors: fileDescriptors)
    }

    /// The reply to `call` with `body` (and `fileDescriptors` for its ``DBusValue/unixFD(_:)`` values).
    public func methodReturn(_ body: [DBusValue] = [], fileDescriptors: [Int32] = []) -> DBusMessage {
        DBusMessage(kind: .methodReturn, flags: .noReplyExpected, replySerial: serial, destination: sender, body: body,
                    fileDescriptors: fileDescriptors)
    }

    /// The descriptor a ``DBusValue/unixFD(_:)`` value (or a variant of one) of this message stands for: the entry
    /// of ``fileDescriptors`` at its index; nil for another value or an index past the end.
    public func fileDescriptor(at value: DBusValue) -> Int32? {
        guard case .unixFD(let index) = value.unwrapped, Int(index) < fileDescriptors.count else { return nil }
        return fileDescriptors[Int(index)]
    }

    /// Closes every descriptor of ``fileDescriptors`` (for a receiver done with them); the numbers are stale after.
    public func closeFileDescriptors() {
        for descriptor in fileDescriptors { POSIX.closeDescriptor(descriptor) }
    }

    /// An error reply to this call.
    public func errorReply(name: String, message: String) -> DBusMessage {
        DBusMessage(kind: .error, flags: .noReplyExpected, errorName: name, replySerial: serial, destination: sender,
                    body: [.string(message)])
    }

    /// The body's signature.
    public var signature: String { DBusType.signature(of: body.map(\.type)) }

    /// The error reply as a ``DBusError`` (nil for other kinds).
    public var error: DBusError? {
        guard kind == .error else { return nil }
        let text = body.first?.stringValue ?? "(no message)"
        return DBusError(.errorReply, text, name: errorName ?? "(no error name)")
    }

    public var description: String {
        var parts = ["\(kind)", "serial \(serial)"]
        if let replySerial { parts.append("reply to \(replySerial)") }
        if let sender { parts.append("from \(sender)") }
        if let destination { parts.append("to \(destination)") }
        if let path { parts.append(path) }
        if let interface { parts.append(interface) }
        if let member { parts.append(member) }
        if let errorName { parts.append(errorName) }
        if !fileDescriptors.isEmpty { parts.append("fds \(fileDescriptors)") }
        return parts.joined(separator: " ") + " \(body)"
    }

    // MARK: Encoding

    /// The marshaled message (little-endian). Checks what the specification requires of each kind (a call has a
    /// path and a member; a signal a path, interface and member; a reply its reply serial; an error its name).
    /// The UNIX_FDS field says ``fileDescriptors``' count when there are any (at most
    /// ``maximumFileDescriptors``), else ``unixFDs``.
    public func encoded() throws(DBusError) -> [UInt8] {
        guard fileDescriptors.count <= Self.maximumFileDescriptors else {
            throw DBusError(.invalidArgument, "a message with \(fileDescriptors.count) file descriptors (at most \(Self.maximumFileDescriptors))")
        }
        switch kind {
        case .methodCall:
            guard path != nil, member != nil else { throw DBusError(.invalidArgument, "a method call needs a path and a member") }
        case .signal:
            guard path != nil, interface != nil, member != nil else {
                throw DBusError(.invalidArgument, "a signal needs a path, an interface and a member")
            }
        case .methodReturn:
            guard replySerial != nil else { throw DBusError(.invalidArgument, "a method return needs a reply serial") }
        case .error:
            guard replySerial != nil, errorName != nil else { throw DBusError(.invalidArgument, "an error needs a reply serial and a name") }
        }
        if let interface, !DBusNames.isValidInterfaceName(interface) {
            throw DBusError(.invalidArgument, "\"\(interface)\" is not a valid interface name")
        }
        if let member, !DBusNames.isValidMemberName(member) {
            throw DBusError(.invalidArgument, "\"\(member)\" is not a valid member name")
        }
        var body = DBusWriter()
        try body.write(self.body)
        var fields: [DBusValue] = []
        func field(_ code: FieldCode, _ value: DBusValue?) {
            if let value { fields.append(.structure([.byte(code.rawValue), .variant(value)])) }
        }
        field(.path, path.map(DBusValue.objectPath))
        field(.interface, interface.map(DBusValue.string))
        field(.member, member.map(DBusValue.string))
        field(.errorName, errorName.map(DBusValue.string))
        field(.replySerial, replySerial.map(DBusValue.uint32))
        field(.destination, destination.map(DBusValue.string))
        field(.sender, sender.map(DBusValue.string))
        if !self.body.isEmpty { field(.signature, .signature(signature)) }
        field(.unixFDs, fileDescriptors.isEmpty ? unixFDs.map(DBusValue.uint32) : .uint32(UInt32(fileDescriptors.count)))
        var header = DBusWriter()
        try header.write([.byte(UInt8(ascii: "l")), .byte(kind.rawValue), .byte(flags.rawValue), .byte(1),
                          .uint32(UInt32(body.bytes.count)), .uint32(serial),
                          .array(.structure([.byte, .variant]), fields)])
        header.pad(to: 8)
        let message = header.bytes + body.bytes
        guard message.count <= Self.maximumLength else {
            throw DBusError(.invalidArgument, "a message of \(message.count) octets (at most \(Self.maximumLength))")
        }
        return message
    }

    // MARK: Decoding

    /// How long the message that starts with these 16 octets is (the fixed header and the fields' array length),
    /// or an error when they cannot start a message.
    public static func frameLength(prefix: [UInt8]) throws(DBusError) -> Int {
        guard prefix.count >= 16 else { throw DBusError.decode("a message header is 16 octets at least", at: prefix.count) }
        let bigEndian: Bool
        switch prefix[0] {
        case UInt8(ascii: "l"): bigEndian = false
        case UInt8(ascii: "B"): bigEndian = true
        default: throw DBusError.decode("unknown byte order 0x\(String(prefix[0], radix: 16))", at: 0)
        }
        guard prefix[3] == 1 else { throw DBusError.decode("protocol version \(prefix[3])", at: 3) }
        var reader = DBusReader(bytes: prefix, offset: 4, bigEndian: bigEndian)
        let bodyLength = Int(try reader.readInteger(UInt32.self))
        _ = try reader.readInteger(UInt32.self)
        let fieldsLength = Int(try reader.readInteger(UInt32.self))
        guard bodyLength <= maximumLength, fieldsLength <= maximumLength else {
            throw DBusError.decode("a message longer than \(maximumLength) octets", at: 4)
        }
        let headerEnd = 16 + fieldsLength
        let total = (headerEnd + 7) / 8 * 8 + bodyLength
        guard total <= maximumLength else { throw DBusError.decode("a message of \(total) octets (at most \(maximumLength))", at: 4) }
        return total
    }

    /// Decodes one whole message (``frameLength(prefix:)`` octets). Its ``fileDescriptors`` stay empty: the
    /// connection attaches the ones that arrived with it (``unixFDs`` says how many).
    public init(decoding bytes: [UInt8]) throws(DBusError) {
        let total = try Self.frameLength(prefix: Array(bytes.prefix(16)))
        guard bytes.count == total else { throw DBusError.decode("a message of \(total) octets given \(bytes.count)", at: 0) }
        let bigEndian = bytes[0] == UInt8(ascii: "B")
        guard let kind = Kind(rawValue: bytes[1]) else { throw DBusError.decode("unknown message type \(bytes[1])", at: 1) }
        var reader = DBusReader(bytes: bytes, offset: 4, bigEndian: bigEndian)
        let bodyLength = Int(try reader.readInteger(UInt32.self))
        let serial = try reader.readInteger(UInt32.self)
        guard serial != 0 else { throw DBusError.decode("serial 0", at: 8) }
        let fieldsValue = try reader.read(.array(.structure([.byte, .variant])))
        try reader.skipPadding(to: 8)
        guard reader.offset + bodyLength == bytes.count else { throw DBusError.decode("body length \(bodyLength) does not end the message", at: 4) }
        self.init(kind: kind, flags: Flags(rawValue: bytes[2]), serial: serial)
        var signature = ""
        for case .structure(let pair) in fieldsValue.arrayValue ?? [] {
            guard pair.count == 2, case .byte(let code) = pair[0], case .variant(let value) = pair[1] else { continue }
            switch (FieldCode(rawValue: code), value) {
            case (.path?, .objectPath(let v)): path = v
            case (.interface?, .string(let v)): interface = v
            case (.member?, .string(let v)): member = v
            case (.errorName?, .string(let v)): errorName = v
            case (.replySerial?, .uint32(let v)): replySerial = v
            case (.destination?, .string(let v)): destination = v
            case (.sender?, .string(let v)): sender = v
            case (.signature?, .signature(let v)): signature = v
            case (.unixFDs?, .uint32(let v)): unixFDs = v
            case (nil, _): continue  // unknown fields are ignored, as the specification asks
            default: throw DBusError.decode("header field \(code) of type \(value.type)", at: 16)
            }
        }
        switch kind {
        case .methodCall where path == nil || member == nil,
             .signal where path == nil || interface == nil || member == nil,
             .methodReturn where replySerial == nil,
             .error where replySerial == nil || errorName == nil:
            throw DBusError.decode("a \(kind) without its required header fields", at: 16)
        default: break
        }
        let types: [DBusType]
        do {
            types = try DBusType.parse(signature: signature)
        } catch {
            throw DBusError.decode("body signature \"\(signature)\": \(error.reason)", at: 16)
        }
        var bodyReader = DBusReader(bytes: bytes, offset: reader.offset, origin: reader.offset, bigEndian: bigEndian)
        body = try bodyReader.read(types)
        guard bodyReader.isAtEnd else { throw DBusError.decode("octets after the body's last value", at: bodyReader.offset) }
    }
}
