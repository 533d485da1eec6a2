import BluetoothRuntime
import Logging

/// OpenCoreBluetooth's loggers (labels in ``LogLabel``): the library never writes to standard error itself, the
/// program's `LoggingSystem` routes what it logs. Not a Bluetooth type.
enum Log {
    /// API misuse, state restoration and known-peers files, the process's application settings, the stack.
    static let coreBluetooth = Logger(label: LogLabel.coreBluetooth)
}
