// The ways iOS keychain code builds queries and reads results (Apple's result shapes:
// `SecItemResultCopyPrepared`, `OSX/sec/Security/SecItem.m`) compile and behave on Linux, where
// CFString is NSString (Sources/Security/CoreFoundation.swift) and Foundation's bridging differs
// from Apple's: return keys take Booleans only.

import Foundation
import Security
import Testing

/// A secret-free stand-in for item data.
private let sampleData = Data([0x01, 0x02, 0x03, 0x04])

/// A result dictionary shaped like a genp attribute+data result (as Apple's
/// `SecItemResultCopyPrepared` shapes it).
private func sampleResult() -> CFDictionary {
    makeResultDictionary([
        (kSecAttrAccount, "account-1"),
        (kSecAttrService, "service-1"),
        (kSecValueData, sampleData),
        (kSecAttrGeneric, NSData(data: sampleData)),
        (kSecAttrPort, 443),
        (kSecAttrIsInvisible, true),
        (kSecAttrIsNegative, kCFBooleanFalse as Any),
        (kSecAttrCreationDate, Date(timeIntervalSinceReferenceDate: 0)),
        (kSecAttrLabel, NSString(string: "label-1")),
    ])
}

@Suite("Bridging idioms (§8 item 19, §4.3)")
struct BridgingTests {
    // MARK: Building queries

    @Test("[kSecClass: kSecClassGenericPassword, kSecValueData: data] as CFDictionary")
    func cfStringKeyedLiteral() {
        let query =
            [kSecClass: kSecClassGenericPassword, kSecValueData: sampleData] as CFDictionary
        #expect(query.count == 2)
        #expect(query[kSecClass] as? String == "genp")
        #expect(query["class"] as? String == "genp")
        #expect(query[kSecValueData] as? Data == sampleData)
    }

