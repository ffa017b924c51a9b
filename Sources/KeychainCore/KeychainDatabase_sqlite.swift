import Crypto
import Foundation
import GRDB
import GRDBSQLite

/// An open keychain: an encrypted, indexed, crash-safe store of items.
///
/// A `KeychainDatabase` is a `Sendable` handle: many threads may read at once while one
/// writes, and several processes may share the file. Every secret and every attribute value
/// is sealed with AES-256-GCM under the key of the item's protection class; lookups go
/// through keyed hashes, so finding one item decrypts only that item.
///
/// ```swift
/// let keychain = try KeychainDatabase.openDefault()
/// try keychain.add(Item(class: .genericPassword,
///                       attributes: [.service: .string("deploy"), .account: .string("ci")],
///                       data: Data("token".utf8)))
/// let found = try keychain.find(ItemQuery(class: .genericPassword,
///                                         attributes: [.service: .string("deploy")]),
///                               includeData: true)
/// ```
public final class KeychainDatabase: Sendable {
    /// The keychain's file, or `nil` for an in-memory keychain.
    public let path: String?
    /// The configuration the handle was opened with.
    public let configuration: KeychainConfiguration
    /// Whether the keychain is protected by a password (otherwise by the device key alone).
    public var hasPassword: Bool { header.withLock { $0.kdf != nil } }

    let writer: any DatabaseWriter
    let keychainID: Data
    /// The device key, or a key that opens nothing standing in for one this process cannot
    /// read (a password keychain opens without it); a recovery key may restore it.
    private let deviceKeyState: Mutex<(key: SymmetricKey, isStandIn: Bool)>
    var deviceKey: SymmetricKey { deviceKeyState.withLock { $0.key } }
    var deviceKeyIsStandIn: Bool { deviceKeyState.withLock { $0.isStandIn } }
    let keys: KeyRing
    let searchStatements = SearchStatements()
    /// Connections of their own for one-`SELECT` searches of a pooled file (``QuickReaders``).
    let quickReaders: QuickReaders?
    let header: Mutex<Header>
    /// Whether this handle has tried to seal its keychain at an unlock (``unlock(password:)-(Data?)``):
    /// each try derives the password twice more, so a TPM that does not answer costs that once
    /// per handle, not at every unlock.
    private let triedSealing = Mutex(false)
    /// The file this handle keeps open, counted in ``OpenKeychainFiles`` while the handle lives.
    private let openFile: OpenKeychainFiles.FileID?

    struct Header: Sendable {
        var kdf: (KeyDerivation, salt: Data)?
        var indexLayout = IndexLayout.tagged
        /// The hardware-sealed secret the password is entangled with (``HardwareSealing``), if any.
        var sealed: Data?
        /// Whether the password key is also sealed to the boot state (unlock without a password).
        var unlocksWithBootState = false
        var kdfBytes: Data { kdf.map { $0.0.encoded(salt: $0.salt) } ?? Data() }
    }

    private init(
        path: String?, writer: any DatabaseWriter, configuration: KeychainConfiguration
    ) throws {
        self.path = path
        self.writer = writer
        self.configuration = configuration
        quickReaders =
            writer is DatabasePool ? path.map { QuickReaders(path: $0, busyTimeout: configuration.busyTimeout) } : nil
        let meta = try Self.run { try writer.read { try Storage.meta($0) } }
        guard let id = meta["id"], id.count == 16 else {
            throw KeychainError.invalidKeychain("the keychain header is missing")
        }
        keychainID = id
        let header = try Header(meta: meta)
        // A password keychain whose device key is gone still opens with its password; a key
        // that opens nothing stands in, as on another machine.
        let deviceKey = try configuration.deviceKey.loadForOpening(
            keychain: path, hasPassword: header.kdf != nil, sealing: configuration.hardwareSealing)
        deviceKeyState = Mutex((deviceKey ?? SymmetricKey(size: .bits256), deviceKey == nil))
        keys = KeyRing(layout: header.indexLayout, groups: configuration.accessGroups.groups.filter { $0 != "*" })
        try header.kdf?.0.validate(allowingWeak: configuration.allowsUnsafeKeyDerivation)
        self.header = Mutex(header)
        // Every stored property is set from here, so a throw below still runs `deinit`.
        openFile = path.flatMap(OpenKeychainFiles.retain)
        try unwrapDeviceKeys(meta: meta, header: header)
    }

    deinit {
        quickReaders?.close()
        if let openFile { OpenKeychainFiles.release(openFile) }
    }

    // MARK: Opening and creating

