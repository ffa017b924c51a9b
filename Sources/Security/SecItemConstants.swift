// Every `kSec…` constant of the keychain API, with Apple's exact raw values.
//
// Raw values are copied from Apple's Security sources (`SecItemConstants.c`); note the trailing
// spaces in several protocol values. Each constant is a ``SecConstantString``: an `NSString` whose
// `AnyHashable` form is its Swift `String`, so that `[AnyHashable: Any]` lookups by the constant
// and by `kSecX as String` find the same entry (see `ResultBridging.swift`). Constants marked SPI
// or macOS are not in the iOS public headers but appear in results or in existing code.
//
// They are declared `nonisolated(unsafe)` because `NSString` is not `Sendable`; they are never
// mutated. `SecAccessControlCreateFlags` is in SecItemConstants+AccessControlFlags.swift.

public import _SecurityFoundation

// MARK: - 1.1 Class key and item classes

/// The dictionary key whose value is the item class of a keychain item.
nonisolated(unsafe) public let kSecClass: CFString = SecConstantString("class")

/// The item class for generic passwords.
nonisolated(unsafe) public let kSecClassGenericPassword: CFString = SecConstantString("genp")

/// The item class for Internet passwords.
nonisolated(unsafe) public let kSecClassInternetPassword: CFString = SecConstantString("inet")

/// The item class for certificates.
nonisolated(unsafe) public let kSecClassCertificate: CFString = SecConstantString("cert")

/// The item class for cryptographic keys.
nonisolated(unsafe) public let kSecClassKey: CFString = SecConstantString("keys")

/// The item class for identities (a certificate with its private key).
nonisolated(unsafe) public let kSecClassIdentity: CFString = SecConstantString("idnt")

/// The legacy macOS item class for AppleShare passwords; the data protection keychain rejects it
/// with `errSecNoSuchClass`.
nonisolated(unsafe) public let kSecClassAppleSharePassword: CFString = SecConstantString("apls")

// MARK: - 1.2 Attribute keys

/// The attribute key for when the item's data can be read (a `kSecAttrAccessible…` value).
nonisolated(unsafe) public let kSecAttrAccessible: CFString = SecConstantString("pdmn")

/// The attribute key for the item's access control object (a ``SecAccessControl``).
nonisolated(unsafe) public let kSecAttrAccessControl: CFString = SecConstantString("accc")

/// The legacy macOS attribute key for an item's `SecAccess`; unknown to the data protection
/// keychain.
nonisolated(unsafe) public let kSecAttrAccess: CFString = SecConstantString("acls")

/// The attribute key for the access group the item belongs to.
nonisolated(unsafe) public let kSecAttrAccessGroup: CFString = SecConstantString("agrp")

/// The attribute key for whether the item is synchronized to other devices.
nonisolated(unsafe) public let kSecAttrSynchronizable: CFString = SecConstantString("sync")

/// The read-only attribute key for the item's creation date.
nonisolated(unsafe) public let kSecAttrCreationDate: CFString = SecConstantString("cdat")

/// The read-only attribute key for the item's last modification date.
nonisolated(unsafe) public let kSecAttrModificationDate: CFString = SecConstantString("mdat")

/// The attribute key for a user-visible description of the item.
nonisolated(unsafe) public let kSecAttrDescription: CFString = SecConstantString("desc")

/// The attribute key for a user-editable comment on the item.
nonisolated(unsafe) public let kSecAttrComment: CFString = SecConstantString("icmt")

/// The attribute key for the item's creator code (a four-character code number).
nonisolated(unsafe) public let kSecAttrCreator: CFString = SecConstantString("crtr")

/// The attribute key for the item's type code (a four-character code number).
nonisolated(unsafe) public let kSecAttrType: CFString = SecConstantString("type")

/// The attribute key for the user-visible label of the item.
nonisolated(unsafe) public let kSecAttrLabel: CFString = SecConstantString("labl")

/// The attribute key for whether the item is hidden from users.
nonisolated(unsafe) public let kSecAttrIsInvisible: CFString = SecConstantString("invi")

/// The attribute key for whether the item is a placeholder for a password that cannot be stored.
nonisolated(unsafe) public let kSecAttrIsNegative: CFString = SecConstantString("nega")

/// The attribute key for the item's account name.
nonisolated(unsafe) public let kSecAttrAccount: CFString = SecConstantString("acct")

/// The attribute key for the service a generic password belongs to.
nonisolated(unsafe) public let kSecAttrService: CFString = SecConstantString("svce")

/// The attribute key for arbitrary user-defined data stored with a generic password.
nonisolated(unsafe) public let kSecAttrGeneric: CFString = SecConstantString("gena")

/// The attribute key for an Internet password's security domain.
nonisolated(unsafe) public let kSecAttrSecurityDomain: CFString = SecConstantString("sdmn")

/// The attribute key for an Internet password's server domain name or IP address.
nonisolated(unsafe) public let kSecAttrServer: CFString = SecConstantString("srvr")

/// The attribute key for an Internet password's protocol (a `kSecAttrProtocol…` value).
nonisolated(unsafe) public let kSecAttrProtocol: CFString = SecConstantString("ptcl")

