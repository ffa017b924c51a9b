import DBusWire
import Foundation
import KeychainCore

/// The session agent's interface: peer-to-peer D-Bus on its private socket (docs/agent.md), so
/// `gdbus call --address unix:path=… --object-path /org/keychainlinux/Agent --method
/// org.keychainlinux.Agent1.Status ''` can call it.
///
/// Each method is declared once, below, as a ``DBusWire/DBusMethodDeclaration`` of its typed
/// arguments and reply: the client encodes its calls with it (``KeychainClient``'s
/// `AgentConnection.call(_:_:)`), the agent decodes them and serves each with one handler, and
/// introspection lists them from ``all``. Adding a method is one declaration here plus its body
/// in the agent's `AgentService`.
///
/// Every method names its keychain first: a file's absolute path, or `""` for the default
/// keychain. Items, attributes and queries travel as ``AgentCodec`` encodes them; a failure is a
/// D-Bus error named after the keychain error (``AgentCodec/errorName(of:)``) that carries its
/// message and `OSStatus`. Passwords travel as `ay` with a flag for "none", never as text.
public enum AgentInterface {
    /// The interface name.
    public static let name = "org.keychainlinux.Agent1"
    /// The one object the agent serves.
    public static let objectPath = "/org/keychainlinux/Agent"
    /// The prefix of every error name the agent returns.
    public static let errorPrefix = "org.keychainlinux.Error."

    /// A method of this interface, its arguments `A` and reply `R`.
    public typealias Method<A: DBusArguments, R: DBusArguments> = DBusMethodDeclaration<A, R>

    /// The method `name` of this interface.
    private static func method<A, R>(_ name: String, quick: Bool = false) -> Method<A, R> {
        Method(name, interface: Self.name, answersOnEventLoop: quick)
    }

