// `SecKey`: asymmetric keys with Apple's semantics (`OSX/sec/Security/SecKey.m`, `SecECKey.m`,
// `SecRSAKey.c`), built on swift-crypto (EC) and CryptoExtras (`_RSA`).
//
// Linux decisions (see docs/keys-and-certificates.md, "SecKey"):
// - EC keys are P-256, P-384 and P-521 only: swift-crypto has no P-192/P-224 (-25311 on generation,
//   -50 on import).
// - RSA keys are 1024–8192 bits (BoringSSL refuses fewer than 1024; Apple allows 512) and generated
//   sizes must be a multiple of 128 bits, which BoringSSL requires.
// - Token keys (`kSecAttrTokenIDSecureEnclave`) are P-256 keys held by the process that holds the
//   keychain's keys (SecKeyToken.swift); other token IDs are errSecUnimplemented, as Apple without
//   CryptoTokenKit.
// - Private key bytes never appear in a description or an error.

internal import Crypto
internal import CryptoExtras
public import _SecurityFoundation
internal import KeychainModel

/// An asymmetric key: an elliptic-curve (P-256, P-384, P-521) or RSA key, public or private.
///
/// Keys are equal when they are of the same class (public or private) and hold the same key material,
/// as on Apple platforms; equal keys also hash alike on Linux, so pinning code can keep them in a set:
///
/// ```swift
/// let pinned: Set<SecKey> = [trustedKey]
/// if pinned.contains(serverKey) { … }
/// ```
public final class SecKey: Hashable, CustomStringConvertible, Sendable {
    /// The key material.
    let backing: KeyBacking

    /// Apple's external representation: X9.63 for EC keys, PKCS#1 for RSA keys.
    let externalRepresentation: Data

    init(_ backing: KeyBacking) {
        self.backing = backing
        externalRepresentation = backing.externalRepresentation
    }

    /// Whether this is a private key.
    var isPrivate: Bool {
        switch backing {
        case .ecPrivate, .rsaPrivate, .token: true
        case .ecPublic, .rsaPublic: false
        }
    }

    /// Whether this is an elliptic-curve key.
    var isEC: Bool {
        switch backing {
        case .ecPrivate, .ecPublic, .token: true
        case .rsaPrivate, .rsaPublic: false
        }
    }

    /// The `kSecAttrKeyType` raw value: `"73"` or `"42"`.
    var keyTypeValue: String { isEC ? "73" : "42" }

    /// The key size in bits (`bsiz`): 256, 384 or 521 for EC keys, the modulus bit length for RSA.
    var sizeInBits: Int {
        switch backing {
        case .ecPrivate(let key): key.curve.bits
        case .ecPublic(let key): key.curve.bits
        case .rsaPrivate(let key): key.key.keySizeInBits
        case .rsaPublic(let key): key.key.keySizeInBits
        case .token: 256
        }
    }

    /// The block size in bytes: the field size for EC keys, the modulus size for RSA keys.
    var blockSize: Int { (sizeInBits + 7) / 8 }

    /// The public key's external representation (the bytes whose SHA-1 is `klbl`).
    var publicRepresentation: Data {
        switch backing {
        case .ecPrivate(let key): key.publicX963
        case .ecPublic(let key): key.x963
        case .rsaPrivate(let key): key.key.publicKey.pkcs1DERRepresentation
        case .rsaPublic(let key): key.der
        case .token(let key): key.publicKey.x963Representation
        }
    }

    /// The key's application label: SHA-1 of the public key's external representation.
    var applicationLabel: Data { Data(Insecure.SHA1.hash(data: publicRepresentation)) }

    /// A description such as `<SecKeyRef curve type: kSecECCurveSecp256r1, algorithm id: 3, key type:
    /// ECPrivateKey, version: 4, block size: 256 bits, addr: 0x…>`; never any key material.
    public var description: String {
        let address = String(UInt(bitPattern: ObjectIdentifier(self).hashValue), radix: 16)
        let kind = isPrivate ? "PrivateKey" : "PublicKey"
        if isEC {
            let curve = "kSecECCurveSecp\(sizeInBits)r1"
            return "<SecKeyRef curve type: \(curve), algorithm id: 3, key type: EC\(kind), version: 4, "
                + "block size: \(sizeInBits) bits, addr: 0x\(address)>"
        }
        return "<SecKeyRef algorithm id: 1, key type: RSA\(kind), version: 4, block size: \(sizeInBits) bits, "
            + "addr: 0x\(address)>"
    }

