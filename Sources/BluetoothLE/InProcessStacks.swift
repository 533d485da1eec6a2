public import Host
public import StackLauncher

/// `count` started ``BluetoothStack``s on a private in-process virtual air (StackLauncher's `InProcessAir`: one
/// air on its own loop, each stack on its own loop and virtual controller), for demos and tests that want devices
/// that see each other without a hub or hardware (DESIGN.md "The virtual controller and the air").
///
/// ```swift
/// let world = try await InProcessStacks.make(count: 2)
/// let (peripheral, central) = (world.stacks[0], world.stacks[1])
/// ...
/// await world.shutdown()
/// ```
public final class InProcessStacks: Sendable {
    /// The virtual air the stacks share.
    public let air: InProcessAir
    /// The started stacks, each on its own virtual controller.
    public let stacks: [BluetoothStack]

    init(air: InProcessAir, stacks: [BluetoothStack]) {
        self.air = air
        self.stacks = stacks
    }

    /// Makes the air and `count` started stacks (each with `host` as its configuration; the default gives each a
    /// fresh random static address).
    public static func make(count: Int, seed: UInt64 = 1, host: HostConfiguration = HostConfiguration()) async throws -> InProcessStacks {
        let air = InProcessAir(seed: seed, label: "BluetoothLE.air")
        let launched: [LaunchedStack]
        do {
            launched = try await air.makeStacks(count, options: StackLaunchOptions(host: host, label: "BluetoothLE.stack"))
        } catch {
            air.shutdown()
            throw BluetoothLEError(.notReady, "the in-process air could not start its stacks: \(error)")
        }
        return InProcessStacks(air: air, stacks: launched.map { BluetoothStack(opened: $0) })
    }

    /// Shuts every stack down, then the air.
    public func shutdown() async {
        for stack in stacks { await stack.shutdown() }
        air.shutdown()
    }
}
