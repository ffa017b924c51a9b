// Certificates and identities as keychain items (Apple's `keychain/securityd/SecItemSchema.c`).
//
// - A `SecCertificate` under `kSecValueRef` becomes Apple's certificate attributes (`ctyp`, `cenc`, `subj`,
//   `issr`, `slnr`, `skid`, `pkhh`, `labl` when the caller gives none) and its DER as the item's data,
//   caller keys winning (`SecCertificateCopyAttributeDictionary`, `infer_cert_label`).
// - A `SecIdentity` under `kSecValueRef` is split into its certificate and its private key, as Apple's
//   client does (`SecItem.m` `explode_identity`): on add a duplicate certificate is tolerated, and a
//   duplicate key is reported only when the certificate was a duplicate too; on delete the key is kept
//   while another certificate still names it (`pkhh` == `klbl`).
// - `kSecReturnRef` rebuilds a `SecCertificate` from the stored DER and a `SecIdentity` from the
//   certificate (`certdata`) and the private key of an identity row.
//
// Linux decisions:
// - A certificate added with `kSecValueData` (no reference) is parsed too: its attributes are derived
//   as for a reference (caller keys winning), and bytes that are not a DER certificate are refused with
//   errSecDecode (-26275, Apple's errSecInvalidCertificate). Apple stores such bytes unparsed, with
//   empty issuer and serial number, so that two different certificates collide on the primary key.
// - A `kSecAttrIssuer` value that is a DER Name (a SEQUENCE) is normalized before use, as Apple's client
//   does, so that `SecCertificateCopyNormalizedIssuerSequence`'s result and the raw issuer both match.
// - In a search or an update, a `SecIdentity` under `kSecValueRef` is an identity query on its
//   certificate's type, issuer and serial number.

internal import _SecurityFoundation
internal import KeychainModel
internal import KeychainPKI

/// What a dictionary becomes once a `SecKey` or `SecCertificate` under `kSecValueRef` is replaced by its
/// attributes, and a certificate's `kSecValueData` (on add) has given its derived attributes.
///
/// - Parameters:
///   - dictionary: A SecItem dictionary.
///   - adding: `true` for SecItemAdd (the full attribute set and bytes), `false` for a search, update
///     or delete (the attributes that identify the item).
/// - Returns: The dictionary itself when there is nothing to expand.
/// - Throws: errSecParam when a reference comes with a class of another kind, errSecDecode when a
///   certificate's data is not a DER certificate.
func expandingReference(_ dictionary: CFDictionary, adding: Bool) throws -> CFDictionary {
    let reference = dictionary.object(forKey: "v_Ref" as NSString)
    if reference is SecKey { return try expandingKeyReference(dictionary, adding: adding) }
    if let certificate = reference as? SecCertificate {
        return try merging(
            certificateAttributes(certificate.certificate, full: adding), into: dictionary, expectedClass: "cert")
    }
    guard reference == nil else { return dictionary }
    let issuer = dictionary.object(forKey: "issr" as NSString)
    let isCertificate = dictionary.object(forKey: "class" as NSString).flatMap(queryString) == "cert"
    guard adding && isCertificate || issuer != nil else { return dictionary }
    var entries = try QueryParser.entries(dictionary)
    if let issuer = entries["issr"], let data = try? secretData(issuer), let normalized = normalizedName(data) {
        entries["issr"] = NSData(data: normalized)
    }
    if adding, isCertificate, let value = entries["v_Data"] {
        // The dictionary's own errors (an attribute certificates do not have, a bad value) come first, as
        // on Apple platforms, where the data is never parsed.
        _ = try QueryParser(operation: .add).parse(dictionary)
        guard let data = try secretData(value) else { throw SecError(errSecParam) }
        guard let certificate = try? X509Certificate(derEncoded: data) else { throw SecError(errSecDecode) }
        for (name, value) in certificateAttributes(certificate, full: true) where entries[name] == nil {
            entries[name] = value
        }
    }
    return NSDictionary(dictionary: entries)
}