/// The attribute key for an Internet password's authentication scheme (a
/// `kSecAttrAuthenticationType…` value).
nonisolated(unsafe) public let kSecAttrAuthenticationType: CFString = SecConstantString("atyp")

/// The attribute key for an Internet password's port number.
nonisolated(unsafe) public let kSecAttrPort: CFString = SecConstantString("port")

/// The attribute key for an Internet password's path.
nonisolated(unsafe) public let kSecAttrPath: CFString = SecConstantString("path")

/// The read-only attribute key for a certificate's X.500 subject name.
nonisolated(unsafe) public let kSecAttrSubject: CFString = SecConstantString("subj")

/// The read-only attribute key for a certificate's X.500 issuer name.
nonisolated(unsafe) public let kSecAttrIssuer: CFString = SecConstantString("issr")

/// The read-only attribute key for a certificate's serial number.
nonisolated(unsafe) public let kSecAttrSerialNumber: CFString = SecConstantString("slnr")

/// The read-only attribute key for a certificate's subject key identifier.
nonisolated(unsafe) public let kSecAttrSubjectKeyID: CFString = SecConstantString("skid")

/// The read-only attribute key for the hash of a certificate's public key.
nonisolated(unsafe) public let kSecAttrPublicKeyHash: CFString = SecConstantString("pkhh")

/// The read-only attribute key for a certificate's type.
nonisolated(unsafe) public let kSecAttrCertificateType: CFString = SecConstantString("ctyp")

/// The read-only attribute key for a certificate's encoding.
nonisolated(unsafe) public let kSecAttrCertificateEncoding: CFString = SecConstantString("cenc")

/// The attribute key for a key's class (a `kSecAttrKeyClass…` value).
nonisolated(unsafe) public let kSecAttrKeyClass: CFString = SecConstantString("kcls")

/// The attribute key for a key's application label (by default the hash of its public key).
nonisolated(unsafe) public let kSecAttrApplicationLabel: CFString = SecConstantString("klbl")

/// The attribute key for whether a generated key is stored in the keychain.
nonisolated(unsafe) public let kSecAttrIsPermanent: CFString = SecConstantString("perm")

/// The attribute key for whether a key's material is sensitive.
nonisolated(unsafe) public let kSecAttrIsSensitive: CFString = SecConstantString("sens")

/// The attribute key for whether a key's material can be exported.
nonisolated(unsafe) public let kSecAttrIsExtractable: CFString = SecConstantString("extr")

/// The attribute key for a key's private application tag.
nonisolated(unsafe) public let kSecAttrApplicationTag: CFString = SecConstantString("atag")

/// The attribute key for a key's algorithm (a `kSecAttrKeyType…` value); same raw key as
/// ``kSecAttrType``.
nonisolated(unsafe) public let kSecAttrKeyType: CFString = SecConstantString("type")

/// The attribute key for a key's size in bits.
nonisolated(unsafe) public let kSecAttrKeySizeInBits: CFString = SecConstantString("bsiz")

/// The attribute key for a key's effective size in bits.
nonisolated(unsafe) public let kSecAttrEffectiveKeySize: CFString = SecConstantString("esiz")

/// The attribute key for whether a key can encrypt.
nonisolated(unsafe) public let kSecAttrCanEncrypt: CFString = SecConstantString("encr")

/// The attribute key for whether a key can decrypt.
nonisolated(unsafe) public let kSecAttrCanDecrypt: CFString = SecConstantString("decr")

/// The attribute key for whether a key can derive other keys.
nonisolated(unsafe) public let kSecAttrCanDerive: CFString = SecConstantString("drve")

/// The attribute key for whether a key can sign.
nonisolated(unsafe) public let kSecAttrCanSign: CFString = SecConstantString("sign")

/// The attribute key for whether a key can verify signatures.
nonisolated(unsafe) public let kSecAttrCanVerify: CFString = SecConstantString("vrfy")

/// The attribute key for whether a key can wrap other keys.
nonisolated(unsafe) public let kSecAttrCanWrap: CFString = SecConstantString("wrap")

/// The attribute key for whether a key can unwrap other keys.
nonisolated(unsafe) public let kSecAttrCanUnwrap: CFString = SecConstantString("unwp")

/// The attribute key for the synchronization view an item belongs to.
nonisolated(unsafe) public let kSecAttrSyncViewHint: CFString = SecConstantString("vwht")

/// The attribute key for the token that holds a key (for example ``kSecAttrTokenIDSecureEnclave``).
nonisolated(unsafe) public let kSecAttrTokenID: CFString = SecConstantString("tkid")

/// The attribute key for an item's persistent reference (original misspelling, kept for
/// compatibility).
nonisolated(unsafe) public let kSecAttrPersistantReference: CFString = SecConstantString(
    "persistref")

/// The attribute key for an item's persistent reference.
nonisolated(unsafe) public let kSecAttrPersistentReference: CFString = SecConstantString(
    "persistref")

/// The macOS attribute key for the pseudo-random function of a derived key.
nonisolated(unsafe) public let kSecAttrPRF: CFString = SecConstantString("prf")

