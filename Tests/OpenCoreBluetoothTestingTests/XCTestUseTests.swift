import Foundation
import OpenCoreBluetooth
import OpenCoreBluetoothTesting
import XCTest

/// The kit from XCTest (issue 28 item 6): nothing in it depends on a test framework, so an XCTest case uses it as a
/// Swift Testing one does.
final class KitFromXCTestTests: XCTestCase {
    func testTheAppReadsADeclaredPeripheral() async throws {
        let world = try SimulatedWorld()
        defer { world.shutdown() }
        try await world.simulatePeripheral(sensor())
        let app = world.run { ProbeApp(service: sensorService) }
        let ready = await world.eventually(within: .seconds(20), on: app.queue) { app.log.contains("ready") }
        XCTAssertTrue(ready, "\(app.log)")
        app.read(levelUUID)
        let read = await world.eventually(on: app.queue) { app.log.contains("value \(levelUUID) 2a") }
        XCTAssertTrue(read, "\(app.log)")
        XCTAssertEqual(world.exchanges.map(\.kind), [.connected, .read(characteristic: levelUUID.uuidString)])
    }
}