/// The normalized content of a DER Name, as Apple stores `issr` and `subj`; `nil` when `data` is not a
/// Name.
private func normalizedName(_ data: Data) -> Data? {
    guard data.first == 0x30, let name = try? DistinguishedName(derEncoded: Array(data)) else { return nil }
    return Data(name.normalizedContent)
}

/// The dictionary's entries with `attributes` added where the caller gave none, without `v_Ref`.
private func merging(
    _ attributes: [(String, AnyObject)], into dictionary: CFDictionary, expectedClass: String
) throws -> CFDictionary {
    let entries = try QueryParser.entries(dictionary)
    if let itemClass = entries["class"], queryString(itemClass) != expectedClass {
        throw SecError(errSecParam)
    }
    var merged: [String: Any] = [:]
    for (name, value) in attributes { merged[name] = value }
    for (name, value) in entries where name != "v_Ref" { merged[name] = value }
    return NSDictionary(dictionary: merged)
}

/// Apple's certificate item attributes (`SecCertificateCopyAttributeDictionary`), the label inferred from
/// the subject summary, and the DER as `v_Data`; with `full` false only the primary key.
func certificateAttributes(_ certificate: X509Certificate, full: Bool) -> [(String, AnyObject)] {
    let values = certificate.keychainAttributes
    var attributes: [(String, AnyObject)] = [
        ("class", "cert" as NSString),
        ("ctyp", NSNumber(value: values.certificateType)),
        ("issr", NSData(data: Data(values.issuer))),
        ("slnr", NSData(data: Data(values.serialNumber))),
    ]
    guard full else { return attributes }
    attributes.append(("cenc", NSNumber(value: values.certificateEncoding)))
    attributes.append(("subj", NSData(data: Data(values.subject))))
    if let subjectKeyID = values.subjectKeyID { attributes.append(("skid", NSData(data: Data(subjectKeyID)))) }
    attributes.append(("pkhh", NSData(data: Data(values.publicKeyHash))))
    if let label = values.label { attributes.append(("labl", NSString(string: label))) }
    attributes.append(("v_Data", NSData(data: Data(certificate.derBytes))))
    return attributes
}

/// The reference of a stored item: a `SecKey`, `SecCertificate` or `SecIdentity`, or `nil`; a
/// token key's is used with `context`'s proof.
func itemReference(_ item: Item, source: (any KeychainHandle)? = nil, context: (any OwnerProofSource)? = nil)
    -> AnyObject?
{
    switch item.itemClass {
    case .key: return keyReference(item, source: source, context: context)
    case .certificate:
        guard let data = item.data, let certificate = try? X509Certificate(derEncoded: data) else { return nil }
        return SecCertificate(certificate)
    case .identity:
        guard case .data(let der) = item.attributes[AttributeName(rawValue: "certdata")],
            let certificate = try? X509Certificate(derEncoded: der),
            let key = keyReference(identityKeyItem(item), source: source, context: context)
        else { return nil }
        return SecIdentityCreate(nil, SecCertificate(certificate), key)
    default: return nil
    }
}

/// The key item of an identity item (its attributes, data and identity).
private func identityKeyItem(_ item: Item) -> Item {
    var key = Item(class: .key, attributes: item.attributes, data: item.data)
    key.persistentID = item.persistentID
    return key
}

// MARK: - Identity references

/// The identity under `kSecValueRef`, if there is one.
func identityReference(_ dictionary: CFDictionary) -> SecIdentity? {
    dictionary.object(forKey: "v_Ref" as NSString) as? SecIdentity
}

/// The caller's entries without the reference, the class and the return keys.
private func identityBase(_ dictionary: CFDictionary) throws -> [String: Any] {
    let entries = try QueryParser.entries(dictionary)
    if let itemClass = entries["class"], queryString(itemClass) != "idnt" { throw SecError(errSecParam) }
    return entries.filter { name, _ in name != "v_Ref" && name != "class" && !name.hasPrefix("r_") }
}

