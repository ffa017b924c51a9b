import Crypto
import Foundation
import KeychainLibc

extension DeviceKeySource {
    /// Loads the key to create a keychain with, creating the file when it does not exist.
    ///
    /// The standard file is never created while a password-less keychain already exists in the
    /// user's keychains directory: those were made with a device key, and a new one would not
    /// open them (a missing file usually means `XDG_CONFIG_HOME` or `HOME` point elsewhere, as
    /// under sudo, cron or a systemd unit). The error names the file and where it was looked for.
    func loadForCreating(sealing: HardwareSealing?) throws -> SymmetricKey {
        switch storage {
        case .fixed(let bytes):
            return bytes.withUnsafeBytes { SymmetricKey(data: $0) }
        case .file(let path?):
            return try Self.loadFile(path, mayCreate: true, sealing: sealing)
        case .file(nil):
            let paths = KeychainPaths()
            if try !SecureFileSystem.existingFile(paths.deviceKeyFile),
                let orphan = KeychainCore.Storage.passwordlessKeychains(in: paths.keychainsDirectory).first,
                // A keychain appears only after its key: one made since the first look by a
                // process racing this one comes with a key file that is there now.
                try !SecureFileSystem.existingFile(paths.deviceKeyFile)
            {
                throw Self.missing(
                    paths.deviceKeyFile,
                    needed: "a keychain made with it exists (\(orphan)), and a new key would not open it")
            }
            return try Self.loadFile(paths.deviceKeyFile, mayCreate: true, sealing: sealing)
        }
    }

    /// Loads the key of an existing keychain, or `nil` when the file is missing and the keychain
    /// has a password (whose keys open without the device key; those bound to the device do
    /// not). A password-less keychain without its device key is an error that names the file.
    ///
    /// A device key sealed to another machine's hardware (or this one's, cleared) counts as
    /// missing for a password keychain, which opens with its password alone.
    func loadForOpening(keychain path: String?, hasPassword: Bool, sealing: HardwareSealing?) throws -> SymmetricKey? {
        switch storage {
        case .fixed(let bytes):
            return bytes.withUnsafeBytes { SymmetricKey(data: $0) }
        case .file(let file):
            let file = file ?? KeychainPaths().deviceKeyFile
            if try SecureFileSystem.existingFile(file) {
                do {
                    return try Self.loadFile(file, mayCreate: false, sealing: sealing)
                } catch let error as KeychainError where hasPassword && Self.isSealedOutOfReach(error) {
                    return nil
                }
            }
            guard hasPassword else {
                throw Self.missing(file, needed: "the keychain \(path ?? "in memory") was made with it")
            }
            return nil
        }
    }

    /// Whether `error` says the device key is sealed where this process cannot unseal it: by
    /// another machine's hardware, or with no sealer in this process.
    private static func isSealedOutOfReach(_ error: KeychainError) -> Bool {
        error.reason == .sealedToAnotherTPM || (error.code == .notAvailable && error.isSetupProblem)
    }

    private static func missing(_ file: String, needed why: String) -> KeychainError {
        KeychainError(
            .io,
            "the device key file \(file) is missing, and \(why). It is looked for in "
                + "$XDG_CONFIG_HOME/keychain, else $HOME/.config/keychain: run with the HOME and "
                + "XDG_CONFIG_HOME the keychain was made with, or restore the file from a backup",
            isSetupProblem: true)
    }

    /// The file's first line: the key follows it, in the clear (v1) or sealed to this
    /// machine's hardware (v2, ``HardwareSealing/sealsDeviceKey``).
    private static let plainHeader = Data("keychain-linux device key v1\n".utf8)
    private static let sealedHeader = Data("keychain-linux device key v2 sealed\n".utf8)

