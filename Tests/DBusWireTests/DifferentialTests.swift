import Foundation
import Testing

@testable import DBusWire

@Suite("Differential decoding with GDBus (python3-gi)", .timeLimit(.minutes(10)))
struct DifferentialTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
        "gdbus_differential.py"
    ).path

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    static func unhex(_ text: Substring) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index..<next], radix: 16) ?? 0)
            index = next
        }
        return bytes
    }

    @Test(
        "GDBus decodes our random messages (both byte orders) and re-encodes them; we decode its blobs to the same values"
    )
    func roundTripThroughGDBus() async throws {
        var generator = RandomDBus(seed: 0x6D_B005)
        var messages: [DBusMessage] = []
        var lines: [String] = []
        for index in 0..<400 {
            let message = generator.message()
            messages.append(message)
            lines.append(Self.hex(try message.encoded(byteOrder: index % 2 == 0 ? .littleEndian : .bigEndian)))
        }
        let result = try await Tools.run(
            "/usr/bin/python3", [Self.script, "roundtrip"], input: Data((lines.joined(separator: "\n") + "\n").utf8))
        #expect(result.status == 0, "\(result.stderr)")
        let outputs = result.stdout.split(separator: "\n")
        #expect(outputs.count == messages.count)
        for (index, (message, output)) in zip(messages, outputs).enumerated() {
            let parts = output.split(separator: " ")
            guard parts.first == "OK", parts.count == 3 else {
                Issue.record("GDBus refused message \(index) (signature \(message.signature)): \(output)")
                continue
            }
            #expect(String(parts[1]) == "(" + message.signature.rawValue + ")")
            let blob = Self.unhex(parts[2])
            #expect(blob.first == (index % 2 == 0 ? DBusByteOrder.bigEndian : .littleEndian).rawValue)
            #expect(try DBusMessage(decoding: blob) == message, "message \(index)")
        }
    }

    @Test("We decode messages GDBus authored from GVariant text, both byte orders")
    func decodeGDBusCorpus() async throws {
        let result = try await Tools.run("/usr/bin/python3", [Self.script, "corpus"])
        #expect(result.status == 0, "\(result.stderr)")
        let blobs = result.stdout.split(separator: "\n").map(Self.unhex)
        let expected: [[DBusValue]] = [
            [
                .dictionary(
                    key: .string, value: .variant,
                    [
                        DBusDictEntry(.string("Label"), .variant(.string("Work"))),
                        DBusDictEntry(.string("Count"), .variant(.uint32(7))),
                        DBusDictEntry(.string("Nested"), .variant(.variant(.array(.int16, [.int16(-3), .int16(4)])))),
                    ])
            ],
            [
                .array(
                    TestObjects.secretType,
                    [
                        .structure([
                            .objectPath("/s/1"), .bytes([0x69, 0x76, 0]), .bytes([0, 0xFF]), .string("text/plain"),
                        ])
                    ])
            ],
            [
                .byte(255), .int16(-32768), .uint16(65535), .int32(-2_147_483_648), .uint32(4_294_967_295),
                .int64(.min), .uint64(.max), .double(2.5), .boolean(true),
            ],
            [.array(.string, []), .dictionary(key: .string, value: .variant, []), .bytes([])],
            [.dictionary(key: .string, value: .string, [DBusDictEntry(.string("service"), .string("demo"))])],
            [
                .variant(.structure([.uint16(7), .array(.variant, [.variant(.string("x")), .variant(.bytes([]))])])),
                .signature("a{sv}"),
            ],
        ]
        #expect(blobs.count == expected.count * 2)
        for (index, blob) in blobs.enumerated() {
            let message = try DBusMessage(decoding: blob)
            #expect(message.body == expected[index / 2], "case \(index / 2)")
            #expect(message.member == "M" && message.serial == 7)
        }
    }
}