    /// `Add(s keychain, a{sv} item) → a{sv} stored`.
    public static let add: Method<ItemArguments, Stored> = method("Add")
    /// `AddMany(s keychain, aa{sv} items) → aa{sv} stored`: all of them or none.
    public static let addMany: Method<ItemsArguments, Items> = method("AddMany")
    /// `Upsert(s keychain, a{sv} item) → (a{sv} stored, b added)`.
    public static let upsert: Method<ItemArguments, Upserted> = method("Upsert")
    /// `Find(s keychain, a{sv} query, b includeData) → aa{sv} items`; answered on the event loop
    /// when it is quick.
    public static let find: Method<LookupArguments, Items> = method("Find", quick: true)
    /// `FindReadable(s keychain, a{sv} query, b includeData) → (aa{sv} items, as unreadable)`.
    public static let findReadable: Method<LookupArguments, Readable> = method("FindReadable", quick: true)
    /// `Update(s keychain, a{sv} query, a{sv} attributes, b replacesData, ay data) → u count`.
    public static let update: Method<UpdateArguments, Count> = method("Update")
    /// `Delete(s keychain, a{sv} query) → u count`.
    public static let delete: Method<QueryArguments, Count> = method("Delete")
    /// `Unlock(s keychain, b hasPassword, ay password)`.
    public static let unlock: Method<PasswordArguments, DBusNoArguments> = method("Unlock")
    /// `Lock(s keychain)`.
    public static let lock: Method<KeychainArguments, DBusNoArguments> = method("Lock")
    /// `LockAll()`.
    public static let lockAll: Method<DBusNoArguments, DBusNoArguments> = method("LockAll")
    /// `Status(s keychain) → a{sv}`: `path` (s), `hasPassword` (b), `isLocked` (b),
    /// `accessGroups` (as).
    public static let status: Method<KeychainArguments, Status> = method("Status", quick: true)
    /// `ChangePassword(s keychain, b hasOld, ay old, ay new)`.
    public static let changePassword: Method<ChangePasswordArguments, DBusNoArguments> = method("ChangePassword")
    /// `RotateKeys(s keychain, b hasPassword, ay password, b hasNew, ay new)`.
    public static let rotateKeys: Method<RotateKeysArguments, DBusNoArguments> = method("RotateKeys")
    /// `Create(s path, b hasPassword, ay password)` (its first argument is named `keychain`).
    public static let create: Method<PasswordArguments, DBusNoArguments> = method("Create")
    /// `DeleteKeychain(s path)` (its argument is named `keychain`).
    public static let deleteKeychain: Method<KeychainArguments, DBusNoArguments> = method("DeleteKeychain")
    /// `Close(s keychain)`: the caller is done with it.
    public static let close: Method<KeychainArguments, DBusNoArguments> = method("Close")
    /// `Settings(s keychain) → a{sv}`: the keychain's lock settings, `lockInterval` (u,
    /// seconds; 0 for no timeout) and `locksOnSleep` (b) (as ``AgentCodec`` encodes them).
    public static let settings: Method<KeychainArguments, Settings> = method("Settings", quick: true)
    /// `SetSettings(s keychain, a{sv} settings)`: stores the lock settings (the keychain must
    /// be unlocked); the agent's idle lock follows them from then on.
    public static let setSettings: Method<SettingsArguments, DBusNoArguments> = method("SetSettings")
    /// `CreateTokenKey(s keychain, b permanent, a{sv} item) → (ay publicKey, ay handle)`:
    /// generates a P-256 token key (`kSecAttrTokenIDSecureEnclave`) in the agent; with
    /// `permanent`, stores it as `item` (a key item's attributes). The answer is the public
    /// key (X9.63) and an opaque handle; the private key stays in the agent.
    ///
    /// Added to `Agent1` after its first release: an older agent answers
    /// `org.freedesktop.DBus.Error.UnknownMethod`, which clients report as errSecUnimplemented.
    public static let createTokenKey: Method<CreateTokenKeyArguments, CreatedTokenKey> = method("CreateTokenKey")
    /// `UseTokenKey(s keychain, ay handle, y operation, ay input, u kdfHash, ay sharedInfo,
    /// u outputSize) → ay output`: runs an operation of the token key `handle` names in the
    /// agent: 1 signs the digest `input` (ECDSA, `r‖s`), 2 runs ECDH with the X9.63 public key
    /// `input` (the shared secret, or with `kdfHash` 1/256/384/512 the X9.63 KDF's
    /// `outputSize` bytes over it with `sharedInfo`). Added with ``createTokenKey``.
    public static let useTokenKey: Method<UseTokenKeyArguments, TokenKeyOutput> = method("UseTokenKey")
    /// `StoreTokenKey(s keychain, ay handle, a{sv} item) → ay handle`: stores a token key the
    /// agent made without `permanent` as `item` (`SecItemAdd` of its reference); the answer
    /// is the stored key's handle. Added with ``createTokenKey``.
    public static let storeTokenKey: Method<StoreTokenKeyArguments, TokenKeyHandle> = method("StoreTokenKey")
    /// `UseAccessGroups(as groups)`: narrows the caller's access groups, for the rest of the
    /// connection, to those it names (in order: the first is where its items are added),
    /// as a process's `KEYCHAIN_ACCESS_GROUPS` does in-process. Only groups the caller has
    /// may be named (errSecMissingEntitlement). An older agent answers `UnknownMethod`.
    public static let useAccessGroups: Method<AccessGroupsArguments, DBusNoArguments> = method("UseAccessGroups")

    /// `MakeRecoveryKey(s keychain) → ay key`: makes a new recovery key for the keychain (which
    /// must be unlocked and have a password), replacing any earlier one, and answers its text
    /// (docs/login.md). Added to `Agent1` after its first release.
    public static let makeRecoveryKey: Method<KeychainArguments, RecoveryKey> = method("MakeRecoveryKey")

    /// `SetUnlocksWithBootState(s keychain, b enabled, b hasPassword, ay password)`: turns
    /// unlocking without a password on this machine's boot state on (with the keychain's
    /// password) or off (docs/login.md). Added to `Agent1` after its first release.
    public static let setUnlocksWithBootState: Method<BootStateUnlockArguments, DBusNoArguments> = method(
        "SetUnlocksWithBootState")

    /// `MoveIn(s keychain, aa{sv} items) → aa{sv} stored`: as `AddMany`, each item keeping the
    /// creation and modification dates it carries (items moved in from another keyring). Added
    /// to `Agent1` after its first release.
    public static let moveIn: Method<ItemsArguments, Items> = method("MoveIn")

