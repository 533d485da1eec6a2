import HCITransport
import Testing

@Suite struct HCITransportSpecTests {
    static let good: [(String, HCITransportSpec)] = [
        ("virtual", .virtual),
        ("in-process", .inProcess),
        ("air:/tmp/ocb-air.sock", .air(path: "/tmp/ocb-air.sock")),
        ("tcp:127.0.0.1:9000", .tcp(host: "127.0.0.1", port: 9000)),
        ("tcp:localhost:1", .tcp(host: "localhost", port: 1)),
        ("tcp:controller.example:65535", .tcp(host: "controller.example", port: 65535)),
        ("unix:/run/hci.sock", .unix(path: "/run/hci.sock")),
        ("serial:/dev/ttyACM0", .serial(path: "/dev/ttyACM0", baudRate: 115_200, flowControl: false)),
        ("serial:/dev/ttyUSB1,1000000", .serial(path: "/dev/ttyUSB1", baudRate: 1_000_000, flowControl: false)),
        ("serial:/dev/ttyUSB1,1000000,rtscts", .serial(path: "/dev/ttyUSB1", baudRate: 1_000_000, flowControl: true)),
        ("serial:/dev/ttyS0,rtscts", .serial(path: "/dev/ttyS0", baudRate: 115_200, flowControl: true)),
        ("hci0", .userChannel(deviceIndex: 0)),
        ("hci12", .userChannel(deviceIndex: 12)),
    ]

    @Test func goodSpecificationsParseAndPrintBack() throws {
        for (text, expected) in Self.good {
            let spec = try HCITransportSpec(parsing: text)
            #expect(spec == expected, "\(text)")
            #expect(try HCITransportSpec(parsing: spec.description) == spec, "\(text) round trip")
        }
        #expect(HCITransportSpec.serial(path: "/dev/ttyS0", baudRate: 115_200, flowControl: true).description
            == "serial:/dev/ttyS0,115200,rtscts")
    }

    /// `virtual-hub`, the shared air's former name in some commands, is read as `virtual` everywhere.
    @Test func virtualHubIsTheSharedAir() throws {
        #expect(try HCITransportSpec(parsing: "virtual-hub") == .virtual)
        #expect(HCITransportSpec.virtual.description == "virtual")
        #expect(HCITransportSpec.inProcess.needsVirtualController)
    }

    static let forms = "virtual, in-process, air:PATH, tcp:HOST:PORT, unix:PATH, serial:/dev/ttyX[,BAUD][,rtscts] or hciN"

    static let bad: [(String, String)] = [
        ("", "empty HCI transport specification; expected \(forms)"),
        ("bumble", "unknown HCI transport \"bumble\"; expected \(forms)"),
        ("Virtual", "unknown HCI transport \"Virtual\"; expected \(forms)"),
        ("air:", "\"air:\": air needs the hub's socket path: air:PATH"),
        ("unix:", "\"unix:\": unix needs a socket path: unix:PATH"),
        ("tcp:9000", "\"tcp:9000\": tcp needs a host and a port: tcp:HOST:PORT (tcp:127.0.0.1:9000)"),
        ("tcp::9000", "\"tcp::9000\": tcp needs a host before the port: tcp:HOST:PORT (tcp:127.0.0.1:9000)"),
        ("tcp:localhost:", "\"tcp:localhost:\": invalid TCP port \"\"; expected a number from 1 to 65535"),
        ("tcp:localhost:0", "\"tcp:localhost:0\": invalid TCP port \"0\"; expected a number from 1 to 65535"),
        ("tcp:localhost:65536", "\"tcp:localhost:65536\": invalid TCP port \"65536\"; expected a number from 1 to 65535"),
        ("tcp:localhost:+80", "\"tcp:localhost:+80\": invalid TCP port \"+80\"; expected a number from 1 to 65535"),
        ("serial:", "\"serial:\": serial needs a device path: serial:/dev/ttyX[,BAUD][,rtscts]"),
        ("serial:,115200", "\"serial:,115200\": serial needs a device path: serial:/dev/ttyX[,BAUD][,rtscts]"),
        ("serial:/dev/ttyS0,fast",
         "\"serial:/dev/ttyS0,fast\": unexpected serial option \"fast\"; expected serial:/dev/ttyX[,BAUD][,rtscts]"),
        ("serial:/dev/ttyS0,115200,9600",
         "\"serial:/dev/ttyS0,115200,9600\": unexpected serial option \"9600\"; expected serial:/dev/ttyX[,BAUD][,rtscts]"),
        ("hci", "\"hci\": expected hci followed by an adapter index from 0 to 65534 (hci0)"),
        ("hcix", "\"hcix\": expected hci followed by an adapter index from 0 to 65534 (hci0)"),
        ("hci65535", "\"hci65535\": expected hci followed by an adapter index from 0 to 65534 (hci0)"),
        ("hci-1", "\"hci-1\": expected hci followed by an adapter index from 0 to 65534 (hci0)"),
    ]

    @Test func badSpecificationsSayWhatWasExpected() {
        for (text, reason) in Self.bad {
            #expect(throws: HCITransportError(.invalidSpecification, reason), "\(text)") {
                try HCITransportSpec(parsing: text)
            }
        }
        let rates = SerialH4Transport.supportedBaudRates.map(String.init).joined(separator: ", ")
        #expect(throws: HCITransportError(
            .invalidSpecification, "\"serial:/dev/ttyS0,12345\": unsupported baud rate 12345; expected one of \(rates)")) {
            try HCITransportSpec(parsing: "serial:/dev/ttyS0,12345")
        }
    }

    @Test func openRefusesTheVirtualControllerAndOpensTheRest() async throws {
        #expect(throws: HCITransportError(
            .invalidSpecification,
            "\"virtual\" is the virtual controller, which the host layer wires (HCITransportSpec.open opens tcp:, unix:, serial: and hciN only)")) {
            try HCITransportSpec.virtual.open()
        }
        #expect(throws: HCITransportError.self) { try HCITransportSpec.air(path: "/tmp/x").open() }
        #expect(HCITransportSpec.virtual.needsVirtualController)
        #expect(!HCITransportSpec.userChannel(deviceIndex: 0).needsVirtualController)

        // tcp: and unix: open real connections.
        let accepted = Mailbox<SocketH4Transport>()
        let listener = try H4Listener.listen(tcpHost: "127.0.0.1", port: 0) { accepted.put($0) }
        defer { listener.close() }
        let port = try #require(listener.port)
        let transport = try HCITransportSpec(parsing: "tcp:127.0.0.1:\(port)").open()
        #expect(transport.name == "tcp:127.0.0.1:\(port)")
        let server = try #require(await accepted.take())
        server.close()
        transport.close()

        let path = temporaryPath(".sock")
        let unixListener = try H4Listener.listen(unixPath: path) { accepted.put($0) }
        defer { unixListener.close() }
        let unixTransport = try HCITransportSpec(parsing: "unix:\(path)").open()
        #expect(unixTransport is SocketH4Transport)
        try #require(await accepted.take()).close()
        unixTransport.close()

        let error = #expect(throws: HCITransportError.self) { try HCITransportSpec(parsing: "hci0").open() }
        #expect(error?.code == .openFailed)
        let serialError = #expect(throws: HCITransportError.self) { try HCITransportSpec(parsing: "serial:/dev/null").open() }
        #expect(serialError?.reason == "serial:/dev/null,115200: /dev/null is not a terminal device")
    }
}