    /// Keys are equal when both are public or both private and their key material is the same.
    public static func == (lhs: SecKey, rhs: SecKey) -> Bool {
        lhs === rhs
            || (lhs.isPrivate == rhs.isPrivate && lhs.isEC == rhs.isEC
                && lhs.externalRepresentation == rhs.externalRepresentation)
    }

    /// Hashes the key class and key material (Apple's `SecKey` has no hash; Linux gives equal keys equal hashes).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(isPrivate)
        hasher.combine(externalRepresentation)
    }
}

// MARK: - Key material

/// The NIST curves swift-crypto provides.
enum ECCurve: Sendable, CaseIterable {
    case p256, p384, p521

    /// The key size in bits.
    var bits: Int {
        switch self {
        case .p256: 256
        case .p384: 384
        case .p521: 521
        }
    }

    /// The field size in bytes.
    var byteCount: Int { (bits + 7) / 8 }

    /// The length of an X9.63 public key, `04‖X‖Y`.
    var publicLength: Int { 1 + 2 * byteCount }

    /// The length of an X9.63 private key, `04‖X‖Y‖K`.
    var privateLength: Int { 1 + 3 * byteCount }

    /// The curve of a key size in bits.
    init?(bits: Int) {
        guard let curve = Self.allCases.first(where: { $0.bits == bits }) else { return nil }
        self = curve
    }
}

/// The private half of an EC key, whatever its curve.
protocol ECPrivateKeyBacking: Sendable {
    var curve: ECCurve { get }
    /// `04‖X‖Y‖K`.
    var x963: Data { get }
    /// `04‖X‖Y`.
    var publicX963: Data { get }
    var publicBacking: any ECPublicKeyBacking { get }
    /// An ECDSA signature over `digest`: DER (X9.62) or `r‖s` (RFC 4754).
    func ecdsaSignature(digest: Data, format: ECDSAFormat) throws -> Data
    /// The ECDH shared x-coordinate with the peer's X9.63 public key on the same curve.
    func sharedSecret(peerX963: Data) throws -> SharedSecret
}

/// The public half of an EC key, whatever its curve.
protocol ECPublicKeyBacking: Sendable {
    var curve: ECCurve { get }
    /// `04‖X‖Y`.
    var x963: Data { get }
    /// Whether `signature` (DER or `r‖s`) is a valid ECDSA signature of `digest`; `false` when it does
    /// not parse.
    func isValidECDSA(_ signature: Data, format: ECDSAFormat, digest: Data) -> Bool
}

/// A digest of any length, as the caller passed it: swift-crypto's ECDSA signs the bytes it is given.
struct CallerDigest: Digest {
    let bytes: Data

    static var byteCount: Int { 0 }

    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes(body)
    }

    func makeIterator() -> Data.Iterator { bytes.makeIterator() }

    var description: String { "CallerDigest(\(bytes.count) bytes)" }
}

/// An RSA private key and its PKCS#1 DER.
struct RSAPrivateKeyBacking: Sendable {
    let key: _RSA.Signing.PrivateKey
    let der: Data
}

/// An RSA public key and its PKCS#1 DER.
struct RSAPublicKeyBacking: Sendable {
    let key: _RSA.Signing.PublicKey
    let der: Data
}

/// The material of a ``SecKey``.
enum KeyBacking: Sendable {
    case ecPrivate(any ECPrivateKeyBacking)
    case ecPublic(any ECPublicKeyBacking)
    case rsaPrivate(RSAPrivateKeyBacking)
    case rsaPublic(RSAPublicKeyBacking)
    /// A token key's handle; its private key is where the keychain's keys are.
    case token(TokenKeyBacking)