/// The macOS attribute key for the salt of a derived key.
nonisolated(unsafe) public let kSecAttrSalt: CFString = SecConstantString("salt")

/// The macOS attribute key for the number of rounds of a derived key.
nonisolated(unsafe) public let kSecAttrRounds: CFString = SecConstantString("rounds")

// MARK: - 1.2 SPI attribute keys

/// The SPI attribute key for a key's creator (same raw key as ``kSecAttrCreator``).
nonisolated(unsafe) public let kSecAttrKeyCreator: CFString = SecConstantString("crtr")

/// The SPI attribute key for whether a key is private.
nonisolated(unsafe) public let kSecAttrIsPrivate: CFString = SecConstantString("priv")

/// The SPI attribute key for whether a key's attributes can be modified.
nonisolated(unsafe) public let kSecAttrIsModifiable: CFString = SecConstantString("modi")

/// The SPI attribute key for whether a key was always sensitive.
nonisolated(unsafe) public let kSecAttrWasAlwaysSensitive: CFString = SecConstantString("asen")

/// The SPI attribute key for whether a key was never extractable.
nonisolated(unsafe) public let kSecAttrWasNeverExtractable: CFString = SecConstantString("next")

/// The SPI attribute key for the start of a key's validity period.
nonisolated(unsafe) public let kSecAttrStartDate: CFString = SecConstantString("sdat")

/// The SPI attribute key for the end of a key's validity period.
nonisolated(unsafe) public let kSecAttrEndDate: CFString = SecConstantString("edat")

/// The SPI attribute key for whether a key can sign with message recovery.
nonisolated(unsafe) public let kSecAttrCanSignRecover: CFString = SecConstantString("snrc")

/// The SPI attribute key for whether a key can verify with message recovery.
nonisolated(unsafe) public let kSecAttrCanVerifyRecover: CFString = SecConstantString("vyrc")

/// The SPI attribute key for a certificate's alias (its e-mail address).
nonisolated(unsafe) public let kSecAttrAlias: CFString = SecConstantString("alis")

/// The SPI attribute key for the script code of an item's strings.
nonisolated(unsafe) public let kSecAttrScriptCode: CFString = SecConstantString("scrp")

/// The SPI attribute key for whether an item has a custom icon.
nonisolated(unsafe) public let kSecAttrHasCustomIcon: CFString = SecConstantString("cusi")

/// The SPI attribute key for a certificate revocation list's type.
nonisolated(unsafe) public let kSecAttrCRLType: CFString = SecConstantString("crlt")

/// The SPI attribute key for a certificate revocation list's encoding.
nonisolated(unsafe) public let kSecAttrCRLEncoding: CFString = SecConstantString("crle")

/// The SPI attribute key for whether an item is a deletion tombstone.
nonisolated(unsafe) public let kSecAttrTombstone: CFString = SecConstantString("tomb")

/// The SPI attribute key for the user an item belongs to on a multi-user device.
nonisolated(unsafe) public let kSecAttrMultiUser: CFString = SecConstantString("musr")

/// The SPI attribute key that selects the data protection keychain (same raw value as
/// ``kSecUseDataProtectionKeychain``).
nonisolated(unsafe) public let kSecAttrNoLegacy: CFString = SecConstantString("nleg")

/// The SPI attribute key for a token object's identifier.
nonisolated(unsafe) public let kSecAttrTokenOID: CFString = SecConstantString("toid")

/// The SPI attribute key for an item's internal UUID.
nonisolated(unsafe) public let kSecAttrUUID: CFString = SecConstantString("UUID")

/// The SPI attribute key for an item's system-bound flags.
nonisolated(unsafe) public let kSecAttrSysBound: CFString = SecConstantString("sysb")

/// The SPI attribute key for the SHA-1 digest of an item's data.
nonisolated(unsafe) public let kSecAttrSHA1: CFString = SecConstantString("sha1")

/// The SPI attribute key for the sharing group an item belongs to.
nonisolated(unsafe) public let kSecAttrSharingGroup: CFString = SecConstantString("ggrp")

/// The SPI value of ``kSecAttrSharingGroup`` for an item that is not shared.
nonisolated(unsafe) public let kSecAttrSharingGroupNone: CFString = SecConstantString("")

/// The SPI attribute key for an AppleShare password's volume.
nonisolated(unsafe) public let kSecAttrVolume: CFString = SecConstantString("volm")

/// The SPI attribute key for an AppleShare password's server address.
nonisolated(unsafe) public let kSecAttrAddress: CFString = SecConstantString("addr")

/// The SPI attribute key for an AppleShare password's server signature.
nonisolated(unsafe) public let kSecAttrAFPServerSignature: CFString = SecConstantString("afps")

// MARK: - 1.3 Accessibility values

/// The item's data can be read only while the device is unlocked.
nonisolated(unsafe) public let kSecAttrAccessibleWhenUnlocked: CFString = SecConstantString("ak")

/// The item's data can be read after the first unlock following a restart.
nonisolated(unsafe) public let kSecAttrAccessibleAfterFirstUnlock: CFString = SecConstantString(
    "ck")

