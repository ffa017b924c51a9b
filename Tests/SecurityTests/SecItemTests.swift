import Foundation
import KeychainCore
import KeychainTestSupport
import Security
import Testing

/// One primary-key attribute of a class with two values of the type Apple code passes.
struct SecPrimaryKeyCase: CustomTestStringConvertible, @unchecked Sendable {
    var itemClass: CFString
    var key: CFString
    var first: Any
    var second: Any
    var testDescription: String { "\(itemClass).\(key)" }
}

let secPrimaryKeyCases: [SecPrimaryKeyCase] = [
    .init(itemClass: kSecClassGenericPassword, key: kSecAttrAccount, first: "alice", second: "bob"),
    .init(itemClass: kSecClassGenericPassword, key: kSecAttrService, first: "s1", second: "s2"),
    .init(itemClass: kSecClassGenericPassword, key: kSecAttrAccessGroup, first: "g1", second: "g2"),
    .init(itemClass: kSecClassGenericPassword, key: kSecAttrSynchronizable, first: false, second: true),
    .init(itemClass: kSecClassGenericPassword, key: kSecAttrSyncViewHint, first: "v1", second: "v2"),
    .init(itemClass: kSecClassGenericPassword, key: kSecAttrTokenID, first: "t1", second: "t2"),
    .init(itemClass: kSecClassInternetPassword, key: kSecAttrAccount, first: "alice", second: "bob"),
    .init(itemClass: kSecClassInternetPassword, key: kSecAttrSecurityDomain, first: "d1", second: "d2"),
    .init(itemClass: kSecClassInternetPassword, key: kSecAttrServer, first: "a.example", second: "b.example"),
    .init(
        itemClass: kSecClassInternetPassword, key: kSecAttrProtocol, first: kSecAttrProtocolHTTPS,
        second: kSecAttrProtocolFTP),
    .init(
        itemClass: kSecClassInternetPassword, key: kSecAttrAuthenticationType,
        first: kSecAttrAuthenticationTypeHTMLForm, second: kSecAttrAuthenticationTypeHTTPBasic),
    .init(itemClass: kSecClassInternetPassword, key: kSecAttrPort, first: 443, second: 8443),
    .init(itemClass: kSecClassInternetPassword, key: kSecAttrPath, first: "/a", second: "/b"),
    .init(itemClass: kSecClassInternetPassword, key: kSecAttrAccessGroup, first: "g1", second: "g2"),
    .init(itemClass: kSecClassCertificate, key: kSecAttrCertificateType, first: 1, second: 3),
    .init(itemClass: kSecClassCertificate, key: kSecAttrIssuer, first: Data([1]), second: Data([2])),
    .init(itemClass: kSecClassCertificate, key: kSecAttrSerialNumber, first: Data([1]), second: Data([2])),
    .init(
        itemClass: kSecClassKey, key: kSecAttrKeyClass, first: kSecAttrKeyClassPublic, second: kSecAttrKeyClassPrivate),
    .init(itemClass: kSecClassKey, key: kSecAttrApplicationLabel, first: Data([1]), second: Data([2])),
    .init(itemClass: kSecClassKey, key: kSecAttrApplicationTag, first: Data("a".utf8), second: Data("b".utf8)),
    .init(
        itemClass: kSecClassKey, key: kSecAttrKeyType, first: kSecAttrKeyTypeRSA,
        second: kSecAttrKeyTypeECSECPrimeRandom),
    .init(itemClass: kSecClassKey, key: kSecAttrKeySizeInBits, first: 256, second: 2048),
    .init(itemClass: kSecClassKey, key: kSecAttrEffectiveKeySize, first: 256, second: 2048),
    .init(itemClass: kSecClassKey, key: kSecAttrCreator, first: 1, second: 2),
]

@Suite("§3 primary keys through SecItem")
struct SecItemPrimaryKeyTests {
    @Test(
        "equal in every primary-key attribute: errSecDuplicateItem", arguments: KeychainBackend.memoryAndAgent,
        secPrimaryKeyCases)
    func collide(backend: KeychainBackend, _ row: SecPrimaryKeyCase) throws {
        try withKeychain(backend) { _ in
            // Certificate data must be a DER certificate (it is parsed): certificate rows carry attributes only.
            var item: [CFString: Any] = [kSecClass: row.itemClass, row.key: row.first, kSecValueData: Data("a".utf8)]
            if row.itemClass == kSecClassCertificate { item[kSecValueData] = nil }
            #expect(add(item) == errSecSuccess)
            #expect(add(item) == errSecDuplicateItem)
        }
    }

