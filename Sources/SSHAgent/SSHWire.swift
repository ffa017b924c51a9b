/// The SSH wire encoding (RFC 4251 §5) that the agent protocol (draft-miller-ssh-agent) and
/// OpenSSH's key and signature blobs are written in: `byte`, `uint32`, `string` (a length and
/// bytes) and `mpint` (a two's-complement big-endian integer in a string).
struct SSHReader {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Whether every byte has been read.
    var isAtEnd: Bool { offset == bytes.count }

    mutating func byte() throws(SSHAgentError) -> UInt8 {
        guard offset < bytes.count else { throw .malformed("a message ends early") }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func uint32() throws(SSHAgentError) -> UInt32 {
        guard bytes.count - offset >= 4 else { throw .malformed("a message ends early") }
        defer { offset += 4 }
        return bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// A `string`: its length is checked against what is left, never trusted.
    mutating func string() throws(SSHAgentError) -> [UInt8] {
        let length = Int(try uint32())
        guard bytes.count - offset >= length else { throw .malformed("a string is longer than its message") }
        defer { offset += length }
        return Array(bytes[offset..<offset + length])
    }

    /// A `string` that must be UTF-8.
    mutating func text() throws(SSHAgentError) -> String {
        guard let text = String(validating: try string(), as: UTF8.self) else {
            throw .malformed("a name is not UTF-8")
        }
        return text
    }

    /// A non-negative `mpint`, as its magnitude without leading zero bytes.
    mutating func positiveInteger() throws(SSHAgentError) -> [UInt8] {
        let encoded = try string()
        guard encoded.first.map({ $0 & 0x80 == 0 }) ?? true else { throw .malformed("a negative integer") }
        guard encoded.count < 2 || encoded[0] != 0 || encoded[1] & 0x80 != 0 else {
            throw .malformed("an integer with a needless leading zero")
        }
        return Array(encoded.drop { $0 == 0 })
    }
}

/// Writes the SSH wire encoding.
struct SSHWriter {
    private(set) var bytes: [UInt8] = []

    mutating func byte(_ value: UInt8) { bytes.append(value) }

    mutating func uint32(_ value: UInt32) {
        bytes += [UInt8(value >> 24), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
    }

    mutating func string(_ value: some Collection<UInt8>) {
        uint32(UInt32(value.count))
        bytes += value
    }

    mutating func string(_ value: String) { string(Array(value.utf8)) }

    /// A non-negative integer from its big-endian magnitude: leading zeros dropped, and one
    /// zero byte put back before a first byte whose top bit is set.
    mutating func positiveInteger(_ magnitude: some Collection<UInt8>) {
        let trimmed = Array(magnitude.drop { $0 == 0 })
        string(trimmed.first.map { $0 & 0x80 != 0 } == true ? [0] + trimmed : trimmed)
    }
}
