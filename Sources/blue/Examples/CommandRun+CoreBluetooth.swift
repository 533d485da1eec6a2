#if CoreBluetoothPrograms
import OpenCoreBluetooth
import StackLauncher

extension CommandRun {
    /// For commands that do not run through ``runCommand(_:)`` (the CoreBluetooth ones: `chat`, `demo`): the loss of
    /// any controller of the process ends it with "NAME: lost the controller: ..." and exit 69.
    static func exitOnLoss(name: String) {
        HostBackend.reportsControllerLoss = false  // this line is the one the user reads
        HostBackend.reopensLostStacks = false  // the command ends: no hub started on its way out
        LaunchedStack.observeLosses { loss in
            Console.error("\(name): \(loss)")
            exitNow(CLIFailure.Kind.unavailable.rawValue)
        }
    }
}
#endif
