import Foundation

/// The error thrown by every operation of the keychain engine.
///
/// A `KeychainError` carries a ``Code`` whose raw value *is* the Apple `OSStatus` that
/// Keychain Services returns for the same failure, so the mapping from engine failures to
/// `OSStatus` lives in exactly one place: the static members of ``Code``.
///
/// ```swift
/// do {
///     try keychain.add(item)
/// } catch let error as KeychainError where error.code == .duplicateItem {
///     // update instead
/// }
/// ```
///
/// Error messages never contain secret bytes or attribute values.
public struct KeychainError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as an open set of codes (new codes never break `switch` users).
    public var code: Code
    /// A human-readable explanation, free of secrets.
    public var message: String
    /// The lower-level failure (an SQLite or file-system error), if any.
    public var underlying: (any Error & Sendable)?
    /// Whether the failure comes from the machine's set-up rather than from the request: a
    /// missing device key, a directory other users can write to, a damaged write-ahead log, a
    /// keychain held by another process. Apple's status text cannot say what to fix then, so
    /// tools print ``message`` beside it.
    public var isSetupProblem: Bool
    /// Which of the failures that share a ``code`` this is, when a program acts on the
    /// difference (the PAM hand-off tells a TPM that cannot open the keychain from a wrong
    /// password); `nil` for most errors. It crosses the agent's socket with the code.
    public var reason: Reason?

    /// Creates an error.
    /// - Parameters:
    ///   - code: The failure code.
    ///   - message: An explanation that contains no secret.
    ///   - underlying: The underlying error, if any.
    ///   - isSetupProblem: Whether ``message`` says what to fix on the machine.
    public init(
        _ code: Code, _ message: String = "", underlying: (any Error & Sendable)? = nil,
        isSetupProblem: Bool = false
    ) {
        self.code = code
        self.message = message
        self.underlying = underlying
        self.isSetupProblem = isSetupProblem
    }

    /// This error with `reason`.
    public func because(_ reason: Reason) -> KeychainError {
        var error = self
        error.reason = reason
        return error
    }

    /// The Apple `OSStatus` for this error.
    public var osStatus: Int32 { code.rawValue }

    /// Which failure of several that share a code this is (an open set, named by strings).
    public struct Reason: RawRepresentable, Hashable, Sendable {
        /// The reason's name.
        public var rawValue: String
        /// A reason named `rawValue`.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The keychain is sealed to a TPM that cannot open it (another machine's, or this one
        /// cleared or replaced): its recovery key can.
        public static let sealedToAnotherTPM = Reason(rawValue: "sealedToAnotherTPM")
        /// The boot state changed since the keychain was set to unlock on it: the password is needed.
        public static let bootStateChanged = Reason(rawValue: "bootStateChanged")
        /// An item the call matched asks for its owner's authentication (its access control's
        /// user presence, passcode, biometry or companion), which the call may not ask for: its
        /// query says ``ItemQuery/AuthenticationUI-swift.enum/fail``, or it reads secrets with
        /// ``ItemQuery/AuthenticationUI-swift.enum/ignore``. A caller that may ask runs it again
        /// with ``ItemQuery/AuthenticationUI-swift.enum/allow``.
        public static let userAuthenticationNeeded = Reason(rawValue: "userAuthenticationNeeded")
        /// An item the call matched asks for its owner's authentication and the call may ask
        /// for it (``ItemQuery/AuthenticationUI-swift.enum/allow``): whoever hosts the engine
        /// for this caller (keychaind, or the process itself) asks the person, then runs the
        /// call again as verified. It reaches a caller only when nobody there can ask.
        public static let authenticateUser = Reason(rawValue: "authenticateUser")
        /// An item the call matched asks for a finger on the reader (`.biometryAny`,
        /// `.biometryCurrentSet`) and the call may ask: whoever hosts the engine for this caller
        /// reads the reader's state, runs the call again with it (items it invalidated drop
        /// out), then has the person touch the reader and runs it again with the finger
        /// (``FingerAnswer``).
        public static let authenticateWithFinger = Reason(rawValue: "authenticateWithFinger")
        /// An item the call matched asks for a companion (`.companion`: a FIDO2 security key
        /// paired when it was made) and the call may ask: whoever hosts the engine for this
        /// caller has the person touch a paired key, then runs the call again with the key that
        /// signed (``CallAuthentication/companion``).
        public static let authenticateWithCompanion = Reason(rawValue: "authenticateWithCompanion")
        /// polkit has nobody to ask the owner for the caller: no desktop agent, and none on the
        /// caller's terminal. A caller that has a terminal starts polkit's text agent there and
        /// calls again (a key's use, which has no mode to try first without asking).
        public static let noAuthenticationAgent = Reason(rawValue: "noAuthenticationAgent")
        /// Nothing on this system can authenticate the owner (no polkit answers): `LAError`'s
        /// `.passcodeNotSet`, where a device has no passcode.
        public static let ownerAuthenticationUnavailable = Reason(rawValue: "ownerAuthenticationUnavailable")
        /// An item the call matched has an access list (``AccessList``) that does not name the
        /// caller, and the call may ask (``ItemQuery/AuthenticationUI-swift.enum/allow``):
        /// keychaind asks the person, Deny / Allow / Always Allow, then runs the call again with
        /// the item allowed. Its ``KeychainError/underlying`` says which item.
        public static let confirmApplication = Reason(rawValue: "confirmApplication")
        /// An item the call matched has an access list that does not name the caller, and the
        /// call may not ask: its query says ``ItemQuery/AuthenticationUI-swift.enum/fail``, or
        /// it reads secrets with ``ItemQuery/AuthenticationUI-swift.enum/ignore``, or nobody can
        /// be asked.
        public static let applicationNotTrusted = Reason(rawValue: "applicationNotTrusted")
    }

    /// The Apple `OSStatus` of any error, the one mapping every layer uses: an error that
    /// knows its status (``OSStatusConvertible``: this type, the agent's, the libraries',
    /// `Security`'s) says it; a file system error is `errSecIO` (-36); anything else is
    /// `errSecInternalComponent` (-2070).
    public static func osStatus(of error: any Error) -> Int32 {
        if let error = error as? any OSStatusConvertible { return error.osStatus }
        if error is POSIXError || (error as? CocoaError)?.isFileError == true { return Code.io.rawValue }
        return Self.internalComponent
    }

    /// `errSecInternalComponent`: what an error that knows no status of its own reports.
    public static let internalComponent: Int32 = -2070

    /// The code, the message and the underlying error; never a secret.
    public var description: String {
        var text = "KeychainError(\(code))"
        if !message.isEmpty { text += ": \(message)" }
        if let underlying { text += " [\(underlying)]" }
        return text
    }

    /// An engine failure code. Its raw value is the matching Apple `OSStatus`.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The Apple `OSStatus` value.
        public var rawValue: Int32
        /// Creates a code from an `OSStatus` value.
        public init(rawValue: Int32) { self.rawValue = rawValue }

        /// The operation is not implemented (errSecUnimplemented, -4).
        public static let unimplemented = Code(rawValue: -4)
        /// The person cancelled the authentication they were asked for (errSecUserCanceled, -128).
        public static let userCanceled = Code(rawValue: -128)
        /// An I/O error (errSecIO, -36).
        public static let io = Code(rawValue: -36)
        /// A parameter was not valid (errSecParam, -50).
        public static let parameter = Code(rawValue: -50)
        /// Memory could not be allocated (errSecAllocate, -108).
        public static let allocate = Code(rawValue: -108)
        /// An internal component failed (errSecInternalComponent, -2070).
        public static let internalComponent = Code(rawValue: -2070)
        /// The caller may not use the access group (errSecMissingEntitlement, -34018).
        public static let missingEntitlement = Code(rawValue: -34018)
        /// The keychain is not available (errSecNotAvailable, -25291).
        public static let notAvailable = Code(rawValue: -25291)
        /// The keychain cannot be modified (errSecReadOnly, -25292).
        public static let readOnly = Code(rawValue: -25292)
        /// The password is not correct (errSecAuthFailed, -25293).
        public static let authFailed = Code(rawValue: -25293)
        /// The keychain does not exist (errSecNoSuchKeychain, -25294).
        public static let noSuchKeychain = Code(rawValue: -25294)
        /// The file is not a valid keychain (errSecInvalidKeychain, -25295).
        public static let invalidKeychain = Code(rawValue: -25295)
        /// A keychain already exists at that place (errSecDuplicateKeychain, -25296).
        public static let duplicateKeychain = Code(rawValue: -25296)
        /// An item with the same primary key exists (errSecDuplicateItem, -25299).
        public static let duplicateItem = Code(rawValue: -25299)
        /// No item matched (errSecItemNotFound, -25300).
        public static let itemNotFound = Code(rawValue: -25300)
        /// The attribute does not exist for the item class (errSecNoSuchAttr, -25303).
        public static let noSuchAttribute = Code(rawValue: -25303)
        /// The item class is unknown (errSecNoSuchClass, -25306).
        public static let noSuchClass = Code(rawValue: -25306)
        /// The item's protection class is locked (errSecInteractionNotAllowed, -25308).
        public static let interactionNotAllowed = Code(rawValue: -25308)
        /// The attribute cannot be modified (errSecReadOnlyAttr, -25309).
        public static let readOnlyAttribute = Code(rawValue: -25309)
        /// The keychain was written by an unknown format version (errSecWrongSecVersion, -25310).
        public static let wrongVersion = Code(rawValue: -25310)
        /// The keychain is held by another process for longer than the busy timeout
        /// (errSecDatabaseLocked, -67869).
        public static let databaseLocked = Code(rawValue: -67869)
        /// The disk is full (errSecDiskFull, -34).
        public static let diskFull = Code(rawValue: -34)
        /// Stored data failed authentication or could not be decoded (errSecDecode, -26275).
        public static let decode = Code(rawValue: -26275)

        private static let names: [Int32: String] = [
            -4: "unimplemented", -128: "userCanceled", -36: "io", -50: "parameter", -108: "allocate",
            -2070: "internalComponent", -34018: "missingEntitlement", -25291: "notAvailable",
            -25292: "readOnly", -25293: "authFailed", -25294: "noSuchKeychain",
            -25295: "invalidKeychain", -25296: "duplicateKeychain", -25299: "duplicateItem",
            -25300: "itemNotFound", -25303: "noSuchAttribute", -25306: "noSuchClass",
            -25308: "interactionNotAllowed", -25309: "readOnlyAttribute", -25310: "wrongVersion",
            -26275: "decode", -67869: "databaseLocked", -34: "diskFull",
        ]

        /// The code's name (`itemNotFound`), or `nil` for a code without one here.
        public var name: String? { Self.names[rawValue] }

        /// The code's name and number, e.g. `itemNotFound (-25300)`.
        public var description: String {
            "\(Self.names[rawValue] ?? "code") (\(rawValue))"
        }
    }
}

