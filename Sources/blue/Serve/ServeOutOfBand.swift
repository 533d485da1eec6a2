import BluetoothCore
import BluetoothCrypto
import BluetoothEngine
import BluetoothRuntime
import FoundationEssentials
import Host
import StackLauncher
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `blue serve`'s out-of-band pairing as peripheral (Core 5.4 Vol 3 Part H §2.3.5.6.4 LE Secure Connections OOB
/// data, §2.3.5.4 the legacy OOB temporary key).
///
/// `--oob-out` is written once the stack is up, before advertising. `--oob-in` may appear or change while the
/// server runs (a central writes it just before connecting): it is read at start when present (malformed: exit
/// 64), again on every connection, synchronously in the connection event so the data is in place before the
/// central's Pairing Request, and polled every second in between; a changed, valid file replaces the data given
/// before (for the address it names), an invalid one is reported once and the previous data kept. `--oob-key` is
/// given to every central that connects.
final class ServeOutOfBand: Sendable {
    let inPath: String?
    let outPath: String?
    let legacyKey: Block128?

    private struct State {
        /// The `--oob-in` data given to the host.
        var applied: OutOfBandFile?
        /// The last problem reported (not repeated until it changes).
        var lastProblem: String?
        var stopped = false
    }

    private let state = LockedValue(State())
    private let stackBox = LockedValue<(any OpenedStack)?>(nil)

    /// Checks the options before the stack opens (bad input: exit 64, nothing written).
    init(inPath: String?, outPath: String?, key: String?) throws(CLIFailure) {
        do throws(OutOfBandFileError) {
            legacyKey = try key.map { (text: String) throws(OutOfBandFileError) -> Block128 in
                try OutOfBandFile.block128(text, what: "--oob-key")
            }
            if let outPath { try OutOfBandFile.checkWritable(path: outPath, option: "--oob-out") }
            if let inPath, FileManager.default.fileExists(atPath: inPath) {
                _ = try OutOfBandFile.read(path: inPath, option: "--oob-in")
            }
        } catch {
            throw error.failure
        }
        self.inPath = inPath
        self.outPath = outPath
    }

    var isEnabled: Bool { inPath != nil || outPath != nil || legacyKey != nil }

    /// Writes `--oob-out` (our address, r and C), then starts watching `--oob-in` and giving `--oob-key` to
    /// centrals. Call before advertising.
    func start(_ opened: any OpenedStack, server: GATTServeState) async throws(CLIFailure) {
        // The engine's SMP: bluetoothd was refused when this is enabled (`ourHostOptions`).
        guard isEnabled else { return }
        let launched = opened
        stackBox.store(launched)
        if let outPath {
            let result = await launched.awaitCompletion { launched.engine.localOutOfBandData(completion: $0) }
            switch result {
            case .success(let local):
                do throws(OutOfBandFileError) {
                    try OutOfBandFile(local).write(path: outPath, option: "--oob-out")
                } catch {
                    throw error.failure
                }
                server.note(["event": "oobDataWritten", "file": outPath, "address": local.address.string],
                            text: "OOB data (address \(local.address.string)) written to \(outPath)")
            case .failure(let error):
                throw CLIFailure(.failed, "cannot make our OOB data: \(error.reason)")
            }
        }
        let host = launched.engine, legacyKey = legacyKey
        launched.addEventHandler { [self] event in
            guard case .connected(let connection) = event else { return }
            if let legacyKey { host.setLegacyOutOfBandKey(for: connection.peer, temporaryKey: legacyKey) }
            reload(server: server)
        }
        reload(server: server)
        if inPath != nil { poll(server: server, loop: launched.eventLoop) }
    }

    /// Reads `--oob-in` and gives the host what changed.
    func reload(server: GATTServeState) {
        guard let inPath, let stack = stackBox.load() else { return }
        guard FileManager.default.fileExists(atPath: inPath) else { return }
        let read: Result<OutOfBandFile, OutOfBandFileError>
        do throws(OutOfBandFileError) {
            read = .success(try OutOfBandFile.read(path: inPath, option: "--oob-in"))
        } catch {
            read = .failure(error)
        }
        switch read {
        case .success(let data):
            let (changed, old) = state.withLock { state -> (Bool, OutOfBandFile?) in
                state.lastProblem = nil
                guard state.applied != data else { return (false, nil) }
                defer { state.applied = data }
                return (true, state.applied)
            }
            guard changed else { return }
            if let old, old.address != data.address { stack.engine.removeOutOfBandData(for: old.address) }
            stack.engine.setPeerOutOfBandData(for: data.address, random: data.random, confirm: data.confirm)
            server.note(["event": "oobDataRead", "file": inPath, "address": data.address.string],
                        text: "OOB data of \(data.address.string) read from \(inPath)")
        case .failure(let error):
            let fresh = state.withLock { state -> Bool in
                defer { state.lastProblem = error.reason }
                return state.lastProblem != error.reason
            }
            if fresh {
                server.note(["event": "oobDataInvalid", "file": inPath, "error": error.reason],
                            text: "warning: \(error.reason) (the previous OOB data is kept)")
            }
        }
    }

    private func poll(server: GATTServeState, loop: any EventLoop) {
        loop.schedule(after: .seconds(1)) { [self] in
            guard !state.withLock({ $0.stopped }) else { return }
            reload(server: server)
            poll(server: server, loop: loop)
        }
    }

    func stop() {
        state.withLock { $0.stopped = true }
    }
}
