import Foundation
import SeededRandom
import Testing

@testable import DBusWire

/// Random D-Bus types and values from a seed (no `h`: GDBus wants an fd list for it).
struct RandomDBus {
    var random: SplitMix64

    init(seed: UInt64) { random = SplitMix64(seed: seed) }

    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &random) }

    mutating func basicType() -> DBusType {
        [
            .byte, .boolean, .int16, .uint16, .int32, .uint32, .int64, .uint64, .double, .string, .objectPath,
            .signature,
        ][
            int(0...11)]
    }

    mutating func type(depth: Int) -> DBusType {
        guard depth < 4 else { return basicType() }
        switch int(0...9) {
        case 0: return .variant
        case 1: return .array(type(depth: depth + 1))
        case 2: return .dictionary(key: basicType(), value: type(depth: depth + 1))
        case 3: return .structure((0..<int(1...3)).map { _ in type(depth: depth + 1) })
        default: return basicType()
        }
    }

    mutating func string() -> String {
        let pieces = ["a", "Z", "0", " ", "é", "ß", "€", "😀", "\u{202E}", "\n", "p\u{301}", "ワ"]
        return (0..<int(0...6)).map { _ in pieces[int(0...pieces.count - 1)] }.joined()
    }

    mutating func objectPath() -> String {
        let count = int(0...3)
        return count == 0 ? "/" : (0..<count).map { _ in "/" + ["a", "B_1", "x9", "item"][int(0...3)] }.joined()
    }

    mutating func value(of type: DBusType, depth: Int = 0) -> DBusValue {
        switch type {
        case .byte: return .byte(UInt8.random(in: .min ... .max, using: &random))
        case .boolean: return .boolean(Bool.random(using: &random))
        case .int16: return .int16(Int16.random(in: .min ... .max, using: &random))
        case .uint16: return .uint16(UInt16.random(in: .min ... .max, using: &random))
        case .int32: return .int32(Int32.random(in: .min ... .max, using: &random))
        case .uint32: return .uint32(UInt32.random(in: .min ... .max, using: &random))
        case .int64: return .int64(Int64.random(in: .min ... .max, using: &random))
        case .uint64: return .uint64(UInt64.random(in: .min ... .max, using: &random))
        case .double: return .double(Double.random(in: -1e300...1e300, using: &random))
        case .string: return .string(string())
        case .objectPath: return .objectPath(objectPath())
        case .signature: return .signature(self.type(depth: 2).signature)
        case .unixFD: return .unixFD(0)
        case .variant:
            let inner = depth < 4 ? self.type(depth: depth + 1) : basicType()
            return .variant(value(of: inner, depth: depth + 1))
        case .array(.byte): return .bytes((0..<int(0...5)).map { _ in UInt8.random(in: 0...255, using: &random) })
        case .array(let element):
            return .array(element, (0..<int(0...3)).map { _ in value(of: element, depth: depth + 1) })
        case .dictionary(let key, let val):
            return .dictionary(
                key: key, value: val,
                (0..<int(0...3)).map { _ in DBusDictEntry(value(of: key), value(of: val, depth: depth + 1)) })
        case .structure(let fields): return .structure(fields.map { value(of: $0, depth: depth + 1) })
        }
    }

    mutating func message() -> DBusMessage {
        let body = (0..<int(0...4)).map { _ in value(of: type(depth: 0)) }
        var message = DBusMessage.methodCall(
            path: objectPath(), interface: "org.example.Fuzz", member: "M\(int(0...9))", destination: ":1.7", body: body
        )
        message.serial = UInt32(int(1...100_000))
        return message
    }
}

@Suite("Codec")
struct CodecTests {
    @Test("Signatures: parsing, single complete types and nesting limits")
    func signatures() throws {
        #expect(try DBusSignature("a{sv}as(oayays)").types.count == 3)
        #expect(try DBusType(parsing: "a{o(oayays)}") == .dictionary(key: .objectPath, value: TestObjects.secretType))
        for bad in [
            "a", "(", "()", "a{vs}", "a{s}", "a{sss}", "{sv}", "z", "(s", "ss)", String(repeating: "y", count: 256),
        ] {
            #expect(throws: DBusError.self, "\(bad)") { try DBusSignature(bad) }
        }
        #expect(throws: DBusError.self) { try DBusType(parsing: "ss") }
        #expect(throws: Never.self) { try DBusSignature(String(repeating: "a", count: 32) + "y") }
        #expect(throws: DBusError.self) { try DBusSignature(String(repeating: "a", count: 33) + "y") }
        let deepStruct = String(repeating: "(", count: 32) + "y" + String(repeating: ")", count: 32)
        #expect(throws: Never.self) { try DBusSignature(deepStruct) }
        #expect(throws: DBusError.self) { try DBusSignature("(" + deepStruct + ")") }
    }

