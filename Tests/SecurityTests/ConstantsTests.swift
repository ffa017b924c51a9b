// Every `kSec…` constant has Apple's exact raw value (Apple's `keychain/headers/SecItem.h` and
// `OSX/sec/Security/SecItemConstants.c`), and every constant behaves as a string under each of the
// bridges keychain code uses.

import Foundation
import Security
import Testing

/// One row of the constants table: the constant's name, the constant, and its expected bytes.
struct ConstantCase: Sendable, CustomTestStringConvertible {
    let name: String
    let raw: String
    let constant: @Sendable () -> CFString

    init(_ name: String, _ raw: String, _ constant: @escaping @Sendable () -> CFString) {
        self.name = name
        self.raw = raw
        self.constant = constant
    }

    var testDescription: String { name }
}

/// Apple's raw values, in groups 1.1–1.9 (item classes, attribute keys, accessibility, protocols,
/// authentication types, key types, synchronizable and token values, search keys, return and use
/// keys).
let constantCases: [ConstantCase] = [
    // 1.1 Class key and item classes
    ConstantCase("kSecClass", "class", { kSecClass }),
    ConstantCase("kSecClassGenericPassword", "genp", { kSecClassGenericPassword }),
    ConstantCase("kSecClassInternetPassword", "inet", { kSecClassInternetPassword }),
    ConstantCase("kSecClassCertificate", "cert", { kSecClassCertificate }),
    ConstantCase("kSecClassKey", "keys", { kSecClassKey }),
    ConstantCase("kSecClassIdentity", "idnt", { kSecClassIdentity }),
    ConstantCase("kSecClassAppleSharePassword", "apls", { kSecClassAppleSharePassword }),
    // 1.2 Attribute keys
    ConstantCase("kSecAttrAccessible", "pdmn", { kSecAttrAccessible }),
    ConstantCase("kSecAttrAccessControl", "accc", { kSecAttrAccessControl }),
    ConstantCase("kSecAttrAccess", "acls", { kSecAttrAccess }),
    ConstantCase("kSecAttrAccessGroup", "agrp", { kSecAttrAccessGroup }),
    ConstantCase("kSecAttrSynchronizable", "sync", { kSecAttrSynchronizable }),
    ConstantCase("kSecAttrCreationDate", "cdat", { kSecAttrCreationDate }),
    ConstantCase("kSecAttrModificationDate", "mdat", { kSecAttrModificationDate }),
    ConstantCase("kSecAttrDescription", "desc", { kSecAttrDescription }),
    ConstantCase("kSecAttrComment", "icmt", { kSecAttrComment }),
    ConstantCase("kSecAttrCreator", "crtr", { kSecAttrCreator }),
    ConstantCase("kSecAttrType", "type", { kSecAttrType }),
    ConstantCase("kSecAttrLabel", "labl", { kSecAttrLabel }),
    ConstantCase("kSecAttrIsInvisible", "invi", { kSecAttrIsInvisible }),
    ConstantCase("kSecAttrIsNegative", "nega", { kSecAttrIsNegative }),
    ConstantCase("kSecAttrAccount", "acct", { kSecAttrAccount }),
    ConstantCase("kSecAttrService", "svce", { kSecAttrService }),
    ConstantCase("kSecAttrGeneric", "gena", { kSecAttrGeneric }),
    ConstantCase("kSecAttrSecurityDomain", "sdmn", { kSecAttrSecurityDomain }),
    ConstantCase("kSecAttrServer", "srvr", { kSecAttrServer }),
    ConstantCase("kSecAttrProtocol", "ptcl", { kSecAttrProtocol }),
    ConstantCase("kSecAttrAuthenticationType", "atyp", { kSecAttrAuthenticationType }),
    ConstantCase("kSecAttrPort", "port", { kSecAttrPort }),
    ConstantCase("kSecAttrPath", "path", { kSecAttrPath }),
    ConstantCase("kSecAttrSubject", "subj", { kSecAttrSubject }),
    ConstantCase("kSecAttrIssuer", "issr", { kSecAttrIssuer }),
    ConstantCase("kSecAttrSerialNumber", "slnr", { kSecAttrSerialNumber }),
    ConstantCase("kSecAttrSubjectKeyID", "skid", { kSecAttrSubjectKeyID }),
    ConstantCase("kSecAttrPublicKeyHash", "pkhh", { kSecAttrPublicKeyHash }),
    ConstantCase("kSecAttrCertificateType", "ctyp", { kSecAttrCertificateType }),
    ConstantCase("kSecAttrCertificateEncoding", "cenc", { kSecAttrCertificateEncoding }),
    ConstantCase("kSecAttrKeyClass", "kcls", { kSecAttrKeyClass }),
    ConstantCase("kSecAttrApplicationLabel", "klbl", { kSecAttrApplicationLabel }),
    ConstantCase("kSecAttrIsPermanent", "perm", { kSecAttrIsPermanent }),
    ConstantCase("kSecAttrIsSensitive", "sens", { kSecAttrIsSensitive }),
    ConstantCase("kSecAttrIsExtractable", "extr", { kSecAttrIsExtractable }),
    ConstantCase("kSecAttrApplicationTag", "atag", { kSecAttrApplicationTag }),
    ConstantCase("kSecAttrKeyType", "type", { kSecAttrKeyType }),
    ConstantCase("kSecAttrKeySizeInBits", "bsiz", { kSecAttrKeySizeInBits }),
    ConstantCase("kSecAttrEffectiveKeySize", "esiz", { kSecAttrEffectiveKeySize }),
    ConstantCase("kSecAttrCanEncrypt", "encr", { kSecAttrCanEncrypt }),
    ConstantCase("kSecAttrCanDecrypt", "decr", { kSecAttrCanDecrypt }),
    ConstantCase("kSecAttrCanDerive", "drve", { kSecAttrCanDerive }),
    ConstantCase("kSecAttrCanSign", "sign", { kSecAttrCanSign }),
    ConstantCase("kSecAttrCanVerify", "vrfy", { kSecAttrCanVerify }),
    ConstantCase("kSecAttrCanWrap", "wrap", { kSecAttrCanWrap }),
    ConstantCase("kSecAttrCanUnwrap", "unwp", { kSecAttrCanUnwrap }),
    ConstantCase("kSecAttrSyncViewHint", "vwht", { kSecAttrSyncViewHint }),
    ConstantCase("kSecAttrTokenID", "tkid", { kSecAttrTokenID }),
    ConstantCase("kSecAttrPersistantReference", "persistref", { kSecAttrPersistantReference }),
    ConstantCase("kSecAttrPersistentReference", "persistref", { kSecAttrPersistentReference }),
    ConstantCase("kSecAttrPRF", "prf", { kSecAttrPRF }),
    ConstantCase("kSecAttrSalt", "salt", { kSecAttrSalt }),
    ConstantCase("kSecAttrRounds", "rounds", { kSecAttrRounds }),
    // 1.2 SPI attribute keys
    ConstantCase("kSecAttrKeyCreator", "crtr", { kSecAttrKeyCreator }),
    ConstantCase("kSecAttrIsPrivate", "priv", { kSecAttrIsPrivate }),
    ConstantCase("kSecAttrIsModifiable", "modi", { kSecAttrIsModifiable }),
    ConstantCase("kSecAttrWasAlwaysSensitive", "asen", { kSecAttrWasAlwaysSensitive }),
    ConstantCase("kSecAttrWasNeverExtractable", "next", { kSecAttrWasNeverExtractable }),
    ConstantCase("kSecAttrStartDate", "sdat", { kSecAttrStartDate }),
    ConstantCase("kSecAttrEndDate", "edat", { kSecAttrEndDate }),
    ConstantCase("kSecAttrCanSignRecover", "snrc", { kSecAttrCanSignRecover }),
    ConstantCase("kSecAttrCanVerifyRecover", "vyrc", { kSecAttrCanVerifyRecover }),
    ConstantCase("kSecAttrAlias", "alis", { kSecAttrAlias }),
    ConstantCase("kSecAttrScriptCode", "scrp", { kSecAttrScriptCode }),
    ConstantCase("kSecAttrHasCustomIcon", "cusi", { kSecAttrHasCustomIcon }),
    ConstantCase("kSecAttrCRLType", "crlt", { kSecAttrCRLType }),
    ConstantCase("kSecAttrCRLEncoding", "crle", { kSecAttrCRLEncoding }),
    ConstantCase("kSecAttrTombstone", "tomb", { kSecAttrTombstone }),
    ConstantCase("kSecAttrMultiUser", "musr", { kSecAttrMultiUser }),
    ConstantCase("kSecAttrNoLegacy", "nleg", { kSecAttrNoLegacy }),
    ConstantCase("kSecAttrTokenOID", "toid", { kSecAttrTokenOID }),
    ConstantCase("kSecAttrUUID", "UUID", { kSecAttrUUID }),
    ConstantCase("kSecAttrSysBound", "sysb", { kSecAttrSysBound }),
    ConstantCase("kSecAttrSHA1", "sha1", { kSecAttrSHA1 }),
    ConstantCase("kSecAttrSharingGroup", "ggrp", { kSecAttrSharingGroup }),
    ConstantCase("kSecAttrSharingGroupNone", "", { kSecAttrSharingGroupNone }),
    ConstantCase("kSecAttrVolume", "volm", { kSecAttrVolume }),
    ConstantCase("kSecAttrAddress", "addr", { kSecAttrAddress }),
    ConstantCase("kSecAttrAFPServerSignature", "afps", { kSecAttrAFPServerSignature }),
    // 1.3 Accessibility values
    ConstantCase("kSecAttrAccessibleWhenUnlocked", "ak", { kSecAttrAccessibleWhenUnlocked }),
    ConstantCase(
        "kSecAttrAccessibleAfterFirstUnlock", "ck", { kSecAttrAccessibleAfterFirstUnlock }),
    ConstantCase(
        "kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly", "akpu",
        { kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly }),
    ConstantCase(
        "kSecAttrAccessibleWhenUnlockedThisDeviceOnly", "aku",
        { kSecAttrAccessibleWhenUnlockedThisDeviceOnly }),
    ConstantCase(
        "kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly", "cku",
        { kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly }),
    ConstantCase("kSecAttrAccessibleAlwaysPrivate", "dk", { kSecAttrAccessibleAlwaysPrivate }),
    ConstantCase(
        "kSecAttrAccessibleAlwaysThisDeviceOnlyPrivate", "dku",
        { kSecAttrAccessibleAlwaysThisDeviceOnlyPrivate }),
    ConstantCase("kSecAttrAccessibleUntilReboot", "f", { kSecAttrAccessibleUntilReboot }),
    // 1.4 Protocol values
    ConstantCase("kSecAttrProtocolFTP", "ftp ", { kSecAttrProtocolFTP }),
    ConstantCase("kSecAttrProtocolFTPAccount", "ftpa", { kSecAttrProtocolFTPAccount }),
    ConstantCase("kSecAttrProtocolHTTP", "http", { kSecAttrProtocolHTTP }),
    ConstantCase("kSecAttrProtocolIRC", "irc ", { kSecAttrProtocolIRC }),
    ConstantCase("kSecAttrProtocolNNTP", "nntp", { kSecAttrProtocolNNTP }),
    ConstantCase("kSecAttrProtocolPOP3", "pop3", { kSecAttrProtocolPOP3 }),
    ConstantCase("kSecAttrProtocolSMTP", "smtp", { kSecAttrProtocolSMTP }),
    ConstantCase("kSecAttrProtocolSOCKS", "sox ", { kSecAttrProtocolSOCKS }),
    ConstantCase("kSecAttrProtocolIMAP", "imap", { kSecAttrProtocolIMAP }),
    ConstantCase("kSecAttrProtocolLDAP", "ldap", { kSecAttrProtocolLDAP }),
    ConstantCase("kSecAttrProtocolAppleTalk", "atlk", { kSecAttrProtocolAppleTalk }),
    ConstantCase("kSecAttrProtocolAFP", "afp ", { kSecAttrProtocolAFP }),
    ConstantCase("kSecAttrProtocolTelnet", "teln", { kSecAttrProtocolTelnet }),
    ConstantCase("kSecAttrProtocolSSH", "ssh ", { kSecAttrProtocolSSH }),
    ConstantCase("kSecAttrProtocolFTPS", "ftps", { kSecAttrProtocolFTPS }),
    ConstantCase("kSecAttrProtocolHTTPS", "htps", { kSecAttrProtocolHTTPS }),
    ConstantCase("kSecAttrProtocolHTTPProxy", "htpx", { kSecAttrProtocolHTTPProxy }),
    ConstantCase("kSecAttrProtocolHTTPSProxy", "htsx", { kSecAttrProtocolHTTPSProxy }),
    ConstantCase("kSecAttrProtocolFTPProxy", "ftpx", { kSecAttrProtocolFTPProxy }),
    ConstantCase("kSecAttrProtocolSMB", "smb ", { kSecAttrProtocolSMB }),
    ConstantCase("kSecAttrProtocolRTSP", "rtsp", { kSecAttrProtocolRTSP }),
    ConstantCase("kSecAttrProtocolRTSPProxy", "rtsx", { kSecAttrProtocolRTSPProxy }),
    ConstantCase("kSecAttrProtocolDAAP", "daap", { kSecAttrProtocolDAAP }),
    ConstantCase("kSecAttrProtocolEPPC", "eppc", { kSecAttrProtocolEPPC }),
    ConstantCase("kSecAttrProtocolIPP", "ipp ", { kSecAttrProtocolIPP }),
    ConstantCase("kSecAttrProtocolNNTPS", "ntps", { kSecAttrProtocolNNTPS }),
    ConstantCase("kSecAttrProtocolLDAPS", "ldps", { kSecAttrProtocolLDAPS }),
    ConstantCase("kSecAttrProtocolTelnetS", "tels", { kSecAttrProtocolTelnetS }),
    ConstantCase("kSecAttrProtocolIMAPS", "imps", { kSecAttrProtocolIMAPS }),
    ConstantCase("kSecAttrProtocolIRCS", "ircs", { kSecAttrProtocolIRCS }),
    ConstantCase("kSecAttrProtocolPOP3S", "pops", { kSecAttrProtocolPOP3S }),
    // 1.5 Authentication types
    ConstantCase("kSecAttrAuthenticationTypeNTLM", "ntlm", { kSecAttrAuthenticationTypeNTLM }),
    ConstantCase("kSecAttrAuthenticationTypeMSN", "msna", { kSecAttrAuthenticationTypeMSN }),
    ConstantCase("kSecAttrAuthenticationTypeDPA", "dpaa", { kSecAttrAuthenticationTypeDPA }),
    ConstantCase("kSecAttrAuthenticationTypeRPA", "rpaa", { kSecAttrAuthenticationTypeRPA }),
    ConstantCase(
        "kSecAttrAuthenticationTypeHTTPBasic", "http", { kSecAttrAuthenticationTypeHTTPBasic }),
    ConstantCase(
        "kSecAttrAuthenticationTypeHTTPDigest", "httd", { kSecAttrAuthenticationTypeHTTPDigest }),
    ConstantCase(
        "kSecAttrAuthenticationTypeHTMLForm", "form", { kSecAttrAuthenticationTypeHTMLForm }),
    ConstantCase(
        "kSecAttrAuthenticationTypeDefault", "dflt", { kSecAttrAuthenticationTypeDefault }),
    // 1.6 Key classes
    ConstantCase("kSecAttrKeyClassPublic", "0", { kSecAttrKeyClassPublic }),
    ConstantCase("kSecAttrKeyClassPrivate", "1", { kSecAttrKeyClassPrivate }),
    ConstantCase("kSecAttrKeyClassSymmetric", "2", { kSecAttrKeyClassSymmetric }),
    // 1.6 Key types
    ConstantCase("kSecAttrKeyTypeRSA", "42", { kSecAttrKeyTypeRSA }),
    ConstantCase("kSecAttrKeyTypeEC", "73", { kSecAttrKeyTypeEC }),
    ConstantCase("kSecAttrKeyTypeECSECPrimeRandom", "73", { kSecAttrKeyTypeECSECPrimeRandom }),
    ConstantCase("kSecAttrKeyTypeECDSA", "73", { kSecAttrKeyTypeECDSA }),
    ConstantCase("kSecAttrKeyTypeDSA", "43", { kSecAttrKeyTypeDSA }),
    ConstantCase("kSecAttrKeyTypeAES", "2147483649", { kSecAttrKeyTypeAES }),
    ConstantCase("kSecAttrKeyTypeDES", "14", { kSecAttrKeyTypeDES }),
    ConstantCase("kSecAttrKeyType3DES", "17", { kSecAttrKeyType3DES }),
    ConstantCase("kSecAttrKeyTypeRC4", "25", { kSecAttrKeyTypeRC4 }),
    ConstantCase("kSecAttrKeyTypeRC2", "23", { kSecAttrKeyTypeRC2 }),
    ConstantCase("kSecAttrKeyTypeCAST", "56", { kSecAttrKeyTypeCAST }),
    ConstantCase(
        "kSecAttrKeyTypeECSECPrimeRandomPKA", "2147483678", { kSecAttrKeyTypeECSECPrimeRandomPKA }),
    ConstantCase(
        "kSecAttrKeyTypeSecureEnclaveAttestation", "2147483679",
        { kSecAttrKeyTypeSecureEnclaveAttestation }),
    ConstantCase(
        "kSecAttrKeyTypeSecureEnclaveAnonymousAttestation", "2147483680",
        { kSecAttrKeyTypeSecureEnclaveAnonymousAttestation }),
    ConstantCase("kSecAttrKeyTypeEd25519", "105", { kSecAttrKeyTypeEd25519 }),
    ConstantCase("kSecAttrKeyTypeX25519", "106", { kSecAttrKeyTypeX25519 }),
    ConstantCase("kSecAttrKeyTypeEd448", "107", { kSecAttrKeyTypeEd448 }),
    ConstantCase("kSecAttrKeyTypeX448", "108", { kSecAttrKeyTypeX448 }),
    ConstantCase("kSecAttrKeyTypeKyber", "109", { kSecAttrKeyTypeKyber }),
    ConstantCase("kSecAttrKeyTypeMLKEM", "110", { kSecAttrKeyTypeMLKEM }),
    ConstantCase("kSecAttrKeyTypeMLDSA", "111", { kSecAttrKeyTypeMLDSA }),
    // 1.6 PRF values
    ConstantCase("kSecAttrPRFHmacAlgSHA1", "hsha1", { kSecAttrPRFHmacAlgSHA1 }),
    ConstantCase("kSecAttrPRFHmacAlgSHA224", "hsha224", { kSecAttrPRFHmacAlgSHA224 }),
    ConstantCase("kSecAttrPRFHmacAlgSHA256", "hsha256", { kSecAttrPRFHmacAlgSHA256 }),
    ConstantCase("kSecAttrPRFHmacAlgSHA384", "hsha384", { kSecAttrPRFHmacAlgSHA384 }),
    ConstantCase("kSecAttrPRFHmacAlgSHA512", "hsha512", { kSecAttrPRFHmacAlgSHA512 }),
    // 1.6 Key generation dictionaries
    ConstantCase("kSecPrivateKeyAttrs", "private", { kSecPrivateKeyAttrs }),
    ConstantCase("kSecPublicKeyAttrs", "public", { kSecPublicKeyAttrs }),
    ConstantCase("kSecSymmetricKeyAttrs", "symmetric", { kSecSymmetricKeyAttrs }),
    // 1.7 Synchronizable, token and access-group values
    ConstantCase("kSecAttrSynchronizableAny", "syna", { kSecAttrSynchronizableAny }),
    ConstantCase(
        "kSecAttrTokenIDSecureEnclave", "com.apple.setoken", { kSecAttrTokenIDSecureEnclave }),
    ConstantCase(
        "kSecAttrTokenIDAppleKeyStore", "com.apple.setoken:aks", { kSecAttrTokenIDAppleKeyStore }),
    ConstantCase(
        "kSecAttrTokenIDSecureElement", "com.apple.secelemtoken", { kSecAttrTokenIDSecureElement }),
    ConstantCase("kSecAttrAccessGroupToken", "com.apple.token", { kSecAttrAccessGroupToken }),
    // 1.8 Search keys and limit values
    ConstantCase("kSecMatchPolicy", "m_Policy", { kSecMatchPolicy }),
    ConstantCase("kSecMatchItemList", "m_ItemList", { kSecMatchItemList }),
    ConstantCase("kSecMatchSearchList", "m_SearchList", { kSecMatchSearchList }),
    ConstantCase("kSecMatchIssuers", "m_Issuers", { kSecMatchIssuers }),
    ConstantCase(
        "kSecMatchEmailAddressIfPresent", "m_EmailAddressIfPresent",
        { kSecMatchEmailAddressIfPresent }),
    ConstantCase("kSecMatchSubjectContains", "m_SubjectContains", { kSecMatchSubjectContains }),
    ConstantCase(
        "kSecMatchHostOrSubdomainOfHost", "m_HostOrSubdomainOfHost",
        { kSecMatchHostOrSubdomainOfHost }),
    ConstantCase(
        "kSecMatchSubjectStartsWith", "m_SubjectStartsWith", { kSecMatchSubjectStartsWith }),
    ConstantCase("kSecMatchSubjectEndsWith", "m_SubjectEndsWith", { kSecMatchSubjectEndsWith }),
    ConstantCase(
        "kSecMatchSubjectWholeString", "m_SubjectWholeString", { kSecMatchSubjectWholeString }),
    ConstantCase("kSecMatchCaseInsensitive", "m_CaseInsensitive", { kSecMatchCaseInsensitive }),
    ConstantCase(
        "kSecMatchDiacriticInsensitive", "m_DiacriticInsensitive", { kSecMatchDiacriticInsensitive }
    ),
    ConstantCase("kSecMatchWidthInsensitive", "m_WidthInsensitive", { kSecMatchWidthInsensitive }),
    ConstantCase("kSecMatchTrustedOnly", "m_TrustedOnly", { kSecMatchTrustedOnly }),
    ConstantCase("kSecMatchValidOnDate", "m_ValidOnDate", { kSecMatchValidOnDate }),
    ConstantCase("kSecMatchLimit", "m_Limit", { kSecMatchLimit }),
    ConstantCase("kSecMatchLimitOne", "m_LimitOne", { kSecMatchLimitOne }),
    ConstantCase("kSecMatchLimitAll", "m_LimitAll", { kSecMatchLimitAll }),
    // 1.9 Return, value and use keys
    ConstantCase("kSecReturnData", "r_Data", { kSecReturnData }),
    ConstantCase("kSecReturnAttributes", "r_Attributes", { kSecReturnAttributes }),
    ConstantCase("kSecReturnRef", "r_Ref", { kSecReturnRef }),
    ConstantCase("kSecReturnPersistentRef", "r_PersistentRef", { kSecReturnPersistentRef }),
    ConstantCase("kSecValueData", "v_Data", { kSecValueData }),
    ConstantCase("kSecValueRef", "v_Ref", { kSecValueRef }),
    ConstantCase("kSecValuePersistentRef", "v_PersistentRef", { kSecValuePersistentRef }),
    ConstantCase("kSecUseKeychain", "u_Keychain", { kSecUseKeychain }),
    ConstantCase("kSecUseAuthenticationUI", "u_AuthUI", { kSecUseAuthenticationUI }),
    ConstantCase("kSecUseAuthenticationUISkip", "u_AuthUIS", { kSecUseAuthenticationUISkip }),
    ConstantCase("kSecUseAuthenticationContext", "u_AuthCtx", { kSecUseAuthenticationContext }),
    ConstantCase("kSecUseDataProtectionKeychain", "nleg", { kSecUseDataProtectionKeychain }),
    ConstantCase(
        "kSecUseUserIndependentKeychain", "u_UserIndependentKeychain",
        { kSecUseUserIndependentKeychain }),
    ConstantCase("kSecUseCredentialReference", "u_CredRef", { kSecUseCredentialReference }),
    ConstantCase("kSecUseTombstones", "u_Tomb", { kSecUseTombstones }),
    ConstantCase("kSecUseCallerName", "u_CallerName", { kSecUseCallerName }),
    ConstantCase("kSecUseTokenRawItems", "u_TokenRawItems", { kSecUseTokenRawItems }),
    ConstantCase("kSecUseSystemKeychain", "u_SystemKeychain", { kSecUseSystemKeychain }),
    ConstantCase(
        "kSecUseSystemKeychainAlways", "u_SystemKeychainAlways", { kSecUseSystemKeychainAlways }),
    ConstantCase(
        "kSecUseSyncBubbleKeychain", "u_SyncBubbleKeychain", { kSecUseSyncBubbleKeychain }),
    ConstantCase(
        "kSecUseCertificatesWithMatchIssuers", "u_CertWithIssuers",
        { kSecUseCertificatesWithMatchIssuers }),
    ConstantCase("kSecUseTokenSession", "u_TokenSession", { kSecUseTokenSession }),
]