    /// Opens an existing keychain file.
    ///
    /// The file is checked before SQLite reads it: a file that is not a keychain, of an
    /// unknown format version, a symbolic link or another user's file is refused and left
    /// unchanged. A password keychain opens locked.
    /// - Throws: ``KeychainModel/KeychainError`` (`.noSuchKeychain`, `.invalidKeychain`, `.wrongVersion`,
    ///   `.decode`, `.authFailed`).
    public static func open(
        at path: String, configuration: KeychainConfiguration = KeychainConfiguration()
    ) throws -> KeychainDatabase {
        guard try SecureFileSystem.existingFile(path) else {
            throw KeychainError(.noSuchKeychain, "no keychain at \(path)")
        }
        for suffix in ["-wal", "-shm", "-journal"] {
            _ = try SecureFileSystem.existingFile(path + suffix)
        }
        // Reading the file or its index ourselves means closing a descriptor of it, which drops
        // every POSIX lock this process holds there, SQLite's too: a keychain this process has
        // open already was checked when it was opened, and its index is live (SQLite will not
        // replay the log again).
        if !OpenKeychainFiles.contains(path) {
            try Storage.validateHeader(of: path)
            try LogIntegrity.check(logBeside: path)
        }
        if SecureFileSystem.isReadOnly(path) {
            try Storage.validateSchema(of: path)
            return try openReadOnly(at: path, configuration: configuration)
        }
        let writer = try openWriter(at: path, configuration: configuration)
        let version = try run { try writer.read { try Int.fetchOne($0, sql: "PRAGMA user_version") } }
        try Storage.checkVersion(version ?? 0)
        if version != Storage.formatVersion {
            try run { try writer.write { try Storage.migrate($0) } }
        }
        return try KeychainDatabase(path: path, writer: writer, configuration: configuration)
    }

    /// The connections to a checked keychain file: a pool whose reads run in parallel, or one
    /// connection (see ``KeychainModel/KeychainConfiguration/concurrentReads``).
    private static func openWriter(
        at path: String, configuration: KeychainConfiguration
    ) throws -> any DatabaseWriter {
        guard configuration.concurrentReads else {
            let queue = try Storage.openSingleConnection(at: path, busyTimeout: configuration.busyTimeout)
            try run { try queue.writeWithoutTransaction(configureKeychainWriter) }
            return queue
        }
        try Storage.validateSchema(of: path)
        return try run {
            let pool = try DatabasePool(
                path: path, configuration: Storage.configuration(busyTimeout: configuration.busyTimeout))
            try pool.writeWithoutTransaction(configureKeychainWriter)
            return pool
        }
    }

    /// Opens a keychain that cannot be written (a read-only file or file system) for reading:
    /// every read works, every write fails with `.readOnly`.
    private static func openReadOnly(
        at path: String, configuration: KeychainConfiguration
    ) throws -> KeychainDatabase {
        let queue = try run {
            try DatabaseQueue(
                path: Storage.readOnlyLocation(of: path),
                configuration: Storage.configuration(busyTimeout: configuration.busyTimeout, readonly: true))
        }
        let version = try run { try queue.read { try Int.fetchOne($0, sql: "PRAGMA user_version") } }
        try Storage.checkVersion(version ?? 0)
        guard version == Storage.formatVersion else {
            throw KeychainError(
                .readOnly, "the keychain at \(path) uses an older format and cannot be upgraded on a read-only file",
                isSetupProblem: true)
        }
        return try KeychainDatabase(path: path, writer: queue, configuration: configuration)
    }

    /// Creates a keychain file protected by a password given as text (its UTF-8 bytes); see
    /// ``create(at:password:configuration:)-(_,Data?,_)``.
    /// - Parameters:
    ///   - path: Where to create it.
    ///   - password: The password, or `nil` for a keychain protected by the device key.
    ///   - configuration: Key derivation, device key, access groups.
    /// - Throws: ``KeychainModel/KeychainError`` (`.duplicateKeychain` when a file exists there).
    @_disfavoredOverload
    public static func create(
        at path: String, password: String?,
        configuration: KeychainConfiguration = KeychainConfiguration()
    ) throws -> KeychainDatabase {
        try create(at: path, password: password.map { Data($0.utf8) }, configuration: configuration)
    }