    @Test(
        "differing in one primary-key attribute: both stored", arguments: KeychainBackend.memoryAndAgent,
        secPrimaryKeyCases)
    func coexist(backend: KeychainBackend, _ row: SecPrimaryKeyCase) throws {
        try withKeychain(backend) { _ in
            #expect(add([kSecClass: row.itemClass, row.key: row.first]) == errSecSuccess)
            #expect(add([kSecClass: row.itemClass, row.key: row.second]) == errSecSuccess)
            let (status, result) = copyMatching([
                kSecClass: row.itemClass, kSecMatchLimit: kSecMatchLimitAll, kSecReturnAttributes: true,
                kSecAttrSynchronizable: kSecAttrSynchronizableAny,
            ])
            #expect(status == errSecSuccess)
            #expect((result as? [[String: Any]])?.count == 2)
        }
    }
}

@Suite("§4 SecItemCopyMatching")
struct SecItemCopyMatchingTests {
    private func seed() {
        #expect(
            add([
                kSecClass: kSecClassGenericPassword, kSecAttrService: "svc", kSecAttrAccount: "alice",
                kSecValueData: Data("alice-secret".utf8), kSecAttrLabel: "Alice",
            ]) == errSecSuccess)
        #expect(
            add([
                kSecClass: kSecClassGenericPassword, kSecAttrService: "svc", kSecAttrAccount: "bob",
                kSecValueData: Data("bob-secret".utf8),
            ]) == errSecSuccess)
    }

    @Test("data only, limit one: a CFData", arguments: KeychainBackend.memoryAndAgent)
    func dataOnly(backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            seed()
            let (status, result) = copyMatching([
                kSecClass: kSecClassGenericPassword, kSecAttrAccount: "alice", kSecReturnData: true,
            ])
            #expect(status == errSecSuccess)
            #expect(result as? Data == Data("alice-secret".utf8))
            #expect(result is NSData)
        }
    }

    @Test(
        "attributes: raw keys, strings, numbers, dates and housekeeping keys, no class",
        arguments: KeychainBackend.memoryAndAgent)
    func attributesShape(backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            seed()
            let (status, result) = copyMatching([
                kSecClass: kSecClassGenericPassword, kSecAttrAccount: "alice", kSecReturnAttributes: true,
            ])
            #expect(status == errSecSuccess)
            let dictionary = try #require(result as? [String: Any])
            #expect(dictionary["acct"] as? String == "alice")
            #expect(dictionary[kSecAttrService as String] as? String == "svc")
            #expect(dictionary["labl"] as? String == "Alice")
            #expect(dictionary["pdmn"] as? String == "ak")
            #expect(dictionary["agrp"] as? String == AccessGroups.defaultGroupName)
            #expect(dictionary["sync"] as? Int == 0)
            #expect(dictionary["tomb"] as? Int == 0)
            #expect(dictionary["musr"] as? Data == Data())
            #expect(dictionary["cdat"] is Date)
            #expect(dictionary["mdat"] is Date)
            #expect(dictionary["accc"] is SecAccessControl)
            #expect(dictionary["class"] == nil)
            #expect(dictionary["v_Data"] == nil)
            #expect(dictionary["sha1"] == nil)
            let byConstant = try #require(result as? [AnyHashable: Any])
            #expect(byConstant[kSecAttrAccount] as? String == "alice")
            #expect(byConstant[kSecAttrAccount as String] as? String == "alice")
            let cfKeyed = try #require(result as? [CFString: Any])
            #expect(cfKeyed[kSecAttrAccount] as? String == "alice")
            #expect((result as? NSDictionary)?[kSecAttrAccount] as? String == "alice")
        }
    }

    @Test("attributes and data: v_Data and sha1 are added", arguments: KeychainBackend.memoryAndAgent)
    func attributesAndData(backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            seed()
            let (_, result) = copyMatching([
                kSecClass: kSecClassGenericPassword, kSecAttrAccount: "alice", kSecReturnAttributes: true,
                kSecReturnData: true,
            ])
            let dictionary = try #require(result as? [String: Any])
            #expect(dictionary[kSecValueData as String] as? Data == Data("alice-secret".utf8))
            #expect((dictionary["sha1"] as? Data)?.count == 20)
        }
    }

    @Test(
        "limit all and numeric limits other than one return arrays; limit 1 a single object",
        arguments: KeychainBackend.memoryAndAgent)
    func limitDecidesShape(backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            seed()
            let all = copyMatching([
                kSecClass: kSecClassGenericPassword, kSecMatchLimit: kSecMatchLimitAll, kSecReturnData: true,
            ])
            #expect((all.1 as? [Data])?.count == 2)
            let two = copyMatching([
                kSecClass: kSecClassGenericPassword, kSecAttrAccount: "bob", kSecMatchLimit: 2,
                kSecReturnAttributes: true,
            ])
            #expect((two.1 as? [[String: Any]])?.count == 1)
            let one = copyMatching([kSecClass: kSecClassGenericPassword, kSecMatchLimit: 1, kSecReturnData: true])
            #expect(one.1 is Data)
            #expect(one.1 as? Data == Data("alice-secret".utf8))
        }
    }

    @Test(
        "no return keys: success with no object for limit one, an empty array otherwise",
        arguments: KeychainBackend.memoryAndAgent)
    func noReturnKeys(backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            seed()
            let one = copyMatching([kSecClass: kSecClassGenericPassword])
            #expect(one.0 == errSecSuccess)
            #expect(one.1 == nil)
            let all = copyMatching([kSecClass: kSecClassGenericPassword, kSecMatchLimit: kSecMatchLimitAll])
            #expect(all.0 == errSecSuccess)
            #expect((all.1 as? [Any])?.isEmpty == true)
            #expect(SecItemCopyMatching([kSecClass: kSecClassGenericPassword] as CFDictionary, nil) == errSecSuccess)
        }
    }

    @Test(
        "Ref for a password: no object for limit one; Ref with attributes carries class and v_Data",
        arguments: KeychainBackend.memoryAndAgent)
    func referenceForPasswords(backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            seed()
            let ref = copyMatching([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "alice", kSecReturnRef: true])
            #expect(ref.0 == errSecSuccess)
            #expect(ref.1 == nil)
            let both = copyMatching([
                kSecClass: kSecClassGenericPassword, kSecAttrAccount: "alice", kSecReturnRef: true,
                kSecReturnAttributes: true,
            ])
            let dictionary = try #require(both.1 as? [String: Any])
            #expect(dictionary["class"] as? String == "genp")
            #expect(dictionary["v_Data"] as? Data == Data("alice-secret".utf8))
            let certificates = copyMatching([kSecClass: kSecClassCertificate, kSecReturnRef: true])
            #expect(certificates.0 == errSecItemNotFound)
        }
    }

    @Test(
        "persistent references find their item without a class, across updates",
        arguments: KeychainBackend.memoryAndAgent)
    func persistentReferences(backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            var added: CFTypeRef?
            #expect(
                SecItemAdd(
                    [
                        kSecClass: kSecClassGenericPassword, kSecAttrAccount: "p", kSecValueData: Data("1".utf8),
                        kSecReturnPersistentRef: true,
                    ] as CFDictionary, &added) == errSecSuccess)
            let reference = try #require(added as? Data)
            #expect(reference.count == 20)
            #expect(reference.prefix(4) == Data("genp".utf8))
            #expect(
                SecItemUpdate(
                    [kSecValuePersistentRef: reference] as CFDictionary, [kSecValueData: Data("2".utf8)] as CFDictionary
                )
                    == errSecSuccess)
            let (status, result) = copyMatching([kSecValuePersistentRef: reference, kSecReturnData: true])
            #expect(status == errSecSuccess)
            #expect(result as? Data == Data("2".utf8))
            let refAgain = copyMatching([kSecClass: kSecClassGenericPassword, kSecReturnPersistentRef: true])
            #expect(refAgain.1 as? Data == reference)
            #expect(copyMatching([kSecValuePersistentRef: reference, kSecAttrAccount: "p"]).0 == errSecParam)
            #expect(copyMatching([kSecValuePersistentRef: Data("junk".utf8)]).0 == errSecParam)
            #expect(SecItemDelete([kSecValuePersistentRef: reference] as CFDictionary) == errSecSuccess)
            #expect(copyMatching([kSecValuePersistentRef: reference]).0 == errSecItemNotFound)
        }
    }

    @Test(
        "hashed attributes match across String and Data; the stored type comes back (§8.1)",
        arguments: KeychainBackend.memoryAndAgent)
    func accountAsData(backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            #expect(add([kSecClass: kSecClassGenericPassword, kSecAttrAccount: Data("bob".utf8)]) == errSecSuccess)
            #expect(add([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "bob"]) == errSecDuplicateItem)
            let (_, result) = copyMatching([
                kSecClass: kSecClassGenericPassword, kSecAttrAccount: "bob", kSecReturnAttributes: true,
            ])
            #expect((result as? [String: Any])?["acct"] as? Data == Data("bob".utf8))
        }
    }

    @Test(
        "internet passwords: port and protocol round-trip with their types (§8.3)",
        arguments: KeychainBackend.memoryAndAgent)
    func internetPasswordTypes(backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            #expect(
                add([
                    kSecClass: kSecClassInternetPassword, kSecAttrServer: "example.com", kSecAttrPort: 443,
                    kSecAttrProtocol: kSecAttrProtocolHTTPS, kSecAttrAccount: "a", kSecValueData: Data("x".utf8),
                ]) == errSecSuccess)
            let (_, result) = copyMatching([
                kSecClass: kSecClassInternetPassword, kSecAttrServer: "example.com", kSecReturnAttributes: true,
            ])
            let dictionary = try #require(result as? [String: Any])
            #expect(dictionary["port"] as? Int == 443)
            #expect(dictionary["ptcl"] as? String == "htps")
            #expect(dictionary["sdmn"] as? String == "")
            #expect(dictionary["path"] as? String == "")
            #expect(
                copyMatching([kSecClass: kSecClassInternetPassword, kSecMatchHostOrSubdomainOfHost: "com"]).0
                    == errSecSuccess)
            #expect(
                copyMatching([kSecClass: kSecClassInternetPassword, kSecMatchHostOrSubdomainOfHost: "ample.com"]).0
                    == errSecItemNotFound)
            #expect(
                copyMatching([kSecClass: kSecClassGenericPassword, kSecMatchHostOrSubdomainOfHost: "com"]).0
                    == errSecUnimplemented)
        }
    }

    @Test("key class and key type come back as numbers (§8.4)", arguments: KeychainBackend.memoryAndAgent)
    func keyNumbers(backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            #expect(
                add([
                    kSecClass: kSecClassKey, kSecAttrKeyClass: kSecAttrKeyClassPrivate,
                    kSecAttrKeyType: kSecAttrKeyTypeRSA,
                ])
                    == errSecSuccess)
            let (_, result) = copyMatching([kSecClass: kSecClassKey, kSecReturnAttributes: true])
            let dictionary = try #require(result as? [String: Any])
            #expect(dictionary["kcls"] as? Int == 1)
            #expect(dictionary["type"] as? Int == 42)
        }
    }

    @Test("synchronizable items are hidden unless asked for (§4.5)", arguments: KeychainBackend.memoryAndAgent)
    func synchronizableHidden(backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            #expect(
                add([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "s", kSecAttrSynchronizable: true])
                    == errSecSuccess)
            #expect(copyMatching([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "s"]).0 == errSecItemNotFound)
            #expect(
                copyMatching([kSecClass: kSecClassGenericPassword, kSecAttrSynchronizable: kSecAttrSynchronizableAny]).0
                    == errSecSuccess)
            #expect(
                copyMatching([kSecClass: kSecClassGenericPassword, kSecAttrSynchronizable: true]).0 == errSecSuccess)
            #expect(SecItemDelete([kSecClass: kSecClassGenericPassword] as CFDictionary) == errSecItemNotFound)
        }
    }

    @Test("a failed search leaves the result untouched (§8.18)", arguments: KeychainBackend.memoryAndAgent)
    func resultUntouchedOnFailure(backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            var result: CFTypeRef? = NSString(string: "sentinel")
            #expect(
                SecItemCopyMatching(
                    [kSecClass: kSecClassGenericPassword, kSecReturnData: true] as CFDictionary, &result)
                    == errSecItemNotFound)
            #expect(result as? String == "sentinel")
        }
    }
}