    @Test("[String: AnyObject] with `kSecX as String` keys and constant values")
    func stringToAnyObjectQuery() {
        let query: [String: AnyObject] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrAccount as String: "account-1" as AnyObject,
            kSecValueData as String: sampleData as AnyObject,
            kSecReturnData as String: kCFBooleanTrue,
            kSecMatchLimit as String: kSecMatchLimitOne,
            kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock,
        ]
        #expect(query["class"] === kSecClassGenericPassword)
        let dictionary = query as CFDictionary
        #expect(dictionary.count == 6)
        #expect(dictionary[kSecClass] as? String == "genp")
        #expect(dictionary[kSecMatchLimit] as? String == kSecMatchLimitOne as String)
        #expect(dictionary[kSecValueData] as? Data == sampleData)
        #expect(dictionary[kSecReturnData] as? Bool == true)
    }

    @Test("[String: Any] with constant values and Swift values")
    func stringToAnyQuery() {
        var query: [String: Any] = [
            kSecClass as String: kSecClassInternetPassword,
            kSecAttrServer as String: "example.org",
            kSecAttrProtocol as String: kSecAttrProtocolHTTPS,
            kSecAttrPort as String: 443,
        ]
        query[kSecReturnAttributes as String] = true
        let dictionary = query as CFDictionary
        #expect(dictionary[kSecAttrProtocol] as? String == "htps")
        #expect(dictionary[kSecAttrPort] as? Int == 443)
        #expect(dictionary[kSecReturnAttributes] as? Bool == true)
    }

    @Test("[CFString: Any] looked up with the constants")
    func cfStringToAnyQuery() {
        var query: [CFString: Any] = [kSecClass: kSecClassKey, kSecAttrKeyType: kSecAttrKeyTypeRSA]
        query[kSecAttrKeySizeInBits] = 2048
        #expect(query[kSecClass] as? String == "keys")
        #expect(query[NSString(string: "type")] as? String == "42")
        #expect((query as CFDictionary).count == 3)
    }

    @Test("[AnyHashable: Any] keyed by constants and by strings is one dictionary")
    func anyHashableQuery() {
        var query: [AnyHashable: Any] = [kSecClass: kSecClassGenericPassword]
        query[kSecAttrAccount as String] = "account-1"
        #expect(query["class"] as? String == "genp")
        #expect(query[kSecAttrAccount] as? String == "account-1")
        query["class"] = kSecClassKey
        #expect(query.count == 2)
        #expect(query[kSecClass] as? String == "keys")
    }

    @Test("switch over a CFString with constant patterns")
    func switchOverCFString() {
        func kind(_ itemClass: CFString) -> String {
            switch itemClass {
            case kSecClassGenericPassword: return "generic"
            case kSecClassInternetPassword: return "internet"
            case kSecClassKey, kSecClassCertificate, kSecClassIdentity: return "crypto"
            default: return "other"
            }
        }
        #expect(kind(kSecClassGenericPassword) == "generic")
        #expect(kind(NSString(string: "inet")) == "internet")
        #expect(kind("idnt" as NSString) == "crypto")
        #expect(kind(NSString(string: "apls")) == "other")
        let fromString = "genp"
        #expect(fromString == kSecClassGenericPassword as String)
    }

    @Test("Constants are usable from Swift 6 concurrent code")
    func constantsInConcurrentCode() async {
        let values = await withTaskGroup(of: String.self) { group in
            group.addTask { kSecClassGenericPassword as String }
            group.addTask { kSecAttrAccessibleWhenUnlocked as String }
            var collected: [String] = []
            for await value in group { collected.append(value) }
            return collected.sorted()
        }
        #expect(values == ["ak", "genp"])
    }

    // MARK: How query values arrive

    @Test("Query keys arrive as strings equal to the raw values")
    func queryKeysArriveAsStrings() {
        let query: [String: Any] = [kSecClass as String: kSecClassGenericPassword]
        let fromCFStrings = [kSecAttrAccount: "account-1"] as CFDictionary
        for dictionary in [query as CFDictionary, fromCFStrings] {
            for (key, _) in dictionary {
                #expect(key as? String == "class" || key as? String == "acct")
                #expect(key is NSString)
            }
        }
    }

    @Test("Query values arrive as Swift values: Bool for Booleans, NSNumber for numbers")
    func queryValuesArrive() {
        let query: [String: Any] = [
            "swiftTrue": true, "cfTrue": kCFBooleanTrue as Any, "one": 1, "int32": Int32(7),
            "data": sampleData, "string": "text", "constant": kSecMatchLimitAll,
        ]
        let dictionary = query as CFDictionary
        func value(_ key: String) -> Any { dictionary[key] ?? NSNull() }
        #expect(type(of: value("swiftTrue")) == Bool.self)
        #expect(type(of: value("cfTrue")) == Bool.self)
        #expect(value("one") is NSNumber)
        #expect(value("int32") as? Int == 7)
        #expect(value("data") as? Data == sampleData)
        #expect(value("string") as? String == "text")
        #expect(value("constant") as? String == "m_LimitAll")
        // The pitfall: `as? Bool` also accepts the number 1, so it cannot tell them apart.
        #expect(value("one") as? Bool == true)
    }

    @Test("cfBooleanValue tells Booleans from numbers, however they arrive")
    func booleanDetection() {
        #expect(cfBooleanValue(true) == true)
        #expect(cfBooleanValue(false) == false)
        #expect(cfBooleanValue(kCFBooleanTrue as Any) == true)
        #expect(cfBooleanValue(kCFBooleanFalse as Any) == false)
        #expect(cfBooleanValue(NSNumber(value: true)) == true)
        #expect(cfBooleanValue(1) == nil)
        #expect(cfBooleanValue(0) == nil)
        #expect(cfBooleanValue(NSNumber(value: 1)) == nil)
        #expect(cfBooleanValue(NSNumber(value: Int8(1))) == nil)
        #expect(cfBooleanValue("true") == nil)
        let dictionary = ["t": true, "f": false, "n": 1] as [String: Any] as CFDictionary
        #expect(cfBooleanValue(dictionary["t"] as Any) == true)
        #expect(cfBooleanValue(dictionary["f"] as Any) == false)
        #expect(cfBooleanValue(dictionary["n"] as Any) == nil)
    }

    // MARK: Reading results

    @Test("A result reads as [String: Any] by `kSecX as String`")
    func resultAsStringKeyed() throws {
        let result = try #require(sampleResult() as? [String: Any])
        #expect(result.count == 9)
        #expect(result[kSecAttrAccount as String] as? String == "account-1")
        #expect(result[kSecValueData as String] as? Data == sampleData)
        #expect(result[kSecAttrGeneric as String] as? Data == sampleData)
        #expect(result[kSecAttrLabel as String] as? String == "label-1")
        #expect(result["v_Data"] as? NSData == NSData(data: sampleData))
    }

    @Test("A result reads as [CFString: Any] by the constants")
    func resultAsCFStringKeyed() throws {
        let result = try #require(sampleResult() as? [CFString: Any])
        #expect(result[kSecAttrAccount] as? String == "account-1")
        #expect(result[kSecAttrService] as? String == "service-1")
        #expect(result[kSecValueData] as? Data == sampleData)
        #expect(result[NSString(string: "acct")] as? String == "account-1")
    }

    @Test("A result reads as NSDictionary by the constants and by strings")
    func resultAsNSDictionary() {
        let result: NSDictionary = sampleResult()
        #expect(result[kSecAttrAccount] as? String == "account-1")
        #expect(result[kSecAttrAccount as String] as? String == "account-1")
        #expect(result.object(forKey: kSecAttrService) as? String == "service-1")
        #expect(result.object(forKey: "svce") as? String == "service-1")
    }

    @Test("A result reads as [AnyHashable: Any] by the constant itself and by `kSecX as String`")
    func resultAsAnyHashableKeyed() throws {
        let result = try #require(sampleResult() as? [AnyHashable: Any])
        #expect(result[kSecAttrAccount] as? String == "account-1")
        #expect(result[kSecAttrAccount as String] as? String == "account-1")
        #expect(result["acct"] as? String == "account-1")
        #expect(result[AnyHashable(kSecValueData)] as? Data == sampleData)
        // Only the constants hash like strings: another NSString with the same characters is a
        // different AnyHashable key on Linux.
        #expect(result[NSString(string: "acct")] == nil)
    }

    @Test("Result values cast as on Apple platforms")
    func resultValueCasts() throws {
        let result = try #require(sampleResult() as? [String: Any])
        // Data stored as Data or as NSData reads both ways.
        #expect(result["v_Data"] as? Data == sampleData)
        #expect((result["v_Data"] as? NSData)?.length == 4)
        #expect((result["gena"] as? NSData)?.length == 4)
        // Strings stored as String or NSString read both ways.
        #expect(result["acct"] as? String == "account-1")
        #expect(result["labl"] as? NSString == NSString(string: "label-1"))
        // Numbers read as Int, NSNumber and — for 0 and 1 — Bool.
        #expect(result["port"] as? Int == 443)
        #expect((result["port"] as? NSNumber)?.int32Value == 443)
        // Booleans given at add come back as the numbers 0 and 1, as securityd returns them, readable
        // as Bool and as Int.
        #expect(result["invi"] as? Bool == true)
        #expect(result["invi"] as? Int == 1)
        #expect(result["nega"] as? Bool == false)
        #expect(result["nega"] as? Int == 0)
        #expect(cfBooleanValue(result["invi"] as Any) == nil)
        // Dates.
        #expect(result["cdat"] as? Date == Date(timeIntervalSinceReferenceDate: 0))
    }

    @Test("A result reached through CFTypeRef? casts like SecItemCopyMatching's output")
    func resultThroughCFTypeRef() throws {
        var result: CFTypeRef? = sampleResult()
        #expect((result as? [String: Any])?["acct"] as? String == "account-1")
        #expect((result as? NSDictionary)?[kSecAttrAccount] as? String == "account-1")
        result = NSData(data: sampleData)
        #expect(result as? Data == sampleData)
        #expect((result as? NSData)?.length == 4)
        result = sampleData as AnyObject
        #expect(result as? Data == sampleData)
        #expect(result as? String == nil)
    }

    @Test("A result array reads as arrays of each dictionary shape")
    func resultArray() throws {
        let array = makeResultArray([sampleResult(), sampleResult()])
        let asAnyObject: CFTypeRef? = array
        let items = try #require(asAnyObject as? [[String: Any]])
        #expect(items.count == 2)
        #expect(items[1][kSecAttrAccount as String] as? String == "account-1")
        #expect((array as? [NSDictionary])?.first?[kSecAttrService] as? String == "service-1")
        #expect((array as? [[AnyHashable: Any]])?.first?[kSecAttrAccount] as? String == "account-1")
        #expect((array as? [[CFString: Any]])?.last?[kSecValueData] as? Data == sampleData)
        let datas = makeResultArray([sampleData, NSData(data: sampleData)])
        #expect((datas as? [Data]) == [sampleData, sampleData])
    }

    @Test("A SecAccessControl stored in a result reads back as the same object")
    func accessControlInResult() throws {
        let access = try #require(
            SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, [], nil))
        let result = try #require(
            makeResultDictionary([(kSecAttrAccessControl, access)]) as? [String: Any])
        let readBack = try #require(result[kSecAttrAccessControl as String] as? SecAccessControl)
        #expect(readBack === access)
    }

    @Test("A constant hashes and compares like any NSString with its characters")
    func constantHashesLikeAnNSString() {
        for constant in [kSecAttrAccount, kSecAttrService, kSecValueData, kSecClass, kSecAttrAccessControl] {
            let plain = NSString(string: constant as String)
            #expect(constant.hash == plain.hash, "\(constant)")
            #expect(constant.isEqual(plain) && plain.isEqual(constant), "\(constant)")
            let dictionary = NSDictionary(dictionary: [plain: 1])
            #expect(dictionary[constant] as? Int == 1, "\(constant)")
        }
    }

    @Test("A constant is equal exactly to the strings with its UTF-16 code units")
    func constantEquality() {
        let account: NSString = kSecAttrAccount
        #expect(account.isEqual(kSecAttrAccount))
        #expect(account.isEqual(NSString(string: "acct")) && NSString(string: "acct").isEqual(account))
        #expect(account.isEqual("acct"))
        for other in ["acc", "acctx", "acc\u{0}", "ACCT", "svce", "", "ácct"] {
            #expect(!account.isEqual(NSString(string: other)), "\(other)")
            #expect(!NSString(string: other).isEqual(account), "\(other)")
            #expect(!account.isEqual(other), "\(other)")
        }
        #expect(!account.isEqual(kSecAttrService))
        #expect(!account.isEqual(NSNumber(value: 4)))
        #expect(!account.isEqual(nil))
    }

    @Test("A query literal keeps every distinct constant key, found by the constant and by its string")
    func literalWithManyConstantKeys() {
        let keys: [CFString] = [
            kSecClass, kSecAttrAccount, kSecAttrService, kSecAttrLabel, kSecAttrGeneric, kSecAttrDescription,
            kSecAttrComment, kSecAttrCreator, kSecAttrType, kSecAttrIsInvisible, kSecAttrIsNegative, kSecAttrServer,
            kSecAttrProtocol, kSecAttrPort, kSecAttrPath, kSecAttrSecurityDomain, kSecAttrAuthenticationType,
            kSecAttrAccessGroup, kSecAttrAccessible, kSecAttrSynchronizable, kSecReturnData, kSecReturnAttributes,
            kSecReturnRef, kSecReturnPersistentRef, kSecMatchLimit, kSecValueData, kSecValuePersistentRef,
        ]
        var literal: [CFString: Any] = [:]
        for (index, key) in keys.enumerated() { literal[key] = index }
        let dictionary = literal as CFDictionary
        #expect(dictionary.count == keys.count)
        for (index, key) in keys.enumerated() {
            #expect(dictionary[key] as? Int == index, "\(key)")
            #expect(dictionary[NSString(string: key as String)] as? Int == index, "\(key)")
        }
    }

    @Test("A later pair replaces an earlier one with the same key")
    func duplicateKeys() {
        let result = makeResultDictionary([
            (kSecAttrAccount, "first"), (NSString(string: "acct"), "second"),
        ])
        #expect(result.count == 1)
        #expect(result[kSecAttrAccount] as? String == "second")
    }

    @Test("Optional values are unwrapped, and nil values are left out")
    func optionalValues() {
        let present: String? = "account-1"
        let absent: Data? = nil
        let nested: Int?? = 5
        let result = makeResultDictionary([
            (kSecAttrAccount, present as Any), (kSecValueData, absent as Any),
            (kSecAttrPort, nested as Any),
        ])
        #expect(result.count == 2)
        #expect(result[kSecAttrAccount] as? String == "account-1")
        #expect(result[kSecAttrPort] as? Int == 5)
        #expect(result[kSecValueData] == nil)
        #expect(makeResultArray([present as Any, absent as Any]).count == 1)
    }

    // MARK: Status codes

    @Test("Status codes compare and switch as Int32 values")
    func statusIdioms() {
        let status: OSStatus = -25300
        #expect(status == errSecItemNotFound)
        #expect(status != noErr)
        switch status {
        case errSecSuccess: Issue.record("matched errSecSuccess")
        case errSecItemNotFound: break
        default: Issue.record("matched nothing")
        }
    }
}
