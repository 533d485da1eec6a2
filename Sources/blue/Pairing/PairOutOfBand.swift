import BluetoothCore
import BluetoothCrypto
import BluetoothEngine
import FoundationEssentials
import Host
import StackLauncher
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `blue pair`'s out-of-band options (Core 5.4 Vol 3 Part H §2.3.5.6.4 LE Secure Connections OOB data, §2.3.5.4
/// the legacy OOB temporary key), all checked before the stack opens: an OOB method without its data, options of
/// the other OOB method, an unreadable or malformed `--oob-in` file, a `--oob-key` that is not 32 hex digits, an
/// `--oob-out` path that cannot be written are bad input (exit 64) and nothing is written or connected.
struct PairOutOfBand: Sendable {
    /// The peer's LE SC data (`--oob-in`), read at start.
    var peer: OutOfBandFile?
    /// Where our LE SC data goes (`--oob-out`).
    var outPath: String?
    /// The legacy TK (`--oob-key`).
    var legacyKey: Block128?

    init(method: PairMethodChoice, inPath: String?, outPath: String?, key: String?) throws(OutOfBandFileError) {
        switch method {
        case .oob:
            guard inPath != nil || outPath != nil else {
                throw OutOfBandFileError(.misused, "--method oob needs --oob-in FILE (the peer's OOB data) and/or --oob-out FILE (ours, for the peer)")
            }
            if key != nil {
                throw OutOfBandFileError(.misused, "--oob-key is for --method legacy-oob (--method oob exchanges files: --oob-in, --oob-out)")
            }
        case .legacyOOB:
            guard key != nil else {
                throw OutOfBandFileError(.misused, "--method legacy-oob needs --oob-key HEX (the key shared with the peer, 32 hex digits)")
            }
            if inPath != nil || outPath != nil {
                throw OutOfBandFileError(.misused, "--oob-in and --oob-out are for --method oob (--method legacy-oob uses --oob-key)")
            }
        case .jw, .numeric, .passkey, .legacyJW, .legacyPasskey:
            if inPath != nil || outPath != nil || key != nil {
                throw OutOfBandFileError(.misused, "--oob-in, --oob-out and --oob-key need --method oob or --method legacy-oob")
            }
        }
        if let key { legacyKey = try OutOfBandFile.block128(key, what: "--oob-key") }
        if let inPath { peer = try OutOfBandFile.read(path: inPath, option: "--oob-in") }
        if let outPath {
            try OutOfBandFile.checkWritable(path: outPath, option: "--oob-out")
            self.outPath = outPath
        }
    }

    /// Writes our LE SC data (address, r, C of the stack's OOB key pair) to `--oob-out`, before connecting.
    func writeLocal(_ launched: any OpenedStack, json: Bool) async throws(CLIFailure) {
        guard let outPath else { return }
        let result = await launched.awaitCompletion { launched.engine.localOutOfBandData(completion: $0) }
        switch result {
        case .success(let local):
            do throws(OutOfBandFileError) {
                try OutOfBandFile(local).write(path: outPath, option: "--oob-out")
            } catch {
                throw error.failure
            }
            Pair.say(json, ["event": "oobDataWritten", "file": outPath, "address": local.address.string],
                     "Our OOB data (address \(local.address.string)) written to \(outPath)")
        case .failure(let error):
            throw CLIFailure(.failed, "cannot make our OOB data: \(error.reason)")
        }
    }

    /// Gives the host the peer's data for the target's address (the one we connect to). A file made for another
    /// address is still used (C commits to the key pair, not to the address) with a warning.
    func applyPeer(_ launched: any OpenedStack, target: BluetoothAddress) {
        if let peer {
            if peer.address != target {
                Console.error(
                    "warning: the --oob-in data is for \(peer.address.string) (\(peer.address.type)), the target is \(target.string) (\(target.type)): used anyway")
            }
            launched.engine.setPeerOutOfBandData(for: target, random: peer.random, confirm: peer.confirm)
        }
        if let legacyKey {
            launched.engine.setLegacyOutOfBandKey(for: target, temporaryKey: legacyKey)
        }
    }
}