/// The constants Apple marks deprecated; referenced from a deprecated context so that checking
/// them does not warn.
@available(*, deprecated, message: "references deprecated constants on purpose")
let deprecatedConstantCases: [ConstantCase] = [
    ConstantCase("kSecAttrAccessibleAlways", "dk", { kSecAttrAccessibleAlways }),
    ConstantCase(
        "kSecAttrAccessibleAlwaysThisDeviceOnly", "dku", { kSecAttrAccessibleAlwaysThisDeviceOnly }),
    ConstantCase("kSecUseItemList", "u_ItemList", { kSecUseItemList }),
    ConstantCase("kSecUseOperationPrompt", "u_OpPrompt", { kSecUseOperationPrompt }),
    ConstantCase("kSecUseNoAuthenticationUI", "u_NoAuthUI", { kSecUseNoAuthenticationUI }),
    ConstantCase("kSecUseAuthenticationUIAllow", "u_AuthUIA", { kSecUseAuthenticationUIAllow }),
    ConstantCase("kSecUseAuthenticationUIFail", "u_AuthUIF", { kSecUseAuthenticationUIFail }),
]

/// Every constant of the table, deprecated ones included.
@available(*, deprecated, message: "references deprecated constants on purpose")
let allConstantCases = constantCases + deprecatedConstantCases

