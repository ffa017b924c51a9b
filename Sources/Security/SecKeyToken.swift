// Secure Enclave token keys (`kSecAttrTokenID` = `kSecAttrTokenIDSecureEnclave`; see
// docs/keys-and-certificates.md, "Secure Enclave keys").
//
// Linux decisions:
// - The "Secure Enclave" is the process that holds the keychain's keys: the agent when it runs,
//   this process otherwise (KeychainCore's TokenKeys.swift). A token `SecKey` holds the public key,
//   an opaque handle and the keychain that holds the key; every private-key operation is a request
//   to that keychain. The private key never reaches this process when the agent runs.
// - As the real Secure Enclave: P-256 only (-50 otherwise), never exported (-4), signs, does ECDH
//   and decrypts ECIES; `kSecAttrAccessControl` with `.privateKeyUsage` is accepted. A permanent
//   token key is stored with a "this device only" protection (bound to this machine's device key).
// - A token key that is not permanent can be used while the process that made it runs (the
//   agent, or this process); store it (`kSecAttrIsPermanent`) to keep it longer.
// - Other token IDs are errSecUnimplemented (-4), as on Apple platforms without CryptoTokenKit.

internal import Crypto
internal import _SecurityFoundation
internal import KeychainModel

/// A token private key: its public key, its handle, the keychain that holds it, and the
/// `LAContext` it was found or made with (`kSecUseAuthenticationContext`), whose evaluation
/// spares its uses the question its access control asks.
struct TokenKeyBacking: Sendable {
    let publicKey: P256.Signing.PublicKey
    let handle: Data
    let holder: any TokenKeyHolder
    var context: (any OwnerProofSource)? = nil

    /// Runs a request where the key is, offering the context's proof; engine errors keep their
    /// status.
    func run(_ request: TokenKeyRequest) throws -> Data {
        var request = request
        request.ownerProof = context?.ownerProof()
        do {
            return try holder.useTokenKey(handle, request)
        } catch let error as KeychainError {
            throw KeyFailure(error.osStatus, error.message)
        }
    }

    /// An ECDSA signature of `digest`, DER or `r‖s`.
    func ecdsaSignature(digest: Data, format: ECDSAFormat) throws -> Data {
        let raw = try run(TokenKeyRequest(.sign, input: digest))
        guard format == .x962 else { return raw }
        do {
            return try P256.Signing.ECDSASignature(rawRepresentation: raw).derRepresentation
        } catch {
            throw KeyFailure(errSecInternalComponent, "the token returned a malformed signature")
        }
    }

    /// ECDH with a peer's X9.63 public key: the shared x-coordinate, or the X9.63 KDF's output.
    func keyExchange(peer: Data, kdf: KeyHash?, sharedInfo: Data = Data(), size: Int = 0) throws -> Data {
        guard peer.count == ECCurve.p256.publicLength else {
            if (try? importECPublic(peer)) != nil {
                throw KeyFailure(errSecDecode, "ECDH: public key is on a different curve")
            }
            throw KeyFailure(errSecParam, "ECDH: bad public key")
        }
        let hash: Int
        switch kdf {
        case nil: hash = 0
        case .sha1?: hash = 1
        case .sha256?: hash = 256
        case .sha384?: hash = 384
        case .sha512?: hash = 512
        case .sha224?: throw KeyFailure(errSecParam, "SHA-224 is not available")
        }
        return try run(
            TokenKeyRequest(.keyExchange, input: peer, kdfHash: hash, sharedInfo: sharedInfo, outputSize: size))
    }
}

/// The error for a token other than the Secure Enclave's.
private func tokenUnavailable() -> KeyFailure {
    KeyFailure(errSecUnimplemented, "CryptoTokenKit is not available")
}

/// `SecKeyCreateWithData` with a token ID: a token key cannot be imported (the Secure Enclave
/// makes its own keys).
func refuseTokenKeyImport(_ token: Any) throws {
    guard queryString(token) == TokenKeys.secureEnclave else { throw tokenUnavailable() }
    throw KeyFailure(errSecUnimplemented, "keys cannot be imported into the Secure Enclave")
}

