// blue — design note
//
// What: the command-line tool, one ArgumentParser command per file, in folders by family (Air, Captures, Controller,
// Discovery, GATTClient, L2CAP, Serve, Pairing, Service, Shell, Bench, Examples, Support). `blue info` (Controller) is the
// one command that asks our host for more than the seam gives (`HostStack.readControllerDetails`), and bluetoothd's
// engine for its adapter's properties.
//
// Which stack a command runs on: `--hci` (or OCB_HCI) read once by StackSpecification. A command that can work on
// either engine opens StackLauncher's `OpenedStack` with `StackOptions.openEngine(label:options:needing:)`: our host
// (`LaunchedStack`) or bluetoothd (`BluetoothdStack`, the BlueZ module's `BlueZEngine` started), and drives it
// through the engine seam only (`StackEngine`; the waits in GATTClient/StackOperations.swift, TargetResolution.swift,
// LinkDescription.swift are written once on `OpenedStack`): scan, explore, read, write, subscribe, advertise, shell,
// serve, pair and l2cap. No command asks which engine it got. What only our host does is listed by the command (`needing`,
// BluetoothdLimitation's cases, carried in `StackLaunchOptions.needingOurHost`) and refused by StackLauncher before
// anything starts when the stack is bluetoothd's, as `--snoop` is; what an engine offers no call for it refuses
// itself (`HostError.notOffered`), which a command prints as a usage error (exit 64). `bonds` lists and removes
// through StackLauncher's `BondKeeper` for `--hci` (our bond folder, or bluetoothd's paired devices). Commands that
// need our own host (bench, fault, monitor, snoop, demo) open a `LaunchedStack` with `StackOptions.open`, which
// StackLauncher refuses for bluetoothd with BluetoothdLimitation.ourHost's line.
//
// Who owns the state, which executor runs it: each command runs on the main thread's task (`runCommand`), waiting
// on its stack's events with bounded waits (`OneShot`, timers on the engine's loop); `CommandRun` ends the command
// on a signal, a closed standard output or a lost controller (an OpenedStack's loss: the transport's end, or
// bluetoothd's adapter gone), shutting the stacks down within a bound. `blue l2cap` (L2CAPPipe) adds two: one thread
// reading standard input, each read one SDU awaited before the next (the send completes when the peer's credits
// took its K-frames, so the peer paces it), and one serial queue writing received SDUs to standard output in order
// (a slow reader never blocks the engine's loop).
//
// What it links: FoundationEssentials only (no Foundation, no ICU), so a `blue` that only serves or scans maps
// neither; JSON goes through Support's `JSONReader`/`JSONWriter` (Foundation's key order for ASCII keys, checked
// against JSONSerialization in the tests), text through `TextFormat` (vsnprintf in the C locale). The exceptions are
// `blue demo` and `blue chat` (Examples/), which run the seed apps and OpenCoreBluetooth, which re-exports Foundation
// as CoreBluetooth does: they are built only with the package's `CoreBluetoothPrograms` trait (on by default);
// `--disable-default-traits` gives the lean `blue`, in which those two print one line and exit 69
// (Examples/ProgramsLeftOut.swift). Scripts/check-lean.sh proves the lean build's libraries and that it serves and scans.