@Suite("§4.1 bad input")
struct SecItemBadInputTests {
    nonisolated(unsafe) static let cases: [(String, [CFString: Any], OSStatus)] = [
        ("no class", [kSecAttrAccount: "a"], errSecParam),
        ("unknown class", [kSecClass: "nope"], errSecNoSuchClass),
        ("AppleShare class", [kSecClass: kSecClassAppleSharePassword], errSecNoSuchClass),
        ("class not a string", [kSecClass: 5], errSecParam),
        ("server on a generic password", [kSecClass: kSecClassGenericPassword, kSecAttrServer: "x"], errSecNoSuchAttr),
        ("account as a date", [kSecClass: kSecClassGenericPassword, kSecAttrAccount: Date()], errSecParam),
        ("account as an array", [kSecClass: kSecClassGenericPassword, kSecAttrAccount: ["a"]], errSecParam),
        ("data as a string", [kSecClass: kSecClassGenericPassword, kSecValueData: "text"], errSecParam),
        ("return key as a number", [kSecClass: kSecClassGenericPassword, kSecReturnData: 1], errSecParam),
        ("unknown return key", [kSecClass: kSecClassGenericPassword, "r_Nope" as CFString: true], errSecParam),
        ("unknown use key", [kSecClass: kSecClassGenericPassword, "u_Nope" as CFString: true], errSecParam),
        ("one-letter key", [kSecClass: kSecClassGenericPassword, "x" as CFString: true], errSecParam),
        ("bad accessibility", [kSecClass: kSecClassGenericPassword, kSecAttrAccessible: "zz"], errSecParam),
        ("bad limit", [kSecClass: kSecClassGenericPassword, kSecMatchLimit: "many"], errSecParam),
        ("persistref key", [kSecClass: kSecClassGenericPassword, "persistref" as CFString: Data()], errSecParam),
        ("port as text", [kSecClass: kSecClassInternetPassword, kSecAttrPort: Data([1])], errSecParam),
        // The engine keeps a Secret Service map on internet passwords; Apple's have no `gena`.
        (
            "generic on an internet password", [kSecClass: kSecClassInternetPassword, kSecAttrGeneric: Data([1])],
            errSecNoSuchAttr
        ),
        // Linux's own: the Secret Service's search terms and primary-key discriminator.
        ("search terms", [kSecClass: kSecClassGenericPassword, "trms" as CFString: Data()], errSecNoSuchAttr),
        ("discriminator", [kSecClass: kSecClassInternetPassword, "pkdx" as CFString: Data([1])], errSecNoSuchAttr),
    ]