/// The item's data can always be read, even while the device is locked.
@available(
    *, deprecated,
    message: "Use an accessibility level that provides some user protection, such as kSecAttrAccessibleAfterFirstUnlock"
)
nonisolated(unsafe) public let kSecAttrAccessibleAlways: CFString = SecConstantString("dk")

/// The item's data can be read only while unlocked, only if a passcode is set, and never leaves
/// this device.
nonisolated(unsafe) public let kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly: CFString =
    SecConstantString("akpu")

/// The item's data can be read only while unlocked and never leaves this device.
nonisolated(unsafe) public let kSecAttrAccessibleWhenUnlockedThisDeviceOnly: CFString =
    SecConstantString("aku")

/// The item's data can be read after the first unlock and never leaves this device.
nonisolated(unsafe) public let kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: CFString =
    SecConstantString("cku")

/// The item's data can always be read and never leaves this device.
@available(
    *, deprecated,
    message:
        "Use an accessibility level that provides some user protection, such as kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly"
)
nonisolated(unsafe) public let kSecAttrAccessibleAlwaysThisDeviceOnly: CFString = SecConstantString(
    "dku")

/// The SPI, non-deprecated spelling of ``kSecAttrAccessibleAlways``.
nonisolated(unsafe) public let kSecAttrAccessibleAlwaysPrivate: CFString = SecConstantString("dk")

/// The SPI, non-deprecated spelling of ``kSecAttrAccessibleAlwaysThisDeviceOnly``.
nonisolated(unsafe) public let kSecAttrAccessibleAlwaysThisDeviceOnlyPrivate: CFString =
    SecConstantString("dku")

/// The SPI accessibility for data kept only until the next restart.
nonisolated(unsafe) public let kSecAttrAccessibleUntilReboot: CFString = SecConstantString("f")

// MARK: - 1.4 Protocol values

/// The ``kSecAttrProtocol`` value for FTP.
nonisolated(unsafe) public let kSecAttrProtocolFTP: CFString = SecConstantString("ftp ")

/// The ``kSecAttrProtocol`` value for a client-side FTP account.
nonisolated(unsafe) public let kSecAttrProtocolFTPAccount: CFString = SecConstantString("ftpa")

/// The ``kSecAttrProtocol`` value for HTTP.
nonisolated(unsafe) public let kSecAttrProtocolHTTP: CFString = SecConstantString("http")

/// The ``kSecAttrProtocol`` value for IRC.
nonisolated(unsafe) public let kSecAttrProtocolIRC: CFString = SecConstantString("irc ")

/// The ``kSecAttrProtocol`` value for NNTP.
nonisolated(unsafe) public let kSecAttrProtocolNNTP: CFString = SecConstantString("nntp")

/// The ``kSecAttrProtocol`` value for POP3.
nonisolated(unsafe) public let kSecAttrProtocolPOP3: CFString = SecConstantString("pop3")

/// The ``kSecAttrProtocol`` value for SMTP.
nonisolated(unsafe) public let kSecAttrProtocolSMTP: CFString = SecConstantString("smtp")

/// The ``kSecAttrProtocol`` value for SOCKS.
nonisolated(unsafe) public let kSecAttrProtocolSOCKS: CFString = SecConstantString("sox ")

/// The ``kSecAttrProtocol`` value for IMAP.
nonisolated(unsafe) public let kSecAttrProtocolIMAP: CFString = SecConstantString("imap")

/// The ``kSecAttrProtocol`` value for LDAP.
nonisolated(unsafe) public let kSecAttrProtocolLDAP: CFString = SecConstantString("ldap")

/// The ``kSecAttrProtocol`` value for AFP over AppleTalk.
nonisolated(unsafe) public let kSecAttrProtocolAppleTalk: CFString = SecConstantString("atlk")

/// The ``kSecAttrProtocol`` value for AFP over TCP.
nonisolated(unsafe) public let kSecAttrProtocolAFP: CFString = SecConstantString("afp ")

/// The ``kSecAttrProtocol`` value for Telnet.
nonisolated(unsafe) public let kSecAttrProtocolTelnet: CFString = SecConstantString("teln")

/// The ``kSecAttrProtocol`` value for SSH.
nonisolated(unsafe) public let kSecAttrProtocolSSH: CFString = SecConstantString("ssh ")

/// The ``kSecAttrProtocol`` value for FTP over TLS/SSL.
nonisolated(unsafe) public let kSecAttrProtocolFTPS: CFString = SecConstantString("ftps")

/// The ``kSecAttrProtocol`` value for HTTP over TLS/SSL.
nonisolated(unsafe) public let kSecAttrProtocolHTTPS: CFString = SecConstantString("htps")

/// The ``kSecAttrProtocol`` value for an HTTP proxy.
nonisolated(unsafe) public let kSecAttrProtocolHTTPProxy: CFString = SecConstantString("htpx")

/// The ``kSecAttrProtocol`` value for an HTTPS proxy.
nonisolated(unsafe) public let kSecAttrProtocolHTTPSProxy: CFString = SecConstantString("htsx")

/// The ``kSecAttrProtocol`` value for an FTP proxy.
nonisolated(unsafe) public let kSecAttrProtocolFTPProxy: CFString = SecConstantString("ftpx")