    /// Creates a keychain file; with a password it starts locked.
    ///
    /// The file is built under a temporary name and linked into place, so a keychain is
    /// never seen half-made; its directory is created with mode 0700 and synced.
    /// - Parameters:
    ///   - path: Where to create it.
    ///   - password: The password's bytes, used exactly as given (UTF-8 or not), or `nil` for
    ///     a keychain protected by the device key.
    ///   - configuration: Key derivation, device key, access groups.
    /// - Throws: ``KeychainModel/KeychainError`` (`.duplicateKeychain` when a file exists there).
    public static func create(
        at path: String, password: Data?,
        configuration: KeychainConfiguration = KeychainConfiguration()
    ) throws -> KeychainDatabase {
        let directory = (path as NSString).deletingLastPathComponent
        try SecureFileSystem.ensureDirectory(directory.isEmpty ? "." : directory)
        if try SecureFileSystem.existingFile(path) {
            throw KeychainError(.duplicateKeychain, "a keychain exists at \(path)")
        }
        SecureFileSystem.removeStaleTemporaries(of: path)
        let temporary = SecureFileSystem.temporaryPath(for: path)
        try SecureFileSystem.createFile(temporary, contents: Data())
        func removeTemporary() {
            for suffix in ["", "-journal", "-wal", "-shm"] { SecureFileSystem.remove(temporary + suffix) }
        }
        defer { removeTemporary() }
        try run {
            let queue = try DatabaseQueue(
                path: temporary, configuration: Storage.configuration(busyTimeout: configuration.busyTimeout))
            // In WAL mode before it is published, so that the first open never rewrites its
            // header through a rollback journal (a process killed then left a hot journal).
            try queue.writeWithoutTransaction { try $0.execute(sql: "PRAGMA journal_mode = WAL") }
            try queue.write { db in
                try Storage.createSchema(db)
                try initializeHeader(
                    db, password: password, configuration: configuration,
                    sealer: configuration.hardwareSealing.flatMap { $0.keychains.contains(path) ? $0.sealer : nil })
            }
            try queue.close()
        }
        try SecureFileSystem.withDirectoryLock(directory.isEmpty ? "." : directory) {
            if try SecureFileSystem.existingFile(path) {
                throw KeychainError(.duplicateKeychain, "a keychain exists at \(path)")
            }
            // SQLite's files left beside the name by a delete that was killed midway belong to
            // no keychain now; SQLite would replay an old log into the new file.
            for suffix in ["-wal", "-shm", "-journal"] { SecureFileSystem.remove(path + suffix) }
            try SecureFileSystem.publish(temporary, as: path)
            try SecureFileSystem.syncDirectory(directory.isEmpty ? "." : directory)
        }
        return try open(at: path, configuration: configuration)
    }

    /// Opens the default keychain, creating it password-less on first use.
    ///
    /// The default is `${XDG_DATA_HOME:-$HOME/.local/share}/keychains/login.keychain-db`,
    /// or the file named by `KEYCHAIN_DEFAULT_PATH` (see ``KeychainModel/KeychainPaths``).
    public static func openDefault(
        paths: KeychainPaths = KeychainPaths(),
        configuration: KeychainConfiguration = KeychainConfiguration()
    ) throws -> KeychainDatabase {
        try openCreatingIfMissing(
            open: { try open(at: paths.defaultKeychain, configuration: configuration) },
            create: { try create(at: paths.defaultKeychain, password: nil, configuration: configuration) })
    }

    /// `open()`; when there is no keychain, `create()`; and when another process created it in
    /// between, `open()` again: how a keychain that always exists (the default, the login
    /// keychain) is opened, wherever its handle comes from.
    package static func openCreatingIfMissing<Handle>(
        open: () throws -> Handle, create: () throws -> Handle
    ) throws -> Handle {
        do {
            return try open()
        } catch let error as KeychainError where error.code == .noSuchKeychain {
            do {
                return try create()
            } catch let error as KeychainError where error.code == .duplicateKeychain {
                return try open()
            }
        }
    }

    /// Creates a keychain that lives in memory only, protected by a password given as text
    /// (its UTF-8 bytes); see ``inMemory(password:configuration:)-(Data?,_)``.
    @_disfavoredOverload
    public static func inMemory(
        password: String?, configuration: KeychainConfiguration = .testing()
    ) throws -> KeychainDatabase {
        try inMemory(password: password.map { Data($0.utf8) }, configuration: configuration)
    }

    /// Creates a keychain that lives in memory only, on the same code path as files.
    ///
    /// Unless the configuration names a device key file or a fixed key, a random device
    /// key is used, so nothing outside the process is read or written. A password's bytes
    /// are used exactly as given (UTF-8 or not).
    public static func inMemory(
        password: Data? = nil, configuration: KeychainConfiguration = .testing()
    ) throws -> KeychainDatabase {
        var configuration = configuration
        if case .file(nil) = configuration.deviceKey.storage { configuration.deviceKey = .ephemeral() }
        let queue = try run {
            let queue = try DatabaseQueue(configuration: Storage.configuration(busyTimeout: 0))
            try queue.write { db in
                try Storage.createSchema(db)
                try initializeHeader(db, password: password, configuration: configuration, sealer: nil)
            }
            return queue
        }
        return try KeychainDatabase(path: nil, writer: queue, configuration: configuration)
    }

    private static func initializeHeader(
        _ db: Database, password: Data?, configuration: KeychainConfiguration, sealer: (any KeychainSealer)?
    ) throws {
        let keychainID = Sealing.randomBytes(16)
        try Storage.setMeta(db, "id", keychainID)
        let layout = IndexLayout.lookupKeys
        if let value = layout.metaValue { try Storage.setMeta(db, IndexLayout.metaName, value) }
        let deviceKey = try configuration.deviceKey.loadForCreating(sealing: configuration.hardwareSealing)
        _ = try writeHeader(
            db, keys: KeyName.freshKeys(), password: password,
            layout: layout, deviceKey: deviceKey, keychainID: keychainID, configuration: configuration,
            sealer: sealer, mayFallBack: true)
    }