    @Test(
        "wrong types and unknown keys give Apple's codes, never a trap", arguments: KeychainBackend.memoryAndAgent,
        0..<19)
    func badInput(backend: KeychainBackend, index: Int) throws {
        let (_, query, expected) = Self.cases[index]
        try withKeychain(backend) { _ in
            // SecItemCopyMatching ignores kSecValueData (macOS strips it: Apple's
            // `OSX/libsecurity_keychain/lib/SecItem.cpp`); SecItemAdd checks it.
            let copyExpected = query[kSecValueData] != nil ? errSecItemNotFound : expected
            #expect(copyMatching(query).0 == copyExpected)
            #expect(
                SecItemAdd(query as CFDictionary, nil) == expected
                    || query[kSecValueData] == nil && expected == errSecParam)
        }
    }

    @Test(
        "kSecValueData in a query is ignored; kSecUseDataProtectionKeychain is a no-op",
        arguments: KeychainBackend.memoryAndAgent)
    func ignoredKeys(backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            #expect(
                add([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "a", kSecUseDataProtectionKeychain: true])
                    == errSecSuccess)
            #expect(
                copyMatching([kSecClass: kSecClassGenericPassword, kSecValueData: Data("other".utf8)]).0
                    == errSecSuccess)
        }
    }
}

