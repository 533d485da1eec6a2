import BluetoothCore
import FoundationEssentials
import AdvertisingData
import GATT
import Host
import BluetoothEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The JSON definition `blue serve FILE.json` reads (the format is documented in Docs/serve-format.md): the device
/// name, what to advertise, and the services (Core 5.4 Vol 3 Part G §3) with their characteristics, values,
/// descriptors and notification generators.
struct ServeDefinition: Codable, Sendable {
    var name: String?
    var appearance: UInt16?
    /// Service UUIDs to advertise; default: every primary service but GAP and GATT.
    var advertise: [String]?
    var services: [Service]
    /// More advertising data: manufacturer data, service data, TX power (Core Supplement Part A §1.4, §1.11, §1.5).
    var advertisingData: AdvertisingExtras?

    struct AdvertisingExtras: Codable, Sendable {
        var manufacturer: Manufacturer?
        var serviceData: [ServiceDataEntry]?
        var txPower: Int8?

        struct Manufacturer: Codable, Sendable {
            var company: UInt16
            var hex: String
        }

        struct ServiceDataEntry: Codable, Sendable {
            var uuid: String
            var hex: String
        }
    }

    struct Service: Codable, Sendable {
        var uuid: String
        var primary: Bool?
        var characteristics: [Characteristic]?
    }

    struct Characteristic: Codable, Sendable {
        var uuid: String
        var properties: [String]
        var permissions: [String]?
        var value: Value?
        var maxLength: Int?
        var description: String?
        var descriptors: [Descriptor]?
        var notify: Generator?
        /// A value notified (or indicated) to each central right after it subscribes, to that central alone, as
        /// seed 001's peripheral does in `peripheralManager(_:central:didSubscribeTo:)`. The stored value is unchanged.
        var onSubscribe: Value?
        /// How the app answers this value's reads and writes (Write Requests, Read and Read Blob Requests, Execute
        /// Write): later, with an error, or never. Without it the stack answers at once (but see `--personality
        /// android`, where every request goes to the app).
        var answer: Answer?
        /// After each write of the value, the written value after this prefix is notified (or indicated) to the
        /// writer alone: the reply of a chat server (seed 004's Android peer).
        var echo: String?
    }

    struct Descriptor: Codable, Sendable {
        var uuid: String
        var permissions: [String]?
        var value: Value?
        /// For the 2902 descriptor (the CCCD, declared by the definition as an Android app adds it): how the app
        /// answers its writes (subscriptions).
        var answer: Answer?
    }

    /// How the app answers a request (Android's `BluetoothGattServer.sendResponse`): after `delay` seconds
    /// (0...60), with the ATT error `error` (1...255; 0x80 and up are the application's own), or never
    /// (`"never": true`: the client's ATT transaction times out after 30 s, Core 5.4 Vol 3 Part F §3.3.3).
    struct Answer: Codable, Sendable {
        var delay: Double?
        var error: UInt8?
        var never: Bool?
    }

    /// One of: hex, text, uint8, uint16 / uint32 (little-endian), plist (a binary property list of strings).
    struct Value: Codable, Sendable {
        var hex: String?
        var text: String?
        var uint8: UInt8?
        var uint16: UInt16?
        var uint32: UInt32?
        var plist: [String: String]?

        init(hex: String? = nil, text: String? = nil, uint8: UInt8? = nil, plist: [String: String]? = nil) {
            self.hex = hex
            self.text = text
            self.uint8 = uint8
            self.plist = plist
        }

        func bytes(_ context: String) throws(CLIFailure) -> [UInt8] {
            let given = [hex != nil, text != nil, uint8 != nil, uint16 != nil, uint32 != nil, plist != nil].filter { $0 }.count
            guard given == 1 else {
                throw CLIFailure(.usage, "\(context): a value has exactly one of hex, text, uint8, uint16, uint32, plist")
            }
            if let hex {
                do {
                    return try Hex.decode(hex)
                } catch {
                    throw CLIFailure(.usage, "\(context): \"\(hex)\" is not hex: \(error.reason)")
                }
            }
            if let text { return Array(text.utf8) }
            if let uint8 { return [uint8] }
            if let uint16 { return [UInt8(truncatingIfNeeded: uint16), UInt8(truncatingIfNeeded: uint16 >> 8)] }
            if let uint32 { return (0..<4).map { UInt8(truncatingIfNeeded: uint32 >> (8 * $0)) } }
            if let plist {
                do {
                    let encoder = PropertyListEncoder()
                    encoder.outputFormat = .binary
                    return Array(try encoder.encode(plist))
                } catch {
                    throw CLIFailure(.usage, "\(context): cannot encode the plist: \(error)")
                }
            }
            return []
        }
    }

