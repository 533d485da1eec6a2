public import StackLauncher

/// A central a test declares (GAP Central role, Core 5.4 Vol 3 Part C §2.2.2.4), to drive an app that is a
/// peripheral (`CBPeripheralManager`): the phone or tablet that finds the app's advertising, connects, discovers
/// its services, reads, writes and subscribes, as the test says, step by step (``SimulatedCentral``).
///
/// ```swift
/// let phone = try await world.simulateCentral(CentralSpec(name: "Pixel", attMTU: 517))
/// let found = try await phone.scan(forService: chatService)
/// let link = try await phone.connect(found)
/// try await link.write(Data("hi".utf8), to: messageUUID)
/// ```
public struct CentralSpec: Sendable {
    /// The name its device goes by in the world's log and captures.
    public var name: String
    /// Where it stands, from the app.
    public var proximity: SimulatedProximity
    /// The ATT_MTU it offers when it connects (23...517): an iPhone's 185 (iOS 10 and later), Android's 517.
    public var attMTU: Int
    /// The platform whose stack it runs (``PlatformPersonality``): its ATT_MTU (unless `attMTU` is given), the data
    /// length it asks for and its pairing capabilities. Its connection parameters are our host's (30–50 ms).
    public var personality: PlatformPersonality?

    /// `attMTU` nil: the personality's, else an iPhone's 185.
    public init(name: String = "central", proximity: SimulatedProximity = .near, attMTU: Int? = nil,
                personality: PlatformPersonality? = nil) {
        self.name = name
        self.proximity = proximity
        self.personality = personality
        self.attMTU = min(max(attMTU ?? personality?.attMTU ?? 185, 23), 517)
    }
}
