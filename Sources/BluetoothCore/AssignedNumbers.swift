/// Lookups into the Bluetooth SIG assigned numbers (../shared/assigned-numbers), generated into
/// `Generated/AssignedNumbers+*.swift` by `Scripts/generate-assigned-numbers.py`. The generated tables are
/// committed, so a build needs neither the YAML nor a network.
public enum AssignedNumbers {
    /// The name of a 16-bit UUID from any of the SIG's UUID lists: services, characteristics, descriptors,
    /// declarations, units, member services and SDO services, in that order of preference.
    public static func name(forUUID16 value: UInt16) -> String? {
        serviceNames[value] ?? characteristicNames[value] ?? descriptorNames[value] ?? declarationNames[value]
            ?? unitNames[value] ?? memberServiceNames[value] ?? sdoServiceNames[value]
    }
}
