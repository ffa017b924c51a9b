import Foundation
import KeychainCore
import SeededRandom
import Security
import Testing

/// Builds random query dictionaries from every kind of key and value Apple code passes, and
/// from plenty that it does not.
struct QueryGenerator {
    var random: SplitMix64

    nonisolated(unsafe) static let keys: [CFString] = [
        kSecClass, kSecAttrAccessible, kSecAttrAccessControl, kSecAttrAccessGroup, kSecAttrSynchronizable,
        kSecAttrCreationDate, kSecAttrModificationDate, kSecAttrDescription, kSecAttrComment, kSecAttrCreator,
        kSecAttrType, kSecAttrLabel, kSecAttrIsInvisible, kSecAttrIsNegative, kSecAttrAccount, kSecAttrService,
        kSecAttrGeneric, kSecAttrSecurityDomain, kSecAttrServer, kSecAttrProtocol, kSecAttrAuthenticationType,
        kSecAttrPort, kSecAttrPath, kSecAttrSubject, kSecAttrIssuer, kSecAttrSerialNumber, kSecAttrSubjectKeyID,
        kSecAttrPublicKeyHash, kSecAttrCertificateType, kSecAttrCertificateEncoding, kSecAttrKeyClass,
        kSecAttrApplicationLabel, kSecAttrIsPermanent, kSecAttrApplicationTag, kSecAttrKeyType,
        kSecAttrKeySizeInBits, kSecAttrEffectiveKeySize, kSecAttrCanEncrypt, kSecAttrCanSign, kSecAttrSyncViewHint,
        kSecAttrTokenID, kSecAttrPersistentReference, kSecMatchPolicy, kSecMatchItemList, kSecMatchSearchList,
        kSecMatchIssuers, kSecMatchEmailAddressIfPresent, kSecMatchSubjectContains, kSecMatchHostOrSubdomainOfHost,
        kSecMatchCaseInsensitive, kSecMatchTrustedOnly, kSecMatchValidOnDate, kSecMatchLimit, kSecReturnData,
        kSecReturnAttributes, kSecReturnRef, kSecReturnPersistentRef, kSecValueData, kSecValueRef,
        kSecValuePersistentRef, kSecUseItemList, kSecUseKeychain, kSecUseOperationPrompt, kSecUseAuthenticationUI,
        kSecUseAuthenticationContext, kSecUseDataProtectionKeychain, kSecAttrAccess,
    ]

    static let strings: [String] = [
        "", "a", "genp", "inet", "cert", "keys", "idnt", "apls", "ak", "ck", "dk", "aku", "akpu", "f", "htps",
        "ftp ", "syna", "m_LimitOne", "m_LimitAll", "u_AuthUIS", "u_AuthUIF", "42", "-1", "0", "default",
        "com.apple.token", "*", String(repeating: "x", count: 70_000), "nul\0byte", "ünïcødé",
    ]

    mutating func int(_ upper: Int) -> Int { Int.random(in: 0..<upper, using: &random) }

    mutating func key() -> NSObject {
        switch int(10) {
        case 0: return NSNumber(value: int(100))
        case 1: return NSString(string: String((0..<int(8)).map { _ in Character(UnicodeScalar(UInt8(97 + int(26)))) }))
        case 2: return NSString(string: ["r_", "m_", "u_", "v_", "c", "f_x", "prf"][int(7)] + "Zz")
        default: return Self.keys[int(Self.keys.count)]
        }
    }

    mutating func value(depth: Int = 0) -> Any {
        switch int(depth > 1 ? 12 : 15) {
        case 0: return Self.strings[int(Self.strings.count)]
        case 1: return Data((0..<int(40)).map { _ in UInt8(int(256)) })
        case 2: return int(70_000) - 1000
        case 3: return Bool.random(using: &random)
        case 4: return kCFBooleanTrue!
        case 5: return Double(int(1000)) / 7
        case 6: return Date(timeIntervalSinceReferenceDate: Double(int(1_000_000)))
        case 7: return NSNull()
        case 8: return [kSecClassGenericPassword, kSecClassInternetPassword, kSecClassKey][int(3)]
        case 9: return SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, [], nil)!
        case 10: return UUID()
        case 11: return Data("genp".utf8) + Data(count: 16)
        case 12: return (0..<int(3)).map { _ in value(depth: depth + 1) }
        case 13: return NSDictionary(dictionary: ["a": value(depth: depth + 1)])
        default: return Double.nan
        }
    }

    mutating func dictionary() -> NSDictionary {
        let result = NSMutableDictionary()
        if int(10) < 8 {
            result[kSecClass] =
                [
                    kSecClassGenericPassword, kSecClassInternetPassword, kSecClassCertificate, kSecClassKey,
                    kSecClassIdentity,
                ][int(5)]
        }
        for _ in 0..<int(7) {
            result[key()] = value()
        }
        return result
    }
}

@Suite("Randomized input")
struct FuzzTests {
    @Test("100,000 random dictionaries: no trap, only documented status codes")
    func randomDictionaries() throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["KEYCHAIN_FUZZ_SEED"] ?? "") ?? 20_261_122
        var generator = QueryGenerator(random: SplitMix64(seed: seed))
        var counts: [OSStatus: Int] = [:]
        try withKeychain { _ in
            for index in 0..<100_000 {
                let dictionary = generator.dictionary()
                var result: CFTypeRef?
                let status: OSStatus
                switch index % 4 {
                case 0: status = SecItemAdd(dictionary, &result)
                case 1: status = SecItemCopyMatching(dictionary, &result)
                case 2: status = SecItemUpdate(dictionary, generator.dictionary())
                default: status = SecItemDelete(dictionary)
                }
                counts[status, default: 0] += 1
                if !documentedStatuses.contains(status) {
                    Issue.record("undocumented status \(status) for dictionary \(index) of seed \(seed)")
                    return
                }
            }
        }
        // The generator reaches deep into the parser: successes and many distinct failures.
        #expect(counts[errSecSuccess, default: 0] > 100)
        #expect(counts.keys.count >= 6)
    }
}
