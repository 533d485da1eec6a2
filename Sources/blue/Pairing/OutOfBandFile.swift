import BluetoothCore
import BluetoothCrypto
import BluetoothEngine
import FoundationEssentials
import Host
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why an out-of-band file or key given on the command line cannot be used.
struct OutOfBandFileError: Error, Sendable, CustomStringConvertible {
    enum Code: String, Sendable {
        /// The file does not exist or cannot be read.
        case unreadable
        /// Not a JSON object with the fields of ``OutOfBandFile``.
        case malformed
        /// A hex value of the wrong length or with other characters.
        case badHex
        /// The file cannot be written.
        case unwritable
        /// Options that do not go together, or an OOB method without its data.
        case misused
    }

    var code: Code
    var reason: String

    init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    var description: String { reason }

    /// As a command-line failure: bad input, exit 64.
    var failure: CLIFailure { CLIFailure(.usage, reason) }
}

/// The LE Secure Connections out-of-band data one device gives the other (Core 5.4 Vol 3 Part H §2.3.5.6.4: the
/// LE Bluetooth Device Address, the random value r and the confirm value C = f4(PKx, PKx, r, 0)), as the small JSON
/// document `blue pair --oob-out` / `blue serve --oob-out` write and `--oob-in` reads (Docs/pairing.md):
///
/// ```json
/// {"address": "C0:12:34:56:78:9A", "addressType": "random",
///  "random": "00112233445566778899aabbccddeeff", "confirm": "0123456789abcdef0123456789abcdef"}
/// ```
///
/// `random` and `confirm` are 32 hex digits, most significant octet first (as the specification prints 128-bit
/// values); `addressType` is `public` or `random`. Other keys are ignored.
struct OutOfBandFile: Hashable, Sendable {
    var address: BluetoothAddress
    var random: Block128
    var confirm: Block128

    init(address: BluetoothAddress, random: Block128, confirm: Block128) {
        self.address = address
        self.random = random
        self.confirm = confirm
    }

    init(_ local: LocalOutOfBandData) {
        self.init(address: local.address, random: local.random, confirm: local.confirm)
    }

    /// The JSON object (keys sorted when serialized).
    var jsonObject: [String: Any] {
        ["address": address.string, "addressType": address.type.description,
         "random": Hex.encode(random.msbFirst), "confirm": Hex.encode(confirm.msbFirst)]
    }

    /// The document text (one line and a newline).
    var text: String {
        (JSONWriter.text(jsonObject, escapingSlashes: true) ?? "{}") + "\n"
    }

    /// Parses the document; `source` names it in errors ("--oob-in peer.json").
    static func parse(_ data: Data, source: String) throws(OutOfBandFileError) -> OutOfBandFile {
        let parsed: JSONValue
        do {
            parsed = try JSONReader.parse(Array(data))
        } catch {
            throw OutOfBandFileError(.malformed, "\(source): not JSON (expected {\"address\", \"addressType\", \"random\", \"confirm\"})")
        }
        guard case .object(let object) = parsed else {
            throw OutOfBandFileError(.malformed, "\(source): expected a JSON object with address, addressType, random and confirm")
        }
        func string(_ key: String) throws(OutOfBandFileError) -> String {
            guard let value = object[key] else { throw OutOfBandFileError(.malformed, "\(source): no \"\(key)\"") }
            guard case .string(let text) = value else { throw OutOfBandFileError(.malformed, "\(source): \"\(key)\" is not a string") }
            return text
        }
        let typeText = try string("addressType")
        let type: BluetoothAddress.AddressType
        switch typeText.lowercased() {
        case "public": type = .public
        case "random": type = .random
        default: throw OutOfBandFileError(.malformed, "\(source): \"addressType\" must be \"public\" or \"random\", not \"\(typeText)\"")
        }
        let addressText = try string("address")
        let address: BluetoothAddress
        do {
            address = try BluetoothAddress(string: addressText, type: type)
        } catch {
            throw OutOfBandFileError(.malformed, "\(source): \"address\": \(error.reason)")
        }
        let random = try block128(try string("random"), what: "\(source): \"random\"")
        let confirm = try block128(try string("confirm"), what: "\(source): \"confirm\"")
        return OutOfBandFile(address: address, random: random, confirm: confirm)
    }

    /// Reads and parses the file at `path`.
    static func read(path: String, option: String) throws(OutOfBandFileError) -> OutOfBandFile {
        let source = "\(option) \(path)"
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            let why = FileManager.default.fileExists(atPath: path) ? "cannot be read" : "no such file"
            throw OutOfBandFileError(.unreadable, "\(source): \(why)")
        }
        return try parse(data, source: source)
    }

    /// Writes the document to `path` at once (a temporary file in the same folder, mode 0600, created exclusively so
    /// that a symbolic link planted there is never written through, then renamed over the path, which replaces a link
    /// rather than following it), so a reader polling the path never sees half of it.
    func write(path: String, option: String) throws(OutOfBandFileError) {
        let temporary: String
        do {
            temporary = try PrivateFile.writeTemporary(Data(text.utf8), beside: path)
        } catch {
            throw OutOfBandFileError(.unwritable, "\(option) \(path): cannot be written (\(error.reason))")
        }
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            throw OutOfBandFileError(.unwritable, "\(option) \(path): cannot be written")
        }
    }

    /// Checks before anything starts that `path` can be written (its folder exists and is writable, and it is not
    /// a folder itself).
    static func checkWritable(path: String, option: String) throws(OutOfBandFileError) {
        let url = URL(fileURLWithPath: path)
        var isFolder = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder), isFolder {
            throw OutOfBandFileError(.unwritable, "\(option) \(path): is a folder")
        }
        let folder = url.deletingLastPathComponent().path
        guard FileManager.default.isWritableFile(atPath: folder) else {
            throw OutOfBandFileError(.unwritable, "\(option) \(path): the folder \(folder) does not exist or is not writable")
        }
    }

    /// A 128-bit value from exactly 32 hex digits (separators `:`, `-`, spaces and a `0x` prefix allowed), most
    /// significant octet first.
    static func block128(_ text: String, what: String) throws(OutOfBandFileError) -> Block128 {
        let bytes: [UInt8]
        do {
            bytes = try Hex.decode(text)
        } catch {
            throw OutOfBandFileError(.badHex, "\(what) must be 32 hex digits: \(error.reason)")
        }
        guard bytes.count == 16 else {
            throw OutOfBandFileError(.badHex, "\(what) must be 32 hex digits (16 octets), not \(bytes.count * 2)")
        }
        do {
            return try Block128(msbFirst: bytes)
        } catch {
            throw OutOfBandFileError(.badHex, "\(what) must be 32 hex digits (16 octets)")
        }
    }
}