    /// The external representation; for a token key, which has none, its handle (so that two
    /// references to the same token key are equal).
    var externalRepresentation: Data {
        switch self {
        case .ecPrivate(let key): key.x963
        case .ecPublic(let key): key.x963
        case .rsaPrivate(let key): key.der
        case .rsaPublic(let key): key.der
        case .token(let key): key.handle
        }
    }
}

// MARK: - Errors

/// A failure inside a `SecKey` function: an `OSStatus` and a message that never holds key bytes.
struct KeyFailure: Error {
    var status: OSStatus
    var message: String

    init(_ status: OSStatus, _ message: String) {
        self.status = status
        self.message = message
    }

    /// The error Apple reports for an algorithm the key cannot run.
    static func unsupported(_ algorithm: SecKeyAlgorithm, _ key: SecKey) -> KeyFailure {
        KeyFailure(errSecParam, "\(key): algorithm not supported by the key \(algorithm.rawValue as String)")
    }
}

/// The `CFError` of a status and message, in `NSOSStatusErrorDomain`.
func keyError(_ status: OSStatus, _ message: String) -> CFError {
    NSError(domain: NSOSStatusErrorDomain, code: Int(status), userInfo: [NSLocalizedDescriptionKey: message])
}

/// Runs `body`; on failure stores a retained error in `error` (if given) and returns `nil`.
func keyResult<T>(_ slot: UnsafeMutablePointer<Unmanaged<CFError>?>?, _ body: () throws -> T) -> T? {
    do {
        return try body()
    } catch {
        store(error, in: slot)
        return nil
    }
}

/// Stores a retained `CFError` for a failure in `slot`, if there is a slot.
func store(_ failure: any Error, in slot: UnsafeMutablePointer<Unmanaged<CFError>?>?) {
    guard let slot else { return }
    let converted: KeyFailure =
        switch failure {
        case let failure as KeyFailure: failure
        case let failure as SecError: KeyFailure(failure.status, "operation failed (\(failure.status))")
        case let failure as KeychainError: KeyFailure(failure.osStatus, failure.message)
        default: KeyFailure(errSecParam, "operation failed")
        }
    slot.pointee = Unmanaged.passRetained(keyError(converted.status, converted.message))
}

// MARK: - Type identifiers

/// The type identifier of a Core Foundation object's class.
public typealias CFTypeID = UInt

/// Returns the type identifier of an object: ``SecKeyGetTypeID()`` for a key,
/// ``CFStringGetTypeID()`` for a string, and so on.
///
/// ```swift
/// if CFGetTypeID(value) == SecKeyGetTypeID() { let key = value as! SecKey }
/// ```
/// - Parameter cf: The object.
/// - Returns: Its type identifier; objects of other classes get an identifier of their own class.
public func CFGetTypeID(_ cf: CFTypeRef!) -> CFTypeID {
    switch cf {
    case is SecKey: return SecKeyGetTypeID()
    case is SecAccessControl: return SecAccessControlGetTypeID()
    case is SecCertificate: return SecCertificateGetTypeID()
    case is SecIdentity: return SecIdentityGetTypeID()
    case is SecPolicy: return SecPolicyGetTypeID()
    case is SecTrust: return SecTrustGetTypeID()
    case let number as NSNumber: return cfBooleanValue(number) != nil ? CFBooleanGetTypeID() : CFNumberGetTypeID()
    case is NSString: return CFStringGetTypeID()
    case is NSData: return CFDataGetTypeID()
    case is NSDictionary: return CFDictionaryGetTypeID()
    case is NSArray: return CFArrayGetTypeID()
    case is NSDate: return CFDateGetTypeID()
    case is NSError: return CFErrorGetTypeID()
    default: return 1000 + UInt(bitPattern: ObjectIdentifier(type(of: cf as AnyObject)).hashValue) % 1_000_000
    }
}

