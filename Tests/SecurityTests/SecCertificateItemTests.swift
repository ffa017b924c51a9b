// Certificates and identities as keychain items, and SecPKCS12Import / SecItemExport, end to end with
// files made by openssl and signatures checked by openssl.

import Crypto
import Foundation
import KeychainTestSupport
import Security
import Testing

@Suite("Certificate items")
struct SecCertificateItemTests {
    @Test(
        "a certificate added by reference carries Apple's derived attributes; ReturnRef gives it back",
        arguments: KeychainBackend.memoryAndAgent)
    func addByReference(backend: KeychainBackend) throws {
        let fixtures = try CertificateFixtures.get()
        let leaf = try certificate(fixtures.leaf.der)
        try withKeychain(backend) { _ in
            #expect(add([kSecClass: kSecClassCertificate, kSecValueRef: leaf]) == errSecSuccess)
            let found = copyMatching([kSecClass: kSecClassCertificate, kSecReturnAttributes: true, kSecReturnRef: true])
            #expect(found.0 == errSecSuccess)
            let attributes = try #require(found.1 as? [String: Any])
            #expect(attributes["class"] as? String == "cert")
            #expect(attributes["ctyp"] as? Int == 3)
            #expect(attributes["cenc"] as? Int == 3)
            let issuer = try #require(SecCertificateCopyNormalizedIssuerSequence(leaf) as Data?)
            let subject = try #require(SecCertificateCopyNormalizedSubjectSequence(leaf) as Data?)
            #expect(attributes["issr"] as? Data == contentOfSequence(issuer))
            #expect(attributes["subj"] as? Data == contentOfSequence(subject))
            #expect(attributes["slnr"] as? Data == Data([0x00, 0x80]))
            #expect((attributes["skid"] as? Data)?.count == 20)
            #expect(attributes["pkhh"] as? Data == Data(Insecure.SHA1.hash(data: fixtures.leaf.publicKey)))
            #expect(attributes["labl"] as? String == "Leaf B, Leaf A")
            #expect(attributes["pdmn"] as? String == "dk")
            #expect((attributes["v_Ref"] as? SecCertificate) == leaf)
            let reference = copyMatching([kSecClass: kSecClassCertificate, kSecReturnRef: true])
            #expect((reference.1 as? SecCertificate) == leaf)
            #expect(CFGetTypeID(reference.1) == SecCertificateGetTypeID())
            let data = copyMatching([kSecClass: kSecClassCertificate, kSecReturnData: true])
            #expect(data.1 as? Data == fixtures.leaf.der)
            // The issuer as raw DER is normalized before the search.
            let byIssuer = copyMatching([
                kSecClass: kSecClassCertificate, kSecAttrIssuer: issuer, kSecAttrSerialNumber: Data([0x00, 0x80]),
            ])
            #expect(byIssuer.0 == errSecSuccess)
        }
    }

