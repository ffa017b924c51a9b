import Crypto
import Foundation
import KeychainClient
import KeychainCore
import Security

/// The keychain operations the benchmark times, each through the engine and `SecItem*`.
enum KeychainOperation: String, CaseIterable, Codable, Sendable {
    case add
    case find
    case findMissing
    case findAttributes
    case update
    case delete
    case list

    /// The row title in the table.
    var title: String {
        switch self {
        case .add: "add"
        case .find: "find data (svc+acct)"
        case .findMissing: "find missing item"
        case .findAttributes: "find attributes only"
        case .update: "update data"
        case .delete: "delete"
        case .list: "list one service's accounts"
        }
    }

    /// The floor this operation is compared with: floor measurements and how many of each.
    func floor(accountsPerService: Int) -> [(FloorOperation, Double)] {
        switch self {
        case .add: [(.insert, 1)]
        case .find, .findAttributes: [(.select, 1), (.open, 1)]
        case .findMissing: [(.selectMissing, 1)]
        case .update: [(.update, 1)]
        case .delete: [(.delete, 1)]
        case .list: [(.selectService, 1), (.open, Double(accountsPerService))]
        }
    }

    func floorDescription(accountsPerService: Int) -> String {
        switch self {
        case .add: "SQLite insert"
        case .find, .findAttributes: "select + AES open"
        case .findMissing: "select (miss)"
        case .update: "SQLite update"
        case .delete: "SQLite delete"
        case .list: "range select + \(accountsPerService) opens"
        }
    }
}

/// The measurements that make up the floor: plain SQLite (same configuration, same
/// durability, unencrypted rows) and AES-256-GCM on a 100-byte secret; and, reported beside
/// them, an insert into a table with the keychain's indexes (``insertIndexed``) and an insert
/// of names that sort together (``insertClustered``), which no operation is compared with.
enum FloorOperation: String, CaseIterable, Codable, Sendable {
    case insert
    case insertIndexed
    /// The floor's insert of names that all sort together, after every seeded name
    /// (``Workload/clusteredName(_:)``): the plaintext index writes them into the same few
    /// cached pages, which no keychain's keyed hashes can do and real names rarely do.
    case insertClustered
    case select
    case selectMissing
    case update
    case delete
    case selectService
    case seal
    case open

    var title: String {
        switch self {
        case .insert: "SQLite insert (1 txn)"
        case .insertIndexed: "SQLite insert, keychain's 2 indexes"
        case .insertClustered: "SQLite insert, clustered names"
        case .select: "SQLite point select"
        case .selectMissing: "SQLite select (miss)"
        case .update: "SQLite update (1 txn)"
        case .delete: "SQLite delete (1 txn)"
        case .selectService: "SQLite range select"
        case .seal: "AES-256-GCM seal 100 B"
        case .open: "AES-256-GCM open 100 B"
        }
    }
}

/// The key operations the benchmark times through `SecKey`, each against a reference measured in
/// the same interleaved run: swift-crypto's own call for ECDSA, the password-lookup floor for a key
/// lookup. ``tokenSign`` is reported beside them, without a target. ``pkcs12Import`` and
/// ``trustEvaluate`` (files `openssl` makes once per run: ``PKIFixture``) are compared with the
/// swift-crypto primitives they cannot avoid (``PKIFloor``).
enum KeyOperation: String, CaseIterable, Codable, Sendable {
    case sign
    case verify
    case findRef
    case tokenSign
    case pkcs12Import
    case pkcs12ImportLegacy
    case trustEvaluate

    /// The row title in the table.
    var title: String {
        switch self {
        case .sign: "ECDSA P-256 sign (SecKey)"
        case .verify: "ECDSA P-256 verify (SecKey)"
        case .findRef: "find key by tag → ref (SecItem)"
        case .tokenSign: "ECDSA P-256 sign, token key"
        case .pkcs12Import: "PKCS#12 import, 2 certs, no keychain write"
        case .pkcs12ImportLegacy: "PKCS#12 import, legacy RC2-40/3DES, 2 certs"
        case .trustEvaluate: "trust eval, 3-cert chain, root as anchor"
        }
    }

    /// What the operation is compared with.
    var referenceDescription: String {
        switch self {
        case .sign: "swift-crypto P256.Signing sign"
        case .verify: "swift-crypto P256.Signing verify"
        case .findRef: "select + AES open (password floor)"
        case .tokenSign: "swift-crypto P256.Signing sign"
        case .pkcs12Import: "2×PBKDF2-SHA256(2048) + MAC KDF(2048) + HMAC + 2×AES-CBC + key parse"
        case .pkcs12ImportLegacy: "OpenSSL PKCS12_parse of the same file (libcrypto, in process)"
        case .trustEvaluate: "2× P-256 ECDSA verify (swift-crypto)"
        }
    }