extension KeychainError {
    package static func parameter(_ message: String) -> KeychainError { KeychainError(.parameter, message) }
    package static func decode(_ message: String) -> KeychainError { KeychainError(.decode, message) }
    package static func invalidKeychain(_ message: String) -> KeychainError {
        KeychainError(.invalidKeychain, message)
    }
    /// A matched item asks for its owner's authentication and the call may not ask
    /// (``Reason/userAuthenticationNeeded``). Its message is how an unreadable row's
    /// description (``UnreadableItem/init(parsing:)``) says so across the agent's socket.
    package static var userAuthenticationNeeded: KeychainError {
        KeychainError(
            .interactionNotAllowed, "its secret asks for its owner's authentication, which cannot be asked for here"
        )
        .because(.userAuthenticationNeeded)
    }
}

extension KeychainError {
    /// A matched item's access list does not name the caller, who may not be asked about
    /// (``Reason/applicationNotTrusted``). Its message is how an unreadable row's description
    /// says so across the agent's socket.
    package static var applicationNotTrusted: KeychainError {
        KeychainError(.interactionNotAllowed, "its access list does not name this application, and nobody can be asked")
            .because(.applicationNotTrusted)
    }
}

/// An error that knows the Apple `OSStatus` it stands for (see
/// ``KeychainError/osStatus(of:)``, the one mapping from any error to a status).
public protocol OSStatusConvertible: Error {
    /// The Apple `OSStatus`.
    var osStatus: Int32 { get }
}

extension KeychainError: OSStatusConvertible {}