/// The ``kSecAttrProtocol`` value for SMB.
nonisolated(unsafe) public let kSecAttrProtocolSMB: CFString = SecConstantString("smb ")

/// The ``kSecAttrProtocol`` value for RTSP.
nonisolated(unsafe) public let kSecAttrProtocolRTSP: CFString = SecConstantString("rtsp")

/// The ``kSecAttrProtocol`` value for an RTSP proxy.
nonisolated(unsafe) public let kSecAttrProtocolRTSPProxy: CFString = SecConstantString("rtsx")

/// The ``kSecAttrProtocol`` value for DAAP.
nonisolated(unsafe) public let kSecAttrProtocolDAAP: CFString = SecConstantString("daap")

/// The ``kSecAttrProtocol`` value for remote Apple Events.
nonisolated(unsafe) public let kSecAttrProtocolEPPC: CFString = SecConstantString("eppc")

/// The ``kSecAttrProtocol`` value for IPP.
nonisolated(unsafe) public let kSecAttrProtocolIPP: CFString = SecConstantString("ipp ")

/// The ``kSecAttrProtocol`` value for NNTP over TLS/SSL.
nonisolated(unsafe) public let kSecAttrProtocolNNTPS: CFString = SecConstantString("ntps")

/// The ``kSecAttrProtocol`` value for LDAP over TLS/SSL.
nonisolated(unsafe) public let kSecAttrProtocolLDAPS: CFString = SecConstantString("ldps")

/// The ``kSecAttrProtocol`` value for Telnet over TLS/SSL.
nonisolated(unsafe) public let kSecAttrProtocolTelnetS: CFString = SecConstantString("tels")

/// The ``kSecAttrProtocol`` value for IMAP over TLS/SSL.
nonisolated(unsafe) public let kSecAttrProtocolIMAPS: CFString = SecConstantString("imps")

/// The ``kSecAttrProtocol`` value for IRC over TLS/SSL.
nonisolated(unsafe) public let kSecAttrProtocolIRCS: CFString = SecConstantString("ircs")

/// The ``kSecAttrProtocol`` value for POP3 over TLS/SSL.
nonisolated(unsafe) public let kSecAttrProtocolPOP3S: CFString = SecConstantString("pops")

// MARK: - 1.5 Authentication types

/// The ``kSecAttrAuthenticationType`` value for Windows NT LAN Manager authentication.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeNTLM: CFString = SecConstantString("ntlm")

/// The ``kSecAttrAuthenticationType`` value for Microsoft Network default authentication.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeMSN: CFString = SecConstantString("msna")

/// The ``kSecAttrAuthenticationType`` value for Distributed Password authentication.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeDPA: CFString = SecConstantString("dpaa")

/// The ``kSecAttrAuthenticationType`` value for Remote Password authentication.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeRPA: CFString = SecConstantString("rpaa")

/// The ``kSecAttrAuthenticationType`` value for HTTP Basic authentication.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeHTTPBasic: CFString = SecConstantString(
    "http")

/// The ``kSecAttrAuthenticationType`` value for HTTP Digest Access authentication.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeHTTPDigest: CFString = SecConstantString(
    "httd")

/// The ``kSecAttrAuthenticationType`` value for HTML form-based authentication.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeHTMLForm: CFString = SecConstantString(
    "form")

/// The ``kSecAttrAuthenticationType`` value for the default authentication type.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeDefault: CFString = SecConstantString(
    "dflt")

// MARK: - 1.6 Key classes

/// The ``kSecAttrKeyClass`` value for a public key.
nonisolated(unsafe) public let kSecAttrKeyClassPublic: CFString = SecConstantString("0")

/// The ``kSecAttrKeyClass`` value for a private key.
nonisolated(unsafe) public let kSecAttrKeyClassPrivate: CFString = SecConstantString("1")

/// The ``kSecAttrKeyClass`` value for a symmetric key.
nonisolated(unsafe) public let kSecAttrKeyClassSymmetric: CFString = SecConstantString("2")

// MARK: - 1.6 Key types

/// The ``kSecAttrKeyType`` value for RSA keys.
nonisolated(unsafe) public let kSecAttrKeyTypeRSA: CFString = SecConstantString("42")

/// The ``kSecAttrKeyType`` value for elliptic curve (an alias of
/// ``kSecAttrKeyTypeECSECPrimeRandom``) keys.
nonisolated(unsafe) public let kSecAttrKeyTypeEC: CFString = SecConstantString("73")

/// The ``kSecAttrKeyType`` value for elliptic curve keys on the NIST prime curves keys.
nonisolated(unsafe) public let kSecAttrKeyTypeECSECPrimeRandom: CFString = SecConstantString("73")

/// The ``kSecAttrKeyType`` value for ECDSA (macOS; same value as
/// ``kSecAttrKeyTypeECSECPrimeRandom``) keys.
nonisolated(unsafe) public let kSecAttrKeyTypeECDSA: CFString = SecConstantString("73")

