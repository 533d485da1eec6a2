// blue — design note
//
// What: the command-line tool, one ArgumentParser command per file, in folders by family (Air, Captures, Discovery,
// GATTClient, Serve, Pairing, Shell, Bench, Examples, Support).
//
// Which stack a command runs on: `--hci` (or OCB_HCI) read once by StackSpecification. A command that can work on
// either engine opens a `CommandStack` (Support/CommandStack.swift) with `StackOptions.openEngine(label:)`: our host
// (StackLauncher's `LaunchedStack`) or bluetoothd (`BluetoothdStack`, the BlueZ module's `BlueZEngine` started), and
// drives it through the engine seam only (`StackEngine`; the waits in GATTClient/StackOperations.swift,
// TargetResolution.swift, LinkDescription.swift are written once on `CommandStack`): scan, explore, read, write,
// subscribe, advertise and shell. What an engine cannot do it refuses itself (`BlueZEngine.refusal`), and a command
// prints that one line as a usage error (exit 64). Commands that need our own host (bench, fault, monitor, snoop,
// demo) open a `LaunchedStack` with `StackOptions.open`; bluetoothd's option limits are `BluetoothdLimitation`
// (BlueZ module). Not yet on the seam: `pair`, `serve` and `bonds` keep a bluetoothd branch (PairThroughBlueZ finds
// the device on BlueZEngine and pairs over D-Bus itself; ServeThroughBlueZ runs OpenCoreBluetooth's BlueZ peripheral
// backend; BlueZBonds reads bluetoothd's devices) (issue 27).
//
// Who owns the state, which executor runs it: each command runs on the main thread's task (`runCommand`), waiting
// on its stack's events with bounded waits (`OneShot`, timers on the engine's loop); `CommandRun` ends the command
// on a signal, a closed standard output or a lost controller (a LaunchedStack's loss, or BlueZEngine's
// `controllerError`), shutting the stacks down within a bound.