    /// `AuthenticateOwner(u seconds) → ay proof`: has polkit ask the person to authenticate
    /// for the calling process (as a read of an item that asks for its owner does), and answers
    /// a proof that the caller's reads offer (``KeychainModel/ItemQuery/ownerProof``): it spares
    /// them the question for `seconds` (300 at most), for this process only. What an `LAContext`'s
    /// `evaluatePolicy` calls. The answer may take minutes; errors as a read's (errSecUserCanceled,
    /// errSecAuthFailed, errSecInteractionNotAllowed). Added to `Agent1` after its first release.
    public static let authenticateOwner: Method<AuthenticateOwnerArguments, OwnerProof> = method("AuthenticateOwner")

    /// `AuthenticateWithFinger(u seconds) → (ay proof, ay state)`: has the person touch fprintd's
    /// reader, claimed for the calling process's user, until an enrolled finger matches (three
    /// tries), and answers a proof as ``authenticateOwner`` does, which answers the caller's reads
    /// of items a finger answers (`.biometryAny`, `.biometryCurrentSet` while the same fingers are
    /// enrolled, `.userPresence`), and the reader's domain state the finger matched in. What an
    /// `LAContext`'s biometric `evaluatePolicy` calls. Errors as a read's: errSecAuthFailed after
    /// three fingers that did not match, errSecUserCanceled when nobody touched the reader,
    /// errSecInteractionNotAllowed without a reader or an enrolled finger. Added to `Agent1` after
    /// its first release.
    public static let authenticateWithFinger: Method<AuthenticateOwnerArguments, FingerProof> = method(
        "AuthenticateWithFinger")

    /// `AuthenticateWithCompanion(u seconds) → (ay proof, ay key)`: has the person touch one of
    /// the security keys paired with the agent's user (`security security-key add`), checks its
    /// signature of a fresh challenge, and answers a proof as ``authenticateOwner`` does, which
    /// answers the caller's reads of `.companion` items bound to that key, and the key's public
    /// key. What an `LAContext`'s companion `evaluatePolicy` calls. Errors as a read's:
    /// errSecUserCanceled when nobody touched the key, errSecAuthFailed when its signature does not
    /// verify, errSecInteractionNotAllowed when no paired key is attached. Added to `Agent1` after
    /// its first release.
    public static let authenticateWithCompanion: Method<AuthenticateOwnerArguments, CompanionProof> = method(
        "AuthenticateWithCompanion")

    /// `UseTokenKeyOffering(s keychain, ay handle, y operation, ay input, u kdfHash, ay sharedInfo,
    /// u outputSize, ay proof) → ay output`: ``useTokenKey``, offering the proof of an evaluated
    /// `LAContext` the key was found with, which spares the use the question its access control
    /// asks while the proof lasts (a proof the agent did not make for the caller is as none).
    /// Added to `Agent1` after its first release.
    public static let useTokenKeyOffering: Method<UseTokenKeyOfferingArguments, TokenKeyOutput> = method(
        "UseTokenKeyOffering")

    /// `AccessLog() → as entries`: the secrets the agent gave out since it started (the last
    /// 1,000), oldest first, a line each: when, `read`, the item's class and the attributes that
    /// name it, the caller as the kernel names it, and what allowed it. Never a secret. For the
    /// user's own programs (`security access-log`). Added to `Agent1` after its first release.
    public static let accessLog: Method<DBusNoArguments, AccessLogEntries> = method("AccessLog")

    /// Every method, in the order introspection lists them.
    public static let all: [DBusMethodDescription] = [
        add.description, addMany.description, upsert.description, find.description, findReadable.description,
        update.description, delete.description, unlock.description, lock.description, lockAll.description,
        status.description, changePassword.description, rotateKeys.description, create.description,
        deleteKeychain.description, close.description, settings.description, setSettings.description,
        createTokenKey.description, useTokenKey.description, storeTokenKey.description,
        useAccessGroups.description, makeRecoveryKey.description, setUnlocksWithBootState.description,
        moveIn.description, authenticateOwner.description, accessLog.description,
        authenticateWithFinger.description, authenticateWithCompanion.description, useTokenKeyOffering.description,
    ]
}

/// The arguments of an agent method that names its keychain first.
public protocol AgentKeychainArguments: DBusArguments {
    /// The keychain: a file's absolute path, or `""` for the default keychain.
    var keychain: String { get }
}