/// `SecKeyCreateRandomKey` with a token ID: a P-256 key made where the keychain's keys are, stored
/// when its parameters hold `kSecAttrIsPermanent`.
func createTokenKey(_ token: Any, _ entries: [String: Any]) throws -> SecKey {
    guard queryString(token) == TokenKeys.secureEnclave else { throw tokenUnavailable() }
    let type = entries["type"].flatMap(queryString)
    let bits = entries["bsiz"].map(lenientInteger) ?? -1
    guard type == "73", bits == 256 else {
        throw KeyFailure(errSecParam, "the Secure Enclave makes P-256 (kSecAttrKeyTypeECSECPrimeRandom, 256) keys only")
    }
    let parameters = try mergedParameters(entries, "private")
    let permanent = cfBooleanValue(parameters["perm"] as Any) == true
    var dictionary = parameters
    for (name, value) in tokenItemAttributes() where dictionary[name] == nil { dictionary[name] = value }
    dictionary["class"] = "keys" as NSString
    let parsed: ParsedQuery
    do {
        parsed = try QueryParser(operation: .add).parse(NSDictionary(dictionary: dictionary))
    } catch {
        throw KeyFailure(osStatus(of: error), "bad token key attributes")
    }
    let keychain = try database(for: parsed.keychains?.first)
    guard let holder = keychain as? any TokenKeyHolder else {
        throw KeyFailure(errSecUnimplemented, "this keychain cannot hold token keys")
    }
    let template = permanent ? Item(class: .key, attributes: parsed.attributes) : nil
    let created: (publicKey: Data, handle: Data)
    do {
        created = try holder.createTokenKey(storing: template)
    } catch let error as KeychainError {
        throw KeyFailure(error.osStatus, "failed to create the token key: \(error.message)")
    }
    return try tokenKey(
        publicKey: created.publicKey, handle: created.handle, holder: holder,
        context: parsed.authenticationContext as? any OwnerProofSource)
}

/// The attributes a stored token key gets unless its parameters say otherwise.
private func tokenItemAttributes() -> [(String, AnyObject)] {
    let yes = kCFBooleanTrue!
    let no = kCFBooleanFalse!
    return [
        ("kcls", NSNumber(value: 1)), ("type", NSNumber(value: 73)), ("bsiz", NSNumber(value: 256)),
        ("esiz", NSNumber(value: 256)), ("perm", yes), ("priv", yes), ("modi", yes), ("extr", no), ("sens", yes),
        ("asen", yes), ("next", yes), ("snrc", no), ("vyrc", no), ("encr", no), ("vrfy", no), ("wrap", no),
        ("decr", yes), ("sign", yes), ("unwp", yes), ("drve", yes),
    ]
}

/// A token private key reference, used with `context`'s proof.
func tokenKey(
    publicKey: Data, handle: Data, holder: any TokenKeyHolder, context: (any OwnerProofSource)? = nil
) throws -> SecKey {
    guard let key = try? P256.Signing.PublicKey(x963Representation: publicKey) else {
        throw KeyFailure(errSecInternalComponent, "the token returned a malformed public key")
    }
    return SecKey(.token(TokenKeyBacking(publicKey: key, handle: handle, holder: holder, context: context)))
}

/// The reference of a stored token key (its item's secret, as the keychain gives it to callers,
/// is its public key), used with `context`'s proof, or `nil` when `source` cannot hold token keys.
func storedTokenKey(_ item: Item, source: (any KeychainHandle)?, context: (any OwnerProofSource)? = nil) -> SecKey? {
    guard let identity = item.persistentID, let publicKey = item.data,
        let holder = (source ?? (try? database(for: nil))) as? any TokenKeyHolder
    else { return nil }
    return try? tokenKey(
        publicKey: publicKey, handle: storedTokenKeyHandle(identity), holder: holder, context: context)
}

/// `SecItemAdd` of a token key reference (`kSecValueRef`): the keychain that made the key stores it
/// (a key made without `kSecAttrIsPermanent`, or a copy of a stored one) with the dictionary's
/// attributes; `kSecReturnRef` gives the stored key. Other result types are not returned.
/// - Returns: `false` when the dictionary holds no token key reference (nothing was done).
/// - Throws: errSecParam for a class other than `kSecClassKey`; the keychain's errors
///   (errSecItemNotFound when the key's maker is not that keychain's process, errSecDuplicateItem).
func addTokenKeyReference(_ dictionary: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) throws -> Bool {
    guard let key = dictionary.object(forKey: "v_Ref" as NSString) as? SecKey, case .token(let token) = key.backing
    else { return false }
    var entries = try QueryParser.entries(dictionary)
    if let itemClass = entries["class"], queryString(itemClass) != "keys" { throw SecError(errSecParam) }
    let returnsRef = cfBooleanValue(entries["r_Ref"] as Any) == true
    for name in ["v_Ref", "r_Ref", "r_Data", "r_Attributes", "r_PersistentRef"] { entries[name] = nil }
    for (name, value) in tokenItemAttributes() where entries[name] == nil { entries[name] = value }
    entries["class"] = "keys" as NSString
    if entries["klbl"] == nil { entries["klbl"] = key.applicationLabel as NSData }
    let parsed = try QueryParser(operation: .add).parse(NSDictionary(dictionary: entries))
    guard let holder = try database(for: parsed.keychains?.first) as? any TokenKeyHolder else {
        throw SecError(errSecUnimplemented)
    }
    let handle = try holder.storeTokenKey(token.handle, as: Item(class: .key, attributes: parsed.attributes))
    if returnsRef, let result {
        result.pointee = SecKey(.token(TokenKeyBacking(publicKey: token.publicKey, handle: handle, holder: holder)))
    }
    return true
}