    /// A value source that updates the characteristic (and notifies subscribers) every `interval` seconds.
    struct Generator: Codable, Sendable {
        /// counter, heart-rate, battery or sequence.
        var generator: String
        var interval: Double?
        /// counter: first value (default 0), step (default 1), width in octets 1, 2 or 4 (default 1).
        var start: UInt32?
        var step: UInt32?
        var width: Int?
        /// sequence: values cycled in order.
        var values: [Value]?
    }

    static func load(path: String) throws(CLIFailure) -> ServeDefinition {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIFailure(.usage, "cannot read \(path)")
        }
        return try decode(data, source: path)
    }

    static func decode(_ data: Data, source: String) throws(CLIFailure) -> ServeDefinition {
        try ServeDefinitionCheck.check(data, source: source)
        do {
            return try JSONDecoder().decode(ServeDefinition.self, from: data)
        } catch let DecodingError.dataCorrupted(context) {
            throw CLIFailure(.usage, "\(source): not valid JSON: \(context.debugDescription)")
        } catch let DecodingError.keyNotFound(key, context) {
            throw CLIFailure(.usage, "\(source): missing \"\(key.stringValue)\" at \(pathText(context.codingPath))")
        } catch let DecodingError.typeMismatch(_, context) {
            throw CLIFailure(.usage, "\(source): wrong type at \(pathText(context.codingPath)): \(context.debugDescription)")
        } catch let DecodingError.valueNotFound(_, context) {
            throw CLIFailure(.usage, "\(source): missing value at \(pathText(context.codingPath))")
        } catch {
            throw CLIFailure(.usage, "\(source): \(error)")
        }
    }

    private static func pathText(_ path: [any CodingKey]) -> String {
        let text = path.map { key in key.intValue.map { "[\($0)]" } ?? ".\(key.stringValue)" }.joined()
        return text.isEmpty ? "the top level" : text
    }
}

/// A definition checked and turned into what the server needs.
struct CompiledService: Sendable {
    struct Characteristic: Sendable {
        var uuid: BluetoothUUID
        var properties: GATTCharacteristicProperties
        var permissions: GATTPermissions
        var value: [UInt8]
        var maximumLength: Int
        var descriptors: [(uuid: BluetoothUUID, permissions: GATTPermissions, value: [UInt8])]
        var generator: ServeGenerator?
        /// Sent to each new subscriber (``ServeDefinition/Characteristic/onSubscribe``).
        var subscribeValue: [UInt8]?
        /// How the app answers the value's requests; nil: at once, by the stack.
        var answer: ServeAnswer?
        /// The prefix of the reply to each write (``ServeDefinition/Characteristic/echo``).
        var echoPrefix: [UInt8]?
        /// Whether the definition lists the 2902 descriptor itself (it is then among `descriptors`, in place).
        var declaresClientConfiguration: Bool
        /// How the app answers writes of that declared 2902 descriptor; nil: at once.
        var clientConfigurationAnswer: ServeAnswer?

        var notifies: Bool { !properties.isDisjoint(with: [.notify, .indicate]) }
    }

    var uuid: BluetoothUUID
    var isPrimary: Bool
    var characteristics: [Characteristic]
}

extension ServeDefinition {
    static func uuid(_ text: String, _ context: String) throws(CLIFailure) -> BluetoothUUID {
        do {
            return try BluetoothUUID(string: text)
        } catch {
            throw CLIFailure(.usage, "\(context): bad UUID \"\(text)\": expected 4 or 8 hex digits, or 8-4-4-4-12 hex digits")
        }
    }

    static let propertyNames: [String: GATTCharacteristicProperties] = [
        "broadcast": .broadcast, "read": .read, "write-without-response": .writeWithoutResponse,
        "writeWithoutResponse": .writeWithoutResponse, "write": .write, "notify": .notify, "indicate": .indicate,
    ]

    static func permissions(_ names: [String]?, default fallback: GATTPermissions, _ context: String) throws(CLIFailure) -> GATTPermissions {
        guard let names else { return fallback }
        var permissions = GATTPermissions.none
        for name in names {
            switch name {
            case "read": permissions.readable = true
            case "write": permissions.writable = true
            case "read-encrypted":
                permissions.readable = true
                permissions.read = .encrypted
            case "write-encrypted":
                permissions.writable = true
                permissions.write = .encrypted
            case "read-authenticated":
                permissions.readable = true
                permissions.read = .authenticated
            case "write-authenticated":
                permissions.writable = true
                permissions.write = .authenticated
            default:
                throw CLIFailure(.usage, "\(context): unknown permission \"\(name)\"; expected read, write, "
                                 + "read-encrypted, write-encrypted, read-authenticated, write-authenticated")
            }
        }
        return permissions
    }

