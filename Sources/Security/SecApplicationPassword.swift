// `SecAccessControlCreateFlags.applicationPassword`: an item's secret sealed under a key derived
// from a password the app gives (`LAContext.setCredential(_:type: .applicationPassword)`, passed
// as kSecUseAuthenticationContext), in the app's own process, before the keychain stores it.
//
// Linux decisions (docs/local-authentication.md, "An application password"):
// - The keychain (and keychaind) only ever hold the sealed secret: it cannot be read without the
//   password even while the keychain is unlocked, and the password never leaves the app.
// - The key is scrypt(N=2^15, r=8, p=1) of the password and a random salt of the item's; the
//   seal is AES-256-GCM (swift-crypto), whose tag makes a wrong password errSecAuthFailed.
// - Without a password in the context there is no dialog to ask for one: adding or reading is
//   errSecInteractionNotAllowed (kSecUseAuthenticationUISkip leaves such items out), and other
//   readers (the `security` tool, the Secret Service) are refused by the keychain itself.
// - The password is asked for in addition to the other constraints (Apple: "may be specified in
//   addition to any constraints"); a constraint on the user still refuses the read.

internal import Crypto
internal import _SecurityFoundation
internal import CryptoExtras
internal import KeychainModel

enum ApplicationPasswordSeal {
    /// The sealed secret's first bytes, then the version.
    static let magic = Data("kapw".utf8)
    static let version: UInt8 = 1
    /// scrypt's cost: 2^15, a production floor's (32 MiB, tens of milliseconds).
    static let logN: UInt8 = 15
    /// What the seal is bound to besides the password.
    static let context = Data("keychain-linux application password v1".utf8)

    /// `secret` sealed under `password`: magic, version, log2 N, 16 bytes of salt, then
    /// AES-GCM's nonce, ciphertext and tag.
    static func seal(_ secret: Data, password: Data) throws -> Data {
        let salt = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
        let key = try derive(password, salt: salt, logN: logN)
        let sealed = try AES.GCM.seal(secret, using: key, authenticating: context)
        guard let combined = sealed.combined else { throw SecError(errSecInternalComponent) }
        return magic + Data([version, logN]) + salt + combined
    }

    /// The secret `sealed` holds.
    /// - Throws: errSecAuthFailed for a wrong password; errSecDecode for a secret that is not
    ///   sealed this way (another program stored it in the clear: never taken as the secret).
    static func open(_ sealed: Data, password: Data) throws -> Data {
        let header = magic.count + 2
        let bytes = Data(sealed)
        guard bytes.count > header + 16 + 28, bytes.prefix(magic.count) == magic,
            bytes[magic.count] == version, (15...20).contains(bytes[magic.count + 1])
        else { throw SecError(errSecDecode) }
        let salt = bytes.subdata(in: header..<header + 16)
        let key = try derive(password, salt: salt, logN: bytes[magic.count + 1])
        do {
            let box = try AES.GCM.SealedBox(combined: bytes.subdata(in: header + 16..<bytes.count))
            return try AES.GCM.open(box, using: key, authenticating: context)
        } catch {
            throw SecError(errSecAuthFailed)
        }
    }

    /// scrypt of the password, length-prefixed (HMAC pads short keys with zeros: without the
    /// prefix "pw" and "pw\0" would derive the same key, and an empty password none).
    private static func derive(_ password: Data, salt: Data, logN: UInt8) throws -> SymmetricKey {
        var prefixed = withUnsafeBytes(of: UInt32(password.count).bigEndian) { Data($0) } + password
        defer { prefixed.resetBytes(in: 0..<prefixed.count) }
        do {
            return try KDF.Scrypt.deriveKey(
                from: prefixed, salt: salt, outputByteCount: 32, rounds: 1 << Int(logN), blockSize: 8, parallelism: 1)
        } catch {
            throw SecError(errSecAllocate)
        }
    }

    /// The application password of a query's kSecUseAuthenticationContext, if it has one: the
    /// context's own bytes (it wipes them when invalidated), so nothing here copies or wipes them.
    static func password(of query: ParsedQuery) -> Data? {
        (query.authenticationContext as? any ApplicationPasswordSource)?.applicationPassword()
    }

    /// Whether a stored item's secret is sealed under an application password.
    static func isSealed(_ item: Item) -> Bool {
        item.attributes[.accessControl]?.dataValue.flatMap(StoredAccessControl.init(serialized:))?
            .needsApplicationPassword ?? false
    }

    /// The secret to store for an item of `query` with `data`: sealed when its access control asks
    /// for an application password.
    /// - Throws: errSecInteractionNotAllowed when it does and the context gives none.
    static func storedData(_ data: Data?, for query: ParsedQuery) throws -> Data? {
        guard let data, query.accessControl?.flags.contains(.applicationPassword) == true else { return data }
        guard let password = password(of: query) else { throw SecError(errSecInteractionNotAllowed) }
        return try seal(data, password: password)
    }

    /// Whether a query's kSecUseAuthenticationContext holds an application password.
    static func hasPassword(_ query: ParsedQuery) -> Bool {
        password(of: query) != nil
    }

    /// The secret `SecItemUpdate` stores for the items `itemQuery` matches in `database`: sealed
    /// when they are (or `changes` make them) sealed under an application password.
    /// - Throws: errSecInteractionNotAllowed when the secret must be sealed and the context
    ///   gives no password; errSecParam when some of the items are sealed and others not, or
    ///   when `changes` add or take away the seal without a new secret.
    static func updatedData(
        _ data: Data?, changes: Attributes, of itemQuery: ItemQuery, in database: any KeychainHandle,
        query: ParsedQuery
    ) throws -> Data? {
        let newControl = changes[.accessControl].map {
            $0.dataValue.flatMap(StoredAccessControl.init(serialized:))?.needsApplicationPassword ?? false
        }
        var listing = itemQuery
        listing.authenticationUI = .ignore
        let matches = try database.find(listing, includeData: false)
        let sealed = matches.filter(isSealed).count
        guard sealed == 0 || sealed == matches.count else { throw SecError(errSecParam) }
        let willBeSealed = newControl ?? (sealed > 0)
        guard let data else {
            // The stored secret stays as it is: so must the seal.
            guard newControl == nil || matches.isEmpty || willBeSealed == (sealed > 0) else {
                throw SecError(errSecParam)
            }
            return nil
        }
        guard willBeSealed, !matches.isEmpty else { return data }
        guard let password = password(of: query) else { throw SecError(errSecInteractionNotAllowed) }
        return try seal(data, password: password)
    }
}
