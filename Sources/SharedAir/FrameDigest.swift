import VirtualController
/// The frames a controller sent its host, counted and hashed (FNV-1a, 64 bits, over each frame's H4 bytes in
/// order): what ``AirRecorder`` writes at the end of a recording and ``AirReplay`` compares.
public struct FrameDigest: Hashable, Sendable {
    public private(set) var count = 0
    public private(set) var hash: UInt64 = 0xcbf2_9ce4_8422_2325

    public init() {}

    public init(count: Int, hash: UInt64) {
        self.count = count
        self.hash = hash
    }

    mutating func add(_ bytes: [UInt8]) {
        count += 1
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
    }
}