    @Test(
        "same certificate twice: -25299; two certificates from one CA (different serials) both add",
        arguments: KeychainBackend.memoryAndAgent)
    func primaryKey(backend: KeychainBackend) throws {
        let fixtures = try CertificateFixtures.get()
        try withKeychain(backend) { _ in
            let leaf = try certificate(fixtures.leaf.der)
            #expect(add([kSecClass: kSecClassCertificate, kSecValueRef: leaf]) == errSecSuccess)
            #expect(add([kSecClass: kSecClassCertificate, kSecValueRef: leaf]) == errSecDuplicateItem)
            #expect(add([kSecClass: kSecClassCertificate, kSecValueData: fixtures.leaf.der]) == errSecDuplicateItem)
            #expect(add([kSecClass: kSecClassCertificate, kSecValueData: fixtures.leaf2.der]) == errSecSuccess)
            let all = copyMatching([
                kSecClass: kSecClassCertificate, kSecMatchLimit: kSecMatchLimitAll, kSecReturnRef: true,
            ])
            #expect((all.1 as? [SecCertificate])?.count == 2)
            // Added by data: the attributes are derived all the same.
            let second = copyMatching([
                kSecClass: kSecClassCertificate, kSecAttrSerialNumber: Data([0x02]), kSecReturnAttributes: true,
            ])
            let attributes = try #require(second.1 as? [String: Any])
            #expect(attributes["labl"] as? String == "Leaf Two")
            #expect(attributes["pkhh"] as? Data == Data(Insecure.SHA1.hash(data: fixtures.leaf2.publicKey)))
            #expect(
                SecItemDelete([kSecClass: kSecClassCertificate, kSecValueRef: leaf] as CFDictionary) == errSecSuccess)
            let left = copyMatching([
                kSecClass: kSecClassCertificate, kSecMatchLimit: kSecMatchLimitAll, kSecReturnRef: true,
            ])
            #expect((left.1 as? [SecCertificate]) == [try certificate(fixtures.leaf2.der)])
        }
    }

    @Test(
        "kSecMatchValidOnDate and kSecMatchEmailAddressIfPresent filter certificates and identities",
        arguments: KeychainBackend.memoryAndAgent)
    func matchFilters(backend: KeychainBackend) throws {
        let fixtures = try CertificateFixtures.get()
        try withKeychain(backend) { _ in
            #expect(add([kSecClass: kSecClassCertificate, kSecValueData: fixtures.leaf.der]) == errSecSuccess)
            #expect(add([kSecClass: kSecClassCertificate, kSecValueData: fixtures.rsa.der]) == errSecSuccess)
            func count(_ extra: [CFString: Any]) -> Int? {
                var query: [CFString: Any] = [
                    kSecClass: kSecClassCertificate, kSecMatchLimit: kSecMatchLimitAll, kSecReturnRef: true,
                ]
                query.merge(extra) { _, new in new }
                let (status, result) = copyMatching(query)
                return status == errSecItemNotFound ? 0 : (result as? [SecCertificate])?.count
            }
            #expect(count([kSecMatchValidOnDate: Date()]) == 2)
            #expect(count([kSecMatchValidOnDate: kCFNull as Any]) == 2)
            #expect(count([kSecMatchValidOnDate: Date().addingTimeInterval(60 * 86_400)]) == 0)
            #expect(count([kSecMatchValidOnDate: Date().addingTimeInterval(-2 * 86_400)]) == 0)
            // The RSA certificate has no address and is kept; the leaf must carry the one asked for.
            #expect(count([kSecMatchEmailAddressIfPresent: "SAN@example.com"]) == 2)
            #expect(count([kSecMatchEmailAddressIfPresent: "other@example.com"]) == 1)
            // The limit applies after filtering: one match, limit one.
            let one = copyMatching([
                kSecClass: kSecClassCertificate, kSecMatchEmailAddressIfPresent: "other@example.com",
                kSecReturnData: true,
            ])
            #expect(one.1 as? Data == fixtures.rsa.der)
            #expect(copyMatching([kSecClass: kSecClassCertificate, kSecMatchValidOnDate: "today"]).0 == errSecParam)
            #expect(
                copyMatching([kSecClass: kSecClassCertificate, kSecMatchEmailAddressIfPresent: 1]).0 == errSecParam)
            #expect(
                copyMatching([kSecClass: kSecClassGenericPassword, kSecMatchValidOnDate: Date()]).0
                    == errSecUnimplemented)
            #expect(
                copyMatching([kSecClass: kSecClassCertificate, kSecMatchPolicy: SecPolicyCreateBasicX509()]).0
                    == errSecUnimplemented)
        }
    }

    @Test(
        "junk, PEM and truncated certificate data refused with errSecDecode; nothing stored",
        arguments: KeychainBackend.memoryAndAgent)
    func junkRefused(backend: KeychainBackend) throws {
        let der = try CertificateFixtures.get().leaf.der
        let pem = Data("-----BEGIN CERTIFICATE-----\n\(der.base64EncodedString())\n-----END CERTIFICATE-----\n".utf8)
        try withKeychain(backend) { _ in
            for junk in [Data("not a certificate".utf8), pem, der.dropLast(), der + Data([0]), Data()] {
                #expect(add([kSecClass: kSecClassCertificate, kSecValueData: junk]) == errSecDecode)
            }
            #expect(copyMatching([kSecClass: kSecClassCertificate]).0 == errSecItemNotFound)
        }
    }

    @Test(
        "wrong types: a string reference, a certificate under kSecClassKey, a key under kSecClassCertificate: -50",
        arguments: KeychainBackend.memoryAndAgent)
    func wrongTypes(backend: KeychainBackend) throws {
        let leaf = try certificate(try CertificateFixtures.get().leaf.der)
        let key = try ecKey(256)
        try withKeychain(backend) { _ in
            #expect(add([kSecClass: kSecClassCertificate, kSecValueRef: "x"]) == errSecParam)
            #expect(add([kSecClass: kSecClassKey, kSecValueRef: leaf]) == errSecParam)
            #expect(add([kSecClass: kSecClassCertificate, kSecValueRef: key]) == errSecParam)
            #expect(add([kSecClass: kSecClassCertificate, kSecValueData: "text"]) == errSecParam)
            #expect(copyMatching([kSecClass: kSecClassKey, kSecValueRef: leaf]).0 == errSecParam)
            #expect(
                SecItemDelete([kSecClass: kSecClassGenericPassword, kSecValueRef: leaf] as CFDictionary) == errSecParam)
        }
    }
}

