import Foundation

extension String {
    /// This text made safe to print on a terminal or in a line-based log: control characters
    /// (line breaks, escape sequences), `"` and `\` are written as Swift escapes, so a name a
    /// program chose can neither start a line of its own nor act on the terminal.
    package var printable: String {
        var result = ""
        for scalar in unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case _ where scalar.properties.generalCategory == .control || scalar.value == 0x7F:
                result += "\\u{" + String(scalar.value, radix: 16) + "}"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
