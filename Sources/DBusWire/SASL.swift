/// The server side of D-Bus's SASL handshake, EXTERNAL mechanism only, as a pure state machine.
///
/// It answers what libdbus, GDBus and sd-bus send (as logged from each; the protocol is the D-Bus
/// specification's, https://dbus.freedesktop.org/doc/dbus-specification.html#auth-protocol): a bare
/// `AUTH` gets `REJECTED EXTERNAL`; `AUTH EXTERNAL` without an initial response gets `DATA`, and an
/// empty `DATA` then means "the uid the kernel reports for the socket"; `NEGOTIATE_UNIX_FD` gets
/// `ERROR`. A claimed uid must equal the kernel's (`SO_PEERCRED`) and be authorized.
package struct SASLServer {
    /// What the connection must do after a line.
    package enum Action: Equatable {
        /// Send this line (without `\r\n`).
        case reply(String)
        /// Authentication succeeded and `BEGIN` was received: switch to messages.
        case begin
        /// Close the connection.
        case close
    }

    private enum State {
        case waitingForAuth, waitingForData, waitingForBegin
    }

    /// The most failed attempts before the connection is closed.
    package static let maximumRejections = 8

    private var state = State.waitingForAuth
    private var rejections = 0
    package let guid: String
    package let peerUID: UInt32
    package let isAuthorized: @Sendable (UInt32) -> Bool

    package init(guid: String, peerUID: UInt32, isAuthorized: @escaping @Sendable (UInt32) -> Bool) {
        self.guid = guid
        self.peerUID = peerUID
        self.isAuthorized = isAuthorized
    }

    /// Handles one line (without `\r\n`).
    package mutating func receive(line: String) -> Action {
        let words = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        let command = words[0]
        let argument = words.count > 1 ? words[1...].joined(separator: " ") : nil
        switch (state, command) {
        case (_, "AUTH") where state != .waitingForBegin: return auth(words)
        case (.waitingForData, "DATA"): return checkClaim(hex: argument ?? "")
        case (.waitingForBegin, "BEGIN"): return .begin
        case (.waitingForBegin, "NEGOTIATE_UNIX_FD"): return .reply("ERROR \"Unix fd passing not supported\"")
        case (_, "CANCEL"), (_, "ERROR"): return reject()
        case (_, "BEGIN"): return .close
        default: return .reply("ERROR \"Unexpected command\"")
        }
    }

    private mutating func auth(_ words: [String]) -> Action {
        guard words.count >= 2 else { return reject() }
        guard words[1] == "EXTERNAL", words.count <= 3 else { return reject() }
        guard words.count == 3 else {
            state = .waitingForData
            return .reply("DATA")
        }
        return checkClaim(hex: words[2])
    }

    private mutating func checkClaim(hex: String) -> Action {
        let claimed: UInt32?
        if hex.isEmpty {
            claimed = peerUID
        } else {
            claimed = Self.decodeUID(hex: hex)
        }
        guard let claimed, claimed == peerUID, isAuthorized(claimed) else { return reject() }
        state = .waitingForBegin
        return .reply("OK \(guid)")
    }

    private mutating func reject() -> Action {
        rejections += 1
        state = .waitingForAuth
        return rejections > Self.maximumRejections ? .close : .reply("REJECTED EXTERNAL")
    }

    /// The uid in an EXTERNAL response: hex of the ASCII decimal uid.
    static func decodeUID(hex: String) -> UInt32? {
        let bytes = Array(hex.utf8)
        guard bytes.count % 2 == 0, bytes.count <= 20 else { return nil }
        var decimal = ""
        var index = 0
        while index < bytes.count {
            guard let high = hexValue(bytes[index]), let low = hexValue(bytes[index + 1]) else { return nil }
            let digit = high << 4 | low
            guard digit >= 0x30, digit <= 0x39 else { return nil }
            decimal.unicodeScalars.append(Unicode.Scalar(digit))
            index += 2
        }
        return UInt32(decimal)
    }

    /// The EXTERNAL initial response for `uid`.
    static func encodeUID(_ uid: UInt32) -> String {
        String(uid).utf8.map { byte in
            let hex = String(byte, radix: 16)
            return hex.count == 1 ? "0" + hex : hex
        }.joined()
    }
}

/// The client side of the handshake: `\0AUTH EXTERNAL <hex uid>`, then `BEGIN` after `OK`.
package struct SASLClient {
    package enum Action: Equatable {
        case send(String)
        case authenticated(guid: String)
        case fail(String)
    }

    package let uid: UInt32
    package let expectedGUID: String?

    package init(uid: UInt32, expectedGUID: String?) {
        self.uid = uid
        self.expectedGUID = expectedGUID
    }

    /// The bytes that open the handshake: a NUL, then `AUTH EXTERNAL`.
    package var initialBytes: [UInt8] { [0] + Array("AUTH EXTERNAL \(SASLServer.encodeUID(uid))\r\n".utf8) }

    package func receive(line: String) -> Action {
        let words = line.split(separator: " ")
        guard let command = words.first else { return .fail("empty SASL line") }
        switch command {
        case "OK":
            guard words.count == 2 else { return .fail("malformed OK") }
            let guid = String(words[1])
            if let expectedGUID, expectedGUID.lowercased() != guid.lowercased() {
                return .fail("server GUID differs from the address's")
            }
            return .authenticated(guid: guid)
        case "REJECTED": return .fail("server rejected EXTERNAL authentication")
        case "DATA": return .send("DATA")
        default: return .fail("unexpected SASL reply")
        }
    }
}