    // MARK: Keys

    /// The associated data of a wrapped key: the keychain, the key's name, the wrapper and, for
    /// password-based wrappers, the key-derivation parameters (so that edited parameters cannot
    /// open them). Device wrappings leave the parameters out, so that the device key can vouch
    /// for the header (``verifyHeader(meta:header:)``) before any password is derived. The
    /// index layout, when the file records one, is bound too.
    static func wrapContext(keychainID: Data, header: Header, name: KeyName, wrapper: Wrapper) -> Data {
        var context = Data("keychain-linux wrap v1".utf8)
        context.appendLengthPrefixed(keychainID)
        if let layout = header.indexLayout.metaValue {
            context.append(contentsOf: "index".utf8)
            context.appendLengthPrefixed(layout)
        }
        context.appendLengthPrefixed(wrapper.bindsKeyDerivation ? header.kdfBytes : Data())
        context.appendLengthPrefixed(Data(name.rawValue.utf8))
        context.appendLengthPrefixed(Data(wrapper.rawValue.utf8))
        return context
    }

    static func storeWrappings(
        _ db: Database, key: SymmetricKey, name: KeyName, wrapping: WrappingKeys, keychainID: Data,
        header: Header
    ) throws {
        for wrapper in Wrapper.wrappers(for: name, hasPassword: header.kdf != nil) {
            guard let wrappingKey = wrapping[wrapper] else { continue }
            let context = wrapContext(keychainID: keychainID, header: header, name: name, wrapper: wrapper)
            let sealed = try Sealing.seal(key.bytes, key: wrappingKey, context: context)
            try Storage.setMeta(db, "wrap.\(name.rawValue).\(wrapper.rawValue)", sealed)
        }
    }

    /// Unwraps every key that `wrapping` opens, trying every stored wrapping of every key.
    ///
    /// A wrapper key that opens none of its entries is simply the wrong key (another password,
    /// another device), and its keys are left out. A wrapper key that opens some entries but not
    /// others, or two wrappings of one key that disagree, mean the header was altered: `.decode`.
    func unwrapAll(meta: [String: Data], header: Header, wrapping: WrappingKeys) throws
        -> [KeyName: SymmetricKey]
    {
        var result: [KeyName: SymmetricKey] = [:]
        var opened: Set<Wrapper> = []
        var failed: Set<Wrapper> = []
        for name in KeyName.all {
            let recovery = header.kdf != nil && wrapping.recovery != nil ? Wrapper.recoveryWrappers(for: name) : []
            for wrapper in Wrapper.wrappers(for: name, hasPassword: header.kdf != nil) + recovery {
                guard let wrappingKey = wrapping[wrapper] else { continue }
                guard let sealed = meta["wrap.\(name.rawValue).\(wrapper.rawValue)"],
                    let bytes = try? Sealing.open(
                        sealed, key: wrappingKey,
                        context: Self.wrapContext(keychainID: keychainID, header: header, name: name, wrapper: wrapper)),
                    bytes.count == 32
                else {
                    failed.insert(wrapper)
                    continue
                }
                opened.insert(wrapper)
                let key = SymmetricKey(data: bytes)
                if let other = result[name], other != key {
                    throw KeychainError.decode("two wrappings of one key disagree: the header was altered")
                }
                result[name] = key
            }
        }
        guard opened.isDisjoint(with: failed) else {
            throw KeychainError.decode("a wrapped key fails authentication: the header was altered")
        }
        return result
    }

    /// Checks the key-derivation parameters against the device key's seal, so that parameters
    /// edited in the file are refused before any password is derived. On another device (the
    /// device key opens nothing) the check cannot be made; the password-based wrappings, which
    /// bind the parameters, still refuse edited ones after derivation.
    private func verifyHeader(meta: [String: Data], header: Header, deviceOpens: Bool) throws {
        guard header.kdf != nil, deviceOpens else { return }
        guard let stored = meta["kdf.mac"],
            stored == Self.headerSeal(header, deviceKey: deviceKey, keychainID: keychainID)
        else { throw KeychainError.decode("the key-derivation parameters were altered") }
    }