/// The ``kSecAttrKeyType`` value for DSA (macOS) keys.
nonisolated(unsafe) public let kSecAttrKeyTypeDSA: CFString = SecConstantString("43")

/// The ``kSecAttrKeyType`` value for AES (macOS) keys.
nonisolated(unsafe) public let kSecAttrKeyTypeAES: CFString = SecConstantString("2147483649")

/// The ``kSecAttrKeyType`` value for DES (macOS) keys.
nonisolated(unsafe) public let kSecAttrKeyTypeDES: CFString = SecConstantString("14")

/// The ``kSecAttrKeyType`` value for Triple DES (macOS) keys.
nonisolated(unsafe) public let kSecAttrKeyType3DES: CFString = SecConstantString("17")

/// The ``kSecAttrKeyType`` value for RC4 (macOS) keys.
nonisolated(unsafe) public let kSecAttrKeyTypeRC4: CFString = SecConstantString("25")

/// The ``kSecAttrKeyType`` value for RC2 (macOS) keys.
nonisolated(unsafe) public let kSecAttrKeyTypeRC2: CFString = SecConstantString("23")

/// The ``kSecAttrKeyType`` value for CAST (macOS) keys.
nonisolated(unsafe) public let kSecAttrKeyTypeCAST: CFString = SecConstantString("56")

/// The SPI ``kSecAttrKeyType`` value for elliptic curve keys held by a PKA token keys.
nonisolated(unsafe) public let kSecAttrKeyTypeECSECPrimeRandomPKA: CFString = SecConstantString(
    "2147483678")

/// The SPI ``kSecAttrKeyType`` value for Secure Enclave attestation keys keys.
nonisolated(unsafe) public let kSecAttrKeyTypeSecureEnclaveAttestation: CFString =
    SecConstantString("2147483679")

/// The SPI ``kSecAttrKeyType`` value for Secure Enclave anonymous attestation keys keys.
nonisolated(unsafe) public let kSecAttrKeyTypeSecureEnclaveAnonymousAttestation: CFString =
    SecConstantString("2147483680")

/// The SPI ``kSecAttrKeyType`` value for Ed25519 keys.
nonisolated(unsafe) public let kSecAttrKeyTypeEd25519: CFString = SecConstantString("105")

/// The SPI ``kSecAttrKeyType`` value for X25519 keys.
nonisolated(unsafe) public let kSecAttrKeyTypeX25519: CFString = SecConstantString("106")

/// The SPI ``kSecAttrKeyType`` value for Ed448 keys.
nonisolated(unsafe) public let kSecAttrKeyTypeEd448: CFString = SecConstantString("107")

/// The SPI ``kSecAttrKeyType`` value for X448 keys.
nonisolated(unsafe) public let kSecAttrKeyTypeX448: CFString = SecConstantString("108")

/// The SPI ``kSecAttrKeyType`` value for Kyber keys.
nonisolated(unsafe) public let kSecAttrKeyTypeKyber: CFString = SecConstantString("109")

/// The SPI ``kSecAttrKeyType`` value for ML-KEM keys.
nonisolated(unsafe) public let kSecAttrKeyTypeMLKEM: CFString = SecConstantString("110")

/// The SPI ``kSecAttrKeyType`` value for ML-DSA keys.
nonisolated(unsafe) public let kSecAttrKeyTypeMLDSA: CFString = SecConstantString("111")

// MARK: - 1.6 PRF values

/// The macOS ``kSecAttrPRF`` value for HMAC with SHA-1.
nonisolated(unsafe) public let kSecAttrPRFHmacAlgSHA1: CFString = SecConstantString("hsha1")

/// The macOS ``kSecAttrPRF`` value for HMAC with SHA-224.
nonisolated(unsafe) public let kSecAttrPRFHmacAlgSHA224: CFString = SecConstantString("hsha224")

/// The macOS ``kSecAttrPRF`` value for HMAC with SHA-256.
nonisolated(unsafe) public let kSecAttrPRFHmacAlgSHA256: CFString = SecConstantString("hsha256")

/// The macOS ``kSecAttrPRF`` value for HMAC with SHA-384.
nonisolated(unsafe) public let kSecAttrPRFHmacAlgSHA384: CFString = SecConstantString("hsha384")

/// The macOS ``kSecAttrPRF`` value for HMAC with SHA-512.
nonisolated(unsafe) public let kSecAttrPRFHmacAlgSHA512: CFString = SecConstantString("hsha512")

// MARK: - 1.6 Key generation dictionaries

/// The key-generation parameter whose value is a dictionary of attributes for the private key.
nonisolated(unsafe) public let kSecPrivateKeyAttrs: CFString = SecConstantString("private")

/// The key-generation parameter whose value is a dictionary of attributes for the public key.
nonisolated(unsafe) public let kSecPublicKeyAttrs: CFString = SecConstantString("public")

/// The macOS key-generation parameter whose value is a dictionary of attributes for a symmetric
/// key.
nonisolated(unsafe) public let kSecSymmetricKeyAttrs: CFString = SecConstantString("symmetric")

// MARK: - 1.7 Synchronizable, token and access-group values

/// The query value of ``kSecAttrSynchronizable`` that matches both synchronized and local items.
nonisolated(unsafe) public let kSecAttrSynchronizableAny: CFString = SecConstantString("syna")