@Suite("§1 constants")
struct ConstantsTests {
    @available(*, deprecated, message: "references deprecated constants on purpose")
    @Test("Each constant has Apple's exact raw value", arguments: allConstantCases)
    func rawValue(_ row: ConstantCase) {
        let constant = row.constant()
        #expect(Array((constant as String).utf8) == Array(row.raw.utf8))
        #expect(constant.length == row.raw.utf16.count)
    }

    @available(*, deprecated, message: "references deprecated constants on purpose")
    @Test(
        "Each constant equals, and hashes like, any NSString and String with its value",
        arguments: allConstantCases)
    func bridgesAsString(_ row: ConstantCase) {
        let constant = row.constant()
        let plain = NSString(string: row.raw)
        #expect(constant == plain)
        #expect(plain == constant)
        #expect(constant.hash == plain.hash)
        #expect(constant.isEqual(to: row.raw))
        #expect(AnyHashable(constant) == AnyHashable(row.raw))
        #expect((constant as Any) as? String == row.raw)
    }

    @available(*, deprecated, message: "references deprecated constants on purpose")
    @Test("The table covers all 217 constants of §1.1–§1.9, each name once")
    func tableIsComplete() {
        let names = allConstantCases.map(\.name)
        #expect(names.count == 217)
        #expect(Set(names).count == names.count)
    }

