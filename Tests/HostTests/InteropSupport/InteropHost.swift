import BluetoothCore
import BluetoothRuntime
import Dispatch
import Foundation
import GATT
import HCI
import HCITransport
import Host
import BluetoothEngine

/// Our host stack as the interop tests drive it: a ``HostStack`` on a `DispatchEventLoop` over
/// `SocketH4Transport` to one controller port, with every host event recorded and async, bounded waits for
/// completions and events.
final class InteropHost: @unchecked Sendable {
    let loop: DispatchEventLoop
    let host: HostStack
    let transport: SocketH4Transport
    private let recorded = LockedValue<[HostEvent]>([])
    private let reaction = LockedValue<(@Sendable (HostEvent) -> Void)?>(nil)

    /// Connects to the controller at 127.0.0.1:`port`, retrying for up to `seconds` while it starts listening.
    init(port: UInt16, label: String, configuration: HostConfiguration, seconds: Double = 15,
         controllerAlive: () -> Bool = { true }) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        var transport: SocketH4Transport?
        var lastError: HCITransportError?
        while transport == nil {
            do {
                transport = try SocketH4Transport.connect(host: "127.0.0.1", port: port)
            } catch {
                lastError = error
                guard Date() < deadline, controllerAlive() else {
                    throw InteropFailure("the controller did not listen on \(port) within \(seconds) s: \(String(describing: lastError))")
                }
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        guard let transport else { throw InteropFailure("no transport") }
        self.transport = transport
        loop = DispatchEventLoop(label: "interop.\(label)")
        host = HostStack(transport: transport, eventLoop: loop, configuration: configuration)
        let recorded = recorded, reaction = reaction
        host.setEventHandler { event in
            recorded.withLock { $0.append(event) }
            reaction.load()?(event)
        }
    }

    /// Called on the host's loop for every event, after it was recorded (set before the events it reacts to).
    func react(_ body: @escaping @Sendable (HostEvent) -> Void) { reaction.store(body) }

    var events: [HostEvent] { recorded.load() }

    func start(seconds: Double = 30) async throws -> ControllerInfo {
        let result: Result<ControllerInfo, HostError> = try await Self.wait(seconds, "host start") { done in
            host.start { done($0) }
        }
        return try result.get()
    }

    /// Runs one GATT procedure (bounded).
    func gatt(_ handle: UInt16, _ procedure: GATTProcedure, seconds: Double = 20) async throws -> GATTProcedureResult {
        let result: Result<GATTProcedureResult, GATTClientError> = try await Self.wait(seconds, "\(procedure)") { done in
            host.gatt(connectionHandle: handle, procedure) { done($0) }
        }
        do {
            return try result.get()
        } catch {
            throw InteropFailure("\(procedure) failed: \(error)")
        }
    }

    /// Enqueues every procedure at once (the host runs them one after the other) and waits for all of them.
    func gattBatch(_ handle: UInt16, _ procedures: [GATTProcedure], seconds: Double) async throws -> [Result<GATTProcedureResult, GATTClientError>] {
        let results = LockedValue<[Int: Result<GATTProcedureResult, GATTClientError>]>([:])
        let total = procedures.count
        let all: Bool = try await Self.wait(seconds, "\(total) GATT procedures") { done in
            for (index, procedure) in procedures.enumerated() {
                host.gatt(connectionHandle: handle, procedure) { result in
                    let finished = results.withLock { results -> Bool in
                        results[index] = result
                        return results.count == total
                    }
                    if finished { done(true) }
                }
            }
            if total == 0 { done(true) }
        }
        _ = all
        let collected = results.load()
        return (0..<total).map { collected[$0] ?? .failure(.bearerFailed(.disconnected(reason: nil))) }
    }

    /// Waits (bounded, polling every 10 ms) until `condition` holds for the recorded events.
    func waitForEvents(_ seconds: Double, _ what: String, _ condition: @Sendable ([HostEvent]) -> Bool) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition(events) {
            if Date() > deadline { throw InteropFailure("no \(what) within \(seconds) s") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Runs `body` on the loop and returns its result.
    func onLoop<T: Sendable>(_ body: @escaping @Sendable (HostStack) -> T) async throws -> T {
        try await Self.wait(10, "a job on the host's loop") { [host, loop] done in
            loop.execute { done(body(host)) }
        }
    }

    func shutdown() {
        host.shutdown()
        transport.close()
    }

    /// Bridges a completion-style call to async with a time limit: the first of the completion and the timeout
    /// wins; a late completion is dropped.
    static func wait<T: Sendable>(_ seconds: Double, _ what: String,
                                  _ start: (@escaping @Sendable (T) -> Void) -> Void) async throws -> T {
        let gate = InteropOnce<T?>()
        let value: T? = await withCheckedContinuation { continuation in
            gate.arm(continuation)
            start { gate.resume($0) }
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { gate.resume(nil) }
        }
        guard let value else { throw InteropFailure("\(what): no completion within \(seconds) s") }
        return value
    }
}

/// A continuation resumed at most once, from any thread.
final class InteropOnce<T: Sendable>: @unchecked Sendable {
    private let state = LockedValue<(continuation: CheckedContinuation<T, Never>?, early: T?, resumed: Bool)>((nil, nil, false))

    func arm(_ continuation: CheckedContinuation<T, Never>) {
        let early: T? = state.withLock { state in
            if state.resumed, let early = state.early { return early }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(returning: early) }
    }

    func resume(_ value: T) {
        let continuation: CheckedContinuation<T, Never>? = state.withLock { state in
            guard !state.resumed else { return nil }
            state.resumed = true
            guard let continuation = state.continuation else {
                state.early = value
                return nil
            }
            state.continuation = nil
            return continuation
        }
        continuation?.resume(returning: value)
    }
}