/// The ``kSecAttrTokenID`` value for keys held in the Secure Enclave.
nonisolated(unsafe) public let kSecAttrTokenIDSecureEnclave: CFString = SecConstantString(
    "com.apple.setoken")

/// The SPI ``kSecAttrTokenID`` value for keys held in the Apple key store.
nonisolated(unsafe) public let kSecAttrTokenIDAppleKeyStore: CFString = SecConstantString(
    "com.apple.setoken:aks")

/// The SPI ``kSecAttrTokenID`` value for keys held in the secure element.
nonisolated(unsafe) public let kSecAttrTokenIDSecureElement: CFString = SecConstantString(
    "com.apple.secelemtoken")

/// The ``kSecAttrAccessGroup`` value shared by all items that live on tokens.
nonisolated(unsafe) public let kSecAttrAccessGroupToken: CFString = SecConstantString(
    "com.apple.token")

// MARK: - 1.8 Search keys and limit values

/// The search key whose value is a policy that matching certificates and identities must satisfy.
nonisolated(unsafe) public let kSecMatchPolicy: CFString = SecConstantString("m_Policy")

/// The search key whose value is an array of items to restrict the search to.
nonisolated(unsafe) public let kSecMatchItemList: CFString = SecConstantString("m_ItemList")

/// The search key whose value is an array of keychains to search.
nonisolated(unsafe) public let kSecMatchSearchList: CFString = SecConstantString("m_SearchList")

/// The search key whose value is an array of X.500 names that certificates must chain to.
nonisolated(unsafe) public let kSecMatchIssuers: CFString = SecConstantString("m_Issuers")

/// The search key whose value is an e-mail address a certificate must contain, if it contains any.
nonisolated(unsafe) public let kSecMatchEmailAddressIfPresent: CFString = SecConstantString(
    "m_EmailAddressIfPresent")

/// The search key whose value is a string a certificate's subject must contain.
nonisolated(unsafe) public let kSecMatchSubjectContains: CFString = SecConstantString(
    "m_SubjectContains")

/// The search key whose value is a host an Internet password's server must equal or be a subdomain
/// of.
nonisolated(unsafe) public let kSecMatchHostOrSubdomainOfHost: CFString = SecConstantString(
    "m_HostOrSubdomainOfHost")

/// The macOS search key whose value is a string a certificate's subject must start with.
nonisolated(unsafe) public let kSecMatchSubjectStartsWith: CFString = SecConstantString(
    "m_SubjectStartsWith")

/// The macOS search key whose value is a string a certificate's subject must end with.
nonisolated(unsafe) public let kSecMatchSubjectEndsWith: CFString = SecConstantString(
    "m_SubjectEndsWith")

/// The macOS search key whose value is a string a certificate's subject must equal.
nonisolated(unsafe) public let kSecMatchSubjectWholeString: CFString = SecConstantString(
    "m_SubjectWholeString")

/// The search key whose Boolean value asks for case-insensitive string matching.
nonisolated(unsafe) public let kSecMatchCaseInsensitive: CFString = SecConstantString(
    "m_CaseInsensitive")

/// The macOS search key whose Boolean value asks for diacritic-insensitive string matching.
nonisolated(unsafe) public let kSecMatchDiacriticInsensitive: CFString = SecConstantString(
    "m_DiacriticInsensitive")

/// The macOS search key whose Boolean value asks for width-insensitive string matching.
nonisolated(unsafe) public let kSecMatchWidthInsensitive: CFString = SecConstantString(
    "m_WidthInsensitive")

/// The search key whose Boolean value restricts results to trusted certificates.
nonisolated(unsafe) public let kSecMatchTrustedOnly: CFString = SecConstantString("m_TrustedOnly")

/// The search key whose value is a date on which matching certificates must be valid.
nonisolated(unsafe) public let kSecMatchValidOnDate: CFString = SecConstantString("m_ValidOnDate")

/// The search key whose value is the maximum number of results (a number, ``kSecMatchLimitOne`` or
/// ``kSecMatchLimitAll``).
nonisolated(unsafe) public let kSecMatchLimit: CFString = SecConstantString("m_Limit")

/// The ``kSecMatchLimit`` value that asks for at most one result.
nonisolated(unsafe) public let kSecMatchLimitOne: CFString = SecConstantString("m_LimitOne")

/// The ``kSecMatchLimit`` value that asks for every matching result.
nonisolated(unsafe) public let kSecMatchLimitAll: CFString = SecConstantString("m_LimitAll")

// MARK: - 1.9 Return, value and use keys

/// The search key whose Boolean value asks for each item's data.
nonisolated(unsafe) public let kSecReturnData: CFString = SecConstantString("r_Data")

/// The search key whose Boolean value asks for each item's attributes as a dictionary.
nonisolated(unsafe) public let kSecReturnAttributes: CFString = SecConstantString("r_Attributes")

/// The search key whose Boolean value asks for a reference object for each item.
nonisolated(unsafe) public let kSecReturnRef: CFString = SecConstantString("r_Ref")