    /// Checks everything (UUIDs, properties, values, generators) and returns the services in order.
    func compile() throws(CLIFailure) -> [CompiledService] {
        var result: [CompiledService] = []
        for (serviceIndex, service) in services.enumerated() {
            let serviceContext = "services[\(serviceIndex)]"
            var compiled = CompiledService(uuid: try Self.uuid(service.uuid, serviceContext), isPrimary: service.primary ?? true,
                                           characteristics: [])
            for (index, characteristic) in (service.characteristics ?? []).enumerated() {
                let context = "\(serviceContext).characteristics[\(index)]"
                var properties: GATTCharacteristicProperties = []
                for name in characteristic.properties {
                    guard let property = Self.propertyNames[name] else {
                        throw CLIFailure(.usage, "\(context): unknown property \"\(name)\"; expected read, write, "
                                         + "write-without-response, notify, indicate, broadcast")
                    }
                    properties.insert(property)
                }
                let writable = !properties.isDisjoint(with: [.write, .writeWithoutResponse])
                let permissions = try Self.permissions(
                    characteristic.permissions, default: GATTPermissions(readable: properties.contains(.read), writable: writable), context)
                var descriptors: [(uuid: BluetoothUUID, permissions: GATTPermissions, value: [UInt8])] = []
                if let text = characteristic.description {
                    descriptors.append((GATTUUID.characteristicUserDescription, .readOnly, Array(text.utf8)))
                }
                var declaresClientConfiguration = false
                var clientConfigurationAnswer: ServeAnswer?
                for (descriptorIndex, descriptor) in (characteristic.descriptors ?? []).enumerated() {
                    let descriptorContext = "\(context).descriptors[\(descriptorIndex)]"
                    let uuid = try Self.uuid(descriptor.uuid, descriptorContext)
                    if uuid == GATTUUID.clientCharacteristicConfiguration {
                        // Declared as an Android app adds it: the server still keeps its value per client.
                        guard !properties.isDisjoint(with: [.notify, .indicate]), !declaresClientConfiguration else {
                            throw CLIFailure(.usage, "\(descriptorContext): a 2902 descriptor belongs once to a characteristic that notifies or indicates")
                        }
                        guard descriptor.value == nil, descriptor.permissions == nil else {
                            throw CLIFailure(.usage, "\(descriptorContext): the 2902 descriptor's value and permissions are the client's; give only \"answer\"")
                        }
                        declaresClientConfiguration = true
                        clientConfigurationAnswer = try descriptor.answer.map { answer throws(CLIFailure) in
                            try ServeAnswer(answer, context: "\(descriptorContext).answer")
                        }
                        descriptors.append((uuid, .readWrite, [0, 0]))
                        continue
                    }
                    guard descriptor.answer == nil else {
                        throw CLIFailure(.usage, "\(descriptorContext): \"answer\" is for the 2902 descriptor (other descriptors are answered by the stack)")
                    }
                    descriptors.append((uuid, try Self.permissions(descriptor.permissions, default: .readOnly, descriptorContext),
                                        try descriptor.value?.bytes(descriptorContext) ?? []))
                }
                let value = try characteristic.value?.bytes(context) ?? []
                var generator: ServeGenerator?
                if let definition = characteristic.notify {
                    guard !properties.isDisjoint(with: [.notify, .indicate]) else {
                        throw CLIFailure(.usage, "\(context): a notify generator needs the notify or indicate property")
                    }
                    generator = try ServeGenerator(definition, initial: value, context: "\(context).notify")
                }
                var subscribeValue: [UInt8]?
                if let definition = characteristic.onSubscribe {
                    guard !properties.isDisjoint(with: [.notify, .indicate]) else {
                        throw CLIFailure(.usage, "\(context): onSubscribe needs the notify or indicate property")
                    }
                    subscribeValue = try definition.bytes("\(context).onSubscribe")
                }
                let maximumLength = characteristic.maxLength ?? 512
                guard (0...512).contains(maximumLength) else {
                    throw CLIFailure(.usage, "\(context): maxLength must be 0...512")
                }
                var echoPrefix: [UInt8]?
                if let echo = characteristic.echo {
                    guard !properties.isDisjoint(with: [.notify, .indicate]), writable else {
                        throw CLIFailure(.usage, "\(context): echo needs a write property and notify or indicate")
                    }
                    echoPrefix = Array(echo.utf8)
                }
                let answer = try characteristic.answer.map { answer throws(CLIFailure) in try ServeAnswer(answer, context: "\(context).answer") }
                compiled.characteristics.append(CompiledService.Characteristic(
                    uuid: try Self.uuid(characteristic.uuid, context), properties: properties, permissions: permissions,
                    value: value, maximumLength: maximumLength, descriptors: descriptors, generator: generator,
                    subscribeValue: subscribeValue, answer: answer, echoPrefix: echoPrefix,
                    declaresClientConfiguration: declaresClientConfiguration, clientConfigurationAnswer: clientConfigurationAnswer))
            }
            result.append(compiled)
        }
        return result
    }