@Suite("§5 add, update and delete")
struct SecItemWriteTests {
    @Test(
        "upsert the way wrappers do it: add, errSecDuplicateItem, update (§10.1)",
        arguments: KeychainBackend.memoryAndAgent)
    func upsert(backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            let query: [CFString: Any] = [
                kSecClass: kSecClassGenericPassword, kSecAttrService: "s", kSecAttrAccount: "a",
            ]
            #expect(add(query.merging([kSecValueData: Data("1".utf8)]) { a, _ in a }) == errSecSuccess)
            #expect(add(query.merging([kSecValueData: Data("2".utf8)]) { a, _ in a }) == errSecDuplicateItem)
            #expect(
                SecItemUpdate(query as CFDictionary, [kSecValueData: Data("2".utf8)] as CFDictionary) == errSecSuccess)
            let (_, result) = copyMatching(query.merging([kSecReturnData: true]) { a, _ in a })
            #expect(result as? Data == Data("2".utf8))
        }
    }

    @Test(
        "update to an existing primary key: errSecDuplicateItem, nothing changes (§5.2)",
        arguments: KeychainBackend.memoryAndAgent)
    func updateDuplicate(backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            #expect(
                add([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "a", kSecValueData: Data("A".utf8)])
                    == errSecSuccess)
            #expect(
                add([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "b", kSecValueData: Data("B".utf8)])
                    == errSecSuccess)
            #expect(
                SecItemUpdate(
                    [kSecClass: kSecClassGenericPassword, kSecAttrAccount: "b"] as CFDictionary,
                    [kSecAttrAccount: "a"] as CFDictionary) == errSecDuplicateItem)
            let (_, result) = copyMatching([
                kSecClass: kSecClassGenericPassword, kSecAttrAccount: "b", kSecReturnData: true,
            ])
            #expect(result as? Data == Data("B".utf8))
        }
    }

    @Test(
        "attributesToUpdate: non-attribute keys are errSecNoSuchAttr, a string secret errSecParam",
        arguments: KeychainBackend.memoryAndAgent)
    func updateAttributeRules(backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            let query = [kSecClass: kSecClassGenericPassword, kSecAttrAccount: "a"] as CFDictionary
            #expect(add([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "a"]) == errSecSuccess)
            #expect(SecItemUpdate(query, [kSecClass: kSecClassGenericPassword] as CFDictionary) == errSecNoSuchAttr)
            #expect(SecItemUpdate(query, [kSecReturnData: true] as CFDictionary) == errSecNoSuchAttr)
            #expect(SecItemUpdate(query, [kSecAttrServer: "x"] as CFDictionary) == errSecNoSuchAttr)
            #expect(SecItemUpdate(query, [kSecValueData: "text"] as CFDictionary) == errSecParam)
            #expect(SecItemUpdate(query, [:] as CFDictionary) == errSecSuccess)
            #expect(
                SecItemUpdate(
                    [kSecClass: kSecClassGenericPassword, kSecAttrAccount: "zz"] as CFDictionary,
                    [kSecAttrLabel: "x"] as CFDictionary) == errSecItemNotFound)
        }
    }

    @Test(
        "delete removes every match; match keys are stripped as on macOS (§5.3, §9)",
        arguments: KeychainBackend.memoryAndAgent)
    func deleteScope(backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            for account in ["a", "b", "c"] {
                #expect(
                    add([
                        kSecClass: kSecClassGenericPassword, kSecAttrAccount: account,
                        kSecAttrService: account == "c" ? "other" : "s",
                    ]) == errSecSuccess)
            }
            #expect(
                SecItemDelete(
                    [kSecClass: kSecClassGenericPassword, kSecAttrService: "s", kSecMatchLimit: kSecMatchLimitAll]
                        as CFDictionary)
                    == errSecSuccess)
            let (_, result) = copyMatching([
                kSecClass: kSecClassGenericPassword, kSecMatchLimit: kSecMatchLimitAll, kSecReturnAttributes: true,
            ])
            #expect((result as? [[String: Any]])?.compactMap { $0["acct"] as? String } == ["c"])
            #expect(
                SecItemDelete([kSecClass: kSecClassGenericPassword, kSecAttrService: "s"] as CFDictionary)
                    == errSecItemNotFound)
        }
    }

    @Test("add returns what its return keys ask for (§5.1 step 12)", arguments: KeychainBackend.memoryAndAgent)
    func addResults(backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            var result: CFTypeRef?
            #expect(
                SecItemAdd(
                    [
                        kSecClass: kSecClassGenericPassword, kSecAttrAccount: "a", kSecValueData: Data("x".utf8),
                        kSecReturnAttributes: true,
                    ] as CFDictionary, &result) == errSecSuccess)
            let dictionary = try #require(result as? [String: Any])
            #expect(dictionary["acct"] as? String == "a")
            #expect(dictionary["svce"] as? String == "")
            #expect(dictionary["musr"] == nil)
            #expect(dictionary["sha1"] is Data)
            result = nil
            #expect(
                SecItemAdd(
                    [kSecClass: kSecClassGenericPassword, kSecAttrAccount: "b", kSecReturnData: true] as CFDictionary,
                    &result)
                    == errSecSuccess)
            #expect(result as? Data == Data())
        }
    }

    @Test(
        "access control with authentication flags: reads fail without a UI, Skip skips (§8.20)",
        arguments: KeychainBackend.memoryAndAgent)
    func accessControlFlags(backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            let control = try #require(
                SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, .userPresence, nil))
            #expect(
                add([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "guarded", kSecAttrAccessControl: control])
                    == errSecSuccess)
            #expect(
                add([
                    kSecClass: kSecClassGenericPassword, kSecAttrAccount: "x", kSecAttrAccessControl: control,
                    kSecAttrSynchronizable: true,
                ]) == errSecParam)
            #expect(
                add([
                    kSecClass: kSecClassGenericPassword, kSecAttrAccount: "y", kSecAttrAccessControl: control,
                    kSecAttrAccessible: kSecAttrAccessibleWhenUnlocked,
                ]) == errSecParam)
            #expect(
                copyMatching([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "guarded"]).0
                    == errSecInteractionNotAllowed)
            #expect(
                copyMatching([
                    kSecClass: kSecClassGenericPassword, kSecUseAuthenticationUI: kSecUseAuthenticationUISkip,
                ]).0
                    == errSecItemNotFound)
            let plain = try #require(SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleAfterFirstUnlock, [], nil))
            #expect(
                add([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "plain", kSecAttrAccessControl: plain])
                    == errSecSuccess)
            let (_, result) = copyMatching([
                kSecClass: kSecClassGenericPassword, kSecAttrAccount: "plain", kSecReturnAttributes: true,
            ])
            let dictionary = try #require(result as? [String: Any])
            #expect(dictionary["pdmn"] as? String == "ck")
            #expect((dictionary["accc"] as? SecAccessControl) == plain)
        }
    }
}

