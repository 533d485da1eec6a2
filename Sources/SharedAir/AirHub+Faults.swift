import VirtualController
/// Faults on demand (issue 13 item 6): what ``AirHubFault`` does to a running hub. Each change is made on the
/// air's loop, reported as ``AirHubEvent/fault(_:_:)`` (so `blue air` prints it) and answered with the same line.
extension AirHub {
    /// Applies `fault`; `completion` gets the effect in one line, or why it was refused, on the air's loop.
    public func apply(_ fault: AirHubFault, completion: @escaping @Sendable (Result<String, AirHubError>) -> Void) {
        let devices = self.devices
        let target: (device: AirHubDevice, controller: VirtualController)?
        switch fault {
        case .drop(let number?), .power(let number, _), .range(let number, _), .move(let number, _):
            guard let device = devices.first(where: { $0.number == number }), let controller = controller(ofDevice: number) else {
                let present = devices.isEmpty ? "none" : devices.map { "dev\($0.number)" }.joined(separator: ", ")
                eventLoop.execute { completion(.failure(AirHubError(.refused, "no dev\(number) on the air (devices: \(present))"))) }
                return
            }
            target = (device, controller)
        default:
            target = nil
        }
        eventLoop.execute { [self] in
            let result: Result<String, AirHubError>
            switch fault {
            case .loss(let percent):
                air.step { time in
                    air.configuration.packetLoss = percent / 100
                    air.recorder?.fault("loss \(percent / 100)", at: time)
                }
                result = .success("loss \(AirHubFault.percentText(percent)) of packets heard")
            case .drop:
                let jammed = air.step { time in
                    air.recorder?.fault("jam " + (target.map { "\($0.controller.identifier)" } ?? "all"), at: time)
                    return air.jamLinks(of: target?.controller)
                }
                let whose = target.map { "dev\($0.device.number)'s" } ?? "every"
                result = jammed == 0
                    ? .failure(AirHubError(.refused, target.map { "dev\($0.device.number) has no link" } ?? "no link on the air"))
                    : .success("drop: \(whose) \(jammed) link\(jammed == 1 ? "" : "s") no longer heard; "
                        + "both ends will see a supervision timeout")
            case .power(_, let on):
                guard let target else { return }
                air.step { time in
                    air.recorder?.fault("radio \(target.controller.identifier) \(on ? 1 : 0)", at: time)
                    target.controller.radioOn = on
                }
                let links = air.linkCount(of: target.controller)
                result = .success("power: dev\(target.device.number)'s radio \(on ? "on" : "off")"
                    + (on || links == 0 ? "" : " (its \(links) link\(links == 1 ? "" : "s") will time out)"))
            case .range(_, let out):
                guard let target else { return }
                var position = target.device.position
                if out { position.x += 100_000 }
                air.move(target.controller, to: position)
                result = .success("range: dev\(target.device.number) " + (out ? "out of range (100 km away)" : "back at \(position)"))
            case .move(_, let position):
                guard let target else { return }
                air.move(target.controller, to: position)
                result = .success("move: dev\(target.device.number) to \(position)")
            case .listDevices:
                let lines = devices.map { device -> String in
                    guard let controller = controller(ofDevice: device.number) else { return "\(device.label): gone" }
                    let links = air.linkCount(of: controller)
                    return "\(device.label) at \(controller.position), radio \(controller.radioOn ? "on" : "off"), "
                        + "\(links) link\(links == 1 ? "" : "s"), via \(device.origin)"
                }
                let loss = AirHubFault.percentText(air.configuration.packetLoss * 100)
                completion(.success((lines.isEmpty ? ["no devices"] : lines).joined(separator: "\n") + "\nloss \(loss)"))
                return
            }
            if case .success(let effect) = result { report(fault, effect) }
            completion(result)
        }
    }

    private func report(_ fault: AirHubFault, _ effect: String) {
        emit(.fault(fault, effect))
    }
}
