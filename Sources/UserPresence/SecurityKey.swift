import CFido2
import Foundation
import KeychainLibc
import KeychainModel

/// What the person is asked when a security key wants its PIN.
public struct SecurityKeyPINQuestion: Sendable, Equatable {
    /// Whether the PIN given before was wrong.
    public var afterWrongPIN: Bool
    /// The tries the key has left before it blocks its PIN, when it says.
    public var triesLeft: Int?

    /// A question from its parts.
    public init(afterWrongPIN: Bool, triesLeft: Int?) {
        self.afterWrongPIN = afterWrongPIN
        self.triesLeft = triesLeft
    }
}

/// Where a security key's PIN comes from: the person's answer, its bytes (UTF-8), or `nil`
/// when they cancelled. Called on the thread that speaks to the key, which it may block.
public typealias SecurityKeyPINSource = @Sendable (SecurityKeyPINQuestion) -> [UInt8]?

/// FIDO2 security keys through libfido2 (<https://developers.yubico.com/libfido2/>): what a
/// companion device (`SecAccessControlCreateFlags.companion`) is on Linux.
///
/// A key is paired once (``pair(at:userName:touchRequested:pin:)``): it makes a credential for the
/// relying party ``relyingParty``, whose identifier and P-256 public key are kept
/// (``SecurityKeyRegistry``). A `.companion` item is bound to the keys paired when it was made;
/// reading it has the person touch one of them (``authenticate(_:touchRequested:pin:)``): the key
/// signs a fresh random challenge, and libfido2 checks the signature against the kept public key
/// and that the key saw a touch (user presence). A key that asks for its PIN (one with a PIN set
/// makes credentials only with it, under CTAP 2.0; one with `alwaysUv` signs only with it) gets
/// it from the person through a ``SecurityKeyPINSource``; without one, it is refused.
///
/// Keys are found by libfido2's own listing (hidraw devices), and at the path each was paired at.
/// A path `unix:PATH` names a key reached through a Unix `SOCK_SEQPACKET` socket carrying its
/// 64-byte CTAPHID reports, one per message: a key forwarded from elsewhere, or a software key.
public enum SecurityKey {
    /// The relying party every keychain credential is made for.
    public static let relyingParty = "keychain://companion"
    /// The prefix of a path that names a key behind a Unix socket.
    public static let socketPrefix = "unix:"
    /// The longest the person is given to touch the key.
    static let touchTimeout: Int32 = 30_000

    /// The paths of the keys libfido2 finds attached (HID devices).
    public static func attachedPaths() -> [String] {
        initialized()
        let capacity = 16
        guard let list = fido_dev_info_new(capacity) else { return [] }
        var list0: OpaquePointer? = list
        defer { fido_dev_info_free(&list0, capacity) }
        var found = 0
        guard fido_dev_info_manifest(list, capacity, &found) == FIDO_OK else { return [] }
        return (0..<found).compactMap { index in
            fido_dev_info_ptr(list, index).flatMap { fido_dev_info_path($0) }.map { String(cString: $0) }
        }
    }

    /// Has the key at `path` make a credential for ``relyingParty``, the person touching it
    /// (`touchRequested` is called first), and checks its attestation signature.
    /// - Returns: The credential, to bind `.companion` items to.
    /// - Throws: `KeychainError`: `.userCanceled` when nobody touched the key or it refused,
    ///   `.authFailed` when its attestation does not verify or a wrong PIN was given three
    ///   times, `.interactionNotAllowed` when no key answers at `path`, or the key asks for its
    ///   PIN and `pin` is `nil`.
    public static func pair(
        at path: String, userName: String, touchRequested: () -> Void = {}, pin: SecurityKeyPINSource? = nil
    ) throws -> CompanionKey {
        let device = try Device(path: path)
        guard let credential = fido_cred_new() else { throw KeychainError(.allocate, "libfido2 is out of memory") }
        var owned: OpaquePointer? = credential
        defer { fido_cred_free(&owned) }
        let challenge = randomBytes(32)
        let userID = randomBytes(16)
        var status = fido_cred_set_type(credential, COSE_ES256)
        if status == FIDO_OK { status = fido_cred_set_clientdata_hash(credential, challenge, challenge.count) }
        if status == FIDO_OK { status = fido_cred_set_rp(credential, relyingParty, "Keychain") }
        if status == FIDO_OK {
            status = fido_cred_set_user(credential, userID, userID.count, userName, userName, nil)
        }
        guard status == FIDO_OK else { throw failure(status, "the credential could not be described") }
        touchRequested()
        status = try withPIN(on: device, from: pin) { fido_dev_make_cred(device.handle, credential, $0) }
        guard status == FIDO_OK else { throw failure(status, "the security key made no credential") }
        // A key's own attestation certificate signs a full attestation; a self attestation is
        // signed by the new credential. Either way the credential was made by what answered.
        status = fido_cred_x5c_len(credential) > 0 ? fido_cred_verify(credential) : fido_cred_verify_self(credential)
        guard status == FIDO_OK else { throw failure(status, "the security key's attestation does not verify") }
        guard let idPointer = fido_cred_id_ptr(credential), let keyPointer = fido_cred_pubkey_ptr(credential),
            fido_cred_pubkey_len(credential) == 64
        else { throw KeychainError(.authFailed, "the security key gave no P-256 credential") }
        let key = CompanionKey(
            credentialID: Data(bytes: idPointer, count: fido_cred_id_len(credential)),
            publicKey: Data([4]) + Data(bytes: keyPointer, count: 64))
        guard CompanionKey(serialized: key.serialized) == key else {
            throw KeychainError(.authFailed, "the security key's credential identifier is too long")
        }
        return key
    }

