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
    func loadForCreating() throws -> SymmetricKey {
        switch storage {
        case .fixed(let bytes):
            return bytes.withUnsafeBytes { SymmetricKey(data: $0) }
        case .file(let path?):
            return try Self.loadFile(path, mayCreate: true)
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
            return try Self.loadFile(paths.deviceKeyFile, mayCreate: true)
        }
    }

    /// Loads the key of an existing keychain, or `nil` when the file is missing and the keychain
    /// has a password (whose keys open without the device key; those bound to the device do
    /// not). A password-less keychain without its device key is an error that names the file.
    func loadForOpening(keychain path: String?, hasPassword: Bool) throws -> SymmetricKey? {
        switch storage {
        case .fixed(let bytes):
            return bytes.withUnsafeBytes { SymmetricKey(data: $0) }
        case .file(let file):
            let file = file ?? KeychainPaths().deviceKeyFile
            if try SecureFileSystem.existingFile(file) { return try Self.loadFile(file, mayCreate: false) }
            guard hasPassword else {
                throw Self.missing(file, needed: "the keychain \(path ?? "in memory") was made with it")
            }
            return nil
        }
    }

    private static func missing(_ file: String, needed why: String) -> KeychainError {
        KeychainError(
            .io,
            "the device key file \(file) is missing, and \(why). It is looked for in "
                + "$XDG_CONFIG_HOME/keychain, else $HOME/.config/keychain: run with the HOME and "
                + "XDG_CONFIG_HOME the keychain was made with, or restore the file from a backup",
            isSetupProblem: true)
    }

    private static let fileHeader = Data("keychain-linux device key v1\n".utf8)

    private static func loadFile(_ path: String, mayCreate: Bool) throws -> SymmetricKey {
        if try SecureFileSystem.existingFile(path) {
            return try parse(SecureFileSystem.readFile(path, limit: 4096))
        }
        guard mayCreate else { throw missing(path, needed: "a keychain needs it") }
        let directory = (path as NSString).deletingLastPathComponent
        try SecureFileSystem.ensureDirectory(directory)
        let key = SymmetricKey(size: .bits256)
        let contents = fileHeader + key.withUnsafeBytes { Data($0) }
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
            return try parse(SecureFileSystem.readFile(path, limit: 4096))
        }
    }

    private static func parse(_ contents: Data) throws -> SymmetricKey {
        guard contents.count == fileHeader.count + 32, contents.starts(with: fileHeader) else {
            throw KeychainError(.invalidKeychain, "the device key file is malformed")
        }
        return SymmetricKey(data: contents.suffix(32))
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
