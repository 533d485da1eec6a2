import BluetoothCore
import PropertyBased
import SMP
import TestSupport
import Testing

/// Wire bytes of complete pairings (spec-vectors.md §1.9 legacy Just Works, §1.10 LE Secure Connections Just
/// Works, both from NimBLE's host tests), then hand-built PDUs for the rest of Vol 3 Part H §3.5-3.6.
let smpGoldens: [(String, SMPPDU)] = [
    // §1.9
    (
        "01040005100707",
        .pairingRequest(
            .init(
                ioCapability: .keyboardDisplay, oobDataFlag: .notPresent, authenticationRequirements: [.bonding, .mitm],
                maximumEncryptionKeySize: 16, initiatorKeyDistribution: [.encryptionKey, .identityKey, .signingKey],
                responderKeyDistribution: [.encryptionKey, .identityKey, .signingKey]))
    ),
    (
        "02030009100707",
        .pairingResponse(
            .init(
                ioCapability: .noInputNoOutput, authenticationRequirements: [.bonding, .secureConnections],
                initiatorKeyDistribution: [.encryptionKey, .identityKey, .signingKey],
                responderKeyDistribution: [.encryptionKey, .identityKey, .signingKey]))
    ),
    ("03cd5b7929533156232c08ed8116558e01", .pairingConfirm(confirmValue: hex("cd5b7929533156232c08ed8116558e01"))),
    ("034939220f7b1b80cdbe89d14cbd6fda2c", .pairingConfirm(confirmValue: hex("4939220f7b1b80cdbe89d14cbd6fda2c"))),
    ("047f42c02f1d0737fc045b059aed67a568", .pairingRandom(randomValue: hex("7f42c02f1d0737fc045b059aed67a568"))),
    ("04421a58a23b80deef950df7ca0605013c", .pairingRandom(randomValue: hex("421a58a23b80deef950df7ca0605013c"))),
    // §1.10
    (
        "01030009100d0f",
        .pairingRequest(
            .init(
                ioCapability: .noInputNoOutput, authenticationRequirements: [.bonding, .secureConnections],
                initiatorKeyDistribution: [.encryptionKey, .signingKey, .linkKey],
                responderKeyDistribution: [.encryptionKey, .identityKey, .signingKey, .linkKey]))
    ),
    (
        "02030009100507",
        .pairingResponse(
            .init(
                ioCapability: .noInputNoOutput, authenticationRequirements: [.bonding, .secureConnections],
                initiatorKeyDistribution: [.encryptionKey, .signingKey],
                responderKeyDistribution: [.encryptionKey, .identityKey, .signingKey]))
    ),
    (
        "0cbcf2d8a5dba3956c99f9110d4d2ef0bdee9b69b6cd8874be40e8e5ccdc884453bfa9820e187a14f877fd8e922af85d39d16d921f387499dc6c2c9423f97256ab",
        .pairingPublicKey(
            x: hex("bcf2d8a5dba3956c99f9110d4d2ef0bdee9b69b6cd8874be40e8e5ccdc884453"),
            y: hex("bfa9820e187a14f877fd8e922af85d39d16d921f387499dc6c2c9423f97256ab"))
    ),
    (
        "0c728cd188d7be49b2c55c95b364e01232b6c9476337385b9c1e1b1a0609e23185193a296962d630e7e84863dc00730a707d2e29cc917771b175b8f7dcb0e29110",
        .pairingPublicKey(
            x: hex("728cd188d7be49b2c55c95b364e01232b6c9476337385b9c1e1b1a0609e23185"),
            y: hex("193a296962d630e7e84863dc00730a707d2e29cc917771b175b8f7dcb0e29110"))
    ),
    ("0382edd062913d967f13c50d022b5e4316", .pairingConfirm(confirmValue: hex("82edd062913d967f13c50d022b5e4316"))),
    ("04a4345fb3af734364cd191b5b87583166", .pairingRandom(randomValue: hex("a4345fb3af734364cd191b5b87583166"))),
    ("04c091fbb377a2020bc6cd6c0451454539", .pairingRandom(randomValue: hex("c091fbb377a2020bc6cd6c0451454539"))),
    ("0d82651d02ed891344041a147c329a1e7d", .pairingDHKeyCheck(checkValue: hex("82651d02ed891344041a147c329a1e7d"))),
    ("0d063c284ae5484b51654e145e2fddfa22", .pairingDHKeyCheck(checkValue: hex("063c284ae5484b51654e145e2fddfa22"))),
    // Hand-built: key distribution with §1.9's LTK and EDIV, §1.10's responder address.
    ("0504", .pairingFailed(reason: .confirmValueFailed)),
    ("0511", .pairingFailed(reason: .init(0x11))),
    ("06d707227924c6cb4da3dd01fb4887d4cf", .encryptionInformation(longTermKey: hex("d707227924c6cb4da3dd01fb4887d4cf"))),
    ("07399a0102030405060708", .centralIdentification(ediv: 0x9A39, rand: hex("0102030405060708"))),
    ("08000102030405060708090a0b0c0d0e0f", .identityInformation(identityResolvingKey: hex("000102030405060708090a0b0c0d0e0f"))),
    ("090033221100450a", .identityAddressInformation(BluetoothAddress(0x0A45_0011_2233, type: .public))),
    ("0901efcdab8967c5", .identityAddressInformation(BluetoothAddress(0xC567_89AB_CDEF, type: .random))),
    ("0af0e0d0c0b0a09080706050403020100f", .signingInformation(signatureKey: hex("f0e0d0c0b0a09080706050403020100f"))),
    ("0b0d", .securityRequest([.bonding, .mitm, .secureConnections])),
    ("0b2d", .securityRequest([.bonding, .mitm, .secureConnections, .ct2])),
    ("0e00", .pairingKeypressNotification(.passkeyEntryStarted)),
    ("0e04", .pairingKeypressNotification(.passkeyEntryCompleted)),
    // Reserved codes.
    ("0f0102", .unknown(code: .init(0x0F), data: [1, 2])),
    ("00", .unknown(code: .init(0x00), data: [])),
]