@Suite("§6 lock and §7 access groups")
struct SecItemLockAndGroupTests {
    @Test(
        "a locked keychain refuses when-unlocked items and serves always items; unlock restores them",
        arguments: KeychainBackend.memoryAndAgent)
    func lockedKeychain(backend: KeychainBackend) throws {
        try withKeychain(backend, password: "pw") { keychain in
            #expect(add([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "a"]) == errSecInteractionNotAllowed)
            #expect(
                add([
                    kSecClass: kSecClassGenericPassword, kSecAttrAccount: "d",
                    kSecAttrAccessible: kSecAttrAccessibleAlways,
                ])
                    == errSecSuccess)
            #expect(
                copyMatching([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "d", kSecReturnData: true]).0
                    == errSecSuccess)
            #expect(SecKeychainUnlock(nil, 5, "wrong", true) == errSecAuthFailed)
            #expect(SecKeychainUnlock(nil, 2, "pw", true) == errSecSuccess)
            #expect(add([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "a"]) == errSecSuccess)
            #expect(SecKeychainLock(nil) == errSecSuccess)
            #expect(
                copyMatching([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "a"]).0
                    == errSecInteractionNotAllowed)
            #expect(
                add([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "a"]) == errSecInteractionNotAllowed,
                "add while locked is errSecInteractionNotAllowed even for a duplicate (§8.15)")
            #expect(keychain.isLocked)
        }
    }

    @Test("access groups: explicit foreign group is errSecMissingEntitlement, never not-found")
    func accessGroups() throws {
        try withKeychain(groups: AccessGroups(["com.example.app", "com.example.shared"])) { _ in
            #expect(add([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "a"]) == errSecSuccess)
            let (_, result) = copyMatching([kSecClass: kSecClassGenericPassword, kSecReturnAttributes: true])
            #expect((result as? [String: Any])?["agrp"] as? String == "com.example.app")
            #expect(
                add([
                    kSecClass: kSecClassGenericPassword, kSecAttrAccount: "b",
                    kSecAttrAccessGroup: "com.example.shared",
                ])
                    == errSecSuccess)
            #expect(
                add([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "c", kSecAttrAccessGroup: "other"])
                    == errSecMissingEntitlement)
            #expect(
                copyMatching([kSecClass: kSecClassGenericPassword, kSecAttrAccessGroup: "other"]).0
                    == errSecMissingEntitlement)
            #expect(
                SecItemDelete([kSecClass: kSecClassGenericPassword, kSecAttrAccessGroup: "other"] as CFDictionary)
                    == errSecMissingEntitlement)
        }
        try withKeychain(groups: AccessGroups([])) { _ in
            #expect(add([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "a"]) == errSecMissingEntitlement)
            #expect(copyMatching([kSecClass: kSecClassGenericPassword]).0 == errSecMissingEntitlement)
        }
    }
}

