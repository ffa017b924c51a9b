import DBusWire

/// The session agent's interface: peer-to-peer D-Bus on its private socket (docs/agent.md), so
/// `gdbus call --address unix:path=… --object-path /org/keychainlinux/Agent --method
/// org.keychainlinux.Agent1.Status ''` can call it.
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

    /// A method of the interface: its name and typed, named arguments.
    public enum Method: String, CaseIterable, Sendable {
        /// `Add(s keychain, a{sv} item) → a{sv} stored`.
        case add = "Add"
        /// `AddMany(s keychain, aa{sv} items) → aa{sv} stored`: all of them or none.
        case addMany = "AddMany"
        /// `Upsert(s keychain, a{sv} item) → (a{sv} stored, b added)`.
        case upsert = "Upsert"
        /// `Find(s keychain, a{sv} query, b includeData) → aa{sv} items`.
        case find = "Find"
        /// `FindReadable(s keychain, a{sv} query, b includeData) → (aa{sv} items, as unreadable)`.
        case findReadable = "FindReadable"
        /// `Update(s keychain, a{sv} query, a{sv} attributes, b replacesData, ay data) → u count`.
        case update = "Update"
        /// `Delete(s keychain, a{sv} query) → u count`.
        case delete = "Delete"
        /// `Unlock(s keychain, b hasPassword, ay password)`.
        case unlock = "Unlock"
        /// `Lock(s keychain)`.
        case lock = "Lock"
        /// `LockAll()`.
        case lockAll = "LockAll"
        /// `Status(s keychain) → a{sv}`: `path` (s), `hasPassword` (b), `isLocked` (b),
        /// `accessGroups` (as).
        case status = "Status"
        /// `ChangePassword(s keychain, b hasOld, ay old, ay new)`.
        case changePassword = "ChangePassword"
        /// `RotateKeys(s keychain, b hasPassword, ay password, b hasNew, ay new)`.
        case rotateKeys = "RotateKeys"
        /// `Create(s path, b hasPassword, ay password)`.
        case create = "Create"
        /// `DeleteKeychain(s path)`.
        case deleteKeychain = "DeleteKeychain"
        /// `Close(s keychain)`: the caller is done with it.
        case close = "Close"
        /// `Settings(s keychain) → a{sv}`: the keychain's lock settings, `lockInterval` (u,
        /// seconds; 0 for no timeout) and `locksOnSleep` (b) (as
        /// ``AgentCodec`` encodes them).
        case settings = "Settings"
        /// `SetSettings(s keychain, a{sv} settings)`: stores the lock settings (the keychain must
        /// be unlocked); the agent's idle lock follows them from then on.
        case setSettings = "SetSettings"
        /// `CreateTokenKey(s keychain, b permanent, a{sv} item) → (ay publicKey, ay handle)`:
        /// generates a P-256 token key (`kSecAttrTokenIDSecureEnclave`) in the agent; with
        /// `permanent`, stores it as `item` (a key item's attributes). The answer is the public
        /// key (X9.63) and an opaque handle; the private key stays in the agent.
        ///
        /// Added to `Agent1` after its first release: an older agent answers
        /// `org.freedesktop.DBus.Error.UnknownMethod`, which clients report as errSecUnimplemented.
        case createTokenKey = "CreateTokenKey"
        /// `UseTokenKey(s keychain, ay handle, y operation, ay input, u kdfHash, ay sharedInfo,
        /// u outputSize) → ay output`: runs an operation of the token key `handle` names in the
        /// agent: 1 signs the digest `input` (ECDSA, `r‖s`), 2 runs ECDH with the X9.63 public key
        /// `input` (the shared secret, or with `kdfHash` 1/256/384/512 the X9.63 KDF's
        /// `outputSize` bytes over it with `sharedInfo`). Added with ``createTokenKey``.
        case useTokenKey = "UseTokenKey"
        /// `StoreTokenKey(s keychain, ay handle, a{sv} item) → ay handle`: stores a token key the
        /// agent made without `permanent` as `item` (`SecItemAdd` of its reference); the answer
        /// is the stored key's handle. Added with ``createTokenKey``.
        case storeTokenKey = "StoreTokenKey"
        /// `UseAccessGroups(as groups)`: narrows the caller's access groups, for the rest of the
        /// connection, to those it names (in order: the first is where its items are added),
        /// as a process's `KEYCHAIN_ACCESS_GROUPS` does in-process. Only groups the caller has
        /// may be named (errSecMissingEntitlement). An older agent answers `UnknownMethod`.
        case useAccessGroups = "UseAccessGroups"

        /// The arguments the caller sends.
        public var inputs: [DBusArgument] {
            let keychain = DBusArgument("keychain", .string)
            switch self {
            case .add, .upsert: return [keychain, DBusArgument("item", Self.dictionary)]
            case .addMany: return [keychain, DBusArgument("items", .array(Self.dictionary))]
            case .find, .findReadable:
                return [keychain, DBusArgument("query", Self.dictionary), DBusArgument("includeData", .boolean)]
            case .update:
                return [
                    keychain, DBusArgument("query", Self.dictionary), DBusArgument("attributes", Self.dictionary),
                    DBusArgument("replacesData", .boolean), DBusArgument("data", .array(.byte)),
                ]
            case .delete: return [keychain, DBusArgument("query", Self.dictionary)]
            case .unlock, .create:
                return [keychain, DBusArgument("hasPassword", .boolean), DBusArgument("password", .array(.byte))]
            case .lock, .status, .deleteKeychain, .close, .settings: return [keychain]
            case .setSettings: return [keychain, DBusArgument("settings", Self.dictionary)]
            case .createTokenKey:
                return [keychain, DBusArgument("permanent", .boolean), DBusArgument("item", Self.dictionary)]
            case .storeTokenKey:
                return [keychain, DBusArgument("handle", .array(.byte)), DBusArgument("item", Self.dictionary)]
            case .useTokenKey:
                return [
                    keychain, DBusArgument("handle", .array(.byte)), DBusArgument("operation", .byte),
                    DBusArgument("input", .array(.byte)), DBusArgument("kdfHash", .uint32),
                    DBusArgument("sharedInfo", .array(.byte)), DBusArgument("outputSize", .uint32),
                ]
            case .lockAll: return []
            case .useAccessGroups: return [DBusArgument("groups", .array(.string))]
            case .changePassword:
                return [
                    keychain, DBusArgument("hasOld", .boolean), DBusArgument("old", .array(.byte)),
                    DBusArgument("new", .array(.byte)),
                ]
            case .rotateKeys:
                return [
                    keychain, DBusArgument("hasPassword", .boolean), DBusArgument("password", .array(.byte)),
                    DBusArgument("hasNew", .boolean), DBusArgument("new", .array(.byte)),
                ]
            }
        }

        /// The arguments the agent returns.
        public var outputs: [DBusArgument] {
            switch self {
            case .add: [DBusArgument("stored", Self.dictionary)]
            case .addMany, .find: [DBusArgument("items", .array(Self.dictionary))]
            case .upsert: [DBusArgument("stored", Self.dictionary), DBusArgument("added", .boolean)]
            case .findReadable:
                [DBusArgument("items", .array(Self.dictionary)), DBusArgument("unreadable", .array(.string))]
            case .update, .delete: [DBusArgument("count", .uint32)]
            case .status: [DBusArgument("status", Self.dictionary)]
            case .settings: [DBusArgument("settings", Self.dictionary)]
            case .createTokenKey: [DBusArgument("publicKey", .array(.byte)), DBusArgument("handle", .array(.byte))]
            case .useTokenKey: [DBusArgument("output", .array(.byte))]
            case .storeTokenKey: [DBusArgument("handle", .array(.byte))]
            case .unlock, .lock, .lockAll, .changePassword, .rotateKeys, .create, .deleteKeychain, .close,
                .setSettings, .useAccessGroups:
                []
            }
        }

        /// `a{sv}`.
        static let dictionary = DBusType.dictionary(key: .string, value: .variant)
    }
}
