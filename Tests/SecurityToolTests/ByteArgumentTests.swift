import Foundation
import Testing

@testable import SecurityTool

private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// Passwords, secrets and attribute values reach the keychain as the bytes given on the
/// command line, in the environment or on standard input, UTF-8 or not (as on macOS).
@Suite struct ByteArgumentTests {
    /// `\xe9t\xe9`, and two passwords of its shape that a lossy UTF-8 decoding made equal to it.
    static let password: [UInt8] = [0xE9, 0x74, 0xE9]
    static let sameShape: [[UInt8]] = [[0xFF, 0x74, 0xFE], [0x80, 0x74, 0x81]]

    @Test func invalidUTF8KeychainPasswordsOfOneShapeAreDifferentPasswords() throws {
        let sandbox = try Sandbox()
        let create = try sandbox.run(bytes: [bytes("create-keychain"), bytes("-p"), Self.password, bytes("k")])
        #expect(create.status == 0, "\(create)")
        let add = try sandbox.run(
            bytes: [bytes("add-generic-password"), bytes("-a"), bytes("x"), bytes("-s"), bytes("s"), bytes("k")],
            environment: ["KEYCHAIN_PASSWORD": Self.password])
        #expect(add.status == 0, "\(add)")
        try sandbox.lock("k")
        for other in Self.sameShape {
            let argv = try sandbox.run(bytes: [bytes("unlock-keychain"), bytes("-p"), other, bytes("k")])
            #expect(argv.status == 51, "\(argv)")
            let piped = try sandbox.run(["unlock-keychain", "k"], stdin: Data(other + [0x0A]))
            #expect(piped.status == 51, "\(piped)")
            let environment = try sandbox.run(
                bytes: [bytes("find-generic-password"), bytes("-a"), bytes("x"), bytes("k")],
                environment: ["KEYCHAIN_PASSWORD": other])
            #expect(environment.status == 51, "\(environment)")
            // The right password still unlocks (which also clears the agent's wrong-password
            // count before the next shape's three attempts).
            let right = try sandbox.run(bytes: [bytes("unlock-keychain"), bytes("-p"), Self.password, bytes("k")])
            #expect(right.status == 0, "\(right)")
            try sandbox.lock("k")
        }
        let argv = try sandbox.run(bytes: [bytes("unlock-keychain"), bytes("-p"), Self.password, bytes("k")])
        #expect(argv.status == 0, "\(argv)")
        let piped = try sandbox.run(["unlock-keychain", "k"], stdin: Data(Self.password + [0x0A]))
        #expect(piped.status == 0, "\(piped)")
        let environment = try sandbox.run(
            bytes: [bytes("find-generic-password"), bytes("-a"), bytes("x"), bytes("k")],
            environment: ["KEYCHAIN_PASSWORD": Self.password])
        #expect(environment.status == 0, "\(environment)")
    }

    @Test func setKeychainPasswordKeepsTheNewPasswordsBytes() throws {
        let sandbox = try Sandbox()
        #expect(try sandbox.run(["create-keychain", "-p", "old", "k"]).status == 0)
        let change = try sandbox.run(
            bytes: [bytes("set-keychain-password"), bytes("-o"), bytes("old"), bytes("-p"), Self.password, bytes("k")])
        #expect(change.status == 0, "\(change)")
        try sandbox.lock("k")
        let wrong = try sandbox.run(bytes: [bytes("unlock-keychain"), bytes("-p"), Self.sameShape[0], bytes("k")])
        #expect(wrong.status == 51, "\(wrong)")
        let right = try sandbox.run(bytes: [bytes("unlock-keychain"), bytes("-p"), Self.password, bytes("k")])
        #expect(right.status == 0, "\(right)")
    }

