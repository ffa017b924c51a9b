// Randomized input to every SecKey entry point: no trap, and only the statuses Apple's SecKey code returns.

import Foundation
import KeychainCore
import SeededRandom
import Security
import Testing

@Suite("SecKey: randomized input")
struct SecKeyFuzzTests {
    /// The statuses SecKey functions may report.
    static let keyStatuses: Set<Int> = [0, -4, -50, -25299, -25300, -25303, -25306, -25311, -26275, -67808, -34018]

    @Test("3,000 random parameter dictionaries, key bytes and algorithm strings: no trap, only SecKey's statuses")
    func randomInput() throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["KEYCHAIN_FUZZ_SEED"] ?? "") ?? 20_261_125
        var generator = KeyInputGenerator(random: SplitMix64(seed: seed))
        let ec = try ecKey(256)
        let rsa = try KeyFixtures.rsa2048()
        generator.keys = [ec, publicKey(ec), rsa, publicKey(rsa), try ecKey(384)]
        var seen: Set<Int> = []
        try withKeychain { _ in
            for index in 0..<3_000 {
                let code = generator.call(index)
                seen.insert(code)
                if !Self.keyStatuses.contains(code) {
                    Issue.record("unexpected status \(code) for input \(index) of seed \(seed)")
                    return
                }
            }
        }
        #expect(seen.contains(0) && seen.contains(-50) && seen.count >= 4)
    }
}

/// Random inputs for the SecKey API: parameter dictionaries, key bytes, algorithms and data.
struct KeyInputGenerator {
    var random: SplitMix64
    var keys: [SecKey] = []

    mutating func int(_ upper: Int) -> Int { Int.random(in: 0..<upper, using: &random) }

    static let names: [String] = [
        "type", "bsiz", "kcls", "perm", "atag", "klbl", "private", "public", "labl", "tkid", "class", "v_Ref",
        "requestedSize", "sharedInfo", "pdmn", "accc", "sign", "agrp",
    ]

    mutating func value(depth: Int = 0) -> Any {
        switch int(depth > 0 ? 13 : 15) {
        case 0: return ["73", "42", "43", "0", "1", "2", "073", "256", "384", " 521x", "", "keys"][int(12)]
        case 1: return [73, 42, 0, 1, 2, 255, 256, 384, 521, -1, Int.max, 1 << 40][int(12)]
        case 2: return Data((0..<int(80)).map { _ in UInt8(int(256)) })
        case 3: return kCFBooleanTrue!
        case 4: return kCFBooleanFalse!
        case 5: return Double(int(1000)) / 3
        case 6: return Date(timeIntervalSinceReferenceDate: 0)
        case 7: return NSNull()
        case 8: return keys.isEmpty ? "no key" : keys[int(keys.count)]
        case 9: return UUID()
        case 10: return SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, [], nil)!
        case 11: return [kSecAttrKeyTypeEC, kSecAttrKeyTypeRSA, kSecAttrKeyClassPrivate][int(3)]
        case 12: return "text"
        case 13: return (0..<int(3)).map { _ in value(depth: depth + 1) }
        default: return NSDictionary(dictionary: ["perm": value(depth: depth + 1), "atag": value(depth: depth + 1)])
        }
    }

    mutating func dictionary() -> NSDictionary {
        let result = NSMutableDictionary()
        for _ in 0..<int(6) {
            result[NSString(string: Self.names[int(Self.names.count)])] = value()
        }
        return result
    }

    /// Key bytes: a real export (often), truncated or extended, or random bytes.
    mutating func keyBytes() -> Data {
        var data = keys.isEmpty ? Data() : SecKeyCopyExternalRepresentation(keys[int(keys.count)], nil)! as Data
        switch int(4) {
        case 0: data = Data((0..<int(300)).map { _ in UInt8(int(256)) })
        case 1: data = data.prefix(int(data.count + 1))
        case 2: data.append(UInt8(int(256)))
        default: break
        }
        return data
    }

    mutating func algorithm() -> SecKeyAlgorithm {
        let raw = int(10) == 0 ? "algid:unknown:\(int(5))" : appleAlgorithmStrings[int(appleAlgorithmStrings.count)]
        return SecKeyAlgorithm(rawValue: raw as CFString)
    }

    /// Calls one SecKey entry point with random input; returns the status (0 on success).
    mutating func call(_ index: Int) -> Int {
        var error: Unmanaged<CFError>?
        let key = keys[int(keys.count)]
        let data = keyBytes()
        switch index % 7 {
        case 0:
            // Never a valid RSA size here: key generation stays fast.
            let parameters = dictionary().mutableCopy() as! NSMutableDictionary
            if (parameters["type"] as? String) == "42" || (parameters["type"] as? Int) == 42 {
                parameters["bsiz"] = 100
            }
            _ = SecKeyCreateRandomKey(parameters, &error)
        case 1: _ = SecKeyCreateWithData(data as CFData, dictionary(), &error)
        case 2: _ = SecKeyCreateSignature(key, algorithm(), data as CFData, &error)
        case 3: _ = SecKeyVerifySignature(key, algorithm(), data as CFData, keyBytes() as CFData, &error)
        case 4: _ = SecKeyCreateEncryptedData(key, algorithm(), data.prefix(100) as CFData, &error)
        case 5: _ = SecKeyCreateDecryptedData(key, algorithm(), data as CFData, &error)
        default:
            _ = SecKeyCopyKeyExchangeResult(key, algorithm(), keys[int(keys.count)], dictionary(), &error)
            let add = dictionary().mutableCopy() as! NSMutableDictionary
            add["v_Ref"] = key
            let code = Int(SecItemAdd(add, nil))
            if code != 0 { return code }
        }
        return error.map { CFErrorGetCode($0.takeRetainedValue()) } ?? 0
    }
}