/// The type identifier of strings (Apple's value, 7).
public func CFStringGetTypeID() -> CFTypeID { 7 }
/// The type identifier of dictionaries (Apple's value, 18).
public func CFDictionaryGetTypeID() -> CFTypeID { 18 }
/// The type identifier of arrays (Apple's value, 19).
public func CFArrayGetTypeID() -> CFTypeID { 19 }
/// The type identifier of data (Apple's value, 20).
public func CFDataGetTypeID() -> CFTypeID { 20 }
/// The type identifier of Booleans (Apple's value, 21).
public func CFBooleanGetTypeID() -> CFTypeID { 21 }
/// The type identifier of numbers (Apple's value, 22).
public func CFNumberGetTypeID() -> CFTypeID { 22 }
/// The type identifier of dates (Apple's value, 42).
public func CFDateGetTypeID() -> CFTypeID { 42 }
/// The type identifier of errors (Linux value).
public func CFErrorGetTypeID() -> CFTypeID { 43 }
/// The type identifier of ``SecKey`` objects.
public func SecKeyGetTypeID() -> CFTypeID { 0x5EC0_0001 }
/// The type identifier of ``SecAccessControl`` objects.
public func SecAccessControlGetTypeID() -> CFTypeID { 0x5EC0_0002 }

// MARK: - Creating keys

/// Generates a new private key (and with it its public key).
///
/// ```swift
/// var error: Unmanaged<CFError>?
/// let key = SecKeyCreateRandomKey([
///     kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom,
///     kSecAttrKeySizeInBits: 256,
///     kSecPrivateKeyAttrs: [kSecAttrIsPermanent: true, kSecAttrApplicationTag: Data("com.example.key".utf8)],
/// ] as CFDictionary, &error)
/// ```
///
/// `kSecAttrKeyType` must be the string `kSecAttrKeyTypeECSECPrimeRandom` (sizes 256, 384, 521) or
/// `kSecAttrKeyTypeRSA` (1024–8192, a multiple of 128; exponent 65537). The parameters of each key are
/// its sub-dictionary (`kSecPrivateKeyAttrs`, `kSecPublicKeyAttrs`) plus every top-level entry it lacks;
/// a key whose parameters hold `kSecAttrIsPermanent` = `true` is added to the keychain (the public key
/// first).
/// - Parameters:
///   - parameters: The key type, size and per-key attributes.
///   - error: On failure, a retained error in `NSOSStatusErrorDomain`: -50 for a missing or unknown type
///     (Apple returns no error there), -25311 for a size not allowed, or the status of storing the key.
/// - Returns: The private key, or `nil`.
public func SecKeyCreateRandomKey(
    _ parameters: CFDictionary, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> SecKey? {
    keyResult(error) {
        let entries = try keyParameters(parameters)
        if let token = entries["tkid"] { return try createTokenKey(token, entries) }
        let privateKey = try generateKey(entries)
        let publicParameters = try mergedParameters(entries, "public")
        let privateParameters = try mergedParameters(entries, "private")
        if cfBooleanValue(publicParameters["perm"] as Any) == true {
            try storeKey(SecKeyCopyPublicKey(privateKey)!, publicParameters)
        }
        if cfBooleanValue(privateParameters["perm"] as Any) == true {
            try storeKey(privateKey, privateParameters)
        }
        return privateKey
    }
}

/// The entries of a parameter dictionary keyed by string; any other key is errSecParam.
func keyParameters(_ dictionary: CFDictionary) throws -> [String: Any] {
    do {
        return try QueryParser.entries(dictionary)
    } catch {
        throw KeyFailure(errSecParam, "parameter dictionary has a key or value of the wrong type")
    }
}

/// Apple's `merge_params`: the sub-dictionary, then every top-level entry it lacks, without the
/// entries that only belong at the top level.
func mergedParameters(_ entries: [String: Any], _ name: String) throws -> [String: Any] {
    var result: [String: Any] = [:]
    if let sub = entries[name] {
        guard let dictionary = sub as? NSDictionary else {
            throw KeyFailure(errSecParam, "\(name) key attributes are not a dictionary")
        }
        result = try keyParameters(dictionary)
    }
    result.merge(entries) { own, _ in own }
    for key in ["public", "private", "type", "bsiz"] { result[key] = nil }
    return result
}

/// Adds a new key to the keychain with its parameters (Apple's `add_key`).
private func storeKey(_ key: SecKey, _ parameters: [String: Any]) throws {
    var dictionary = parameters
    dictionary["v_Ref"] = key
    let status = SecItemAdd(NSDictionary(dictionary: dictionary), nil)
    guard status == errSecSuccess else {
        throw KeyFailure(status, "failed to add key to keychain: \(key)")
    }
}

/// Generates the private key a parameter dictionary describes.
private func generateKey(_ entries: [String: Any]) throws -> SecKey {
    let type = entries["type"].flatMap(queryString)
    let bits = entries["bsiz"].map(lenientInteger) ?? -1
    switch type {
    case "73":
        guard let curve = ECCurve(bits: bits) else {
            throw KeyFailure(errSecKeySizeNotAllowed, "EC key size \(bits) is not supported")
        }
        return SecKey(.ecPrivate(randomECKey(curve)))
    case "42":
        guard (1024...8192).contains(bits), bits % 128 == 0 else {
            throw KeyFailure(errSecKeySizeNotAllowed, "RSA key size \(bits) is not supported")
        }
        do {
            let key = try _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: bits))
            return SecKey(.rsaPrivate(RSAPrivateKeyBacking(key: key, der: key.derRepresentation)))
        } catch {
            throw KeyFailure(errSecKeySizeNotAllowed, "RSA key generation failed")
        }
    default:
        throw KeyFailure(errSecParam, "incorrect or missing kSecAttrKeyType in key generation request")
    }
}