/// Serialized: its tests reset the process-wide `KeychainRegistry`, which would forget the
/// keychains another of them has open (and unlocked).
@Suite("Keychain selection (SecKeychain*)", .serialized)
struct SecKeychainTests {
    @Test(
        "create, open, unlock, use through kSecUseKeychain and kSecMatchSearchList, delete",
        arguments: KeychainBackend.memoryAndAgent)
    func keychainLifecycle(backend: KeychainBackend) throws {
        let directory = FileManager.default.temporaryDirectory.path + "/sec-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try withKeychain(backend) { _ in
            KeychainRegistry.shared.reset(configuration: .testing())
            var keychain: SecKeychain?
            #expect(SecKeychainCreate(directory + "/work.keychain-db", 2, "pw", false, nil, &keychain) == errSecSuccess)
            let work = try #require(keychain)
            #expect(
                SecKeychainCreate(directory + "/work.keychain-db", 0, nil, false, nil, &keychain)
                    == errSecDuplicateKeychain)
            // The agent leaves a keychain it has just created unlocked, as macOS does; a keychain
            // created in this process starts locked.
            #expect(
                add([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "early", kSecUseKeychain: work])
                    == (backend == .agent ? errSecSuccess : errSecInteractionNotAllowed))
            #expect(SecKeychainLock(work) == errSecSuccess)
            #expect(
                add([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "w", kSecUseKeychain: work])
                    == errSecInteractionNotAllowed)
            #expect(SecKeychainUnlock(work, 2, "pw", true) == errSecSuccess)
            #expect(
                add([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "w", kSecUseKeychain: work]) == errSecSuccess
            )
            #expect(copyMatching([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "w"]).0 == errSecItemNotFound)
            var opened: SecKeychain?
            #expect(SecKeychainOpen(directory + "/work.keychain-db", &opened) == errSecSuccess)
            let (status, _) = copyMatching([
                kSecClass: kSecClassGenericPassword, kSecAttrAccount: "w", kSecMatchSearchList: [opened!],
            ])
            #expect(status == errSecSuccess)
            #expect(SecKeychainDelete(work) == errSecSuccess)
            #expect(!FileManager.default.fileExists(atPath: directory + "/work.keychain-db"))
        }
    }

    @Test(
        "a password that is not UTF-8 is its bytes: others of the same shape do not unlock it",
        arguments: KeychainBackend.memoryAndAgent)
    func invalidUTF8PasswordsOfOneShapeDoNotUnlockEachOther(backend: KeychainBackend) throws {
        let directory = FileManager.default.temporaryDirectory.path + "/sec-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try withKeychain(backend) { _ in
            KeychainRegistry.shared.reset(configuration: .testing())
            let password: [UInt8] = [0xE9, 0x74, 0xE9]
            var keychain: SecKeychain?
            #expect(
                SecKeychainCreate(directory + "/bytes.keychain-db", 3, password, false, nil, &keychain)
                    == errSecSuccess)
            let created = try #require(keychain)
            for other: [UInt8] in [[0xFF, 0x74, 0xFE], [0x80, 0x74, 0x81], Array("\u{FFFD}t\u{FFFD}".utf8)] {
                #expect(SecKeychainUnlock(created, UInt32(other.count), other, true) == errSecAuthFailed)
            }
            #expect(SecKeychainUnlock(created, 3, password, true) == errSecSuccess)
            #expect(SecKeychainDelete(created) == errSecSuccess)
        }
    }
}