    static func headerSeal(_ header: Header, deviceKey: SymmetricKey, keychainID: Data) -> Data {
        let key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: deviceKey, salt: keychainID, info: Data("keychain-linux header seal v1".utf8),
            outputByteCount: 32)
        var sealedBytes = header.kdfBytes
        if let sealed = header.sealed {
            // A sealed keychain's seal covers its sealed secret too: one stripped of it is altered.
            sealedBytes.append(contentsOf: "sealed".utf8)
            sealedBytes.appendLengthPrefixed(sealed)
        }
        return Data(HMAC<SHA256>.authenticationCode(for: sealedBytes, using: key))
    }

    private func unwrapDeviceKeys(meta: [String: Data], header: Header) throws {
        let wrapping = WrappingKeys(deviceKey: deviceKey, passwordKey: nil, keychainID: keychainID)
        let unwrapped = try unwrapAll(meta: meta, header: header, wrapping: wrapping)
        if unwrapped.isEmpty {
            // The device key opens nothing: another device, or a header whose recorded index
            // layout was added or removed (the layout is bound into the wrappings). Tell them apart.
            for layout in IndexLayout.allCases where layout != header.indexLayout {
                var other = header
                other.indexLayout = layout
                if let opened = try? unwrapAll(meta: meta, header: other, wrapping: wrapping), !opened.isEmpty {
                    throw KeychainError.decode("the keychain's index layout was altered")
                }
            }
        }
        if header.kdf == nil && unwrapped.count != KeyName.all.count {
            throw KeychainError(
                .authFailed, "the device key does not open this keychain, or its header was altered")
        }
        try verifyHeader(meta: meta, header: header, deviceOpens: !unwrapped.isEmpty)
        keys.modify { state in
            state.install(unwrapped)
            if header.kdf == nil {
                state.isUnlocked = true
                state.hasBeenUnlocked = true
            }
        }
    }

    /// Closes the keychain for this handle and forgets every key; every later call on the handle
    /// fails with `.notAvailable`, and closing twice does nothing. The connections themselves
    /// close when the handle is released.
    ///
    /// A handle that wrote leaves the write-ahead log bounded for the processes after it: once
    /// the log is past ``keychainLogCloseLimit`` it is folded into the file and emptied. (A new
    /// process rebuilds SQLite's index of the log and cannot tell that earlier processes folded
    /// it in, so without this a log that short processes append to only ever grows.) Below that
    /// size the log is left as it is: emptying it would make the next process write a
    /// transaction to create it again. Another process writing, or reading an older state,
    /// leaves the log to that process; `close()` never waits for it.
    public func close() throws {
        keys.modify { state in
            state.classKeys = [:]
            state.indexKey = nil
            state.isUnlocked = false
            state.hasBeenUnlocked = false
            state.isClosed = true
        }
        guard let path, ((try? SecureFileSystem.size(of: path + "-wal")) ?? 0) > keychainLogCloseLimit else { return }
        try? writer.writeWithoutTransaction { db in
            guard sqlite3_total_changes(db.sqliteConnection) > 0 else { return }
            sqlite3_busy_timeout(db.sqliteConnection, 0)
            defer { sqlite3_busy_timeout(db.sqliteConnection, Int32(configuration.busyTimeout * 1000)) }
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        }
    }

    /// Whether when-unlocked items are readable now.
    public var isLocked: Bool { keys.read { !$0.isUnlocked } }

    /// Unlocks the keychain with a password given as text (its UTF-8 bytes); see
    /// ``unlock(password:)-(Data?)``.
    ///
    /// - Parameter password: The keychain's password; `nil` for a password-less keychain.
    /// - Throws: `.authFailed` for a wrong password (nothing is unlocked).
    @_disfavoredOverload
    public func unlock(password: String?) throws {
        try unlock(password: password.map { Data($0.utf8) })
    }

    /// Unlocks the keychain: when-unlocked items become readable, and after-first-unlock
    /// items stay readable until this handle is released.
    ///
    /// - Parameter password: The keychain's password, its bytes used exactly as given (UTF-8
    ///   or not); `nil` for a password-less keychain.
    /// - Throws: `.authFailed` for a wrong password (nothing is unlocked).
    public func unlock(password: Data?) throws {
        guard keys.read({ !$0.isClosed }) else { throw KeychainError(.notAvailable, "the keychain was closed") }
        let meta = try Self.run { try writer.read { try Storage.meta($0) } }
        var current = header.withLock { $0 }
        if let kdf = meta["kdf"] {
            let (derivation, salt) = try KeyDerivation.decode(kdf)
            try derivation.validate(allowingWeak: configuration.allowsUnsafeKeyDerivation)
            current.kdf = (derivation, salt)
            current.sealed = meta["kdf.sealed"]
            current.unlocksWithBootState = meta["kdf.boot"] != nil
        }
        guard current.kdf != nil else {
            guard password == nil || password == Data() else {
                throw KeychainError(.authFailed, "this keychain has no password")
            }
            try unwrapDeviceKeys(meta: meta, header: current)
            return
        }
        guard let password else {
            guard let keys = try unwrapWithBootState(meta: meta, header: current) else {
                throw KeychainError(.authFailed, "a password is required")
            }
            header.withLock { $0 = current }
            keys.withUnlockedState(self.keys)
            return
        }
        if let keys = try unwrapWithRecoveryKey(password, meta: meta, header: current) {
            header.withLock { $0 = current }
            keys.withUnlockedState(self.keys)
            return
        }
        let deviceOnly = try unwrapAll(
            meta: meta, header: current,
            wrapping: WrappingKeys(deviceKey: deviceKey, passwordKey: nil, keychainID: keychainID))
        try verifyHeader(meta: meta, header: current, deviceOpens: !deviceOnly.isEmpty)
        let passwordKey = try self.passwordKey(password, header: current)
        let wrapping = WrappingKeys(
            deviceKey: deviceKey, passwordKey: passwordKey, keychainID: keychainID)
        // A wrong password opens none of its entries (`.authFailed` below); partial failure is
        // tampering (`.decode` from `unwrapAll`).
        let unwrapped = try unwrapAll(meta: meta, header: current, wrapping: wrapping)
        guard unwrapped[.protection(.whenUnlocked)] != nil,
            unwrapped[.protection(.afterFirstUnlock)] != nil, unwrapped[.index] != nil
        else { throw KeychainError(.authFailed, "the password is not correct") }
        header.withLock { $0 = current }
        keys.modify { state in
            state.install(unwrapped)
            state.isUnlocked = true
            state.hasBeenUnlocked = true
        }
        // A keychain to be sealed that is not yet (made before this machine's TPM was used, or
        // while it did not answer) is sealed now that the password is at hand; if the hardware
        // still does not answer, it stays as it was and the next handle tries again.
        if current.sealed == nil, (try? sealerForNewPassword(current: current)) != nil,
            !triedSealing.withLock({ tried in
                defer { tried = true }; return tried
            })
        {
            try? replaceKeys(password: password, newPassword: password, rotating: false, sealing: .required)
        }
    }

    /// Locks the keychain: when-unlocked items become unreadable until the next unlock.
    ///
    /// `lock()` waits for reads in flight; once it returns, no read returns their data.
    public func lock() {
        lock(includingAfterFirstUnlockItems: false)
    }

    /// Locks the keychain; with `includingAfterFirstUnlockItems`, after-first-unlock items
    /// become unreadable too, until the next unlock, as `security lock-keychain` makes a
    /// keychain kept by the session agent (an idle timeout locks as ``lock()`` does).
    /// Always-available items stay readable either way.
    ///
    /// - Parameter includingAfterFirstUnlockItems: Whether to forget the after-first-unlock
    ///   class keys as well as the when-unlocked ones.
    public func lock(includingAfterFirstUnlockItems: Bool) {
        keys.modify { state in
            for c in ProtectionClass.allCases
            where c.tier == .whenUnlocked || (includingAfterFirstUnlockItems && c.tier == .afterFirstUnlock) {
                state.classKeys[c] = nil
            }
            state.isUnlocked = false
            if includingAfterFirstUnlockItems { state.hasBeenUnlocked = false }
        }
    }

    /// Changes the password, given as text (its UTF-8 bytes); see
    /// ``changePassword(old:new:)-(Data?,Data)``.
    /// - Parameters:
    ///   - old: The current password; `nil` for a password-less keychain.
    ///   - new: The new password.
    /// - Throws: `.authFailed` when `old` is wrong.
    @_disfavoredOverload
    public func changePassword(old: String?, new: String) throws {
        try changePassword(old: old.map { Data($0.utf8) }, new: Data(new.utf8))
    }

    /// Changes the password (or sets one on a password-less keychain). Only the wrapped keys
    /// are rewritten, in one transaction: items are not touched, and a crash leaves exactly
    /// one of the two passwords valid.
    /// - Parameters:
    ///   - old: The current password's bytes, exactly as given (UTF-8 or not); `nil` for a
    ///     password-less keychain.
    ///   - new: The new password's bytes, exactly as given.
    /// - Throws: `.authFailed` when `old` is wrong.
    public func changePassword(old: Data?, new: Data) throws {
        try replaceKeys(password: old, newPassword: new, rotating: false)
    }

    /// Opens every stored key of the keychain with `password`, inside a write transaction.
    /// - Throws: `.authFailed` for a wrong password, or when this machine's device key does not
    ///   open the this-device-only keys (rewrapping would drop them).
    func unwrapEveryKey(_ meta: [String: Data], header current: Header, password: Data?) throws
        -> [KeyName: SymmetricKey]
    {
        if let password, let keys = try unwrapWithRecoveryKey(password, meta: meta, header: current) {
            guard keys.count == KeyName.all.count else { throw Self.deviceKeysMissing }
            return keys
        }
        let passwordKey: SymmetricKey?
        switch (current.kdf, password) {
        case (nil, nil), (nil, Data()): passwordKey = nil
        case (nil, _): throw KeychainError(.authFailed, "this keychain has no password")
        case (_?, let password?): passwordKey = try self.passwordKey(password, header: current)
        case (_?, nil): throw KeychainError(.authFailed, "the old password is required")
        }
        let unwrapped = try unwrapAll(
            meta: meta, header: current,
            wrapping: WrappingKeys(deviceKey: deviceKey, passwordKey: passwordKey, keychainID: keychainID))
        guard unwrapped[.protection(.whenUnlocked)] != nil, unwrapped[.index] != nil else {
            throw KeychainError(.authFailed, "the old password is not correct")
        }
        // Every stored key is rewrapped, so each must open now. On another machine (or with a
        // re-created device key) the keys bound to the device do not; dropping them would make
        // this device's items unreadable for good on the machine that has the right key.
        guard unwrapped.count == KeyName.all.count else { throw Self.deviceKeysMissing }
        return unwrapped
    }

    /// Puts back the device key a recovery key kept (``unwrapWithRecoveryKey(_:meta:header:)``),
    /// which opened every key of this keychain: in this handle, and in its file where that file
    /// gives way (``DeviceKeySource``'s `restore`). A file left as it is costs nothing here: the
    /// handle uses the key, and the recovery key puts it back again later.
    func restoreDeviceKey(_ key: SymmetricKey) {
        deviceKeyState.withLock { $0 = (key, false) }
        try? configuration.deviceKey.restore(key, sealing: configuration.hardwareSealing)
    }

    static let deviceKeysMissing = KeychainError(
        .authFailed,
        "this machine's device key does not open the keychain's this-device-only keys "
            + "(it was made on another machine, or its device key was re-created); change "
            + "the password on the machine that made it",
        isSetupProblem: true)

    /// Writes the header of `keys` wrapped for `newPassword` (a fresh salt; `nil` for a
    /// password-less keychain), replacing every stored wrapping.
    /// A keychain sealed already is sealed again (or nothing is written); one to be sealed for
    /// the first time stays unsealed when the hardware fails, unless `sealing` is `.required`.
    func storeHeader(
        _ db: Database, keys: [KeyName: SymmetricKey], newPassword: Data?, current: Header,
        sealing: SealingDemand = .whereConfigured, keepsRecoveryKey: Bool
    ) throws -> Header {
        let sealer = newPassword == nil ? nil : try sealerForNewPassword(current: current)
        return try Self.writeHeader(
            db, keys: keys, password: newPassword, layout: current.indexLayout, deviceKey: deviceKey,
            keychainID: keychainID, configuration: configuration, sealer: sealer,
            mayFallBack: current.sealed == nil && sealing != .required,
            keepsRecoveryKey: keepsRecoveryKey && newPassword != nil,
            bootStateSealer: current.unlocksWithBootState ? configuration.hardwareSealing?.sealer : nil)
    }

    /// Whether a password set now must be sealed.
    enum SealingDemand {
        /// Sealed where the configuration or the keychain says; a first sealing that fails leaves
        /// the keychain unsealed (a login must not fail because the TPM does not answer).
        case whereConfigured
        /// Sealed, or nothing is written.
        case required
    }

    /// Writes a header: the key derivation (a fresh salt) and its device-key seal when there is
    /// a password, and every key of `keys` wrapped as ``Wrapper/wrappers(for:hasPassword:)``
    /// says, replacing what the file held.
    /// With `sealer`, the password is entangled with a new secret sealed by it; when the sealer
    /// fails and `mayFallBack`, the password is not entangled.
    private static func writeHeader(
        _ db: Database, keys: [KeyName: SymmetricKey], password: Data?, layout: IndexLayout,
        deviceKey: SymmetricKey, keychainID: Data, configuration: KeychainConfiguration,
        sealer: (any KeychainSealer)?, mayFallBack: Bool, keepsRecoveryKey: Bool = false,
        bootStateSealer: (any KeychainSealer)? = nil
    ) throws -> Header {
        var header = Header(kdf: nil, indexLayout: layout)
        var passwordKey: SymmetricKey?
        if let password {
            let derivation = configuration.keyDerivation
            try derivation.validate(allowingWeak: configuration.allowsUnsafeKeyDerivation)
            let salt = Sealing.randomBytes(32)
            header.kdf = (derivation, salt)
            let derived = try derivation.deriveKey(password: password, salt: salt)
            passwordKey = derived
            if let sealer {
                let secret = Sealing.randomBytes(32)
                do {
                    header.sealed = try sealer.seal(
                        secret, authorization: sealAuthorization(derived, keychainID: keychainID))
                    passwordKey = entangle(derived, with: secret, keychainID: keychainID)
                } catch  where mayFallBack {
                    // Not sealed yet, and the hardware does not answer: a later unlock seals it.
                }
            }
        }
        // A recovery key's wrappings stay valid through a password change (the keys are the same).
        let keptWrappings =
            keepsRecoveryKey ? "AND name NOT LIKE '%.recovery' AND name NOT LIKE '%.recovery+device'" : ""
        try db.execute(
            sql:
                "DELETE FROM meta WHERE (name LIKE 'wrap.%' \(keptWrappings)) OR name IN ('kdf', 'kdf.mac', 'kdf.sealed', 'kdf.boot')"
        )
        if header.kdf != nil {
            try Storage.setMeta(db, "kdf", header.kdfBytes)
            if let sealed = header.sealed { try Storage.setMeta(db, "kdf.sealed", sealed) }
            // Unlock without a password follows the password key when it was on; if the boot
            // state cannot be sealed to now, it is off and the password still opens the keychain.
            if let bootStateSealer, let passwordKey,
                let boot = try? bootStateSealer.sealToBootState(passwordKey.bytes)
            {
                try Storage.setMeta(db, "kdf.boot", boot)
                header.unlocksWithBootState = true
            }
            try Storage.setMeta(db, "kdf.mac", headerSeal(header, deviceKey: deviceKey, keychainID: keychainID))
        }
        let wrapping = WrappingKeys(deviceKey: deviceKey, passwordKey: passwordKey, keychainID: keychainID)
        for (name, key) in keys {
            try storeWrappings(db, key: key, name: name, wrapping: wrapping, keychainID: keychainID, header: header)
        }
        return header
    }

    // MARK: Helpers

    /// Runs a storage operation, turning its failures into ``KeychainModel/KeychainError``.
    static func run<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            throw Storage.map(error)
        }
    }
}