    @Test("Names: object paths, interfaces, members, bus names")
    func names() {
        #expect(DBusNames.isValidObjectPath("/"))
        #expect(DBusNames.isValidObjectPath("/org/freedesktop/secrets/collection/login_1"))
        for bad in ["", "org", "/a/", "//a", "/a//b", "/a-b", "/é"] {
            #expect(!DBusNames.isValidObjectPath(bad), "\(bad)")
        }
        #expect(DBusNames.isValidInterfaceName("org.freedesktop.Secret.Service"))
        for bad in ["org", "org.", ".org", "org.1a", "org.a-b", String(repeating: "a.", count: 128) + "b"] {
            #expect(!DBusNames.isValidInterfaceName(bad), "\(bad)")
        }
        #expect(
            DBusNames.isValidMemberName("GetSecrets") && !DBusNames.isValidMemberName("1x")
                && !DBusNames.isValidMemberName("a.b"))
        #expect(DBusNames.isValidBusName(":1.42") && DBusNames.isValidBusName("org.free-desktop.secrets"))
        #expect(
            !DBusNames.isValidBusName("org") && !DBusNames.isValidBusName("org.1a") && !DBusNames.isValidBusName(":"))
    }

    @Test("Marshalling: the design's SearchItems body, array padding even when empty, alignment from message start")
    func knownBytes() throws {
        let body = try DBusMarshal.encode(
            [.dictionary(key: .string, value: .string, [DBusDictEntry(.string("service"), .string("demo"))])],
            signature: DBusSignature("a{ss}"), byteOrder: .littleEndian)
        let expected: [UInt8] =
            [0x15, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0] + Array("service".utf8) + [0, 4, 0, 0, 0] + Array("demo".utf8) + [0]
        #expect(body == expected)
        let empty = try DBusMarshal.encode(
            [.array(.structure([.string, .string]), [])], signature: DBusSignature("a(ss)"))
        #expect(empty.count == 8)
        let bigEndian = try DBusMarshal.encode(
            [.uint16(0x0102), .uint64(3)], signature: DBusSignature("qt"), byteOrder: .bigEndian)
        #expect(bigEndian == [1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3])
        #expect(throws: DBusError.self) { try DBusMarshal.encode([.string("a\0b")], signature: DBusSignature("s")) }
        #expect(throws: DBusError.self) { try DBusMarshal.encode([.objectPath("bad")], signature: DBusSignature("o")) }
        #expect(throws: DBusError.self) { try DBusMarshal.encode([.int32(1)], signature: DBusSignature("u")) }
    }

    @Test("Messages: header fields, unknown fields ignored, required fields enforced, both byte orders")
    func messages() throws {
        var call = DBusMessage.methodCall(
            path: "/org/example", interface: "org.example.I", member: "M", destination: "org.example.S",
            body: [.stringVariantDictionary(["a": .int64(-1)])])
        call.serial = 9
        for order in [DBusByteOrder.littleEndian, .bigEndian] {
            let bytes = try call.encoded(byteOrder: order)
            #expect(try DBusMessage.frameLength(header: bytes) == bytes.count)
            #expect(try DBusMessage(decoding: bytes) == call)
        }
        // A header field with an unknown code (200) is skipped.
        var writer = DBusWriter(byteOrder: .littleEndian)
        writer.bytes = [0x6C, 4, 0, 1]
        writer.write(UInt32(0))
        writer.write(UInt32(3))
        try writer.writeArray(elementAlignment: 8) { w in
            try w.writeStruct([.byte(1), .variant(.objectPath("/a"))], as: [.byte, .variant], depth: 0)
            try w.writeStruct([.byte(200), .variant(.string("future"))], as: [.byte, .variant], depth: 0)
            try w.writeStruct([.byte(2), .variant(.string("a.b"))], as: [.byte, .variant], depth: 0)
            try w.writeStruct([.byte(3), .variant(.string("S"))], as: [.byte, .variant], depth: 0)
        }
        writer.pad(to: 8)
        let signal = try DBusMessage(decoding: writer.bytes)
        #expect(signal.type == .signal && signal.member == "S" && signal.interface == "a.b")
        var noMember = call
        noMember.member = nil
        #expect(throws: DBusError.self) { try noMember.encoded() }
        let reply = DBusMessage.error(to: call, name: "org.example.Error.X", message: "m")
        #expect(reply.replySerial == 9 && reply.errorMessage == "m")
    }

    @Test("Randomized round trip: 3,000 random messages, both byte orders")
    func randomRoundTrip() throws {
        var generator = RandomDBus(seed: 0xD805)
        for _ in 0..<3000 {
            let message = generator.message()
            for order in [DBusByteOrder.littleEndian, .bigEndian] {
                let bytes = try message.encoded(byteOrder: order)
                #expect(try DBusMessage(decoding: bytes) == message)
            }
        }
    }

    @Test("Limits: oversized frames refused from the fixed header; hostile lengths never trap")
    func limits() throws {
        var header: [UInt8] = [0x6C, 1, 0, 1]
        header += [0, 0, 0, 0x10]  // body length 256 MiB
        header += [1, 0, 0, 0, 0, 0, 0, 0]
        #expect(throws: DBusError.self) { try DBusMessage.frameLength(header: header) }
        var small = try DBusMessage.methodCall(
            path: "/", interface: nil, member: "M", body: [.bytes(Array(repeating: 1, count: 2000))]
        )
        .encoded()
        #expect(throws: DBusError.self) { try DBusMessage.frameLength(header: small, maximumLength: 1000) }
        // An array length far beyond the message.
        small[small.count - 2004] = 0xFF
        #expect(throws: DBusError.self) { try DBusMessage(decoding: small) }
        // Variants nested past 64 levels are refused, not recursed into.
        var value = DBusValue.byte(1)
        for _ in 0..<70 { value = .variant(value) }
        #expect(throws: DBusError.self) { try DBusMarshal.encode([value], signature: DBusSignature("v")) }
        var bytes: [UInt8] = []
        for _ in 0..<200 { bytes += [1, UInt8(ascii: "v"), 0] }
        bytes += [1, UInt8(ascii: "y"), 0, 7]
        #expect(throws: DBusError.self) { try DBusMarshal.decode(bytes, signature: DBusSignature("v")) }
    }

    @Test(
        "Strings: ASCII and other UTF-8 come back as sent; a string that is not UTF-8, or holds a NUL, is refused",
        arguments: ["plain ascii", "", "héllo wörld ✓", "日本語のテキスト", "emoji 🔑 key", "tab\tand\u{7F}"])
    func strings(text: String) throws {
        let body = try DBusMarshal.encode([.string(text)], signature: DBusSignature("s"))
        #expect(try DBusMarshal.decode(body, signature: DBusSignature("s")) == [.string(text)])
        guard !text.isEmpty else { return }
        // Each byte of the text in turn made invalid: 0xFF is never UTF-8, 0 is a NUL inside.
        for index in 4..<(body.count - 1) {
            for bad: UInt8 in [0xFF, 0] {
                var corrupt = body
                corrupt[index] = bad
                #expect(throws: DBusError.self, "byte \(index) = \(bad)") {
                    try DBusMarshal.decode(corrupt, signature: DBusSignature("s"))
                }
            }
        }
        // A lone continuation byte or a truncated sequence in otherwise ASCII text.
        for invalid: [UInt8] in [[0x80], [0xC3], [0xE2, 0x9C], [0xED, 0xA0, 0x80]] {
            let bytes = Array("ab".utf8) + invalid + Array("cd".utf8)
            // The length in this machine's order, as DBusMarshal reads by default.
            let wire = withUnsafeBytes(of: UInt32(bytes.count)) { Array($0) } + bytes + [0]
            #expect(throws: DBusError.self) { try DBusMarshal.decode(wire, signature: DBusSignature("s")) }
        }
    }

    @Test("Errors never show payload bytes")
    func errorDescriptions() throws {
        let secret = "hunter2-secret"
        var message = DBusMessage.methodCall(path: "/", interface: nil, member: "M", body: [.string(secret)])
        message.serial = 1
        var bytes = try message.encoded()
        bytes[bytes.count - 1] = 0x41  // remove the string's NUL terminator
        do {
            _ = try DBusMessage(decoding: bytes)
            Issue.record("decoded a corrupt message")
        } catch {
            #expect(!"\(error)".contains(secret))
        }
        #expect(throws: DBusError.self) {
            try DBusMarshal.encode([.string(secret + "\0")], signature: DBusSignature("s"))
        }
    }

    @Test("Addresses: DBUS_SESSION_BUS_ADDRESS with guid, escapes, XDG_RUNTIME_DIR fallback")
    func addresses() throws {
        let list = try DBusAddress.sessionBus(environment: [
            "DBUS_SESSION_BUS_ADDRESS":
                "unix:abstract=/tmp/x;unix:path=/tmp/dbus%2dA%20b,guid=0123456789abcdef0123456789abcdef"
        ])
        #expect(list.count == 2 && list[0].unixPath == nil)
        #expect(list[1].unixPath == "/tmp/dbus-A b" && list[1].guid == "0123456789abcdef0123456789abcdef")
        #expect(
            try DBusAddress.sessionBus(environment: ["XDG_RUNTIME_DIR": "/run/user/5"]) == [
                .unixPath("/run/user/5/bus")
            ])
        #expect(throws: DBusError.self) { try DBusAddress.sessionBus(environment: [:]) }
        #expect(throws: DBusError.self) { try DBusAddress.parse("unix:path=%zz") }
        #expect(throws: DBusError.self) { try DBusAddress.parse("nocolon") }
    }
}