/// SecItemAdd of a `SecIdentity`: the certificate, then the private key (`explode_identity`).
func addIdentity(
    _ identity: SecIdentity, _ dictionary: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?
) -> OSStatus {
    let base: [String: Any]
    do { base = try identityBase(dictionary) } catch { return osStatus(of: error) }
    var certificateQuery = base
    certificateQuery["v_Ref"] = identity.certificate
    let certificateStatus = SecItemAdd(NSDictionary(dictionary: certificateQuery), nil)
    guard certificateStatus == errSecSuccess || certificateStatus == errSecDuplicateItem else {
        return certificateStatus
    }
    var keyQuery = base
    keyQuery["v_Ref"] = identity.privateKey
    var status = SecItemAdd(NSDictionary(dictionary: keyQuery), nil)
    if status == errSecDuplicateItem && certificateStatus == errSecSuccess { status = errSecSuccess }
    if status == errSecSuccess, let result,
        let wantsRef = dictionary.object(forKey: "r_Ref" as NSString), cfBooleanValue(wantsRef) == true
    {
        result.pointee = identity
    }
    return status
}

/// A search or update dictionary for a `SecIdentity` reference: an identity query on the certificate's
/// type, issuer and serial number.
func identityQuery(_ identity: SecIdentity, _ dictionary: CFDictionary) throws -> CFDictionary {
    var entries = try identityBase(dictionary)
    for (name, value) in try QueryParser.entries(dictionary) where name.hasPrefix("r_") { entries[name] = value }
    for (name, value) in certificateAttributes(identity.certificate.certificate, full: false) {
        entries[name] = value
    }
    entries["class"] = "idnt" as NSString
    return NSDictionary(dictionary: entries)
}

/// SecItemDelete of a `SecIdentity`: the certificate, then the key unless another certificate still
/// names it (`SecItem.m` `explode_identity`).
func deleteIdentity(_ identity: SecIdentity, _ dictionary: CFDictionary) -> OSStatus {
    let base: [String: Any]
    do { base = try identityBase(dictionary) } catch { return osStatus(of: error) }
    var certificateQuery = base
    certificateQuery["v_Ref"] = identity.certificate
    let certificateStatus = SecItemDelete(NSDictionary(dictionary: certificateQuery))
    guard certificateStatus == errSecSuccess || certificateStatus == errSecItemNotFound else {
        return certificateStatus
    }
    var others = base
    others["class"] = "cert" as NSString
    others["pkhh"] = NSData(data: identity.privateKey.applicationLabel)
    if SecItemCopyMatching(NSDictionary(dictionary: others), nil) == errSecSuccess { return certificateStatus }
    var keyQuery = base
    keyQuery["v_Ref"] = identity.privateKey
    let keyStatus = SecItemDelete(NSDictionary(dictionary: keyQuery))
    return certificateStatus == errSecSuccess && keyStatus == errSecItemNotFound ? errSecSuccess : keyStatus
}

// MARK: - Match filters

/// Whether a certificate or identity item passes kSecMatchValidOnDate and kSecMatchEmailAddressIfPresent;
/// an item whose certificate does not parse never does.
func passesCertificateFilters(_ item: Item, _ query: ParsedQuery) -> Bool {
    let der: Data?
    switch item.itemClass {
    case .certificate: der = item.data
    case .identity:
        guard case .data(let data) = item.attributes[AttributeName(rawValue: "certdata")] else { return false }
        der = data
    default: return false
    }
    guard let der, let certificate = try? X509Certificate(derEncoded: der) else { return false }
    if let date = query.validOnDate, date < certificate.notValidBefore || date > certificate.notValidAfter {
        return false
    }
    if let address = query.emailAddressIfPresent {
        let addresses = certificate.emailAddresses
        if !addresses.isEmpty && !addresses.contains(where: { $0.caseInsensitiveCompare(address) == .orderedSame }) {
            return false
        }
    }
    return true
}
