// SecKeyCreateSignature, SecKeyVerifySignature, SecKeyCreateEncryptedData, SecKeyCreateDecryptedData,
// SecKeyCopyKeyExchangeResult and SecKeyIsAlgorithmSupported, with Apple's algorithms and composite
// constructions (`OSX/sec/Security/SecKeyAdaptors.m`).
//
// Every algorithm runs on swift-crypto/CryptoExtras primitives. What has no primitive there is
// reported unsupported (false, -50): anything with SHA-224 except the ECDSA digest forms, RSA OAEP
// with SHA-384/512, and the raw RSA public-key operation (raw verify, raw encrypt, and the RSA
// public-key decrypt Apple allows).

internal import Crypto
internal import CryptoExtras
public import _SecurityFoundation

/// Whether a key can run an algorithm for an operation.
///
/// ```swift
/// if SecKeyIsAlgorithmSupported(publicKey, .encrypt, .rsaEncryptionOAEPSHA256) { … }
/// ```
/// - Parameters:
///   - key: The key.
///   - operation: Sign, verify, encrypt, decrypt or key exchange.
///   - algorithm: The algorithm.
/// - Returns: `true` when the operation would run (it may still fail on its input).
public func SecKeyIsAlgorithmSupported(
    _ key: SecKey, _ operation: SecKeyOperationType, _ algorithm: SecKeyAlgorithm
) -> Bool {
    (try? supportedSpec(key, operation, algorithm)) != nil
}

