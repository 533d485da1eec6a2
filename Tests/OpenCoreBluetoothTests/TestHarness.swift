import BluetoothRuntime
import Dispatch
import Foundation
@testable import OpenCoreBluetooth

/// Runs the fake backends' loop and the delegate queue until neither has anything left: backend events hop onto
/// the queue, delegate callbacks issue commands that put jobs on the loop, and so on.
func settle(_ loop: ManualEventLoop, _ queue: DispatchQueue, rounds: Int = 10_000) {
    var idle = 0
    for _ in 0..<rounds {
        let ran = loop.run()
        queue.sync {}
        if ran == 0 && !loop.hasPendingWork {
            idle += 1
            if idle >= 3 { return }
        } else {
            idle = 0
        }
    }
}

/// A provider that hands out the given fakes.
func provider(central: FakeCentralBackend? = nil, peripheral: FakePeripheralBackend? = nil) -> CBBackendProvider {
    CBBackendProvider(makeCentral: { central }, makePeripheral: { peripheral })
}

/// Records callbacks in order, with whether each ran on the expected queue.
final class CallLog: @unchecked Sendable {
    private let lock = NSLock()
    private var _entries: [String] = []
    private var _offQueue: [String] = []
    let key = DispatchSpecificKey<String>()
    let queue: DispatchQueue

    init(label: String = "test.delegate") {
        queue = DispatchQueue(label: label)
        queue.setSpecific(key: key, value: label)
    }

    func add(_ entry: String) {
        let onQueue = DispatchQueue.getSpecific(key: key) != nil
        lock.lock()
        _entries.append(entry)
        if !onQueue { _offQueue.append(entry) }
        lock.unlock()
    }

    var entries: [String] { lock.lock(); defer { lock.unlock() }; return _entries }
    var offQueue: [String] { lock.lock(); defer { lock.unlock() }; return _offQueue }
}
