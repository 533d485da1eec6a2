/// An identifier a program chose (a restore identifier) as one safe file name: letters, digits, '_', '-' and '.'
/// (not first) kept, every other byte as %XX, so that no identifier names a path outside its folder ("..", "/").
package enum IdentifierFileName {
    package static func escaped(_ identifier: String) -> String {
        var name = ""
        for byte in identifier.utf8 {
            let scalar = Unicode.Scalar(byte)
            if ("0"..."9").contains(scalar) || ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-") || (byte == UInt8(ascii: ".") && !name.isEmpty) {
                name.unicodeScalars.append(scalar)
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                name += "%" + (hex.count < 2 ? "0" + hex : hex)
            }
        }
        return name
    }
}