/// Signs data with a private key.
///
/// ```swift
/// guard let signature = SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, data as CFData, &error)
/// else { throw error!.takeRetainedValue() as Error }
/// ```
/// - Parameters:
///   - key: The private key.
///   - algorithm: A signature algorithm the key supports.
///   - dataToSign: The message or digest, as the algorithm expects.
///   - error: On failure, a retained error: -50 for an unsupported algorithm or a bad input.
/// - Returns: The signature, or `nil`.
public func SecKeyCreateSignature(
    _ key: SecKey, _ algorithm: SecKeyAlgorithm, _ dataToSign: CFData,
    _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFData? {
    keyResult(error) {
        let spec = try supportedSpec(key, .sign, algorithm)
        return try NSData(data: sign(key, spec, bytes(of: dataToSign)))
    }
}

/// Verifies a signature with a public key.
///
/// - Parameters:
///   - key: The public key.
///   - algorithm: The signature algorithm.
///   - signedData: The message or digest that was signed.
///   - signature: The signature.
///   - error: On failure, a retained error: -67808 (errSecVerifyFailed) for a bad signature, -50 for an
///     unsupported algorithm or a bad input size.
/// - Returns: `true` when the signature is valid.
public func SecKeyVerifySignature(
    _ key: SecKey, _ algorithm: SecKeyAlgorithm, _ signedData: CFData, _ signature: CFData,
    _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> Bool {
    keyResult(error) {
        let spec = try supportedSpec(key, .verify, algorithm)
        guard try verify(key, spec, bytes(of: signedData), bytes(of: signature)) else {
            throw KeyFailure(errSecVerifyFailed, "\(key): signature verification failed")
        }
        return true
    } ?? false
}

/// Encrypts data with a public key.
///
/// - Parameters:
///   - key: The public key.
///   - algorithm: An encryption algorithm the key supports.
///   - plaintext: The data; RSA paddings limit its size.
///   - error: On failure, a retained error: -50 for an unsupported algorithm or input too long.
/// - Returns: The ciphertext, or `nil`.
public func SecKeyCreateEncryptedData(
    _ key: SecKey, _ algorithm: SecKeyAlgorithm, _ plaintext: CFData,
    _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFData? {
    keyResult(error) {
        let spec = try supportedSpec(key, .encrypt, algorithm)
        return try NSData(data: encrypt(key, spec, bytes(of: plaintext)))
    }
}

/// Decrypts data with a private key.
///
/// - Parameters:
///   - key: The private key.
///   - algorithm: The algorithm the data was encrypted with.
///   - ciphertext: The encrypted data.
///   - error: On failure, a retained error: -50 for an unsupported algorithm or bad ciphertext.
/// - Returns: The plaintext, or `nil`.
public func SecKeyCreateDecryptedData(
    _ key: SecKey, _ algorithm: SecKeyAlgorithm, _ ciphertext: CFData,
    _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFData? {
    keyResult(error) {
        let spec = try supportedSpec(key, .decrypt, algorithm)
        return try NSData(data: decrypt(key, spec, bytes(of: ciphertext)))
    }
}

/// Performs an ECDH key exchange, optionally followed by the ANSI X9.63 KDF.
///
/// ```swift
/// let secret = SecKeyCopyKeyExchangeResult(privateKey, .ecdhKeyExchangeStandardX963SHA256, peerPublicKey,
///     [SecKeyKeyExchangeParameter.requestedSize.rawValue: 32] as CFDictionary, &error)
/// ```
/// - Parameters:
///   - privateKey: Our EC private key.
///   - algorithm: An ECDH algorithm.
///   - publicKey: The peer's public key, on the same curve.
///   - parameters: For the KDF variants, `requestedSize` (a number, required) and `sharedInfo` (data).
///   - error: On failure, a retained error: -50 for a missing size or bad peer key, -26275 for a peer key
///     on another curve.
/// - Returns: The shared secret (the x-coordinate) or the derived bytes, or `nil`.
public func SecKeyCopyKeyExchangeResult(
    _ privateKey: SecKey, _ algorithm: SecKeyAlgorithm, _ publicKey: SecKey, _ parameters: CFDictionary,
    _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFData? {
    keyResult(error) {
        guard case .ecdh(_, let kdf) = try supportedSpec(privateKey, .keyExchange, algorithm) else {
            throw KeyFailure.unsupported(algorithm, privateKey)
        }
        let peer = publicKey.isPrivate ? publicKey.publicRepresentation : publicKey.externalRepresentation
        let ours: any ECPrivateKeyBacking
        switch privateKey.backing {
        case .ecPrivate(let key): ours = key
        case .token(let token):
            guard let kdf else { return NSData(data: try token.keyExchange(peer: peer, kdf: nil)) }
            let (info, size) = try kdfParameters(parameters)
            return NSData(data: try token.keyExchange(peer: peer, kdf: kdf, sharedInfo: info, size: size))
        default: throw KeyFailure.unsupported(algorithm, privateKey)
        }
        let secret = try sharedSecret(ours, peer: publicKey.externalRepresentation)
        guard let kdf else { return NSData(data: secret.withUnsafeBytes { Data($0) }) }
        let (info, size) = try kdfParameters(parameters)
        return NSData(data: try x963KDF(kdf, secret, sharedInfo: info, size: size))
    }
}

/// The requested size and shared info of a key exchange with the X9.63 KDF.
private func kdfParameters(_ parameters: CFDictionary) throws -> (sharedInfo: Data, size: Int) {
    let entries = try keyParameters(parameters)
    guard let sizeValue = entries["requestedSize"], cfBooleanValue(sizeValue) == nil,
        let size = (sizeValue as? NSNumber)?.intValue
    else { throw KeyFailure(errSecParam, "kSecKeyKeyExchangeParameterRequestedSize is missing") }
    var info = Data()
    if let value = entries["sharedInfo"] {
        guard let data = try? secretData(value) else {
            throw KeyFailure(errSecParam, "ECDHKeyExchange wrong sharedInfo type (must be CFData/NSData)")
        }
        info = data
    }
    return (info, size)
}

// MARK: - Which key runs which algorithm

/// The construction of `algorithm` when `key` can run it for `operation`; otherwise -50.
func supportedSpec(_ key: SecKey, _ operation: SecKeyOperationType, _ algorithm: SecKeyAlgorithm) throws
    -> AlgorithmSpec
{
    guard let spec = AlgorithmSpec.of(algorithm), spec.serves(operation),
        isSupported(key, operation, spec)
    else { throw KeyFailure.unsupported(algorithm, key) }
    return spec
}

/// Hashes swift-crypto can run for RSA padding (its `DigestType`): SHA-1, SHA-256, SHA-384, SHA-512.
private func rsaHashOK(_ input: SignatureInput) -> Bool {
    switch input {
    case .message(let hash), .digest(let hash): hash.isAvailable
    case .anyDigest: true
    }
}

private func isSupported(_ key: SecKey, _ operation: SecKeyOperationType, _ spec: AlgorithmSpec) -> Bool {
    let signs = operation == .sign || operation == .decrypt || operation == .keyExchange
    // Signing, decrypting and key exchange need the private key; verifying and encrypting the public one.
    guard key.isPrivate == signs else { return false }
    let k = key.blockSize
    switch spec {
    case .ecdsa(let input, _):
        if case .message(let hash) = input { return key.isEC && hash.isAvailable }
        return key.isEC
    case .rsaPKCS1v15(let input), .rsaPSS(let input):
        return !key.isEC && rsaHashOK(input)
    case .rsaSignatureRaw:
        return !key.isEC && operation == .sign
    case .rsaEncryptionRaw:
        return !key.isEC && operation == .decrypt
    case .rsaEncryptionPKCS1:
        return !key.isEC && key.sizeInBits % 8 == 0 && k >= 11
    case .rsaOAEP(let hash), .rsaOAEPAESGCM(let hash):
        return !key.isEC && (hash == .sha1 || hash == .sha256) && key.sizeInBits % 8 == 0
            && k >= 2 * hash.byteCount + 2
    case .ecies(_, _, let hash):
        return key.isEC && hash.isAvailable
    case .ecdh(_, let kdf):
        return key.isEC && (kdf?.isAvailable ?? true)
    }
}

// MARK: - Hashes

/// The bytes of a `CFData`, copied at once (Foundation's `Data(referencing:)` reads an `NSData` byte by
/// byte on Linux).
func bytes(of data: CFData) -> Data {
    data.length == 0 ? Data() : Data(bytes: data.bytes, count: data.length)
}

/// The digest of `data` with a hash swift-crypto has.
func hashData(_ hash: KeyHash, _ data: Data) -> Data {
    switch hash {
    case .sha1: Insecure.SHA1.hash(data: data).withUnsafeBytes { Data($0) }
    case .sha256: SHA256.hash(data: data).withUnsafeBytes { Data($0) }
    case .sha384: SHA384.hash(data: data).withUnsafeBytes { Data($0) }
    case .sha512: SHA512.hash(data: data).withUnsafeBytes { Data($0) }
    case .sha224: preconditionFailure("SHA-224 is reported unsupported before any hashing")
    }
}

/// The digest bytes to sign or verify for an input kind, checking a fixed digest's length.
private func signedDigest(_ input: SignatureInput, _ data: Data, checkLength: Bool) throws -> Data {
    switch input {
    case .message(let hash):
        return hashData(hash, data)
    case .digest(let hash):
        if checkLength, data.count != hash.byteCount {
            throw KeyFailure(errSecParam, "bad digest size for signing with algorithm \(hash.name)")
        }
        return data
    case .anyDigest:
        return data
    }
}

// MARK: - Signatures

private func sign(_ key: SecKey, _ spec: AlgorithmSpec, _ data: Data) throws -> Data {
    switch (key.backing, spec) {
    case (.ecPrivate(let ec), .ecdsa(let input, let format)):
        return try ec.ecdsaSignature(digest: signedDigest(input, data, checkLength: true), format: format)
    case (.token(let token), .ecdsa(let input, let format)):
        return try token.ecdsaSignature(digest: signedDigest(input, data, checkLength: true), format: format)
    case (.rsaPrivate(let rsa), .rsaPKCS1v15(let input)):
        let digest = try signedDigest(input, data, checkLength: false)
        return try rsaPrivateRaw(rsa, emsaPKCS1v15(digest, hash: input.hash, blockSize: key.blockSize))
    case (.rsaPrivate(let rsa), .rsaPSS(let input)):
        return try rsaPSSSign(rsa, input, data)
    case (.rsaPrivate(let rsa), .rsaSignatureRaw):
        return try rsaPrivateRaw(rsa, data)
    default:
        throw KeyFailure(errSecParam, "\(key): algorithm not supported by the key")
    }
}

private func verify(_ key: SecKey, _ spec: AlgorithmSpec, _ data: Data, _ signature: Data) throws -> Bool {
    switch (key.backing, spec) {
    case (.ecPublic(let ec), .ecdsa(let input, let format)):
        let digest = try signedDigest(input, data, checkLength: true)
        if format == .rfc4754, signature.count != 2 * key.blockSize { return false }
        return ec.isValidECDSA(signature, format: format, digest: digest)
    case (.rsaPublic(let rsa), .rsaPKCS1v15(let input)):
        let padded = try leftPadded(signature, to: key.blockSize)
        let (hash, digest) = try pkcs1VerifyDigest(input, data)
        guard let hash else { return false }
        return typedDigest(hash, digest) { typed in
            rsa.key.isValidSignature(.init(rawRepresentation: padded), for: typed, padding: .insecurePKCS1v1_5)
        }
    case (.rsaPublic(let rsa), .rsaPSS(let input)):
        let padded = try leftPadded(signature, to: key.blockSize)
        guard let hash = input.hash else { return false }
        let digest = try signedDigest(input, data, checkLength: false)
        return typedDigest(hash, digest) { typed in
            rsa.key.isValidSignature(.init(rawRepresentation: padded), for: typed, padding: .PSS)
        }
    default:
        throw KeyFailure(errSecParam, "\(key): algorithm not supported by the key")
    }
}

extension SignatureInput {
    /// The hash an input names, if any.
    var hash: KeyHash? {
        switch self {
        case .message(let hash), .digest(let hash): hash
        case .anyDigest: nil
        }
    }
}

/// A signature left-padded with zeros to the block size; longer than the block size is -50.
private func leftPadded(_ data: Data, to size: Int) throws -> Data {
    guard data.count <= size else { throw KeyFailure(errSecParam, "RSA input buffer bad size") }
    return Data(count: size - data.count) + data
}

/// Runs `body` with a swift-crypto digest of `hash` holding `bytes`, or returns `false` when `bytes`
/// is not a digest of that hash's length.
///
/// swift-crypto's RSA picks the padding's hash from the digest's type and has no public way to make a
/// digest from bytes, so this hashes nothing, writes the caller's bytes over a digest value and checks
/// that the digest reads back exactly those bytes before using it.
private func typedDigest(_ hash: KeyHash, _ bytes: Data, _ body: (any Digest) -> Bool) -> Bool {
    func overwrite<D: Digest>(_ digest: D) -> D? {
        var digest = digest
        guard bytes.count == D.byteCount, MemoryLayout<D>.size >= bytes.count else { return nil }
        withUnsafeMutableBytes(of: &digest) { raw in raw.copyBytes(from: bytes) }
        return Array(digest) == Array(bytes) ? digest : nil
    }
    let typed: (any Digest)? =
        switch hash {
        case .sha1: overwrite(Insecure.SHA1.hash(data: Data()))
        case .sha256: overwrite(SHA256.hash(data: Data()))
        case .sha384: overwrite(SHA384.hash(data: Data()))
        case .sha512: overwrite(SHA512.hash(data: Data()))
        case .sha224: nil
        }
    guard let typed else { return false }
    return body(typed)
}

/// The hash and digest a PKCS#1 v1.5 verification checks; for a caller DigestInfo, the hash it names
/// (SHA-1/256/384/512 only) or `nil`.
private func pkcs1VerifyDigest(_ input: SignatureInput, _ data: Data) throws -> (KeyHash?, Data) {
    guard case .anyDigest = input else {
        return (input.hash, try signedDigest(input, data, checkLength: false))
    }
    for hash in [KeyHash.sha1, .sha256, .sha384, .sha512] {
        let prefix = digestInfo(Data(count: hash.byteCount), hash: hash).dropLast(hash.byteCount)
        if data.count == prefix.count + hash.byteCount, data.starts(with: prefix) {
            return (hash, data.dropFirst(prefix.count))
        }
    }
    return (nil, data)
}

// MARK: - RSA building blocks

/// The DER OID bytes (tag, length, value) of a hash, for a PKCS#1 v1.5 DigestInfo.
private func hashOID(_ hash: KeyHash) -> [UInt8] {
    switch hash {
    case .sha1: [0x06, 0x05, 0x2B, 0x0E, 0x03, 0x02, 0x1A]
    case .sha224: [0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x04]
    case .sha256: [0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01]
    case .sha384: [0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02]
    case .sha512: [0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x03]
    }
}

/// A DER tag, length and contents.
private func derElement(_ tag: UInt8, _ contents: Data) -> Data {
    var element = Data([tag])
    let count = contents.count
    if count < 0x80 {
        element.append(UInt8(count))
    } else {
        let bytes = withUnsafeBytes(of: UInt64(count).bigEndian) { Array($0) }.drop(while: { $0 == 0 })
        element.append(0x80 | UInt8(bytes.count))
        element.append(contentsOf: bytes)
    }
    return element + contents
}

/// `DigestInfo ::= SEQUENCE { SEQUENCE { OID, NULL }, OCTET STRING digest }`.
private func digestInfo(_ digest: Data, hash: KeyHash) -> Data {
    let algorithm = derElement(0x30, Data(hashOID(hash)) + Data([0x05, 0x00]))
    return derElement(0x30, algorithm + derElement(0x04, digest))
}

/// EMSA-PKCS1-v1_5: `00 01 FF… 00 ‖ T`, where T is the DigestInfo (or the caller's bytes when no hash).
private func emsaPKCS1v15(_ digest: Data, hash: KeyHash?, blockSize: Int) throws -> Data {
    let t = hash.map { digestInfo(digest, hash: $0) } ?? digest
    guard blockSize >= t.count + 11 else { throw KeyFailure(errSecParam, "RSAsign wrong input data length") }
    return Data([0x00, 0x01]) + Data(repeating: 0xFF, count: blockSize - t.count - 3) + Data([0x00]) + t
}

/// The raw RSA private-key operation (`m^d mod n`) over at most a block of big-endian input, through
/// CryptoExtras' blind-signing key (`RSA_sign_raw` without padding).
private func rsaPrivateRaw(_ key: RSAPrivateKeyBacking, _ input: Data) throws -> Data {
    let size = (key.key.keySizeInBits + 7) / 8
    let padded = try leftPadded(input, to: size)
    do {
        let raw = try _RSA.BlindSigning.PrivateKey(
            unsafeDERRepresentation: key.der, parameters: .RSABSSA_SHA384_PSS_Deterministic)
        return try raw.blindSignature(for: padded).rawRepresentation
    } catch {
        throw KeyFailure(errSecParam, "RSA digest too big")
    }
}

/// PSS signing: MGF1 with the same hash, salt = hash length.
private func rsaPSSSign(_ key: RSAPrivateKeyBacking, _ input: SignatureInput, _ data: Data) throws -> Data {
    guard let hash = input.hash else { throw KeyFailure(errSecParam, "PSS needs a hash") }
    guard key.key.keySizeInBits >= 16 * hash.byteCount + 9 else {
        throw KeyFailure(errSecParam, "RSA key too small for PSS with \(hash.name)")
    }
    let digest = try signedDigest(input, data, checkLength: true)
    var signature: Data?
    var failure: (any Error)?
    _ = typedDigest(hash, digest) { typed in
        do {
            signature = try key.key.signature(for: typed, padding: .PSS).rawRepresentation
        } catch {
            failure = error
        }
        return true
    }
    guard let signature, failure == nil else { throw KeyFailure(errSecParam, "RSA PSS signing failed") }
    return signature
}

// MARK: - Encryption

private func encrypt(_ key: SecKey, _ spec: AlgorithmSpec, _ plaintext: Data) throws -> Data {
    switch (key.backing, spec) {
    case (.rsaPublic(let rsa), .rsaEncryptionPKCS1):
        return try rsaEncrypt(rsa, plaintext, padding: ._WEAK_AND_INSECURE_PKCS_V1_5, overhead: 11)
    case (.rsaPublic(let rsa), .rsaOAEP(let hash)):
        return try rsaEncrypt(rsa, plaintext, padding: oaepPadding(hash), overhead: 2 * hash.byteCount + 2)
    case (.rsaPublic(let rsa), .rsaOAEPAESGCM(let hash)):
        return try rsaAESGCMEncrypt(rsa, hash, plaintext)
    case (.ecPublic(let recipient), .ecies(_, let variableIV, let hash)):
        return try eciesEncrypt(recipient, hash, variableIV: variableIV, plaintext)
    default:
        throw KeyFailure(errSecParam, "\(key): algorithm not supported by the key")
    }
}

private func decrypt(_ key: SecKey, _ spec: AlgorithmSpec, _ ciphertext: Data) throws -> Data {
    switch (key.backing, spec) {
    case (.rsaPrivate(let rsa), .rsaEncryptionRaw):
        return try rsaPrivateRaw(rsa, ciphertext)
    case (.rsaPrivate(let rsa), .rsaEncryptionPKCS1):
        return try rsaDecrypt(rsa, ciphertext, padding: ._WEAK_AND_INSECURE_PKCS_V1_5)
    case (.rsaPrivate(let rsa), .rsaOAEP(let hash)):
        return try rsaDecrypt(rsa, ciphertext, padding: oaepPadding(hash))
    case (.rsaPrivate(let rsa), .rsaOAEPAESGCM(let hash)):
        return try rsaAESGCMDecrypt(rsa, hash, ciphertext)
    case (.ecPrivate(let ours), .ecies(_, let variableIV, let hash)):
        return try eciesDecrypt(ours, hash, variableIV: variableIV, ciphertext)
    case (.token(let token), .ecies(_, let variableIV, let hash)):
        return try tokenECIESDecrypt(token, hash, variableIV: variableIV, ciphertext)
    default:
        throw KeyFailure(errSecParam, "\(key): algorithm not supported by the key")
    }
}

private func oaepPadding(_ hash: KeyHash) -> _RSA.Encryption.Padding {
    hash == .sha1 ? .PKCS1_OAEP : .PKCS1_OAEP_SHA256
}

private func rsaEncrypt(
    _ key: RSAPublicKeyBacking, _ plaintext: Data, padding: _RSA.Encryption.Padding, overhead: Int
) throws -> Data {
    let size = (key.key.keySizeInBits + 7) / 8
    guard plaintext.count <= size - overhead else {
        throw KeyFailure(errSecParam, "RSA encrypt: input too long (\(plaintext.count) bytes)")
    }
    do {
        return try _RSA.Encryption.PublicKey(unsafeDERRepresentation: key.der).encrypt(plaintext, padding: padding)
    } catch {
        throw KeyFailure(errSecParam, "RSA encryption failed")
    }
}

private func rsaDecrypt(_ key: RSAPrivateKeyBacking, _ ciphertext: Data, padding: _RSA.Encryption.Padding)
    throws -> Data
{
    let size = (key.key.keySizeInBits + 7) / 8
    guard ciphertext.count == size else { throw KeyFailure(errSecParam, "RSAdecrypt wrong input size") }
    do {
        return try _RSA.Encryption.PrivateKey(unsafeDERRepresentation: key.der).decrypt(ciphertext, padding: padding)
    } catch {
        throw KeyFailure(errSecParam, "RSAdecrypt wrong input")
    }
}

/// The all-zero 16-byte IV of Apple's RSA-AES-GCM and non-variable-IV ECIES.
private let zeroIV = Data(count: 16)

/// OAEP(session key) ‖ AES-GCM(plaintext; IV 0¹²⁸, AAD = the public key's PKCS#1 DER) ‖ tag.
private func rsaAESGCMEncrypt(_ key: RSAPublicKeyBacking, _ hash: KeyHash, _ plaintext: Data) throws -> Data {
    let sessionKey = SymmetricKey(size: key.key.keySizeInBits >= 4096 ? .bits256 : .bits128)
    let wrapped = try rsaEncrypt(
        key, sessionKey.withUnsafeBytes { Data($0) }, padding: oaepPadding(hash), overhead: 2 * hash.byteCount + 2)
    let sealed = try aesGCMSeal(plaintext, key: sessionKey, iv: zeroIV, aad: key.der)
    return wrapped + sealed
}

private func rsaAESGCMDecrypt(_ key: RSAPrivateKeyBacking, _ hash: KeyHash, _ ciphertext: Data) throws -> Data {
    let size = (key.key.keySizeInBits + 7) / 8
    guard ciphertext.count >= size + 16 else { throw KeyFailure(errSecParam, "RSA-AESGCM: input too short") }
    let sessionKey = try rsaDecrypt(key, ciphertext.prefix(size), padding: oaepPadding(hash))
    guard sessionKey.count == (key.key.keySizeInBits >= 4096 ? 32 : 16) else {
        throw KeyFailure(errSecParam, "RSA-AESGCM: bad session key size")
    }
    let publicDER = key.key.publicKey.pkcs1DERRepresentation
    return try aesGCMOpen(ciphertext.dropFirst(size), key: SymmetricKey(data: sessionKey), iv: zeroIV, aad: publicDER)
}

/// AES-GCM with a 16-byte IV: ciphertext ‖ 16-byte tag.
private func aesGCMSeal(_ plaintext: Data, key: SymmetricKey, iv: Data, aad: Data) throws -> Data {
    do {
        let box = try AES.GCM.seal(plaintext, using: key, nonce: AES.GCM.Nonce(data: iv), authenticating: aad)
        return box.ciphertext + box.tag
    } catch {
        throw KeyFailure(errSecParam, "Failed to aes-gcm encrypt data")
    }
}

private func aesGCMOpen(_ sealed: Data, key: SymmetricKey, iv: Data, aad: Data) throws -> Data {
    guard sealed.count >= 16 else { throw KeyFailure(errSecParam, "Input data too short") }
    do {
        let box = try AES.GCM.SealedBox(
            nonce: AES.GCM.Nonce(data: iv), ciphertext: sealed.dropLast(16), tag: sealed.suffix(16))
        return try AES.GCM.open(box, using: key, authenticating: aad)
    } catch {
        throw KeyFailure(errSecParam, "Failed to aes-gcm decrypt data")
    }
}

// MARK: - ECDH, X9.63 KDF, ECIES

/// The largest X9.63 KDF output accepted (a bound so that an absurd requested size fails, not crashes).
private let maximumKDFOutput = 1 << 20

/// ECDH with a peer's X9.63 public key: -50 for bytes that are no point, -26275 for a point on another curve.
private func sharedSecret(_ ours: any ECPrivateKeyBacking, peer: Data) throws -> SharedSecret {
    guard peer.count == ours.curve.publicLength else {
        if (try? importECPublic(peer)) != nil {
            throw KeyFailure(errSecDecode, "ECDH: public key is on a different curve")
        }
        throw KeyFailure(errSecParam, "ECDH: bad public key")
    }
    do {
        return try ours.sharedSecret(peerX963: peer)
    } catch {
        throw KeyFailure(errSecParam, "ECDH: bad public key")
    }
}

/// ANSI X9.63 KDF over a shared secret.
private func x963KDF(_ hash: KeyHash, _ secret: SharedSecret, sharedInfo: Data, size: Int) throws -> Data {
    guard size > 0, size <= maximumKDFOutput else {
        throw KeyFailure(errSecParam, "ECDHKeyExchange wrong requested size (\(size))")
    }
    let key: SymmetricKey =
        switch hash {
        case .sha1:
            secret.x963DerivedSymmetricKey(using: Insecure.SHA1.self, sharedInfo: sharedInfo, outputByteCount: size)
        case .sha256: secret.x963DerivedSymmetricKey(using: SHA256.self, sharedInfo: sharedInfo, outputByteCount: size)
        case .sha384: secret.x963DerivedSymmetricKey(using: SHA384.self, sharedInfo: sharedInfo, outputByteCount: size)
        case .sha512: secret.x963DerivedSymmetricKey(using: SHA512.self, sharedInfo: sharedInfo, outputByteCount: size)
        case .sha224: throw KeyFailure(errSecParam, "SHA-224 is not available")
        }
    return key.withUnsafeBytes { Data($0) }
}

/// The AES key and IV of Apple's ECIES: X9.63 KDF over Z with the ephemeral public key as shared info;
/// a 16-byte key up to 256-bit curves, 32 above; the IV is the next 16 KDF bytes (variable IV) or zeros.
private func eciesKeyAndIV(_ secret: SharedSecret, _ hash: KeyHash, curve: ECCurve, ephemeral: Data, variableIV: Bool)
    throws -> (SymmetricKey, Data)
{
    let keySize = curve.bits > 256 ? 32 : 16
    let derived = try x963KDF(hash, secret, sharedInfo: ephemeral, size: keySize + (variableIV ? 16 : 0))
    let iv = variableIV ? derived.suffix(16) : zeroIV
    return (SymmetricKey(data: derived.prefix(keySize)), Data(iv))
}

/// ECIES: ephemeral public key ‖ AES-GCM ciphertext ‖ tag.
private func eciesEncrypt(_ recipient: any ECPublicKeyBacking, _ hash: KeyHash, variableIV: Bool, _ plaintext: Data)
    throws -> Data
{
    let ephemeral = randomECKey(recipient.curve)
    let secret = try sharedSecret(ephemeral, peer: recipient.x963)
    let ephemeralPublic = ephemeral.publicX963
    let (key, iv) = try eciesKeyAndIV(
        secret, hash, curve: recipient.curve, ephemeral: ephemeralPublic, variableIV: variableIV)
    return ephemeralPublic + (try aesGCMSeal(plaintext, key: key, iv: iv, aad: Data()))
}

/// ECIES decryption with a token key: the token runs ECDH and the X9.63 KDF (the key and IV of
/// ``eciesKeyAndIV``), this process AES-GCM.
private func tokenECIESDecrypt(_ token: TokenKeyBacking, _ hash: KeyHash, variableIV: Bool, _ ciphertext: Data)
    throws -> Data
{
    let pointLength = ECCurve.p256.publicLength
    guard ciphertext.count >= pointLength else {
        throw KeyFailure(errSecParam, "too small input packet for ECIES decrypt")
    }
    let ephemeral = Data(ciphertext.prefix(pointLength))
    var derived = try token.keyExchange(
        peer: ephemeral, kdf: hash, sharedInfo: ephemeral, size: 16 + (variableIV ? 16 : 0))
    defer { derived.resetBytes(in: 0..<derived.count) }
    let iv = variableIV ? Data(derived.suffix(16)) : zeroIV
    return try aesGCMOpen(
        Data(ciphertext.dropFirst(pointLength)), key: SymmetricKey(data: derived.prefix(16)), iv: iv, aad: Data())
}

private func eciesDecrypt(_ ours: any ECPrivateKeyBacking, _ hash: KeyHash, variableIV: Bool, _ ciphertext: Data)
    throws -> Data
{
    let pointLength = ours.curve.publicLength
    guard ciphertext.count >= pointLength else {
        throw KeyFailure(errSecParam, "too small input packet for ECIES decrypt")
    }
    let ephemeral = Data(ciphertext.prefix(pointLength))
    let secret = try sharedSecret(ours, peer: ephemeral)
    let (key, iv) = try eciesKeyAndIV(secret, hash, curve: ours.curve, ephemeral: ephemeral, variableIV: variableIV)
    return try aesGCMOpen(Data(ciphertext.dropFirst(pointLength)), key: key, iv: iv, aad: Data())
}