    /// The largest ratio the issue allows, or `nil` for a row without a target.
    var limit: Double? {
        switch self {
        case .sign, .verify: 1.2
        case .findRef: 3
        case .tokenSign: nil
        case .pkcs12Import, .pkcs12ImportLegacy, .trustEvaluate: 1.5
        }
    }
}

/// The reference timings of ``KeyOperation``: swift-crypto's own ECDSA calls.
enum KeyReference: String, CaseIterable, Sendable {
    case cryptoSign
    case cryptoVerify
    /// `SecKeyCreateWithData` of a P-256 private key, what a key reference costs beyond its item
    /// (reported only under `--profile key.importPrivate`).
    case importPrivate
    /// ``PKIFloor/pkcs12()``.
    case pkcs12Floor
    /// ``OpenSSLPKCS12/parse()`` of the legacy file.
    case pkcs12LegacyFloor
    /// ``PKIFloor/chain()``.
    case chainFloor
}

/// Builds the timed operations for one keychain size: the engine, `SecItem*` on the same
/// keychain, and the floor, all run interleaved by ``InterleavedRunner``.
struct OperationSuite {
    let keychain: KeychainDatabase
    let floor: SQLiteBaseline
    /// The plain table with the keychain's indexes (``FloorOperation/insertIndexed``).
    let indexedFloor: SQLiteBaseline
    let crypto = CryptoBaseline()
    let workload: Workload
    let count: Int
    let seed: UInt64

    /// Every operation, in an order where producers come before consumers.
    func operations() throws -> [BenchmarkOperation] {
        let inputs = Inputs(workload: workload, count: count, seed: seed)
        let sealedSecret = try crypto.seal(Workload.secret(0))
        return engineOperations(inputs) + secItemOperations(inputs) + floorOperations(inputs, sealed: sealedSecret)
            + (try keyOperations())
    }

    /// Every name and secret the operations use, computed before the clock starts.
    struct Inputs {
        typealias Name = (service: String, account: String)
        var lookups: [Name]
        var updates: [Name]
        var missing: [Name]
        var services: [String]
        var serviceCounts: [Int]
        var secrets: [Data]
        var added: [Workload.Adder: [Name]]

        init(workload: Workload, count: Int, seed: UInt64) {
            lookups = workload.randomItems(count, seed: seed).map(workload.name(of:))
            updates = workload.randomItems(count, seed: seed &+ 1).map(workload.name(of:))
            missing = (0..<count).map(workload.missingName)
            let serviceNumbers = workload.randomServices(count, seed: seed &+ 2)
            services = serviceNumbers.map(workload.service(number:))
            serviceCounts = serviceNumbers.map(workload.accounts(ofService:))
            secrets = (0..<count).map { Workload.secret($0, version: 1) }
            added = [:]
            for adder in [Workload.Adder.engine, .secItem, .floor, .indexedFloor] {
                added[adder] = (0..<count).map { workload.addedName(adder, $0) }
            }
        }
    }

    static func key(_ api: String, _ operation: String) -> String { "\(api).\(operation)" }

    // MARK: Engine

    private static func query(_ name: Inputs.Name) -> ItemQuery {
        ItemQuery(
            class: .genericPassword,
            attributes: [.service: .string(name.service), .account: .string(name.account)])
    }

    /// `agent.find`: the lookup of `engine.find`, served by `keychaind` over `served`'s connection
    /// (only under `--profile`, which starts the agent).
    func agentFind(_ served: AgentKeychain) -> BenchmarkOperation {
        let lookups = Inputs(workload: workload, count: count, seed: seed).lookups
        return BenchmarkOperation(name: "agent.find") { i in
            guard let item = try served.findFirst(Self.query(lookups[i]), includeData: true),
                item.data?.count == Workload.secretLength
            else { throw BenchmarkFailure("keychaind returned no secret for \(lookups[i])") }
        }
    }

