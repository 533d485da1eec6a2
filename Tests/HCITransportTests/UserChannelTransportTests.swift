@testable import HCITransport
import Testing
#if canImport(Glibc)
import Glibc
#endif
import SystemInterface

/// This machine has no Bluetooth adapter (and containers usually lack AF_BLUETOOTH): opening must fail clearly.
@Suite struct UserChannelTransportTests {
    @Test func openingWithoutAnAdapterFailsWithTheRequirements() {
        let error = #expect(throws: HCITransportError.self) { try HCIUserChannelTransport(deviceIndex: 0) }
        #expect(error?.code == .openFailed)
        let reason = error?.reason ?? ""
        #expect(reason.hasPrefix("hci0: cannot "))
        #expect(reason.contains("CAP_NET_ADMIN"))
        #expect(reason.contains("`hciconfig hci0 down`"))
    }

    @Test func errnoExplanations() {
        let suffix = ". The HCI user channel needs Linux Bluetooth support, the CAP_NET_ADMIN capability and the "
            + "adapter down in the kernel (`hciconfig hci1 down`)"
        #expect(HCIUserChannelTransport.explain(EAFNOSUPPORT, name: "hci1") == POSIX.errorText(EAFNOSUPPORT)
            + ": this kernel (or container) has no Bluetooth sockets (AF_BLUETOOTH); load the bluetooth module or "
            + "use another transport (virtual, tcp:HOST:PORT, serial:...)" + suffix)
        #expect(HCIUserChannelTransport.explain(ENODEV, name: "hci1") == POSIX.errorText(ENODEV)
            + ": there is no adapter hci1 (list adapters with `hciconfig` or `btmgmt info`)" + suffix)
        #expect(HCIUserChannelTransport.explain(EPERM, name: "hci1") == POSIX.errorText(EPERM)
            + ": permission denied: run as root or grant the program CAP_NET_ADMIN (`setcap cap_net_admin+ep`)" + suffix)
        #expect(HCIUserChannelTransport.explain(EBUSY, name: "hci1") == POSIX.errorText(EBUSY)
            + ": hci1 is up or in use by the kernel's Bluetooth stack (bluetoothd powers adapters up); take it down "
            + "first (`btmgmt --index 1 power off` or `hciconfig hci1 down`), and keep bluetoothd from powering it up "
            + "again (AutoEnable=false in /etc/bluetooth/main.conf, or stop bluetoothd)" + suffix)
        #expect(MemoryLayout<HCIUserChannelTransport.SocketAddressHCI>.size == 6)
    }
}