    private static func loadFile(_ path: String, mayCreate: Bool, sealing: HardwareSealing?) throws -> SymmetricKey {
        if try SecureFileSystem.existingFile(path) {
            return try deviceKey(in: SecureFileSystem.readFile(path, limit: 4096), at: path, sealing: sealing)
        }
        guard mayCreate else { throw missing(path, needed: "a keychain needs it") }
        let directory = (path as NSString).deletingLastPathComponent
        try SecureFileSystem.ensureDirectory(directory)
        let key = SymmetricKey(size: .bits256)
        let contents = try fileContents(key, sealing: sealing)
        SecureFileSystem.removeStaleTemporaries(of: path)
        let temporary = SecureFileSystem.temporaryPath(for: path)
        try SecureFileSystem.createFile(temporary, contents: contents)
        defer { SecureFileSystem.remove(temporary) }
        do {
            try SecureFileSystem.withDirectoryLock(directory) {
                try SecureFileSystem.publish(temporary, as: path)
                try SecureFileSystem.syncDirectory(directory)
            }
            return key
        } catch let error as KeychainError where error.code == .duplicateKeychain {
            // Another process created it first: use theirs.
            _ = try SecureFileSystem.existingFile(path)
            return try deviceKey(in: SecureFileSystem.readFile(path, limit: 4096), at: path, sealing: sealing)
        }
    }

    /// The file's contents for `key`: sealed when `sealing` seals device keys.
    private static func fileContents(_ key: SymmetricKey, sealing: HardwareSealing?) throws -> Data {
        guard let sealing, sealing.sealsDeviceKey else { return plainHeader + key.bytes }
        return sealedHeader + (try sealing.sealer.sealToMachine(key.bytes))
    }

    /// What a device key file holds: the key, or the key sealed to a machine's hardware.
    private enum Stored {
        case plain(SymmetricKey)
        case sealed(Data)

        /// The file's `contents`, read from `path`.
        /// - Throws: `.invalidKeychain` for a file of neither form.
        init(_ contents: Data, path: String) throws {
            if contents.count == plainHeader.count + 32, contents.starts(with: plainHeader) {
                self = .plain(SymmetricKey(data: contents.suffix(32)))
            } else if contents.count > sealedHeader.count, contents.starts(with: sealedHeader) {
                self = .sealed(Data(contents.dropFirst(sealedHeader.count)))
            } else {
                throw KeychainError(.invalidKeychain, "the device key file \(path) is malformed")
            }
        }
    }

    /// The key in a device key file's `contents`. A plain key read by a process that seals
    /// device keys is sealed in place (when the hardware does not answer, it stays plain for
    /// now and the next read tries again).
    private static func deviceKey(in contents: Data, at path: String, sealing: HardwareSealing?) throws -> SymmetricKey
    {
        switch try Stored(contents, path: path) {
        case .plain(let key):
            if let sealing, sealing.sealsDeviceKey { try? seal(key, replacing: contents, at: path, sealing: sealing) }
            return key
        case .sealed(let sealed):
            guard let sealing else {
                throw KeychainError(
                    .notAvailable,
                    "the device key file \(path) is sealed to this machine's TPM, and this process has none "
                        + "configured: open keychains through keychaind (KEYCHAIN_AGENT not `off`; docs/login.md)",
                    isSetupProblem: true)
            }
            let key = try sealing.unsealedDeviceKeys.key(for: sealed) { try sealing.sealer.unsealFromMachine(sealed) }
            guard key.withUnsafeBytes(\.count) == 32 else {
                throw KeychainError(.invalidKeychain, "the device key file \(path) is malformed")
            }
            return key.withUnsafeBytes { SymmetricKey(data: $0) }
        }
    }

    /// Puts `key` back in the device key file where it is missing, malformed, or sealed to
    /// hardware that answers it is not this machine's (a TPM since cleared or replaced); the file
    /// it replaces is kept beside it as `NAME.unreadable-TIME`. Anything else is left as it is:
    /// a file with a key this process reads, and a sealed file this process cannot judge (no
    /// sealer, or hardware that does not answer now), so that a process without a TPM never
    /// writes the key in the clear over a sealed one.
    /// - Throws: `.duplicateKeychain` when the file holds another key this process reads.
    func restore(_ key: SymmetricKey, sealing: HardwareSealing?) throws {
        guard case .file(let file) = storage else { return }
        let path = file ?? KeychainPaths().deviceKeyFile
        let directory = (path as NSString).deletingLastPathComponent
        try SecureFileSystem.ensureDirectory(directory)
        try SecureFileSystem.withDirectoryLock(directory) {
            if try SecureFileSystem.existingFile(path) {
                guard try Self.isReplaceable(SecureFileSystem.readFile(path, limit: 4096), at: path, by: key, sealing)
                else { return }
                let aside = path + ".unreadable-\(Int(Date().timeIntervalSince1970))"
                guard rename(path, aside) == 0 else { throw SecureFileSystem.posixError("cannot move aside", path) }
            }
            let temporary = SecureFileSystem.temporaryPath(for: path)
            try SecureFileSystem.createFile(temporary, contents: try Self.fileContents(key, sealing: sealing))
            defer { SecureFileSystem.remove(temporary) }
            try SecureFileSystem.publish(temporary, as: path)
            try SecureFileSystem.syncDirectory(directory)
        }
    }