@Suite("PKCS#12 import, identities and export")
struct SecIdentityTests {
    @Test(
        "openssl .p12 (EC): one identity, chain leaf then CA, label, keyid = pkhh; nothing stored by default",
        arguments: KeychainBackend.memoryAndAgent)
    func importEC(backend: KeychainBackend) throws {
        let fixtures = try CertificateFixtures.get()
        try withKeychain(backend) { _ in
            let (status, items) = importPKCS12(fixtures.leafP12, [kSecImportExportPassphrase: "secret"])
            #expect(status == errSecSuccess)
            #expect(items.count == 1)
            let item = try #require(items.first)
            let identity = try #require(item[kSecImportItemIdentity as String] as? SecIdentity)
            #expect(CFGetTypeID(identity) == SecIdentityGetTypeID())
            let chain = try #require(item[kSecImportItemCertChain as String] as? [SecCertificate])
            #expect(chain.map { SecCertificateCopyData($0) as Data } == [fixtures.leaf.der, fixtures.ca.der])
            #expect(item[kSecImportItemLabel as String] as? String == "Leaf B, Leaf A")
            #expect(
                item[kSecImportItemKeyID as String] as? Data == Data(Insecure.SHA1.hash(data: fixtures.leaf.publicKey)))
            var certificate: SecCertificate?
            var key: SecKey?
            #expect(SecIdentityCopyCertificate(identity, &certificate) == errSecSuccess)
            #expect(SecIdentityCopyPrivateKey(identity, &key) == errSecSuccess)
            #expect(certificate.map { SecCertificateCopyData($0) as Data } == fixtures.leaf.der)
            let privateKey = try #require(key)
            let attributes = try #require(SecKeyCopyAttributes(privateKey) as? [String: Any])
            #expect(attributes["klbl"] as? Data == item[kSecImportItemKeyID as String] as? Data)
            #expect(copyMatching([kSecClass: kSecClassIdentity]).0 == errSecItemNotFound)
            #expect(copyMatching([kSecClass: kSecClassCertificate]).0 == errSecItemNotFound)
        }
    }

    @Test(
        "import into the keychain, find the identity, sign with its key; the certificate's key and openssl verify",
        arguments: KeychainBackend.memoryAndAgent, ["ec", "rsa"])
    func importFindSignVerify(backend: KeychainBackend, _ kind: String) throws {
        let fixtures = try CertificateFixtures.get()
        let (p12, fixture) = kind == "ec" ? (fixtures.leafP12, fixtures.leaf) : (fixtures.rsaP12, fixtures.rsa)
        let algorithm: SecKeyAlgorithm =
            kind == "ec" ? .ecdsaSignatureMessageX962SHA256 : .rsaSignatureMessagePKCS1v15SHA256
        try withKeychain(backend) { _ in
            let (status, items) = importPKCS12(
                p12, [kSecImportExportPassphrase: "secret", kSecUseDataProtectionKeychain: true])
            #expect(status == errSecSuccess)
            let imported = try #require(items.first?[kSecImportItemIdentity as String] as? SecIdentity)
            // Stored: the identity, and (EC) the CA certificate of its chain.
            let certificates = copyMatching([
                kSecClass: kSecClassCertificate, kSecMatchLimit: kSecMatchLimitAll, kSecReturnRef: true,
            ])
            let stored = (certificates.1 as? [SecCertificate])?.map { SecCertificateCopyData($0) as Data }
            #expect(stored == (kind == "ec" ? [fixture.der, fixtures.ca.der] : [fixture.der]))
            // Importing again: duplicates count as success.
            #expect(
                importPKCS12(p12, [kSecImportExportPassphrase: "secret", kSecUseDataProtectionKeychain: true]).0
                    == errSecSuccess)

            let found = copyMatching([kSecClass: kSecClassIdentity, kSecReturnRef: true])
            #expect(found.0 == errSecSuccess)
            let identity = try #require(found.1 as? SecIdentity)
            #expect(identity == imported)
            let attributes = try #require(
                copyMatching([kSecClass: kSecClassIdentity, kSecReturnAttributes: true]).1 as? [String: Any])
            #expect(attributes["certdata"] as? Data == fixture.der)
            #expect(attributes["pkhh"] as? Data == attributes["klbl"] as? Data)

            var key: SecKey?
            var certificate: SecCertificate?
            SecIdentityCopyPrivateKey(identity, &key)
            SecIdentityCopyCertificate(identity, &certificate)
            let message = Data("signed by an imported identity".utf8)
            var error: Unmanaged<CFError>?
            let privateKey = try #require(key)
            let leafCertificate = try #require(certificate)
            let signature = try #require(
                SecKeyCreateSignature(privateKey, algorithm, message as CFData, &error) as Data?)
            let publicKey = try #require(SecCertificateCopyKey(leafCertificate))
            #expect(SecKeyVerifySignature(publicKey, algorithm, message as CFData, signature as CFData, nil))
            try withScratchDirectory { directory in
                try directory.write(fixture.der, "cert.der")
                try directory.write(message, "message")
                try directory.write(signature, "signature")
                try OpenSSL.run(
                    ["x509", "-inform", "DER", "-in", "cert.der", "-pubkey", "-noout", "-out", "pub.pem"], in: directory
                )
                #expect(
                    try OpenSSL.succeeds(
                        ["dgst", "-sha256", "-verify", "pub.pem", "-signature", "signature", "message"], in: directory))
            }
        }
    }

    @Test("wrong passphrase -25293; truncated, garbage -26275; legacy and empty passphrase import; non-string -50")
    func importErrors() throws {
        let fixtures = try CertificateFixtures.get()
        #expect(importPKCS12(fixtures.leafP12, [kSecImportExportPassphrase: "wrong"]).0 == errSecAuthFailed)
        #expect(importPKCS12(fixtures.leafP12, [:]).0 == errSecAuthFailed)
        #expect(
            importPKCS12(fixtures.leafP12.prefix(fixtures.leafP12.count / 2), [kSecImportExportPassphrase: "secret"]).0
                == errSecDecode)
        #expect(importPKCS12(Data("garbage".utf8), [kSecImportExportPassphrase: "secret"]).0 == errSecDecode)
        #expect(importPKCS12(fixtures.leaf.der, [kSecImportExportPassphrase: "secret"]).0 == errSecDecode)
        // Legacy (RC2-40 certificates, 3DES key, as Apple's SecPKCS12Import reads them): the same
        // identity as the modern file; a wrong passphrase is still -25293.
        let legacy = importPKCS12(fixtures.legacyP12, [kSecImportExportPassphrase: "secret"])
        #expect(legacy.0 == errSecSuccess)
        #expect(legacy.1.count == 1)
        #expect(legacy.1.first?[kSecImportItemIdentity as String] != nil)
        #expect(importPKCS12(fixtures.legacyP12, [kSecImportExportPassphrase: "secreT"]).0 == errSecAuthFailed)
        let empty = importPKCS12(fixtures.emptyPassphraseP12, [:])
        #expect(empty.0 == errSecSuccess)
        #expect(empty.1.count == 1)
        #expect(importPKCS12(fixtures.leafP12, [kSecImportExportPassphrase: 42]).0 == errSecParam)
    }

    @Test(
        "identity by reference: add splits into certificate and key, twice -25299, delete removes both",
        arguments: KeychainBackend.memoryAndAgent)
    func identityReference(backend: KeychainBackend) throws {
        let fixtures = try CertificateFixtures.get()
        let imported = importPKCS12(fixtures.leafP12, [kSecImportExportPassphrase: "secret"])
        let identity = try #require(imported.1.first?[kSecImportItemIdentity as String] as? SecIdentity)
        try withKeychain(backend) { _ in
            var result: CFTypeRef?
            #expect(
                SecItemAdd([kSecValueRef: identity, kSecReturnRef: true] as CFDictionary, &result) == errSecSuccess)
            #expect((result as? SecIdentity) == identity)
            #expect(add([kSecValueRef: identity]) == errSecDuplicateItem)
            #expect(copyMatching([kSecClass: kSecClassCertificate]).0 == errSecSuccess)
            #expect(
                copyMatching([kSecClass: kSecClassKey, kSecAttrKeyClass: kSecAttrKeyClassPrivate]).0 == errSecSuccess)
            let byReference = copyMatching([kSecValueRef: identity, kSecReturnRef: true])
            #expect((byReference.1 as? SecIdentity) == identity)
            #expect(SecItemDelete([kSecValueRef: identity] as CFDictionary) == errSecSuccess)
            #expect(copyMatching([kSecClass: kSecClassCertificate]).0 == errSecItemNotFound)
            #expect(copyMatching([kSecClass: kSecClassKey]).0 == errSecItemNotFound)
            #expect(SecItemDelete([kSecValueRef: identity] as CFDictionary) == errSecItemNotFound)
        }
    }

    @Test(
        "deleting an identity keeps a key that another certificate still names",
        arguments: KeychainBackend.memoryAndAgent)
    func deleteKeepsSharedKey(backend: KeychainBackend) throws {
        let fixtures = try CertificateFixtures.get()
        let imported = importPKCS12(fixtures.leafP12, [kSecImportExportPassphrase: "secret"])
        let identity = try #require(imported.1.first?[kSecImportItemIdentity as String] as? SecIdentity)
        try withKeychain(backend) { _ in
            #expect(add([kSecValueRef: identity]) == errSecSuccess)
            #expect(add([kSecClass: kSecClassCertificate, kSecValueData: fixtures.sameKey.der]) == errSecSuccess)
            let both = copyMatching([
                kSecClass: kSecClassIdentity, kSecMatchLimit: kSecMatchLimitAll, kSecReturnRef: true,
            ])
            #expect((both.1 as? [SecIdentity])?.count == 2)
            #expect(SecItemDelete([kSecValueRef: identity] as CFDictionary) == errSecSuccess)
            #expect(copyMatching([kSecClass: kSecClassKey]).0 == errSecSuccess)
            let left = copyMatching([kSecClass: kSecClassIdentity, kSecReturnRef: true])
            var certificate: SecCertificate?
            SecIdentityCopyCertificate(try #require(left.1 as? SecIdentity), &certificate)
            #expect(certificate.map { SecCertificateCopyData($0) as Data } == fixtures.sameKey.der)
        }
    }

    @Test("SecIdentityCreate refuses a key that is not the certificate's")
    func identityCreate() throws {
        let fixtures = try CertificateFixtures.get()
        let imported = importPKCS12(fixtures.leafP12, [kSecImportExportPassphrase: "secret"])
        let identity = try #require(imported.1.first?[kSecImportItemIdentity as String] as? SecIdentity)
        var key: SecKey?
        SecIdentityCopyPrivateKey(identity, &key)
        let leaf = try certificate(fixtures.leaf.der)
        let other = try certificate(fixtures.leaf2.der)
        let privateKey = try #require(key)
        let publicKey = try #require(SecKeyCopyPublicKey(privateKey))
        let unrelated = try ecKey(256)
        #expect(SecIdentityCreate(nil, leaf, privateKey) == identity)
        #expect(SecIdentityCreate(nil, other, privateKey) == nil)
        #expect(SecIdentityCreate(nil, leaf, unrelated) == nil)
        #expect(SecIdentityCreate(nil, leaf, publicKey) == nil)
    }

    @Test("SecItemExport writes a .p12 that openssl reads and SecPKCS12Import gives back", arguments: ["ec", "rsa"])
    func exportRoundTrip(_ kind: String) throws {
        let fixtures = try CertificateFixtures.get()
        let p12 = kind == "ec" ? fixtures.leafP12 : fixtures.rsaP12
        let imported = importPKCS12(p12, [kSecImportExportPassphrase: "secret"])
        let identity = try #require(imported.1.first?[kSecImportItemIdentity as String] as? SecIdentity)
        var exported: CFData?
        #expect(SecItemExport(identity, .formatPKCS12, [], nil, &exported) == errSecPassphraseRequired)
        var parameters = SecItemImportExportKeyParameters()
        parameters.version = SEC_KEY_IMPORT_EXPORT_PARAMS_VERSION
        parameters.passphrase = Unmanaged.passRetained("exported" as CFString)
        defer { parameters.passphrase?.release() }
        #expect(SecItemExport(identity, .formatPKCS12, [], &parameters, &exported) == errSecSuccess)
        let file = try #require(exported as Data?)
        let again = importPKCS12(file, [kSecImportExportPassphrase: "exported"])
        #expect(again.0 == errSecSuccess)
        #expect((again.1.first?[kSecImportItemIdentity as String] as? SecIdentity) == identity)
        try withScratchDirectory { directory in
            try directory.write(file, "out.p12")
            let text = try OpenSSL.run(
                ["pkcs12", "-in", "out.p12", "-passin", "pass:exported", "-nokeys", "-clcerts"], in: directory)
            #expect(String(decoding: text, as: UTF8.self).contains("BEGIN CERTIFICATE"))
            #expect(
                try OpenSSL.succeeds(
                    ["pkcs12", "-in", "out.p12", "-passin", "pass:exported", "-nocerts", "-nodes", "-out", "key.pem"],
                    in: directory))
        }
        var der: CFData?
        var certificate: SecCertificate?
        SecIdentityCopyCertificate(identity, &certificate)
        let leafCertificate = try #require(certificate)
        #expect(SecItemExport(leafCertificate, .formatX509Cert, [], nil, &der) == errSecSuccess)
        #expect(der.map { $0 as Data } == SecCertificateCopyData(leafCertificate) as Data)
        #expect(SecItemExport("x" as CFString, .formatPKCS12, [], &parameters, &exported) == errSecParam)
        #expect(SecItemExport(identity, .formatSSH, [], &parameters, &exported) == errSecUnsupportedFormat)
    }
}

/// The content of a DER SEQUENCE (what Apple stores as `issr` and `subj`).
private func contentOfSequence(_ data: Data) -> Data {
    let bytes = [UInt8](data)
    guard bytes.count >= 2 else { return Data() }
    if bytes[1] < 0x80 { return Data(bytes.dropFirst(2)) }
    return Data(bytes.dropFirst(2 + Int(bytes[1] & 0x7f)))
}