/// The keychain files this process has open through live handles, by device and inode.
///
/// SQLite keeps POSIX locks on a keychain's file and its `-shm` index, and closing *any*
/// descriptor of those files in this process releases them. Opening a second handle on a
/// keychain this process already has open therefore skips the checks that read those files
/// directly (``KeychainDatabase/open(at:configuration:)``).
enum OpenKeychainFiles {
    struct FileID: Hashable, Sendable {
        var device: UInt64
        var inode: UInt64
    }

    /// The open files and their handle counts. A process has a few keychains open, so a list:
    /// a `Dictionary` keyed by `FileID` would cost every short-lived process one of the Swift
    /// runtime's scans of all conformance records (for `FileID: Hashable`) on its first open.
    private static let counts = Mutex<[(id: FileID, handles: Int)]>([])

    static func id(of path: String) -> FileID? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return FileID(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// Whether a live handle of this process has the file at `path` open.
    static func contains(_ path: String) -> Bool {
        guard let id = id(of: path) else { return false }
        return counts.withLock { counts in counts.contains { $0.id == id } }
    }

    /// Counts one more handle on the file at `path`; its identity, to release.
    static func retain(_ path: String) -> FileID? {
        guard let id = id(of: path) else { return nil }
        counts.withLock { counts in
            if let index = counts.firstIndex(where: { $0.id == id }) {
                counts[index].handles += 1
            } else {
                counts.append((id, 1))
            }
        }
        return id
    }

    static func release(_ id: FileID) {
        counts.withLock { counts in
            guard let index = counts.firstIndex(where: { $0.id == id }) else { return }
            counts[index].handles -= 1
            if counts[index].handles <= 0 { counts.remove(at: index) }
        }
    }
}

/// A minimal lock-protected box (the toolchain's `Synchronization.Mutex` needs newer
/// deployment targets on Apple platforms).
final class Mutex<Value: Sendable>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()

