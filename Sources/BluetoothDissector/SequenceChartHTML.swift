/// A ``SequenceChart`` as one self-contained HTML page: its SVG drawn here, no script, no asset from anywhere, so
/// it opens in any browser, offline, and can be attached to a bug report.
extension SequenceChart {
    /// The page; `title` names it (the capture files).
    public func html(title: String) -> String {
        let laneWidth = 300.0, left = 190.0, top = 70.0, row = 26.0, gapRow = 18.0
        let width = left + laneWidth * Double(max(lanes.count, 1)) + 20
        func x(_ lane: Int) -> Double { left + laneWidth * (Double(lane) + 0.5) }
        var body = ""
        var y = top
        let start = entries.first?.unixMicroseconds ?? 0
        var previous: Int64?
        for entry in entries {
            if let previous, entry.unixMicroseconds - previous >= 1_000_000 {
                body += "<text class=\"gap\" x=\"\(left - 10)\" y=\"\(y + 10)\" text-anchor=\"end\">… "
                    + Self.seconds(entry.unixMicroseconds - previous) + " …</text>\n"
                y += gapRow
            }
            y += row
            let time = "+" + Self.seconds(entry.unixMicroseconds - start)
            let delta = previous.map { "Δ " + Self.duration($0, entry.unixMicroseconds) } ?? ""
            previous = entry.unixMicroseconds
            let layer = entry.layer.rawValue
            body += "<g class=\"entry \(layer)\"><title>\(Self.escape(entry.label))\n\n\(Self.escape(entry.detail))</title>"
            body += "<text class=\"time\" x=\"8\" y=\"\(y)\">\(time)</text><text class=\"delta\" x=\"\(left - 12)\" y=\"\(y)\" text-anchor=\"end\">\(delta)</text>"
            if entry.from == entry.to {
                body += "<rect class=\"note\" x=\"\(x(entry.from) - 100)\" y=\"\(y - 15)\" width=\"200\" height=\"20\" rx=\"4\"/>"
                body += "<text class=\"label\" x=\"\(x(entry.from))\" y=\"\(y - 1)\" text-anchor=\"middle\">\(Self.escape(entry.label))</text>"
            } else {
                let x1 = x(entry.from), x2 = x(entry.to)
                let inset = x2 > x1 ? 4.0 : -4.0
                body += "<line class=\"arrow\" x1=\"\(x1)\" y1=\"\(y)\" x2=\"\(x2 - inset)\" y2=\"\(y)\" marker-end=\"url(#head-\(layer))\"/>"
                body += "<text class=\"label\" x=\"\((x1 + x2) / 2)\" y=\"\(y - 5)\" text-anchor=\"middle\">"
                    + "<tspan class=\"tag\">\(layer)</tspan> \(Self.escape(entry.label))</text>"
            }
            body += "</g>\n"
        }
        let height = y + 40
        var lanesSVG = ""
        for (index, lane) in lanes.enumerated() {
            lanesSVG += "<line class=\"lane\" x1=\"\(x(index))\" y1=\"\(top - 14)\" x2=\"\(x(index))\" y2=\"\(height - 10)\"/>"
            lanesSVG += "<rect class=\"head\" x=\"\(x(index) - 125)\" y=\"8\" width=\"250\" height=\"44\" rx=\"6\"/>"
            lanesSVG += "<text class=\"lanetitle\" x=\"\(x(index))\" y=\"27\" text-anchor=\"middle\">\(Self.escape(String(lane.title.prefix(30))))</text>"
            lanesSVG += "<text class=\"lanesub\" x=\"\(x(index))\" y=\"43\" text-anchor=\"middle\">\(Self.escape(String(lane.subtitle.prefix(34))))</text>\n"
        }
        let colours: [(Layer, String)] = [(.linkLayer, "#7048e8"), (.l2cap, "#e8590c"), (.att, "#1c7ed6"), (.smp, "#e03131"), (.advertising, "#2f9e44")]
        let markers = colours.map { layer, colour in
            "<marker id=\"head-\(layer.rawValue)\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\">"
                + "<path d=\"M0,0 L10,5 L0,10 z\" fill=\"\(colour)\"/></marker>"
        }.joined()
        let styles = colours.map { layer, colour in
            ".\(layer.rawValue) .arrow{stroke:\(colour)} .\(layer.rawValue) .tag{fill:\(colour)} .\(layer.rawValue) .note{stroke:\(colour)}"
        }.joined(separator: "\n")
        let legend = colours.map { layer, colour in "<span style=\"color:\(colour)\">■</span> \(Self.legendName(layer))" }.joined(separator: " &nbsp; ")
        let counts = "\(entries.count) exchanges between \(lanes.count) devices"
            + (omitted > 0 ? " (the first \(entries.count); \(omitted) more left out)" : "")
            + (entries.isEmpty ? "" : ", over " + Self.seconds((entries.last?.unixMicroseconds ?? 0) - start))
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><title>\(Self.escape(title)): sequence chart</title>
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <style>
            body{margin:0;font:13px system-ui,-apple-system,"Segoe UI",sans-serif;color:#1f2933;background:#f6f7f9}
            header{padding:14px 20px;background:#1b2330;color:#fff}
            header h1{margin:0;font-size:17px;font-weight:600} header p{margin:4px 0 0;color:#c3cad5}
            .legend{padding:8px 20px;background:#fff;border-bottom:1px solid #e3e6ea}
            .chart{overflow:auto;padding:10px 0} svg{display:block;font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}
            .lane{stroke:#b8c0cc;stroke-dasharray:4 4} .head{fill:#fff;stroke:#9aa5b1}
            .lanetitle{font-weight:700;font-size:13px} .lanesub{fill:#616e7c;font-size:11px}
            .arrow{stroke-width:1.6} .label{fill:#1f2933} .tag{font-weight:700}
            .note{fill:#fff} .time{fill:#3e4c59} .delta{fill:#9aa5b1;font-size:11px} .gap{fill:#9aa5b1;font-style:italic}
            .entry:hover .label{font-weight:700} .entry:hover .arrow{stroke-width:3}
            \(styles)
            </style></head><body>
            <header><h1>\(Self.escape(title))</h1><p>\(counts). Hover an exchange for its decoded fields.</p></header>
            <div class="legend">\(legend)</div>
            <div class="chart"><svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))">
            <defs>\(markers)</defs>
            \(lanesSVG)\(body)</svg></div>
            </body></html>

            """
    }

    private static func legendName(_ layer: Layer) -> String {
        switch layer {
        case .linkLayer: "link layer (connection, updates, encryption)"
        case .l2cap: "L2CAP"
        case .att: "ATT"
        case .smp: "SMP (pairing)"
        case .advertising: "advertising heard"
        }
    }

    /// "1.234 s".
    static func seconds(_ microseconds: Int64) -> String {
        let milliseconds = microseconds / 1000
        let fraction = String(milliseconds % 1000)
        return "\(milliseconds / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction) s"
    }

    /// "12.5 ms" or "1.234 s" between two times.
    static func duration(_ from: Int64, _ to: Int64) -> String {
        let microseconds = to - from
        if microseconds >= 1_000_000 { return seconds(microseconds) }
        let tenths = (microseconds + 50) / 100
        return "\(tenths / 10).\(tenths % 10) ms"
    }

    /// Text for XML content and attributes.
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case _ where scalar.value < 0x20 && scalar != "\n" && scalar != "\t": out += " "
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