    @Test func wSecretThatIsNotUTF8IsStoredExactly() throws {
        let sandbox = try Sandbox()
        let secret: [UInt8] = [0xFF, 0xFE, 0x01, 0x6F, 0x6B]
        let add = try sandbox.run(bytes: [
            bytes("add-generic-password"), bytes("-a"), bytes("ci"), bytes("-s"), bytes("deploy"), bytes("-w"), secret,
        ])
        #expect(add.status == 0, "\(add)")
        let find = try sandbox.run(["find-generic-password", "-a", "ci", "-s", "deploy", "-w"])
        #expect(find.out == "fffe016f6b\n", "\(find)")
        // A private-use scalar of the escape range is its own UTF-8 bytes, not the byte it stands for.
        let scalar = bytes("\u{10FFFF}")
        let addScalar = try sandbox.run(bytes: [
            bytes("add-generic-password"), bytes("-a"), bytes("ci"), bytes("-s"), bytes("other"), bytes("-w"), scalar,
        ])
        #expect(addScalar.status == 0, "\(addScalar)")
        let findScalar = try sandbox.run(["find-generic-password", "-a", "ci", "-s", "other", "-w"])
        #expect(findScalar.out == hex(scalar) + "\n", "\(findScalar)")
    }

    @Test func accountsThatAreNotUTF8MatchOnlyTheirOwnBytes() throws {
        let sandbox = try Sandbox()
        for (account, secret) in [([UInt8(0xFF)], "one"), ([0xFE], "two")] {
            let add = try sandbox.run(bytes: [
                bytes("add-generic-password"), bytes("-a"), account, bytes("-s"), bytes("svc"), bytes("-w"),
                bytes(secret),
            ])
            #expect(add.status == 0, "\(add)")
        }
        let find = try sandbox.run(bytes: [
            bytes("find-generic-password"), bytes("-a"), [0xFF], bytes("-s"), bytes("svc"), bytes("-w"),
        ])
        #expect(find.status == 0 && find.out == "one\n", "\(find)")
        let block = try sandbox.run(bytes: [
            bytes("find-generic-password"), bytes("-a"), [0xFE], bytes("-s"), bytes("svc"),
        ])
        #expect(block.out.contains("\"acct\"<blob>=0xFE \n"), "\(block)")
        for other: [UInt8] in [[0x80], bytes("\u{FFFD}"), bytes("\u{10FFFF}")] {
            let miss = try sandbox.run(bytes: [
                bytes("find-generic-password"), bytes("-a"), other, bytes("-s"), bytes("svc"),
            ])
            #expect(miss.status == 44, "\(miss)")
        }
        // Text that is UTF-8 still matches itself, stored and looked up as a string.
        let text = try sandbox.run(["add-generic-password", "-a", "é", "-s", "svc", "-w", "three"])
        #expect(text.status == 0, "\(text)")
        let findText = try sandbox.run(["find-generic-password", "-a", "é", "-s", "svc", "-w"])
        #expect(findText.out == "three\n", "\(findText)")
    }

    @Test func verboseModePrintsArgumentsThatAreNotUTF8AsTheirBytes() throws {
        let sandbox = try Sandbox()
        let run = try sandbox.run(bytes: [bytes("-v"), bytes("find-generic-password"), bytes("-a"), [0xFF, 0x41]])
        #expect(run.stderr.starts(with: Data(bytes("find-generic-password \"-a\" \"") + [0xFF, 0x41] + bytes("\"\n"))))
    }

    /// Byte strings whose decoding must come back exactly, and stay distinct.
    static let byteStrings: [[UInt8]] = [
        [], bytes("plain"), bytes("été"), [0xE9, 0x74, 0xE9], [0xFF, 0x74, 0xFE], [0x80, 0x74, 0x81],
        bytes("\u{FFFD}t\u{FFFD}"), bytes("\u{10FFFF}"), [0xFF], bytes("\u{10FF7F}"), bytes("\u{10FF80}"),
        [0xF4, 0x8F, 0xBF], [0xED, 0xA0, 0x80], [0xC0, 0xAF], [0xE2, 0x82, 0x41], [0xF0, 0x9F, 0x98, 0x80],
    ]

    @Test(arguments: byteStrings)
    func argumentDecodingRoundTripsEveryByteString(_ input: [UInt8]) {
        let decoded = ArgumentBytes.string(from: input)
        #expect(ArgumentBytes.bytes(of: decoded) == input)
    }

    @Test func argumentDecodingNeverMakesTwoByteStringsEqual() {
        let decoded = Self.byteStrings.map { Array(ArgumentBytes.string(from: $0).unicodeScalars) }
        #expect(Set(decoded.map { $0.map(\.value) }).count == Self.byteStrings.count)
    }
}