    @Test("Protocol values keep their trailing spaces (§8 item 3)")
    func protocolTrailingSpaces() {
        let padded: [(CFString, String)] = [
            (kSecAttrProtocolFTP, "ftp "), (kSecAttrProtocolIRC, "irc "),
            (kSecAttrProtocolSOCKS, "sox "), (kSecAttrProtocolAFP, "afp "),
            (kSecAttrProtocolSSH, "ssh "), (kSecAttrProtocolSMB, "smb "),
            (kSecAttrProtocolIPP, "ipp "),
        ]
        for (constant, raw) in padded {
            #expect(constant as String == raw)
            #expect(constant.length == 4)
        }
    }

    @Test("Constants that share a raw value are equal")
    func sharedRawValues() {
        #expect(kSecAttrKeyType == kSecAttrType)
        #expect(kSecAttrKeyCreator == kSecAttrCreator)
        #expect(kSecAttrKeyTypeEC == kSecAttrKeyTypeECSECPrimeRandom)
        #expect(kSecUseDataProtectionKeychain == kSecAttrNoLegacy)
        #expect(kSecAttrPersistantReference == kSecAttrPersistentReference)
        #expect(kSecAttrAccessibleAlwaysPrivate as String == "dk")
        #expect(kSecAttrAccessibleAlwaysThisDeviceOnlyPrivate as String == "dku")
        #expect(kSecAttrSharingGroupNone.length == 0)
    }