    private func engineOperations(_ inputs: Inputs) -> [BenchmarkOperation] {
        let keychain = keychain
        let added = inputs.added[.engine]!
        func op(_ operation: KeychainOperation, _ body: @escaping (Int) throws -> Void) -> BenchmarkOperation {
            BenchmarkOperation(name: Self.key("engine", operation.rawValue), body: body)
        }
        return [
            op(.add) { i in
                let (service, account) = added[i]
                try keychain.add(Workload.item(service: service, account: account, secret: inputs.secrets[i]))
            },
            op(.find) { i in
                guard let item = try keychain.findFirst(Self.query(inputs.lookups[i]), includeData: true),
                    item.data?.count == Workload.secretLength
                else { throw BenchmarkFailure("engine find returned no secret for \(inputs.lookups[i])") }
            },
            op(.findMissing) { i in
                guard try keychain.findFirst(Self.query(inputs.missing[i]), includeData: true) == nil else {
                    throw BenchmarkFailure("engine find of a missing item found one")
                }
            },
            op(.findAttributes) { i in
                guard let item = try keychain.findFirst(Self.query(inputs.lookups[i]), includeData: false),
                    item.data == nil, item.attributes[.label] != nil
                else { throw BenchmarkFailure("engine attribute lookup failed for \(inputs.lookups[i])") }
            },
            op(.update) { i in
                let changed = try keychain.update(
                    Self.query(inputs.updates[i]), attributes: [:], data: inputs.secrets[i])
                guard changed == 1 else { throw BenchmarkFailure("engine update changed \(changed) items") }
            },
            op(.list) { i in
                let found = try keychain.find(
                    ItemQuery(class: .genericPassword, attributes: [.service: .string(inputs.services[i])]),
                    includeData: false)
                guard found.count == inputs.serviceCounts[i] else {
                    throw BenchmarkFailure("engine list found \(found.count) accounts")
                }
            },
            op(.delete) { i in
                let deleted = try keychain.delete(Self.query(added[i]))
                guard deleted == 1 else { throw BenchmarkFailure("engine delete removed \(deleted) items") }
            },
        ]
    }

    // MARK: SecItem

    private func secItemOperations(_ inputs: Inputs) -> [BenchmarkOperation] {
        let added = inputs.added[.secItem]!
        func op(_ operation: KeychainOperation, _ body: @escaping (Int) throws -> Void) -> BenchmarkOperation {
            BenchmarkOperation(name: Self.key("secitem", operation.rawValue), body: body)
        }
        func check(_ status: OSStatus, _ what: String, expected: OSStatus = errSecSuccess) throws {
            guard status == expected else { throw BenchmarkFailure("\(what) returned \(status)") }
        }
        return [
            op(.add) { i in
                let (service, account) = added[i]
                let status = SecItemAdd(
                    [
                        kSecClass: kSecClassGenericPassword, kSecAttrService: service, kSecAttrAccount: account,
                        kSecAttrLabel: Workload.label(service: service, account: account),
                        kSecValueData: inputs.secrets[i],
                    ] as CFDictionary, nil)
                try check(status, "SecItemAdd")
            },
            op(.find) { i in
                let (service, account) = inputs.lookups[i]
                var result: CFTypeRef?
                let status = SecItemCopyMatching(
                    [
                        kSecClass: kSecClassGenericPassword, kSecAttrService: service, kSecAttrAccount: account,
                        kSecReturnData: true, kSecMatchLimit: kSecMatchLimitOne,
                    ] as CFDictionary, &result)
                try check(status, "SecItemCopyMatching (data)")
                guard (result as? NSData)?.length == Workload.secretLength else {
                    throw BenchmarkFailure("SecItemCopyMatching returned no secret")
                }
            },
            op(.findMissing) { i in
                let (service, account) = inputs.missing[i]
                var result: CFTypeRef?
                let status = SecItemCopyMatching(
                    [
                        kSecClass: kSecClassGenericPassword, kSecAttrService: service, kSecAttrAccount: account,
                        kSecReturnData: true, kSecMatchLimit: kSecMatchLimitOne,
                    ] as CFDictionary, &result)
                try check(status, "SecItemCopyMatching (missing)", expected: errSecItemNotFound)
            },
            op(.findAttributes) { i in
                let (service, account) = inputs.lookups[i]
                var result: CFTypeRef?
                let status = SecItemCopyMatching(
                    [
                        kSecClass: kSecClassGenericPassword, kSecAttrService: service, kSecAttrAccount: account,
                        kSecReturnAttributes: true, kSecMatchLimit: kSecMatchLimitOne,
                    ] as CFDictionary, &result)
                try check(status, "SecItemCopyMatching (attributes)")
                guard let attributes = result as? NSDictionary, attributes.count > 0 else {
                    throw BenchmarkFailure("SecItemCopyMatching returned no attributes")
                }
            },
            op(.update) { i in
                let (service, account) = inputs.updates[i]
                let status = SecItemUpdate(
                    [kSecClass: kSecClassGenericPassword, kSecAttrService: service, kSecAttrAccount: account]
                        as CFDictionary,
                    [kSecValueData: inputs.secrets[i]] as CFDictionary)
                try check(status, "SecItemUpdate")
            },
            op(.list) { i in
                var result: CFTypeRef?
                let status = SecItemCopyMatching(
                    [
                        kSecClass: kSecClassGenericPassword, kSecAttrService: inputs.services[i],
                        kSecReturnAttributes: true, kSecMatchLimit: kSecMatchLimitAll,
                    ] as CFDictionary, &result)
                try check(status, "SecItemCopyMatching (all)")
                guard (result as? NSArray)?.count == inputs.serviceCounts[i] else {
                    throw BenchmarkFailure("SecItemCopyMatching listed the wrong number of accounts")
                }
            },
            op(.delete) { i in
                let (service, account) = added[i]
                let status = SecItemDelete(
                    [kSecClass: kSecClassGenericPassword, kSecAttrService: service, kSecAttrAccount: account]
                        as CFDictionary)
                try check(status, "SecItemDelete")
            },
        ]
    }