func randomECKey(_ curve: ECCurve) -> any ECPrivateKeyBacking {
    switch curve {
    case .p256: P256.Signing.PrivateKey()
    case .p384: P384.Signing.PrivateKey()
    case .p521: P521.Signing.PrivateKey()
    }
}

/// Apple's `getIntValue`: a number, or the leading integer of a string (`CFStringGetIntValue`: 0 when
/// there is none); anything else is 0.
func lenientInteger(_ value: Any) -> Int {
    if let string = queryString(value) {
        let trimmed = string.drop(while: { $0 == " " || $0 == "\t" || $0 == "\n" })
        var digits = ""
        for (index, character) in trimmed.enumerated() {
            if character.isASCII, character.isNumber || (index == 0 && (character == "-" || character == "+")) {
                digits.append(character)
            } else {
                break
            }
        }
        return Int(digits) ?? 0
    }
    if let number = value as? NSNumber { return number.intValue }
    return 0
}

/// Apple's `SecKeyParamsAsInt64`: a number, or a string that is exactly a decimal integer.
private func exactInteger(_ value: Any?) -> Int? {
    guard let value else { return nil }
    if let string = queryString(value) {
        guard let integer = Int(string), String(integer) == string else { return nil }
        return integer
    }
    if cfBooleanValue(value) == nil, let number = value as? NSNumber { return number.intValue }
    return nil
}