    /// Whether a device key file holding `contents` gives way to `key` (``restore(_:sealing:)``).
    private static func isReplaceable(
        _ contents: Data, at path: String, by key: SymmetricKey, _ sealing: HardwareSealing?
    )
        throws -> Bool
    {
        let current: SymmetricKey
        switch try? Stored(contents, path: path) {
        case nil: return true
        case .plain(let plain): current = plain
        case .sealed(let sealed):
            guard let sealing else { return false }
            do {
                current = SymmetricKey(data: try sealing.sealer.unsealFromMachine(sealed))
            } catch let error as KeychainError where error.reason == .sealedToAnotherTPM {
                return true
            } catch {
                return false
            }
        }
        guard current == key else {
            throw KeychainError(.duplicateKeychain, "the device key file \(path) holds another key")
        }
        return false
    }

    /// Replaces the plain device key file at `path`, still holding `plain`, with `key` sealed: in
    /// one rename, under the directory's lock, so that a reader sees one file or the other.
    private static func seal(_ key: SymmetricKey, replacing plain: Data, at path: String, sealing: HardwareSealing)
        throws
    {
        let contents = try fileContents(key, sealing: sealing)
        let directory = (path as NSString).deletingLastPathComponent
        let temporary = SecureFileSystem.temporaryPath(for: path)
        try SecureFileSystem.createFile(temporary, contents: contents)
        defer { SecureFileSystem.remove(temporary) }
        try SecureFileSystem.withDirectoryLock(directory) {
            guard try SecureFileSystem.readFile(path, limit: 4096) == plain else { return }
            guard rename(temporary, path) == 0 else { throw SecureFileSystem.posixError("cannot replace", path) }
            try SecureFileSystem.syncDirectory(directory)
        }
    }
}

/// The names under which keys are stored wrapped in a keychain's header.
enum KeyName: Hashable, Sendable {
    case index
    case protection(ProtectionClass)

    var rawValue: String {
        switch self {
        case .index: "index"
        case .protection(let c): "class.\(c.rawValue)"
        }
    }

    static let all: [KeyName] = [.index] + ProtectionClass.allCases.map { .protection($0) }

    /// A new random key for every name: a new keychain's keys, or a rotation's.
    static func freshKeys() -> [KeyName: SymmetricKey] {
        all.reduce(into: [:]) { $0[$1] = SymmetricKey(size: .bits256) }
    }
}

/// What a stored key is wrapped with.
enum Wrapper: String, Sendable, CaseIterable {
    /// The device key alone.
    case device
    /// The password-derived key alone.
    case password
    /// A key derived from both the password-derived key and the device key.
    case passwordAndDevice = "password+device"
    /// The recovery key alone, where the password wraps (``recoveryWrappers(for:)``).
    case recovery
    /// The recovery key and the device key, where the password and the device key wrap.
    case recoveryAndDevice = "recovery+device"

    /// Whether the key-derivation parameters are bound into the wrapping (those of the password
    /// change with each password; the device's and the recovery key's wrappings outlive them).
    var bindsKeyDerivation: Bool { self == .password || self == .passwordAndDevice }

    /// The recovery key's wrappings of a password keychain's key: the password's, with the
    /// recovery key in the password's place.
    static func recoveryWrappers(for key: KeyName) -> [Wrapper] {
        wrappers(for: key, hasPassword: true).compactMap {
            switch $0 {
            case .password: .recovery
            case .passwordAndDevice: .recoveryAndDevice
            default: nil
            }
        }
    }