    /// Has the person touch one of `paired` (tried at the paths they were paired at, then at the
    /// attached keys'), and checks its signature of a fresh challenge against its kept public key.
    /// `touchRequested` is called once a key that holds one of the credentials waits for a touch.
    /// - Returns: The credential that signed.
    /// - Throws: `KeychainError`: `.userCanceled` when nobody touched the key in time or it
    ///   refused, `.authFailed` when the signature does not verify, `.interactionNotAllowed`
    ///   when nothing is paired or no attached key holds a paired credential; a key that asks
    ///   for its PIN gets it from `pin`, as ``pair(at:userName:touchRequested:pin:)`` does.
    public static func authenticate(
        _ paired: [PairedSecurityKey], touchRequested: () -> Void = {}, pin: SecurityKeyPINSource? = nil
    ) throws -> CompanionKey {
        guard !paired.isEmpty else { throw KeychainError(.interactionNotAllowed, "no security key is paired") }
        var paths: [String] = []
        for path in paired.compactMap(\.device) + attachedPaths() where !paths.contains(path) { paths.append(path) }
        let keys = paired.map(\.key)
        // With one key to try, it is asked at once; among several, a silent assertion (no touch)
        // finds the one that holds a paired credential first. Keys that want their PIN even for
        // that are asked last, one after the other, until one holds a credential.
        var askLast: [String] = []
        for path in paths {
            guard let device = try? Device(path: path) else { continue }
            if paths.count > 1 {
                switch holding(keys, device) {
                case .one: break
                case .unknownWithoutPIN:
                    askLast.append(path)
                    continue
                case .none: continue
                }
            }
            touchRequested()
            return try assert(keys, on: device, touch: true, pin: pin)
        }
        var refused: KeychainError?
        for path in askLast {
            guard let device = try? Device(path: path) else { continue }
            touchRequested()
            do {
                return try assert(keys, on: device, touch: true, pin: pin)
            } catch let error as KeychainError where error.code == .authFailed {
                refused = error  // it holds none of them (or its PIN was not given right): the next
            }
        }
        throw refused ?? KeychainError(.interactionNotAllowed, "no paired security key is attached")
    }

    /// What a silent assertion (no touch) says of `device` and `keys`.
    private enum Holding { case one, none, unknownWithoutPIN }

    /// Whether `device` holds one of `keys`, by a silent assertion (no touch); a key that asks
    /// for its PIN before it says is unknown.
    private static func holding(_ keys: [CompanionKey], _ device: Device) -> Holding {
        guard let assertion = try? describedAssertion(by: keys, touch: false) else { return .none }
        var owned: OpaquePointer? = assertion
        defer { fido_assert_free(&owned) }
        switch fido_dev_get_assert(device.handle, assertion, nil) {
        case FIDO_OK: return .one
        case FIDO_ERR_PIN_REQUIRED: return .unknownWithoutPIN
        default: return .none
        }
    }

    /// An assertion by one of `keys` over a fresh challenge, with a touch or silently; the caller
    /// frees it.
    private static func describedAssertion(by keys: [CompanionKey], touch: Bool) throws -> OpaquePointer {
        guard let assertion = fido_assert_new() else { throw KeychainError(.allocate, "libfido2 is out of memory") }
        let challenge = randomBytes(32)
        var status = fido_assert_set_rp(assertion, relyingParty)
        if status == FIDO_OK { status = fido_assert_set_clientdata_hash(assertion, challenge, challenge.count) }
        if status == FIDO_OK { status = fido_assert_set_up(assertion, touch ? FIDO_OPT_TRUE : FIDO_OPT_FALSE) }
        for key in keys where status == FIDO_OK {
            status = key.credentialID.withUnsafeBytes {
                fido_assert_allow_cred(assertion, $0.bindMemory(to: UInt8.self).baseAddress, $0.count)
            }
        }
        guard status == FIDO_OK else {
            var owned: OpaquePointer? = assertion
            fido_assert_free(&owned)
            throw failure(status, "the assertion could not be described")
        }
        return assertion
    }