/// The search key whose Boolean value asks for a persistent reference to each item.
nonisolated(unsafe) public let kSecReturnPersistentRef: CFString = SecConstantString(
    "r_PersistentRef")

/// The dictionary key whose value is an item's data (the secret).
nonisolated(unsafe) public let kSecValueData: CFString = SecConstantString("v_Data")

/// The dictionary key whose value is a reference object for an item.
nonisolated(unsafe) public let kSecValueRef: CFString = SecConstantString("v_Ref")

/// The dictionary key whose value is a persistent reference to an item.
nonisolated(unsafe) public let kSecValuePersistentRef: CFString = SecConstantString(
    "v_PersistentRef")

/// The legacy key whose value is an array of items to use instead of the keychain.
@available(*, deprecated, message: "Not implemented on this platform")
nonisolated(unsafe) public let kSecUseItemList: CFString = SecConstantString("u_ItemList")

/// The macOS key whose value is the keychain to add the item to.
nonisolated(unsafe) public let kSecUseKeychain: CFString = SecConstantString("u_Keychain")

/// The key whose value is the prompt shown when authentication is needed.
@available(
    *, deprecated,
    message: "Use kSecUseAuthenticationContext and set LAContext.localizedReason property"
)
nonisolated(unsafe) public let kSecUseOperationPrompt: CFString = SecConstantString("u_OpPrompt")

/// The key whose Boolean value forbids authentication UI.
@available(*, deprecated, message: "Use kSecUseAuthenticationUI instead.")
nonisolated(unsafe) public let kSecUseNoAuthenticationUI: CFString = SecConstantString("u_NoAuthUI")

/// The key whose value says whether authentication UI may appear (a `kSecUseAuthenticationUI…`
/// value).
nonisolated(unsafe) public let kSecUseAuthenticationUI: CFString = SecConstantString("u_AuthUI")

/// The ``kSecUseAuthenticationUI`` value that allows authentication UI.
@available(
    *, deprecated,
    message:
        "Instead of kSecUseAuthenticationUI, use kSecUseAuthenticationContext and set LAContext.interactionNotAllowed property"
)
nonisolated(unsafe) public let kSecUseAuthenticationUIAllow: CFString = SecConstantString(
    "u_AuthUIA")

/// The ``kSecUseAuthenticationUI`` value that fails with `errSecInteractionNotAllowed` instead of
/// showing UI.
@available(
    *, deprecated,
    message:
        "Instead of kSecUseAuthenticationUI, use kSecUseAuthenticationContext and set LAContext.interactionNotAllowed property"
)
nonisolated(unsafe) public let kSecUseAuthenticationUIFail: CFString = SecConstantString(
    "u_AuthUIF")

/// The ``kSecUseAuthenticationUI`` value that silently skips items that need authentication UI.
nonisolated(unsafe) public let kSecUseAuthenticationUISkip: CFString = SecConstantString(
    "u_AuthUIS")

/// The key whose value is the authentication context to use.
nonisolated(unsafe) public let kSecUseAuthenticationContext: CFString = SecConstantString(
    "u_AuthCtx")

/// The key whose Boolean value selects the data protection keychain on macOS.
nonisolated(unsafe) public let kSecUseDataProtectionKeychain: CFString = SecConstantString("nleg")

/// The tvOS key whose Boolean value shares an item with every user of the device.
nonisolated(unsafe) public let kSecUseUserIndependentKeychain: CFString = SecConstantString(
    "u_UserIndependentKeychain")

/// The SPI key whose value is a reference to an authentication credential.
nonisolated(unsafe) public let kSecUseCredentialReference: CFString = SecConstantString("u_CredRef")

/// The SPI key whose Boolean value asks for deletion tombstones.
nonisolated(unsafe) public let kSecUseTombstones: CFString = SecConstantString("u_Tomb")

/// The SPI key whose value names the calling client for authentication UI.
nonisolated(unsafe) public let kSecUseCallerName: CFString = SecConstantString("u_CallerName")

/// The SPI key whose Boolean value asks for raw token items.
nonisolated(unsafe) public let kSecUseTokenRawItems: CFString = SecConstantString("u_TokenRawItems")

/// The SPI key whose Boolean value selects the system keychain.
nonisolated(unsafe) public let kSecUseSystemKeychain: CFString = SecConstantString(
    "u_SystemKeychain")

/// The SPI key whose Boolean value always selects the system keychain.
nonisolated(unsafe) public let kSecUseSystemKeychainAlways: CFString = SecConstantString(
    "u_SystemKeychainAlways")

/// The SPI key whose value selects the sync-bubble keychain of a user.
nonisolated(unsafe) public let kSecUseSyncBubbleKeychain: CFString = SecConstantString(
    "u_SyncBubbleKeychain")

/// The SPI key whose value is an array of certificates to use with ``kSecMatchIssuers``.
nonisolated(unsafe) public let kSecUseCertificatesWithMatchIssuers: CFString = SecConstantString(
    "u_CertWithIssuers")

/// The SPI key whose value is the token session to use.
nonisolated(unsafe) public let kSecUseTokenSession: CFString = SecConstantString("u_TokenSession")