    init(_ value: Value) { self.value = value }

    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

extension KeychainDatabase {
    /// The file format version this build writes; it opens files of this version and every
    /// earlier one, and refuses later ones with `.wrongVersion`.
    public static var formatVersion: Int { Storage.formatVersion }

    /// Deletes a keychain file and SQLite's files beside it, refusing any file that is not a
    /// keychain (or is a link, or another user's).
    ///
    /// Open handles on the file keep working on the deleted file until they are released.
    /// - Throws: `.noSuchKeychain` when there is no file, `.invalidKeychain` when it is not a
    ///   keychain; nothing is removed then.
    public static func deleteKeychain(at path: String) throws {
        guard try SecureFileSystem.existingFile(path) else {
            throw KeychainError(.noSuchKeychain, "no keychain at \(path)")
        }
        try Storage.validateHeader(of: path)
        let directory = (path as NSString).deletingLastPathComponent
        // The keychain's name goes first, in one step: a delete killed midway leaves the
        // keychain gone (never rolled back to its last checkpoint, as removing its log first
        // would), and ``create(at:password:configuration:)`` clears what is left beside it.
        try SecureFileSystem.withDirectoryLock(directory.isEmpty ? "." : directory) {
            let doomed = SecureFileSystem.temporaryPath(for: path)
            if rename(path, doomed) != 0 { throw SecureFileSystem.posixError("cannot remove", path) }
            try SecureFileSystem.syncDirectory(directory.isEmpty ? "." : directory)
            for file in [path + "-wal", path + "-shm", path + "-journal", doomed] {
                if unlink(file) != 0 && errno != ENOENT { throw SecureFileSystem.posixError("cannot remove", file) }
            }
            try SecureFileSystem.syncDirectory(directory.isEmpty ? "." : directory)
        }
    }
}

extension KeychainDatabase.Header {
    /// The header a file's meta entries record (the derivation's parameters not yet checked
    /// against the configuration's limits).
    init(meta: [String: Data]) throws {
        indexLayout = try IndexLayout(meta: meta[IndexLayout.metaName])
        kdf = try meta["kdf"].map(KeyDerivation.decode)
        sealed = meta["kdf.sealed"]
        unlocksWithBootState = meta["kdf.boot"] != nil
    }
}