@Suite struct SMPPDUTests {
    @Test func goldenBytesBothWays() throws {
        for (text, pdu) in smpGoldens {
            let bytes = hex(text)
            #expect(try SMPPDU(decoding: bytes) == pdu, "decoding \(text)")
            #expect(pdu.encode() == bytes, "encoding \(pdu)")
            #expect(throws: Never.self) { try pdu.validate() }
        }
    }

    @Test func fieldsOfTheSpecVectors() throws {
        guard case .pairingRequest(let request) = try SMPPDU(decoding: hex("01030009100d0f")) else {
            Issue.record("not a pairing request")
            return
        }
        #expect(request.ioCapability == .noInputNoOutput)
        #expect(request.authenticationRequirements.bondingFlags == 1)
        #expect(request.authenticationRequirements.contains(.secureConnections))
        #expect(!request.authenticationRequirements.contains(.mitm))
        #expect(request.maximumEncryptionKeySize == 16)
        #expect(request.initiatorKeyDistribution.contains(.linkKey))
        #expect(!request.initiatorKeyDistribution.contains(.identityKey))
    }

    @Test func wrongLengthForEachCodeIsRejected() {
        for (code, length) in SMPCode.pduLengths {
            for count in 1...70 where count != length {
                let bytes = [code] + [UInt8](repeating: 0x07, count: count - 1)
                #expect(throws: DecodeError.self, "code \(code) length \(count)") { try SMPPDU(decoding: bytes) }
            }
        }
        #expect(throws: DecodeError.self) { try SMPPDU(decoding: []) }
        do {
            _ = try SMPPDU(decoding: hex("0301"))
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .truncated)
            #expect(error.reason.contains("Pairing Confirm is 17 octets"))
        }
        do {
            _ = try SMPPDU(decoding: hex("050400"))
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .trailingBytes)
        }
    }

    @Test func truncatedAtEveryLengthAndTrailingBytes() {
        for (text, pdu) in smpGoldens {
            if case .unknown = pdu { continue }
            let bytes = hex(text)
            for length in 0..<bytes.count {
                #expect(throws: DecodeError.self) { try SMPPDU(decoding: Array(bytes.prefix(length))) }
            }
            #expect(throws: DecodeError.self) { try SMPPDU(decoding: bytes + [0]) }
        }
    }

    @Test func encryptionKeySizeIsValidated() throws {
        for size: UInt8 in [0, 6, 17, 255] {
            #expect(throws: DecodeError.self, "size \(size)") {
                try SMPPDU(decoding: [0x01, 0x03, 0x00, 0x01, size, 0x01, 0x01])
            }
            #expect(throws: DecodeError.self) { try SMPPDU(decoding: [0x02, 0x03, 0x00, 0x01, size, 0x01, 0x01]) }
        }
        for size: UInt8 in 7...16 {
            #expect(throws: Never.self) { try SMPPDU(decoding: [0x01, 0x03, 0x00, 0x01, size, 0x01, 0x01]) }
        }
        do {
            _ = try SMPPDU(decoding: hex("01030001060101"))
        } catch {
            #expect(error.code == .invalidValue && error.offset == 4)
        }
    }

    @Test func identityAddressTypeIsValidated() {
        #expect(throws: DecodeError.self) { try SMPPDU(decoding: hex("090233221100450a")) }
    }

    @Test func validateReportsWrongSizes() {
        #expect(throws: DecodeError.self) { try SMPPDU.pairingConfirm(confirmValue: [1, 2]).validate() }
        #expect(throws: DecodeError.self) { try SMPPDU.pairingPublicKey(x: [UInt8](repeating: 0, count: 32), y: []).validate() }
        #expect(throws: DecodeError.self) { try SMPPDU.centralIdentification(ediv: 1, rand: [1]).validate() }
        let parameters = SMPPairingParameters(
            ioCapability: .displayOnly, authenticationRequirements: [], maximumEncryptionKeySize: 6,
            initiatorKeyDistribution: [], responderKeyDistribution: [])
        #expect(throws: DecodeError.self) { try SMPPDU.pairingRequest(parameters).validate() }
        // Encoding stays total: wrong-size values are padded or cut to the field size.
        #expect(SMPPDU.pairingConfirm(confirmValue: [1, 2]).encode() == [0x03, 1, 2] + [UInt8](repeating: 0, count: 14))
        #expect(SMPPDU.pairingRandom(randomValue: [UInt8](repeating: 9, count: 20)).encode().count == 17)
    }

    @Test func everyCodeInTheTableHasACodecAndAGolden() throws {
        let covered = Set(smpGoldens.map { $0.1.code.rawValue })
        for (code, length) in SMPCode.pduLengths {
            #expect(covered.contains(code), "no golden for code \(code)")
            #expect(SMPCode.names[code] != nil)
            var sample = [code] + [UInt8](repeating: 0x01, count: length - 1)
            if code == 0x01 || code == 0x02 { sample[4] = 16 }  // a valid key size
            let pdu = try SMPPDU(decoding: sample)
            if case .unknown = pdu { Issue.record("code \(code) decoded as unknown") }
            #expect(pdu.code.rawValue == code)
            #expect(pdu.encode() == sample)
        }
        #expect(Set(SMPCode.pduLengths.keys) == Set(SMPCode.names.keys))
        for (_, pdu) in smpGoldens {
            if let length = pdu.code.pduLength { #expect(pdu.encode().count == length) }
        }
    }

    @Test func dissections() throws {
        let request = try SMPPDU(decoding: hex("01040005100707"))
        let text = request.dissection.renderText()
        #expect(request.dissection.label == "SMP Pairing Request")
        #expect(text.contains("Code: Pairing Request (0x01)"))
        #expect(text.contains("IO Capability: KeyboardDisplay (0x04)"))
        #expect(text.contains("OOB Data Flag: OOB Authentication data not present (0x00)"))
        #expect(text.contains("AuthReq: 0x05: Bonding, MITM"))
        #expect(text.contains("Maximum Encryption Key Size: 16"))
        #expect(text.contains("Initiator Key Distribution: 0x07: EncKey, IdKey, SignKey"))
        #expect(text.contains("Responder Key Distribution: 0x07: EncKey, IdKey, SignKey"))

        let response = try SMPPDU(decoding: hex("02030009100d0f")).dissection.renderText()
        #expect(response.contains("AuthReq: 0x09: Bonding, SC"))
        #expect(response.contains("Initiator Key Distribution: 0x0D: EncKey, SignKey, LinkKey"))

        #expect(SMPAuthenticationRequirements(rawValue: 0x00).description == "0x00: No Bonding")
        #expect(SMPAuthenticationRequirements(rawValue: 0x3D).description == "0x3D: Bonding, MITM, SC, Keypress, CT2")
        #expect(SMPAuthenticationRequirements(rawValue: 0xC2).description == "0xC2: Reserved Bonding_Flags (2), RFU bits 0xC0")
        #expect(SMPKeyDistribution(rawValue: 0).description == "0x00: none")

        let failed = try SMPPDU(decoding: hex("0504")).dissection.renderText()
        #expect(failed.contains("Reason: Confirm Value Failed (0x04)"))
        let ltk = try SMPPDU(decoding: hex("06d707227924c6cb4da3dd01fb4887d4cf")).dissection.renderText()
        // Shown as the number (most significant octet first), as the specification prints keys.
        #expect(ltk.contains("Long Term Key: 0xcfd48748fb01dda34dcbc624792207d7"))
        let address = try SMPPDU(decoding: hex("090033221100450a")).dissection.renderText()
        #expect(address.contains("BD_ADDR: 0A:45:00:11:22:33"))
        #expect(address.contains("AddrType: Public (0x00)"))
        let keypress = try SMPPDU(decoding: hex("0e01")).dissection.renderText()
        #expect(keypress.contains("Notification Type: Passkey digit entered (0x01)"))
        let unknown = try SMPPDU(decoding: hex("1f0102")).dissection
        #expect(unknown.label == "SMP Unknown PDU")
        #expect(unknown.renderText().contains("Code: Unknown SMP code (0x1F)"))
        for (_, pdu) in smpGoldens { #expect(pdu.dissection.label.hasPrefix("SMP ")) }
    }

    @Test func randomBytesNeverCrashAndRoundTrip() {
        var generator = SeededGenerator(seed: 0x5A1)
        var decoded = 0
        for iteration in 0..<5000 {
            let bytes: [UInt8]
            if iteration % 2 == 0, let length = SMPCode.pduLengths[UInt8.random(in: 1...0x0E, using: &generator)] {
                // Right length for some code, random contents (the code itself is random too).
                bytes = [UInt8.random(in: 0...0x10, using: &generator)] + generator.bytes(length - 1)
            } else {
                bytes = generator.bytes(Int.random(in: 0...70, using: &generator))
            }
            do {
                let pdu = try SMPPDU(decoding: bytes)
                decoded += 1
                #expect(pdu.encode() == bytes)
                _ = pdu.dissection
            } catch {
                _ = error.description
            }
        }
        #expect(decoded > 300)
    }

    @Test func propertyRoundTrip() async {
        await propertyCheck(
            count: 300,
            input: Gen.uint8(), Gen.uint8(), Gen.uint8(in: 7...16), Gen.uint8().array(of: 16), Gen.uint8().array(of: 32),
            Gen.uint16()
        ) { a, b, keySize, value, coordinate, ediv in
            let parameters = SMPPairingParameters(
                ioCapability: .init(a), oobDataFlag: .init(b), authenticationRequirements: .init(rawValue: a ^ b),
                maximumEncryptionKeySize: keySize, initiatorKeyDistribution: .init(rawValue: a),
                responderKeyDistribution: .init(rawValue: b))
            let pdus: [SMPPDU] = [
                .pairingRequest(parameters), .pairingResponse(parameters),
                .pairingConfirm(confirmValue: value), .pairingRandom(randomValue: value),
                .pairingFailed(reason: .init(a)), .encryptionInformation(longTermKey: value),
                .centralIdentification(ediv: ediv, rand: Array(value.prefix(8))),
                .identityInformation(identityResolvingKey: value),
                .identityAddressInformation(
                    BluetoothAddress(UInt64(ediv) << 32 | UInt64(a) << 8 | UInt64(b), type: a & 1 == 0 ? .public : .random)),
                .signingInformation(signatureKey: value), .securityRequest(.init(rawValue: b)),
                .pairingPublicKey(x: coordinate, y: coordinate.reversed()), .pairingDHKeyCheck(checkValue: value),
                .pairingKeypressNotification(.init(a)),
            ]
            for pdu in pdus {
                #expect((try? SMPPDU(decoding: pdu.encode())) == pdu)
            }
        }
    }
}
