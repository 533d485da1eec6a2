public import BluetoothCore
public import HCI

/// What the air tells whoever records its steps (SharedAir's `AirRecorder`, `blue air --record`): every step that
/// changes it, in step order, on the air's loop, and every frame a controller sends its host. A recording of these
/// and the air's seed is enough to replay the run (the design note's "Steps and replay").
public protocol AirStepRecording: AnyObject, Sendable {
    /// `device` joined the air (its address, position and TX power are read from it).
    func join(_ device: VirtualController, at time: StackInstant)
    /// `device` left the air for good.
    func leave(_ device: VirtualController, at time: StackInstant)
    /// A host's frame reached `device`.
    func frame(_ frame: H4Frame, to device: VirtualController, at time: StackInstant)
    /// The air's timer fired.
    func tick(at time: StackInstant)
    /// A fault or a radio change, in the recording's words (`move 2 1.0 0.0 0.0`, `power 2 0`).
    func fault(_ text: String, at time: StackInstant)
    /// `device` sent a frame to its host (not a step: counted so that a replay can be checked against it).
    func toHost(_ frame: H4Frame, from device: VirtualController)
}