    /// Asks `device` for an assertion by one of `keys` with a touch (and its PIN from `pin`
    /// when it asks), and verifies it.
    private static func assert(_ keys: [CompanionKey], on device: Device, touch: Bool, pin: SecurityKeyPINSource?)
        throws -> CompanionKey
    {
        let assertion = try describedAssertion(by: keys, touch: touch)
        var owned: OpaquePointer? = assertion
        defer { fido_assert_free(&owned) }
        let status = try withPIN(on: device, from: pin) { fido_dev_get_assert(device.handle, assertion, $0) }
        guard status == FIDO_OK else { throw failure(status, "the security key did not sign") }
        guard fido_assert_count(assertion) >= 1 else {
            throw KeychainError(.authFailed, "the security key gave no signature")
        }
        // A key may leave out the credential when only one was allowed (CTAP 2.1, 6.2.2).
        let id = fido_assert_id_ptr(assertion, 0).map { Data(bytes: $0, count: fido_assert_id_len(assertion, 0)) }
        guard let key = id.flatMap({ id in keys.first { $0.credentialID == id } }) ?? (keys.count == 1 ? keys[0] : nil)
        else { throw KeychainError(.authFailed, "the security key signed with a credential that is not paired") }
        guard !touch || verify(assertion, by: key) else {
            throw KeychainError(.authFailed, "the security key's signature does not verify")
        }
        return key
    }

    /// The most PINs asked for one operation: a key blocks its PIN until it is plugged in again
    /// after three wrong ones in a row (CTAP 2.0, 5.5.5).
    static let mostPINTries = 3

    /// Runs `operation` without a PIN, then, while `device` answers that it wants its PIN (or
    /// that the one given was wrong), with the person's answer from `pin`; the PIN's bytes are
    /// wiped once used.
    /// - Returns: libfido2's status of the last run.
    /// - Throws: `KeychainError` `.userCanceled` when the person gave no PIN, `.authFailed`
    ///   after ``mostPINTries`` wrong ones.
    static func withPIN(
        on device: Device, from pin: SecurityKeyPINSource?, _ operation: (UnsafePointer<CChar>?) -> Int32
    ) throws -> Int32 {
        var status = operation(nil)
        guard let pin, status == FIDO_ERR_PIN_REQUIRED else { return status }
        var wrong = false
        for _ in 0..<mostPINTries {
            var tries: Int32 = -1
            let left = fido_dev_get_retry_count(device.handle, &tries) == FIDO_OK && tries >= 0 ? Int(tries) : nil
            guard var typed = pin(SecurityKeyPINQuestion(afterWrongPIN: wrong, triesLeft: left)) else {
                throw KeychainError(.userCanceled, "the person gave no PIN for the security key")
            }
            var text = [CChar](repeating: 0, count: typed.count + 1)
            for (index, byte) in typed.enumerated() { text[index] = CChar(bitPattern: byte) }
            typed.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) }
            status = text.withUnsafeBufferPointer { operation($0.baseAddress) }
            text.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) }
            guard status == FIDO_ERR_PIN_INVALID else { return status }
            wrong = true
        }
        throw KeychainError(.authFailed, "a wrong PIN was given to the security key \(mostPINTries) times")
    }

    /// Whether libfido2 verifies the first signature of `assertion` with `key`'s public key, the
    /// key having seen a touch (`fido_assert_verify` checks the flags asked for).
    private static func verify(_ assertion: OpaquePointer, by key: CompanionKey) -> Bool {
        guard let publicKey = es256_pk_new() else { return false }
        var owned: OpaquePointer? = publicKey
        defer { es256_pk_free(&owned) }
        let loaded = key.publicKey.withUnsafeBytes { es256_pk_from_ptr(publicKey, $0.baseAddress, $0.count) }
        return loaded == FIDO_OK && fido_assert_verify(assertion, 0, COSE_ES256, UnsafeRawPointer(publicKey)) == FIDO_OK
            && fido_assert_flags(assertion, 0) & 0x01 != 0
    }

    /// What libfido2's `status` means to a keychain caller.
    static func failure(_ status: Int32, _ what: String) -> KeychainError {
        let reason = String(cString: fido_strerr(status))
        switch status {
        case FIDO_ERR_OPERATION_DENIED, FIDO_ERR_KEEPALIVE_CANCEL, FIDO_ERR_USER_ACTION_TIMEOUT,
            FIDO_ERR_ACTION_TIMEOUT, FIDO_ERR_USER_PRESENCE_REQUIRED:
            return KeychainError(.userCanceled, "nobody touched the security key (\(reason))")
        case FIDO_ERR_PIN_REQUIRED, FIDO_ERR_UNSUPPORTED_OPTION:
            return KeychainError(.interactionNotAllowed, "the security key asks for its PIN (\(reason))")
        case FIDO_ERR_PIN_INVALID, FIDO_ERR_PIN_AUTH_INVALID:
            return KeychainError(.authFailed, "the security key refused its PIN (\(reason))")
        case FIDO_ERR_PIN_BLOCKED, FIDO_ERR_PIN_AUTH_BLOCKED, FIDO_ERR_UV_BLOCKED:
            return KeychainError(
                .interactionNotAllowed, "the security key's PIN is blocked: plug it in again, or reset it (\(reason))")
        case FIDO_ERR_INVALID_SIG, FIDO_ERR_NO_CREDENTIALS, FIDO_ERR_INVALID_CREDENTIAL:
            return KeychainError(.authFailed, "\(what) (\(reason))")
        default: return KeychainError(.interactionNotAllowed, "\(what) (\(reason))")
        }
    }

    /// `count` bytes from the system's generator.
    static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    /// libfido2 set up, once per process.
    private static let setUp: Void = fido_init(0)
    static func initialized() { _ = setUp }

    /// An open key, closed and freed with this value.
    final class Device {
        let handle: OpaquePointer

        /// Opens the key at `path` (``SecurityKey/socketPrefix`` for one behind a socket).
        /// - Throws: `KeychainError` `.interactionNotAllowed` when nothing answers there as a
        ///   FIDO2 key does.
        init(path: String) throws {
            SecurityKey.initialized()
            guard let device = fido_dev_new() else { throw KeychainError(.allocate, "libfido2 is out of memory") }
            handle = device
            var status: Int32 = FIDO_OK
            if path.hasPrefix(SecurityKey.socketPrefix) {
                var io = SocketTransport.functions
                status = fido_dev_set_io_functions(device, &io)
            }
            if status == FIDO_OK { status = fido_dev_set_timeout(device, SecurityKey.touchTimeout) }
            if status == FIDO_OK { status = fido_dev_open(device, path) }
            guard status == FIDO_OK else {
                var owned: OpaquePointer? = device
                fido_dev_free(&owned)
                throw SecurityKey.failure(status, "no security key answers at \(path)")
            }
        }

        deinit {
            _ = fido_dev_close(handle)
            var owned: OpaquePointer? = handle
            fido_dev_free(&owned)
        }
    }
}

