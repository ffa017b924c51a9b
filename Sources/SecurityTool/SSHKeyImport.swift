import Foundation
import KeychainAgentProtocol
import KeychainClient
import KeychainLibc

/// `security import` of an OpenSSH private key file (what `ssh-keygen` writes): the key is given
/// to keychaind's SSH agent, which checks it and stores it in the default keychain exactly as for
/// `ssh-add` (docs/ssh-agent.md). Only the file's container is read here (PROTOCOL.key in
/// OpenSSH's sources); the key's fields are the agent protocol's, checked by the agent.
enum SSHKeyImport {
    static let armor = "-----BEGIN OPENSSH PRIVATE KEY-----"
    static let end = "-----END OPENSSH PRIVATE KEY-----"

    /// How many fields after its type name each key type has in the file and in an add request.
    static let fieldCounts = ["ssh-ed25519": 2, "ecdsa-sha2-nistp256": 3, "ecdsa-sha2-nistp384": 3, "ssh-rsa": 6]

    static func isOpenSSHPrivateKey(_ data: Data) -> Bool {
        data.prefix(armor.utf8.count + 8).range(of: Data(armor.utf8)) != nil
    }

    /// Imports the key in `data` through keychaind's SSH agent.
    /// - Returns: The command's status.
    static func run(_ data: Data, keychain: String?) throws -> Int32 {
        guard keychain == nil else {
            throw CommandFailure.failure(
                "an SSH key is kept in the default keychain, the one keychaind's SSH agent serves: leave out -k")
        }
        var request = try addRequest(data)
        defer { request.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) } }
        let agent: AgentConnection?
        do {
            agent = try Keychains.agent(startingIfNeeded: true)
        } catch {
            throw CommandFailure.status(of: error, "keychaind")
        }
        guard let agent else {
            throw CommandFailure.failure(
                "SSH keys are kept by keychaind's SSH agent, and no agent is used (KEYCHAIN_AGENT=off)")
        }
        let socket = (agent.socketPath as NSString).deletingLastPathComponent + "/" + AgentEndpoint.sshSocketName
        guard try send(request, to: socket) else {
            throw CommandFailure.failure("keychaind's SSH agent refused the key (its log says why)")
        }
        Console.out("1 key imported.\n")
        return 0
    }

    /// `SSH2_AGENTC_ADD_IDENTITY` for the one unencrypted key of an `openssh-key-v1` file.
    /// - Throws: ``CommandFailure`` for another format, an encrypted key (`ssh-add` asks for its
    ///   passphrase), several keys, an unknown key type or a damaged file.
    static func addRequest(_ data: Data) throws -> [UInt8] {
        let damaged = CommandFailure.failure("the OpenSSH private key file is damaged")
        // Found in the file's bytes, never copied into a String (which could not be wiped).
        guard let start = data.range(of: Data(armor.utf8)),
            let stop = data.range(of: Data(end.utf8), in: start.upperBound..<data.endIndex),
            var blob = Data(base64Encoded: data[start.upperBound..<stop.lowerBound], options: .ignoreUnknownCharacters)
        else { throw damaged }
        defer { blob.resetBytes(in: 0..<blob.count) }
        var reader = Reader(bytes: [UInt8](blob))
        defer { reader.wipe() }
        guard reader.take(15) == Array("openssh-key-v1\0".utf8), let cipher = reader.string(),
            let kdf = reader.string(), reader.string() != nil, let count = reader.uint32(),
            let publicBlob = reader.string(), var section = reader.string().map({ Reader(bytes: $0) }), reader.isAtEnd
        else { throw damaged }
        defer { section.wipe() }
        guard cipher == Array("none".utf8), kdf == Array("none".utf8) else {
            throw CommandFailure.failure(
                "the key is encrypted with a passphrase: add it with ssh-add, which asks for the passphrase once "
                    + "and stores the key in the keychain")
        }
        guard count == 1 else { throw CommandFailure.failure("the file holds \(count) keys: import one at a time") }
        guard let check = section.uint32(), section.uint32() == check else { throw damaged }
        let fieldsStart = section.offset
        guard let type = section.string().map({ String(decoding: $0, as: UTF8.self) }) else { throw damaged }
        guard let fields = fieldCounts[type] else {
            throw CommandFailure.failure("keys of type \(type.prefix(64)) are not supported")
        }
        var values: [[UInt8]] = []
        for _ in 0..<fields {
            guard let value = section.string() else { throw damaged }
            values.append(value)
        }
        defer {
            for index in values.indices {
                values[index].withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) }
            }
        }
        // The file's public key must be the private key's, as OpenSSH's own reader requires
        // (sshkey_parse_private2 in sshkey.c): a flipped byte in either is a damaged file.
        guard publicBlob == publicKeyBlob(type: type, fields: values), section.string() != nil  // the comment
        else { throw damaged }
        let request = [UInt8(17)] + section.bytes[fieldsStart..<section.offset]
        // Then the padding: 1, 2, 3, …
        for (index, byte) in section.bytes[section.offset...].enumerated() where Int(byte) != index + 1 {
            throw damaged
        }
        return request
    }

    /// The public key blob (RFC 4253 §6.6) that the private key `fields` of a key of `type` stand
    /// for, in the order `fieldCounts` counts them (PROTOCOL.key; RFC 5656 §3.1; RFC 8709 §4).
    static func publicKeyBlob(type: String, fields: [[UInt8]]) -> [UInt8] {
        let kept: [[UInt8]]
        switch type {
        case "ssh-rsa": kept = [fields[1], fields[0]]  // n, e, d, iqmp, p, q → e, n
        case "ssh-ed25519": kept = [fields[0]]  // pk, sk → pk
        default: kept = [fields[0], fields[1]]  // curve, Q, d → curve, Q
        }
        return ([Array(type.utf8)] + kept).flatMap { field in
            [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: field.count >> $0) } + field
        }
    }

    /// Sends `request` to the SSH agent at `socket` (started with keychaind; waited for up to five
    /// seconds) and reads its answer.
    /// - Returns: Whether it answered `SSH_AGENT_SUCCESS`.
    static func send(_ request: [UInt8], to socket: String) throws -> Bool {
        var framed =
            [
                UInt8(truncatingIfNeeded: request.count >> 24), UInt8(truncatingIfNeeded: request.count >> 16),
                UInt8(truncatingIfNeeded: request.count >> 8), UInt8(truncatingIfNeeded: request.count),
            ] + request
        defer { framed.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) } }
        for _ in 0..<100 {
            let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(socket.utf8.prefix(107)) + [0]) }
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            guard connected == 0 else {
                usleep(50_000)
                continue
            }
            guard framed.withUnsafeBytes({ sendAll($0, to: fd) }) else { break }
            var answer = [UInt8](repeating: 0, count: 5)
            return recv(fd, &answer, 5, Int32(MSG_WAITALL)) == 5 && answer == [0, 0, 0, 1, 6]
        }
        throw CommandFailure.failure("keychaind's SSH agent does not answer at \(socket)")
    }

    /// SSH's wire types, read from a buffer.
    struct Reader {
        var bytes: [UInt8]
        var offset = 0

        var isAtEnd: Bool { offset == bytes.count }

        mutating func take(_ count: Int) -> [UInt8]? {
            guard count >= 0, bytes.count - offset >= count else { return nil }
            defer { offset += count }
            return Array(bytes[offset..<offset + count])
        }

        mutating func uint32() -> UInt32? { take(4).map { $0.reduce(0) { $0 << 8 | UInt32($1) } } }

        mutating func string() -> [UInt8]? { uint32().flatMap { take(Int($0)) } }

        mutating func wipe() { bytes.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) } }
    }
}