    // MARK: Keys

    /// The tag of the key stored for ``KeyOperation/findRef``.
    static let keyTag = Data("keychain-bench.key".utf8)

    /// ECDSA through `SecKey` and through swift-crypto on the same key and message, a key lookup
    /// by tag, and a token key's signature; the keys are made (and one stored) before the clock.
    private func keyOperations() throws -> [BenchmarkOperation] {
        let cryptoKey = P256.Signing.PrivateKey()
        let message = Data(repeating: 0x6B, count: 64)
        var error: Unmanaged<CFError>?
        let attributes =
            [kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeyClass: kSecAttrKeyClassPrivate]
            as CFDictionary
        guard let secKey = SecKeyCreateWithData(cryptoKey.x963Representation as CFData, attributes, &error),
            let publicKey = SecKeyCopyPublicKey(secKey)
        else { throw BenchmarkFailure("SecKeyCreateWithData failed for the benchmark key") }
        let signature = try cryptoKey.signature(for: message)
        let derSignature = signature.derRepresentation as CFData
        let cfMessage = message as CFData
        let privateBytes = cryptoKey.x963Representation as CFData
        let tokenKey: SecKey = try KeychainDatabase.withDefault(keychain) {
            let status = SecItemAdd(
                [kSecClass: kSecClassKey, kSecValueRef: secKey, kSecAttrApplicationTag: Self.keyTag] as CFDictionary,
                nil)
            guard status == errSecSuccess || status == errSecDuplicateItem else {
                throw BenchmarkFailure("storing the benchmark key returned \(status)")
            }
            let parameters: [CFString: Any] = [
                kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits: 256,
                kSecAttrTokenID: kSecAttrTokenIDSecureEnclave,
            ]
            guard let key = SecKeyCreateRandomKey(parameters as CFDictionary, &error) else {
                throw BenchmarkFailure("SecKeyCreateRandomKey failed for the benchmark token key")
            }
            return key
        }
        let findQuery =
            [kSecClass: kSecClassKey, kSecAttrApplicationTag: Self.keyTag, kSecReturnRef: true] as CFDictionary
        func op(_ name: String, _ body: @escaping (Int) throws -> Void) -> BenchmarkOperation {
            BenchmarkOperation(name: Self.key("key", name), body: body)
        }
        var pki: [BenchmarkOperation] = []
        if case .success(let fixture) = PKIFixture.shared {
            let floor = try PKIFloor()
            pki = [
                op(KeyOperation.pkcs12Import.rawValue) { _ in try fixture.importPKCS12() },
                op(KeyReference.pkcs12Floor.rawValue) { _ in try floor.pkcs12() },
            ]
            if let openssl = try? OpenSSLPKCS12(fixture.legacyP12, passphrase: PKIFixture.passphrase) {
                pki += [
                    op(KeyOperation.pkcs12ImportLegacy.rawValue) { _ in try fixture.importPKCS12(legacy: true) },
                    op(KeyReference.pkcs12LegacyFloor.rawValue) { _ in try openssl.parse() },
                ]
            }
            pki += [
                op(KeyOperation.trustEvaluate.rawValue) { _ in try fixture.evaluateChain() },
                op(KeyReference.chainFloor.rawValue) { _ in try floor.chain() },
            ]
        }
        return pki + [
            op(KeyOperation.sign.rawValue) { _ in
                guard SecKeyCreateSignature(secKey, .ecdsaSignatureMessageX962SHA256, cfMessage, nil) != nil else {
                    throw BenchmarkFailure("SecKeyCreateSignature failed")
                }
            },
            op(KeyReference.cryptoSign.rawValue) { _ in
                _ = try cryptoKey.signature(for: message)
            },
            op(KeyOperation.verify.rawValue) { _ in
                guard SecKeyVerifySignature(publicKey, .ecdsaSignatureMessageX962SHA256, cfMessage, derSignature, nil)
                else { throw BenchmarkFailure("SecKeyVerifySignature failed") }
            },
            op(KeyReference.cryptoVerify.rawValue) { _ in
                guard cryptoKey.publicKey.isValidSignature(signature, for: message) else {
                    throw BenchmarkFailure("P256.Signing verification failed")
                }
            },
            op(KeyReference.importPrivate.rawValue) { _ in
                guard SecKeyCreateWithData(privateBytes, attributes, nil) != nil else {
                    throw BenchmarkFailure("SecKeyCreateWithData failed")
                }
            },
            op(KeyOperation.findRef.rawValue) { _ in
                var result: CFTypeRef?
                let status = SecItemCopyMatching(findQuery, &result)
                guard status == errSecSuccess, let result, CFGetTypeID(result) == SecKeyGetTypeID() else {
                    throw BenchmarkFailure("SecItemCopyMatching (key ref) returned \(status)")
                }
            },
            op(KeyOperation.tokenSign.rawValue) { _ in
                guard SecKeyCreateSignature(tokenKey, .ecdsaSignatureMessageX962SHA256, cfMessage, nil) != nil else {
                    throw BenchmarkFailure("SecKeyCreateSignature failed with the token key")
                }
            },
        ]
    }