    @Test(
        "SecAccessControlCreateFlags members have Apple's bit values (§1.10)",
        arguments: [
            ("userPresence", .userPresence, 1 << 0),
            ("biometryAny", .biometryAny, 1 << 1),
            ("biometryCurrentSet", .biometryCurrentSet, 1 << 3),
            ("devicePasscode", .devicePasscode, 1 << 4),
            ("companion", .companion, 1 << 5),
            ("or", .or, 1 << 14),
            ("and", .and, 1 << 15),
            ("privateKeyUsage", .privateKeyUsage, 1 << 30),
            ("applicationPassword", .applicationPassword, 1 << 31),
        ] as [(String, SecAccessControlCreateFlags, UInt)])
    func accessControlFlagBits(_ name: String, _ flag: SecAccessControlCreateFlags, _ bits: UInt) {
        #expect(flag.rawValue == bits, "\(name)")
    }

    @available(*, deprecated, message: "checks the deprecated aliases on purpose")
    @Test("Deprecated SecAccessControlCreateFlags names alias their replacements")
    func deprecatedFlagAliases() {
        #expect(SecAccessControlCreateFlags.touchIDAny == .biometryAny)
        #expect(SecAccessControlCreateFlags.touchIDCurrentSet == .biometryCurrentSet)
        #expect(SecAccessControlCreateFlags.watch == .companion)
        #expect(SecAccessControlCreateFlags.touchIDAny.rawValue == 2)
        #expect(SecAccessControlCreateFlags.touchIDCurrentSet.rawValue == 8)
        #expect(SecAccessControlCreateFlags.watch.rawValue == 32)
    }

    @Test("Core Foundation values: noErr, kCFBooleanTrue/False, kCFAllocatorDefault")
    func coreFoundationValues() {
        #expect(noErr == 0)
        #expect(OSStatus(noErr) == errSecSuccess)
        #expect(kCFBooleanTrue.boolValue)
        #expect(!kCFBooleanFalse.boolValue)
        #expect(kCFAllocatorDefault == nil)
        #expect(kCFErrorDomainOSStatus as String == NSOSStatusErrorDomain)
    }
}
