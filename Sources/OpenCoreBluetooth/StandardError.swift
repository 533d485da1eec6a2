import BluetoothRuntime

/// The library's few diagnostic lines on standard error (API misuse, a lost controller, unreadable state files),
/// through ``DescriptorWriter`` (never `FileHandle.write`, which traps on a closed stderr).
enum StandardError {
    static func line(_ text: String) {
        DescriptorWriter.errorLine(text)
    }
}