    /// The advertising content: the name, `services`, and the definition's advertising data.
    func advertisingContent(name: String, services: [BluetoothUUID]) throws(CLIFailure) -> AdvertisingContent {
        var content = AdvertisingContent(localName: name, serviceUUIDs: services)
        guard let extras = advertisingData else { return content }
        if let manufacturer = extras.manufacturer {
            content.manufacturerData = (CompanyIdentifier(rawValue: manufacturer.company), try Self.hex(manufacturer.hex, "advertisingData.manufacturer.hex"))
        }
        for (index, entry) in (extras.serviceData ?? []).enumerated() {
            let context = "advertisingData.serviceData[\(index)]"
            content.serviceData.append(AdvertisingContent.ServiceData(uuid: try Self.uuid(entry.uuid, context),
                                                                      data: try Self.hex(entry.hex, context + ".hex")))
        }
        content.txPowerLevel = extras.txPower
        return content
    }

    private static func hex(_ text: String, _ context: String) throws(CLIFailure) -> [UInt8] {
        do { return try Hex.decode(text) } catch { throw CLIFailure(.usage, "\(context): \"\(text)\" is not hex octets") }
    }

    /// The UUIDs to advertise.
    func advertisedUUIDs(_ compiled: [CompiledService]) throws(CLIFailure) -> [BluetoothUUID] {
        if let advertise {
            var list: [BluetoothUUID] = []
            for text in advertise { list.append(try Self.uuid(text, "advertise")) }
            return list
        }
        return compiled.filter {
            $0.isPrimary && $0.uuid != GATTUUID.genericAccessService && $0.uuid != GATTUUID.genericAttributeService
        }.map(\.uuid)
    }
}

/// A notification source: each tick gives the characteristic's next value.
struct ServeGenerator: Sendable {
    enum Kind: Sendable {
        case counter(start: UInt32, step: UInt32, width: Int)
        case heartRate
        case battery(start: UInt8)
        case sequence([[UInt8]])
    }

    var kind: Kind
    var interval: Duration

    init(_ definition: ServeDefinition.Generator, initial: [UInt8], context: String) throws(CLIFailure) {
        let seconds = definition.interval ?? 1
        guard seconds >= 0.01, seconds <= 3600 else { throw CLIFailure(.usage, "\(context): interval must be 0.01...3600 seconds") }
        interval = .milliseconds(Int64(seconds * 1000))
        switch definition.generator {
        case "counter":
            let width = definition.width ?? 1
            guard [1, 2, 4].contains(width) else { throw CLIFailure(.usage, "\(context): width must be 1, 2 or 4") }
            kind = .counter(start: definition.start ?? 0, step: definition.step ?? 1, width: width)
        case "heart-rate":
            kind = .heartRate
        case "battery":
            kind = .battery(start: initial.first.map { min($0, 100) } ?? 100)
        case "sequence":
            var values: [[UInt8]] = []
            for (index, value) in (definition.values ?? []).enumerated() { values.append(try value.bytes("\(context).values[\(index)]")) }
            guard !values.isEmpty else { throw CLIFailure(.usage, "\(context): a sequence needs values") }
            kind = .sequence(values)
        default:
            throw CLIFailure(.usage, "\(context): unknown generator \"\(definition.generator)\"; expected counter, heart-rate, battery or sequence")
        }
    }

    /// The value of tick `tick` (from 0).
    func value(tick: UInt64) -> [UInt8] {
        switch kind {
        case .counter(let start, let step, let width):
            let value = start &+ step &* UInt32(truncatingIfNeeded: tick)
            return (0..<width).map { UInt8(truncatingIfNeeded: value >> (8 * UInt32($0))) }
        case .heartRate:
            // 60...100 bpm in a slow wave, sensor contact detected, one RR interval (1/1024 s).
            let phase = Double(tick % 40) / 40 * 2 * Double.pi
            let rate = UInt16(80 + 20 * sin(phase))
            let rr = UInt16(60 * 1024 / max(Int(rate), 1))
            return [0x16, UInt8(truncatingIfNeeded: rate), UInt8(truncatingIfNeeded: rr), UInt8(truncatingIfNeeded: rr >> 8)]
        case .battery(let start):
            let drop = UInt8(truncatingIfNeeded: tick % UInt64(max(start, 1)))
            return [start &- drop]
        case .sequence(let values):
            return values[Int(tick % UInt64(values.count))]
        }
    }
}