/// libfido2's I/O functions (`fido_dev_set_io_functions`) for a key behind a Unix
/// `SOCK_SEQPACKET` socket: each message one 64-byte CTAPHID report. libfido2 writes a report
/// with its report-ID byte first, which the socket does not carry.
package enum SocketTransport {
    /// The functions, for `fido_dev_set_io_functions`.
    package static var functions: fido_dev_io_t {
        fido_dev_io_t(open: open, close: close, read: read, write: write)
    }

    private static let open: @convention(c) (UnsafePointer<CChar>?) -> UnsafeMutableRawPointer? = { path in
        guard let path, let text = String(validatingCString: path), text.hasPrefix(SecurityKey.socketPrefix),
            let socket = connectUnixSocket(String(text.dropFirst(SecurityKey.socketPrefix.count)), type: SOCK_SEQPACKET)
        else { return nil }
        let box = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
        box.initialize(to: socket)
        return UnsafeMutableRawPointer(box)
    }

    private static let close: @convention(c) (UnsafeMutableRawPointer?) -> Void = { handle in
        guard let box = handle?.assumingMemoryBound(to: Int32.self) else { return }
        _ = Glibc.close(box.pointee)
        box.deallocate()
    }

    private static let read:
        @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?, Int, Int32) -> Int32 = {
            handle, buffer, length, milliseconds in
            guard let socket = handle?.assumingMemoryBound(to: Int32.self).pointee, let buffer else { return -1 }
            var waiting = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            var ready: Int32
            repeat { ready = poll(&waiting, 1, milliseconds) } while ready < 0 && errno == EINTR
            guard ready > 0 else { return -1 }
            var received: Int
            repeat { received = recv(socket, buffer, length, 0) } while received < 0 && errno == EINTR
            return received > 0 ? Int32(received) : -1
        }

    private static let write: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<UInt8>?, Int) -> Int32 = {
        handle, buffer, length in
        guard let socket = handle?.assumingMemoryBound(to: Int32.self).pointee, let buffer, length > 1 else {
            return -1
        }
        var sent: Int
        repeat { sent = send(socket, buffer + 1, length - 1, Int32(MSG_NOSIGNAL)) } while sent < 0 && errno == EINTR
        return sent == length - 1 ? Int32(length) : -1
    }
}