    // MARK: Floor

    private func floorOperations(_ inputs: Inputs, sealed: Data) -> [BenchmarkOperation] {
        let floor = floor
        let indexedFloor = indexedFloor
        let crypto = crypto
        let added = inputs.added[.floor]!
        let addedIndexed = inputs.added[.indexedFloor]!
        let plaintext = Workload.secret(0)
        func op(_ operation: FloorOperation, _ body: @escaping (Int) throws -> Void) -> BenchmarkOperation {
            BenchmarkOperation(name: Self.key("floor", operation.rawValue), body: body)
        }
        return [
            op(.insert) { i in
                try floor.insert(service: added[i].service, account: added[i].account, data: inputs.secrets[i])
            },
            op(.insertIndexed) { i in
                let (service, account) = addedIndexed[i]
                try indexedFloor.insert(service: service, account: account, data: inputs.secrets[i])
            },
            op(.insertClustered) { i in
                let (service, account) = Workload.clusteredName(i)
                try floor.insert(service: service, account: account, data: inputs.secrets[i])
            },
            op(.select) { i in
                let (service, account) = inputs.lookups[i]
                guard let row = try floor.select(service: service, account: account),
                    row.data.count == Workload.secretLength
                else { throw BenchmarkFailure("SQLite select found no row for \(inputs.lookups[i])") }
            },
            op(.selectMissing) { i in
                let (service, account) = inputs.missing[i]
                guard try floor.select(service: service, account: account) == nil else {
                    throw BenchmarkFailure("SQLite select of a missing row found one")
                }
            },
            op(.update) { i in
                let (service, account) = inputs.updates[i]
                let changed = try floor.update(service: service, account: account, data: inputs.secrets[i])
                guard changed == 1 else { throw BenchmarkFailure("SQLite update changed \(changed) rows") }
            },
            op(.selectService) { i in
                let rows = try floor.accounts(service: inputs.services[i])
                guard rows.count == inputs.serviceCounts[i] else {
                    throw BenchmarkFailure("SQLite range select found \(rows.count) rows")
                }
            },
            op(.delete) { i in
                let deleted = try floor.delete(service: added[i].service, account: added[i].account)
                guard deleted == 1 else { throw BenchmarkFailure("SQLite delete removed \(deleted) rows") }
            },
            op(.seal) { _ in
                guard try crypto.seal(plaintext).count == Workload.secretLength + 28 else {
                    throw BenchmarkFailure("AES-GCM seal produced an unexpected size")
                }
            },
            op(.open) { _ in
                guard try crypto.open(sealed).count == Workload.secretLength else {
                    throw BenchmarkFailure("AES-GCM open produced an unexpected size")
                }
            },
        ]
    }
}