    /// Which wrappings a key has. A password-less keychain wraps every key with the device
    /// key; a password keychain wraps when-unlocked and after-first-unlock keys with the
    /// password, their this-device-only twins with password and device, the "always" key
    /// and the index key with the device key (usable while locked) and the password (so
    /// the file plus the password opens them elsewhere), "always this device only" with the
    /// device key alone.
    static func wrappers(for key: KeyName, hasPassword: Bool) -> [Wrapper] {
        guard hasPassword else { return [.device] }
        switch key {
        case .index, .protection(.always): return [.device, .password]
        case .protection(.alwaysThisDeviceOnly): return [.device]
        case .protection(let c) where c.isThisDeviceOnly: return [.passwordAndDevice]
        case .protection: return [.password]
        }
    }
}

/// The wrapping keys available to a keychain handle.
struct WrappingKeys {
    var device: SymmetricKey
    var password: SymmetricKey?
    var passwordAndDevice: SymmetricKey?
    var recovery: SymmetricKey?
    var recoveryAndDevice: SymmetricKey?

    init(deviceKey: SymmetricKey, passwordKey: SymmetricKey?, keychainID: Data) {
        device = Self.derive(deviceKey.bytes, keychainID, "device")
        password = passwordKey.map { Self.derive($0.bytes, keychainID, "password") }
        passwordAndDevice = passwordKey.map {
            Self.derive($0.bytes + deviceKey.bytes, keychainID, "password+device")
        }
    }

    /// The device key's wrapping keys and the recovery key's (no password's).
    init(deviceKey: SymmetricKey, recoveryKey: SymmetricKey, keychainID: Data) {
        self.init(deviceKey: deviceKey, passwordKey: nil, keychainID: keychainID)
        recovery = Self.derive(recoveryKey.bytes, keychainID, "recovery")
        recoveryAndDevice = Self.derive(recoveryKey.bytes + deviceKey.bytes, keychainID, "recovery+device")
    }

    subscript(wrapper: Wrapper) -> SymmetricKey? {
        switch wrapper {
        case .device: device
        case .password: password
        case .passwordAndDevice: passwordAndDevice
        case .recovery: recovery
        case .recoveryAndDevice: recoveryAndDevice
        }
    }

    private static func derive(_ material: Data, _ salt: Data, _ purpose: String) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: material), salt: salt,
            info: Data("keychain-linux wrap \(purpose) v1".utf8), outputByteCount: 32)
    }
}

extension SymmetricKey {
    var bytes: Data { withUnsafeBytes { Data($0) } }
}

/// The keys a keychain handle holds in memory, guarded by a readers-writer lock so that
/// ``KeychainDatabase/lock()`` waits for in-flight reads and no read returns data after
/// `lock()` has returned.
final class KeyRing: @unchecked Sendable {
    struct State {
        var classKeys: [ProtectionClass: SymmetricKey] = [:]
        var indexKey: SymmetricKey? {
            didSet { indexTagger = indexKey.map { IndexTagger(key: $0, layout: layout, groups: groups) } }
        }
        /// The keychain's index layout.
        let layout: IndexLayout
        /// The access groups whose tags the tagger computes up front.
        let groups: [String]
        /// The tagger of ``indexKey``, keyed once when the key is set.
        private(set) var indexTagger: IndexTagger?
        /// Whether this handle has been unlocked (after-first-unlock keys stay until close).
        var hasBeenUnlocked = false
        var isUnlocked = false
        /// Whether ``KeychainDatabase/close()`` was called: nothing is read or written again.
        var isClosed = false

        /// Takes the index key and the class keys among `keys` (keys already held and not among
        /// them stay).
        mutating func install(_ keys: [KeyName: SymmetricKey]) {
            indexKey = keys[.index]
            for case (.protection(let c), let key) in keys { classKeys[c] = key }
        }
    }

    private var state: State
    private let lock = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)

    /// Empty keys for a keychain of `layout`; once unlocked, the tags of `groups` are
    /// computed up front.
    init(layout: IndexLayout, groups: [String] = []) {
        state = State(layout: layout, groups: groups)
        lock.initialize(to: pthread_rwlock_t())
        var attributes = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attributes)
        #if canImport(Glibc)
            pthread_rwlockattr_setkind_np(
                &attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
        #endif
        pthread_rwlock_init(lock, &attributes)
        pthread_rwlockattr_destroy(&attributes)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    /// Runs `body` with the keys; many readers at once.
    func read<T>(_ body: (State) throws -> T) rethrows -> T {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body(state)
    }

    /// Changes the keys, waiting for every reader to finish.
    func modify<T>(_ body: (inout State) throws -> T) rethrows -> T {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body(&state)
    }
}