/// Creates a key from its external representation.
///
/// ```swift
/// let key = SecKeyCreateWithData(x963 as CFData, [
///     kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom,
///     kSecAttrKeyClass: kSecAttrKeyClassPublic,
/// ] as CFDictionary, &error)
/// ```
///
/// Formats: EC X9.63, `04‖X‖Y` (public, 65/97/133 bytes) or `04‖X‖Y‖K` (private, 97/145/199 bytes);
/// RSA public PKCS#1 `RSAPublicKey` or SPKI; RSA private PKCS#1 `RSAPrivateKey`.
/// - Parameters:
///   - keyData: The key bytes.
///   - attributes: `kSecAttrKeyType` and `kSecAttrKeyClass` (each a number or an exact decimal string).
///   - error: On failure: -50 for a missing or bad type or class or bad bytes, -4 for a symmetric class.
/// - Returns: The key, or `nil`.
public func SecKeyCreateWithData(
    _ keyData: CFData, _ attributes: CFDictionary, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> SecKey? {
    keyResult(error) {
        let entries = try keyParameters(attributes)
        guard let type = exactInteger(entries["type"]) else {
            throw KeyFailure(errSecParam, "Unsupported key type: \(entries["type"].map { "\($0)" } ?? "missing")")
        }
        guard let keyClass = exactInteger(entries["kcls"]) else {
            throw KeyFailure(errSecParam, "Unsupported key class: \(entries["kcls"].map { "\($0)" } ?? "missing")")
        }
        if let token = entries["tkid"] { try refuseTokenKeyImport(token) }
        let data = bytes(of: keyData)
        switch (type, keyClass) {
        case (73, 0), (43, 0): return try importECPublic(data)
        case (73, 1), (43, 1): return try importECPrivate(data)
        case (42, 0): return try importRSAPublic(data)
        case (42, 1): return try importRSAPrivate(data)
        case (73, 2), (43, 2), (42, 2): throw KeyFailure(errSecUnimplemented, "Unsupported symmetric key type: \(type)")
        case (73, _), (43, _), (42, _): throw KeyFailure(errSecParam, "Unsupported key class: \(keyClass)")
        default: throw KeyFailure(errSecParam, "Unsupported key type: \(type)")
        }
    }
}

/// An EC public key from `04‖X‖Y`; the curve comes from the length.
func importECPublic(_ data: Data) throws -> SecKey {
    let failure = KeyFailure(errSecParam, "EC public key creation from data failed")
    guard let curve = ECCurve.allCases.first(where: { $0.publicLength == data.count }), data.first == 4 else {
        throw failure
    }
    do {
        let key: any ECPublicKeyBacking =
            switch curve {
            case .p256: try P256.Signing.PublicKey(x963Representation: data)
            case .p384: try P384.Signing.PublicKey(x963Representation: data)
            case .p521: try P521.Signing.PublicKey(x963Representation: data)
            }
        return SecKey(.ecPublic(key))
    } catch {
        throw failure
    }
}

/// An EC private key from `04‖X‖Y‖K`; the curve comes from the length.
private func importECPrivate(_ data: Data) throws -> SecKey {
    let failure = KeyFailure(errSecParam, "EC private key creation from data failed")
    guard let curve = ECCurve.allCases.first(where: { $0.privateLength == data.count }), data.first == 4 else {
        throw failure
    }
    do {
        let key: any ECPrivateKeyBacking =
            switch curve {
            case .p256: try P256.Signing.PrivateKey(x963Representation: data)
            case .p384: try P384.Signing.PrivateKey(x963Representation: data)
            case .p521: try P521.Signing.PrivateKey(x963Representation: data)
            }
        return SecKey(.ecPrivate(key))
    } catch {
        throw failure
    }
}

/// An RSA public key from PKCS#1 or SPKI DER; exported as PKCS#1.
func importRSAPublic(_ data: Data) throws -> SecKey {
    guard let key = try? _RSA.Signing.PublicKey(unsafeDERRepresentation: data) else {
        throw KeyFailure(errSecParam, "RSA public key creation from data failed")
    }
    return SecKey(.rsaPublic(RSAPublicKeyBacking(key: key, der: key.pkcs1DERRepresentation)))
}

/// An RSA private key from PKCS#1 DER only (PKCS#8 is refused, as on Apple platforms).
private func importRSAPrivate(_ data: Data) throws -> SecKey {
    guard let key = try? _RSA.Signing.PrivateKey(unsafeDERRepresentation: data), key.derRepresentation == data else {
        throw KeyFailure(errSecParam, "RSA private key creation from data failed")
    }
    return SecKey(.rsaPrivate(RSAPrivateKeyBacking(key: key, der: data)))
}

// MARK: - Reading keys

/// Returns a key's external representation: X9.63 for EC keys, PKCS#1 DER for RSA keys, private
/// keys included, except token (Secure Enclave) private keys, which never leave their token.
///
/// - Parameters:
///   - key: The key.
///   - error: For a token private key, a retained error with errSecUnimplemented (-4), as on Apple
///     platforms; not written for software keys, which always export.
/// - Returns: The key bytes, or `nil` for a token private key.
public func SecKeyCopyExternalRepresentation(
    _ key: SecKey, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFData? {
    if case .token = key.backing {
        store(KeyFailure(errSecUnimplemented, "export not implemented for key \(key)"), in: error)
        return nil
    }
    return NSData(data: key.externalRepresentation)
}

/// Returns the public key of a key pair.
///
/// - Parameter key: A private or public key.
/// - Returns: The public key (the key itself when it is public).
public func SecKeyCopyPublicKey(_ key: SecKey) -> SecKey? {
    switch key.backing {
    case .ecPrivate(let privateKey): SecKey(.ecPublic(privateKey.publicBacking))
    case .rsaPrivate(let privateKey):
        SecKey(
            .rsaPublic(
                RSAPublicKeyBacking(key: privateKey.key.publicKey, der: privateKey.key.publicKey.pkcs1DERRepresentation)
            ))
    case .token(let token): SecKey(.ecPublic(token.publicKey))
    case .ecPublic, .rsaPublic: key
    }
}

/// Returns a key's block size in bytes: the field size of an EC key (32, 48, 66), the modulus size of
/// an RSA key.
///
/// - Parameter key: The key.
/// - Returns: The block size in bytes.
public func SecKeyGetBlockSize(_ key: SecKey) -> Int {
    key.blockSize
}

/// Returns the attributes Apple reports for a key.
///
/// A token (Secure Enclave) private key has no `v_Data`, reports `extr` false and `sens` true, and
/// has `tkid` `"com.apple.setoken"`.
///
/// `class` `"keys"`; `kcls` `"0"`/`"1"`; `type` `"73"`/`"42"`; `bsiz` and `esiz` the size in bits;
/// `klbl` the SHA-1 of the public key bytes; `perm`, `priv`, `modi`, `extr` true; `sens`, `asen`,
/// `next`, `snrc`, `vyrc` false; the usage flags of the key class; `v_Data` the key bytes.
/// - Parameter key: The key.
/// - Returns: The attributes.
public func SecKeyCopyAttributes(_ key: SecKey) -> CFDictionary? {
    var builder = ResultDictionaryBuilder(capacity: 24)
    for (name, value) in keyAttributes(key) {
        builder.append(name, value)
    }
    return builder.build()
}

/// The attribute objects of ``SecKeyCopyAttributes(_:)``, in order.
func keyAttributes(_ key: SecKey) -> [(String, AnyObject)] {
    let yes = kCFBooleanTrue!
    let no = kCFBooleanFalse!
    func flag(_ value: Bool) -> AnyObject { value ? yes : no }
    let isPrivate = key.isPrivate
    let bits = NSNumber(value: key.sizeInBits)
    if case .token = key.backing {
        // Apple's token keys (`SecCTKKey.m:511-576`): no key bytes, the token's identifier, not
        // extractable, sensitive.
        return [
            ("class", "keys" as NSString), ("kcls", "1" as NSString), ("klbl", key.applicationLabel as NSData),
            ("type", "73" as NSString), ("bsiz", bits), ("esiz", bits),
            ("perm", yes), ("priv", yes), ("modi", yes), ("extr", no),
            ("sens", yes), ("asen", yes), ("next", yes), ("snrc", no), ("vyrc", no),
            ("encr", no), ("vrfy", no), ("wrap", no), ("decr", yes), ("sign", yes), ("unwp", yes), ("drve", yes),
            ("tkid", TokenKeys.secureEnclave as NSString),
        ]
    }
    return [
        ("class", "keys" as NSString),
        ("kcls", (isPrivate ? "1" : "0") as NSString),
        ("klbl", key.applicationLabel as NSData),
        ("type", key.keyTypeValue as NSString),
        ("bsiz", bits), ("esiz", bits),
        ("perm", yes), ("priv", yes), ("modi", yes), ("extr", yes),
        ("sens", no), ("asen", no), ("next", no), ("snrc", no), ("vyrc", no),
        ("encr", flag(!isPrivate)), ("vrfy", flag(!isPrivate)), ("wrap", flag(!isPrivate)),
        // Apple quirk: an RSA public key reports decrypt (a raw public-exponent operation).
        ("decr", flag(isPrivate || !key.isEC)),
        ("sign", flag(isPrivate)), ("unwp", flag(isPrivate)),
        // Derive: EC private keys only.
        ("drve", flag(isPrivate && key.isEC)),
        ("v_Data", key.externalRepresentation as NSData),
    ]
}
