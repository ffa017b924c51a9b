import Foundation
import KeychainModel

/// A security key paired with the user's keychains: its credential, its name, and the path it
/// was paired at (tried first when it is to be touched).
public struct PairedSecurityKey: Sendable, Hashable, Codable {
    /// The name the user gave it.
    public var name: String
    /// Its credential.
    public var key: CompanionKey
    /// The path it was paired at (a hidraw device, or ``SecurityKey/socketPrefix`` and a socket).
    public var device: String?
    /// When it was paired.
    public var paired: Date

    /// A paired key.
    public init(name: String, key: CompanionKey, device: String?, paired: Date = Date()) {
        self.name = name
        self.key = key
        self.device = device
        self.paired = paired
    }
}

/// The security keys paired with the user's keychains: `security-keys.json` in the keychain's
/// configuration directory (``KeychainModel/KeychainPaths/configurationDirectory``), public keys
/// and names only. A new `.companion` item is bound to the keys listed when it is made, and
/// keeps that list in its own access control: a key added here later, by anyone who can write
/// the file, opens none of the items made before.
public struct SecurityKeyRegistry: Sendable {
    /// The file.
    public let path: String

    /// The registry of the user whose paths these are.
    public init(paths: KeychainPaths = KeychainPaths()) {
        path = paths.configurationDirectory + "/security-keys.json"
    }

    /// How long a touch waits for another program's to end: a touch and a PIN take a person
    /// less than that.
    public static let longestWaitForTurn: Duration = .seconds(90)

    /// Runs `body`, which speaks to the user's security keys, once no other does, in this
    /// process or another: a key answers one command at a time (another program's gets
    /// `ERR_CHANNEL_BUSY`), and one may wait half a minute for a touch. The turn is an exclusive
    /// `flock` of `security-keys.lock` beside the file, which ends with its holder; where the
    /// lock cannot be made (no configuration directory yet), `body` runs without a turn.
    /// - Throws: `KeychainError` `.interactionNotAllowed` when the turn does not come within
    ///   ``longestWaitForTurn`` (another program waits at a PIN prompt, or is stopped); what
    ///   `body` throws.
    public func inTurn<T>(_ body: () throws -> T) throws -> T {
        let lock = open(
            (path as NSString).deletingPathExtension + ".lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard lock >= 0 else { return try body() }
        defer { close(lock) }
        let deadline = ContinuousClock.now + Self.longestWaitForTurn
        while flock(lock, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR, ContinuousClock.now < deadline else {
                throw KeychainError(
                    .interactionNotAllowed, "another program has been using the security key for too long")
            }
            usleep(50_000)
        }
        return try body()
    }

    private struct File: Codable {
        var version: Int
        var keys: [PairedSecurityKey]
    }

    /// The paired keys, oldest first; none when the file does not exist.
    /// - Throws: `KeychainError` `.decode` when the file is not one this version wrote (malformed
    ///   JSON, a credential that is not a P-256 key); nothing is trusted from it then.
    public func keys() throws -> [PairedSecurityKey] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        guard let file = try? decoder.decode(File.self, from: data), file.version == 1,
            file.keys.count <= CompanionKey.mostPaired,
            file.keys.allSatisfy({ CompanionKey(serialized: $0.key.serialized) == $0.key })
        else { throw KeychainError.decode("\(path) is not a list of paired security keys") }
        return file.keys
    }

    /// Adds `key`.
    /// - Throws: `KeychainError` `.duplicateItem` when a key of that name or credential is
    ///   paired already; `.parameter` when ``KeychainModel/CompanionKey/mostPaired`` are;
    ///   `.io` when the file cannot be written.
    public func add(_ key: PairedSecurityKey) throws {
        var keys = try keys()
        guard !keys.contains(where: { $0.name == key.name || $0.key.credentialID == key.key.credentialID }) else {
            throw KeychainError(.duplicateItem, "a security key named \(key.name) or with its credential is paired")
        }
        guard keys.count < CompanionKey.mostPaired else {
            throw KeychainError(
                .parameter, "\(CompanionKey.mostPaired) security keys are paired already; remove one first")
        }
        keys.append(key)
        try write(keys)
    }

    /// Removes the key named `name`.
    /// - Throws: `KeychainError` `.itemNotFound` when none is.
    public func remove(named name: String) throws {
        var keys = try keys()
        guard let index = keys.firstIndex(where: { $0.name == name }) else {
            throw KeychainError(.itemNotFound, "no security key named \(name) is paired")
        }
        keys.remove(at: index)
        try write(keys)
    }

    private func write(_ keys: [PairedSecurityKey]) throws {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let directory = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try encoder.encode(File(version: 1, keys: keys)).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw KeychainError(.io, "\(path) cannot be written: \(error)")
        }
    }
}
