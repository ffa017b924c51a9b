import Foundation
import KeychainCore
import KeychainLibc
import Security
import SeededRandom

/// The status codes a SecItem call may return on Apple platforms (Apple's `base/SecBase.h`
/// defines them): the only ones a SecItem call may return here.
let documentedStatuses: Set<OSStatus> = [
    0, -4, -34, -36, -50, -108, -128, -909, -2070, -4960, -34018, -34020, -25291, -25292, -25293,
    -25294, -25295, -25296, -25299, -25300, -25301, -25302, -25303, -25304, -25305, -25306, -25307,
    -25308, -25309, -25310, -25315, -25316, -25317, -25320, -25240, -25243, -25244, -25256, -25257,
    -25261, -26267, -26275,
]

/// Random SecItem dictionaries: every `kSec…` constant as a key and as a value, unknown keys,
/// values of the wrong type, huge and NUL-containing strings, nested containers.
struct DictionaryGenerator {
    var random: SplitMix64
    /// Paths of keychains the dictionaries may name (`kSecUseKeychain`): inside the scratch
    /// directory only.
    var keychainPaths: [String] = []

    /// Every constant (deprecated ones by their raw values).
    nonisolated(unsafe) static let constants: [CFString] = [
        kSecClass, kSecClassGenericPassword, kSecClassInternetPassword, kSecClassCertificate, kSecClassKey,
        kSecClassIdentity, kSecClassAppleSharePassword, kSecAttrAccessible, kSecAttrAccessControl, kSecAttrAccess,
        kSecAttrAccessGroup, kSecAttrSynchronizable, kSecAttrCreationDate, kSecAttrModificationDate,
        kSecAttrDescription, kSecAttrComment, kSecAttrCreator, kSecAttrType, kSecAttrLabel, kSecAttrIsInvisible,
        kSecAttrIsNegative, kSecAttrAccount, kSecAttrService, kSecAttrGeneric, kSecAttrSecurityDomain,
        kSecAttrServer, kSecAttrProtocol, kSecAttrAuthenticationType, kSecAttrPort, kSecAttrPath, kSecAttrSubject,
        kSecAttrIssuer, kSecAttrSerialNumber, kSecAttrSubjectKeyID, kSecAttrPublicKeyHash, kSecAttrCertificateType,
        kSecAttrCertificateEncoding, kSecAttrKeyClass, kSecAttrApplicationLabel, kSecAttrIsPermanent,
        kSecAttrIsSensitive, kSecAttrIsExtractable, kSecAttrApplicationTag, kSecAttrKeyType, kSecAttrKeySizeInBits,
        kSecAttrEffectiveKeySize, kSecAttrCanEncrypt, kSecAttrCanDecrypt, kSecAttrCanDerive, kSecAttrCanSign,
        kSecAttrCanVerify, kSecAttrCanWrap, kSecAttrCanUnwrap, kSecAttrSyncViewHint, kSecAttrTokenID,
        kSecAttrPersistantReference, kSecAttrPersistentReference, kSecAttrPRF, kSecAttrSalt, kSecAttrRounds,
        kSecAttrKeyCreator, kSecAttrIsPrivate, kSecAttrIsModifiable, kSecAttrWasAlwaysSensitive,
        kSecAttrWasNeverExtractable, kSecAttrStartDate, kSecAttrEndDate, kSecAttrCanSignRecover,
        kSecAttrCanVerifyRecover, kSecAttrAlias, kSecAttrScriptCode, kSecAttrHasCustomIcon, kSecAttrCRLType,
        kSecAttrCRLEncoding, kSecAttrTombstone, kSecAttrMultiUser, kSecAttrNoLegacy, kSecAttrTokenOID, kSecAttrUUID,
        kSecAttrSysBound, kSecAttrSHA1, kSecAttrSharingGroup, kSecAttrSharingGroupNone, kSecAttrVolume,
        kSecAttrAddress, kSecAttrAFPServerSignature, kSecAttrAccessibleWhenUnlocked,
        kSecAttrAccessibleAfterFirstUnlock, "dk" as NSString,
        kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly, kSecAttrAccessibleWhenUnlockedThisDeviceOnly,
        kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly, "dku" as NSString,
        kSecAttrAccessibleAlwaysPrivate, kSecAttrAccessibleAlwaysThisDeviceOnlyPrivate,
        kSecAttrAccessibleUntilReboot, kSecAttrProtocolFTP, kSecAttrProtocolFTPAccount, kSecAttrProtocolHTTP,
        kSecAttrProtocolIRC, kSecAttrProtocolNNTP, kSecAttrProtocolPOP3, kSecAttrProtocolSMTP, kSecAttrProtocolSOCKS,
        kSecAttrProtocolIMAP, kSecAttrProtocolLDAP, kSecAttrProtocolAppleTalk, kSecAttrProtocolAFP,
        kSecAttrProtocolTelnet, kSecAttrProtocolSSH, kSecAttrProtocolFTPS, kSecAttrProtocolHTTPS,
        kSecAttrProtocolHTTPProxy, kSecAttrProtocolHTTPSProxy, kSecAttrProtocolFTPProxy, kSecAttrProtocolSMB,
        kSecAttrProtocolRTSP, kSecAttrProtocolRTSPProxy, kSecAttrProtocolDAAP, kSecAttrProtocolEPPC,
        kSecAttrProtocolIPP, kSecAttrProtocolNNTPS, kSecAttrProtocolLDAPS, kSecAttrProtocolTelnetS,
        kSecAttrProtocolIMAPS, kSecAttrProtocolIRCS, kSecAttrProtocolPOP3S, kSecAttrAuthenticationTypeNTLM,
        kSecAttrAuthenticationTypeMSN, kSecAttrAuthenticationTypeDPA, kSecAttrAuthenticationTypeRPA,
        kSecAttrAuthenticationTypeHTTPBasic, kSecAttrAuthenticationTypeHTTPDigest,
        kSecAttrAuthenticationTypeHTMLForm, kSecAttrAuthenticationTypeDefault, kSecAttrKeyClassPublic,
        kSecAttrKeyClassPrivate, kSecAttrKeyClassSymmetric, kSecAttrKeyTypeRSA, kSecAttrKeyTypeEC,
        kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeyTypeECDSA, kSecAttrKeyTypeDSA, kSecAttrKeyTypeAES,
        kSecAttrKeyTypeDES, kSecAttrKeyType3DES, kSecAttrKeyTypeRC4, kSecAttrKeyTypeRC2, kSecAttrKeyTypeCAST,
        kSecAttrKeyTypeECSECPrimeRandomPKA, kSecAttrKeyTypeSecureEnclaveAttestation,
        kSecAttrKeyTypeSecureEnclaveAnonymousAttestation, kSecAttrKeyTypeEd25519, kSecAttrKeyTypeX25519,
        kSecAttrKeyTypeEd448, kSecAttrKeyTypeX448, kSecAttrKeyTypeKyber, kSecAttrKeyTypeMLKEM, kSecAttrKeyTypeMLDSA,
        kSecAttrPRFHmacAlgSHA1, kSecAttrPRFHmacAlgSHA224, kSecAttrPRFHmacAlgSHA256, kSecAttrPRFHmacAlgSHA384,
        kSecAttrPRFHmacAlgSHA512, kSecPrivateKeyAttrs, kSecPublicKeyAttrs, kSecSymmetricKeyAttrs,
        kSecAttrSynchronizableAny, kSecAttrTokenIDSecureEnclave, kSecAttrTokenIDAppleKeyStore,
        kSecAttrTokenIDSecureElement, kSecAttrAccessGroupToken, kSecMatchPolicy, kSecMatchItemList,
        kSecMatchSearchList, kSecMatchIssuers, kSecMatchEmailAddressIfPresent, kSecMatchSubjectContains,
        kSecMatchHostOrSubdomainOfHost, kSecMatchSubjectStartsWith, kSecMatchSubjectEndsWith,
        kSecMatchSubjectWholeString, kSecMatchCaseInsensitive, kSecMatchDiacriticInsensitive,
        kSecMatchWidthInsensitive, kSecMatchTrustedOnly, kSecMatchValidOnDate, kSecMatchLimit, kSecMatchLimitOne,
        kSecMatchLimitAll, kSecReturnData, kSecReturnAttributes, kSecReturnRef, kSecReturnPersistentRef,
        kSecValueData, kSecValueRef, kSecValuePersistentRef, "u_ItemList" as NSString, kSecUseKeychain,
        "u_OpPrompt" as NSString, "u_NoAuthUI" as NSString, kSecUseAuthenticationUI, "u_AuthUIA" as NSString,
        "u_AuthUIF" as NSString, kSecUseAuthenticationUISkip, kSecUseAuthenticationContext,
        kSecUseDataProtectionKeychain, kSecUseUserIndependentKeychain, kSecUseCredentialReference, kSecUseTombstones,
        kSecUseCallerName, kSecUseTokenRawItems, kSecUseSystemKeychain, kSecUseSystemKeychainAlways,
        kSecUseSyncBubbleKeychain, kSecUseCertificatesWithMatchIssuers, kSecUseTokenSession,
    ]

    static let hugeString = String(repeating: "x", count: 70_000)
    static let enormousString = String(repeating: "y", count: 1 << 20)

    static let strings: [String] = [
        "", "a", "genp", "inet", "cert", "keys", "idnt", "apls", "ak", "ck", "dk", "aku", "akpu", "cku", "dku", "f",
        "htps", "ftp ", "syna", "m_LimitOne", "m_LimitAll", "u_AuthUIS", "u_AuthUIF", "u_AuthUIA", "42", "-1", "0",
        "1e3", "default", "com.apple.token", "*", "nul\0byte", "\0", "ünïcødé", "😀", "\u{FEFF}", "%s%n%x",
        "'; DROP TABLE items; --", "../../etc/passwd", String(repeating: "é", count: 500),
    ]

    mutating func int(_ upper: Int) -> Int { random.int(upper) }

    mutating func key() -> NSObject {
        switch int(20) {
        case 0: return NSNumber(value: int(100))
        case 1:
            let length = int(9)
            return NSString(string: String((0..<length).map { _ in Character(UnicodeScalar(UInt8(97 + int(26)))) }))
        case 2:
            return NSString(string: ["r_", "m_", "u_", "v_", "c", "f_x", "prf", "class\0", "acct\0x"][int(9)] + "Zz")
        case 3: return NSString(string: Self.strings[int(Self.strings.count)])
        case 4: return Data([1, 2, 3]) as NSData
        default: return Self.constants[int(Self.constants.count)]
        }
    }

    mutating func value(depth: Int = 0) -> Any {
        switch int(depth > 1 ? 18 : 22) {
        case 0, 1: return Self.strings[int(Self.strings.count)]
        case 2: return Self.constants[int(Self.constants.count)]
        case 3: return random.bytes(int(64))
        case 4: return [Int.min, Int.max, -1, 0, 1, 443, Int(Int32.max), Int(Int32.min), 1 << 40][int(9)]
        case 5: return Bool.random(using: &random)
        case 6: return int(2) == 0 ? kCFBooleanTrue! : kCFBooleanFalse!
        case 7: return [Double.nan, .infinity, -.infinity, 0.5, 1e300, -0.0, 3.0][int(7)]
        case 8: return Date(timeIntervalSinceReferenceDate: [0, -1e12, 1e12, Double.nan][int(4)])
        case 9: return NSNull()
        case 10:
            return [kSecClassGenericPassword, kSecClassInternetPassword, kSecClassKey, kSecClassCertificate][int(4)]
        case 11:
            let flags = SecAccessControlCreateFlags(rawValue: SecAccessControlCreateFlags.RawValue(int(1 << 16)))
            return SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, flags, nil) as Any
        case 12: return UUID()
        case 13: return Data("genp".utf8) + random.bytes(int(2) == 0 ? 16 : 8)
        case 14: return int(3) == 0 ? Self.enormousString : Self.hugeString
        case 15: return NSNumber(value: Int8(truncatingIfNeeded: int(256)))
        case 16:
            if keychainPaths.isEmpty { return NSNull() }
            return SecKeychain(path: keychainPaths[int(keychainPaths.count)])
        case 17: return NSMutableString(string: "mutable")
        case 18, 19: return (0..<int(4)).map { _ in value(depth: depth + 1) }
        default:
            let dictionary = NSMutableDictionary()
            for _ in 0..<int(3) { dictionary[key()] = value(depth: depth + 1) }
            return dictionary
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
        for _ in 0..<int(9) { result[key()] = value() }
        if int(4) == 0 { result[kSecValueData] = random.bytes(int(80)) }
        if int(6) == 0 { result[kSecReturnData] = kCFBooleanTrue }
        return result
    }
}

// MARK: - The attack

/// The worker side: `fuzz <seed> <directory> <from> <count> [verbose]`. Prints `P <i>` every
/// 1,000 calls, `B <i>` before every call in verbose mode, `U <i> <status>` for an undocumented
/// status, `H <i> <ms>` for a call over one second, and `S <status> <n>` at the end.
func fuzzWorker(_ arguments: [String]) throws -> Int32 {
    guard arguments.count >= 4, let seed = UInt64(arguments[0]), let from = Int(arguments[2]),
        let count = Int(arguments[3])
    else { throw WorkerUsage() }
    let verbose = arguments.count > 4 && arguments[4] == "verbose"
    let directory = arguments[1]
    var counts: [OSStatus: Int] = [:]
    let paths = [directory + "/fuzz.keychain-db", directory + "/missing.keychain-db", directory]
    var database = try KeychainDatabase.inMemory(configuration: StressKeys.testing())
    for index in from..<from + count {
        if index == from || index % 5_000 == 0 {
            // A fresh default keychain now and then, so queries stay small; keychains named by
            // kSecUseKeychain are opened with the suite's test configuration.
            database = try KeychainDatabase.inMemory(configuration: StressKeys.testing())
            KeychainRegistry.shared.reset(configuration: StressKeys.testing())
        }
        if verbose { emit("B \(index)") }
        if index % 1_000 == 0 { emit("P \(index)") }
        var generator = DictionaryGenerator(random: SplitMix64(seed: seed &+ UInt64(index) &* 0x9E37_79B9_7F4A_7C15))
        generator.keychainPaths = paths
        let dictionary = generator.dictionary()
        let started = monotonicSeconds()
        let status: OSStatus = KeychainDatabase.withDefault(database) {
            var result: CFTypeRef?
            switch index % 5 {
            case 0: return SecItemAdd(dictionary, &result)
            case 1: return SecItemCopyMatching(dictionary, &result)
            case 2: return SecItemCopyMatching(dictionary, nil)
            case 3: return SecItemUpdate(dictionary, generator.dictionary())
            default: return SecItemDelete(dictionary)
            }
        }
        let elapsed = monotonicSeconds() - started
        counts[status, default: 0] += 1
        if !documentedStatuses.contains(status) { emit("U \(index) \(status)") }
        if elapsed > 1 { emit("H \(index) \(Int(elapsed * 1000))") }
        if verbose { emit("R \(index)") }
    }
    for (status, count) in counts { emit("S \(status) \(count)") }
    emit("E")
    return 0
}

private struct FuzzBatch {
    var statuses: [OSStatus: Int] = [:]
    var undocumented: [String] = []
    var slow: [String] = []
    var crashes: [String] = []
    var calls = 0
}

/// Runs calls `from..<from+count` in one worker; on a crash, finds the exact call and goes on.
private func fuzzRange(seed: UInt64, directory: String, from: Int, count: Int, scratch: Scratch) -> FuzzBatch {
    var batch = FuzzBatch()
    var start = from
    let end = from + count
    while start < end {
        guard
            let child = try? LineChild(
                ["fuzz", String(seed), directory, String(start), String(end - start)], scratch: scratch)
        else {
            batch.crashes.append("cannot start a worker")
            return batch
        }
        let watchdog = Watchdog(pid: child.pid, stall: 30)
        var lastProgress = start
        var ended = false
        while let line = child.readLine() {
            watchdog.touch()
            let fields = line.split(separator: " ")
            switch fields.first {
            case "P": lastProgress = Int(fields[1]) ?? lastProgress
            case "U": batch.undocumented.append("dictionary \(fields[1]) of seed \(seed): status \(fields[2])")
            case "H": batch.slow.append("dictionary \(fields[1]) of seed \(seed): \(fields[2]) ms")
            case "S":
                if let status = OSStatus(fields[1]), let n = Int(fields[2]) {
                    batch.statuses[status, default: 0] += n
                    batch.calls += n
                }
            case "E": ended = true
            default: break
            }
        }
        watchdog.stop()
        let result = child.finish()
        if ended && result.status == 0 { return batch }
        // Pinpoint the call that crashed or hung: replay from the last progress mark, one line
        // per call.
        let replay = try? LineChild(
            ["fuzz", String(seed), directory, String(lastProgress), String(min(1_000, end - lastProgress)), "verbose"],
            scratch: scratch)
        var culprit = lastProgress
        var completed = 0
        if let replay {
            let replayWatchdog = Watchdog(pid: replay.pid, stall: 30)
            while let line = replay.readLine() {
                replayWatchdog.touch()
                if line.hasPrefix("B ") { culprit = Int(line.dropFirst(2)) ?? culprit }
                if line.hasPrefix("R ") { completed += 1 }
            }
            replayWatchdog.stop()
            _ = replay.finish()
        }
        let why =
            watchdog.fired
            ? "hang (no progress for 30 s)" : "crash (\(result.signaled ? "signal" : "status") \(result.status))"
        batch.crashes.append("dictionary \(culprit) of seed \(seed): \(why) \(result.errors.suffix(200))")
        // The calls before the culprit ran (their statuses were not reported).
        batch.calls += culprit - start
        start = culprit + 1
    }
    return batch
}

/// Kills a process that prints nothing for `stall` seconds.
final class Watchdog: @unchecked Sendable {
    private let last = Mutex(monotonicSeconds())
    private let done = Mutex(false)
    private let firedFlag = Mutex(false)

    init(pid: pid_t, stall: Double) {
        Thread.detachNewThread { [last, done, firedFlag] in
            while !done.withLock({ $0 }) {
                usleep(100_000)
                if monotonicSeconds() - last.withLock({ $0 }) > stall {
                    firedFlag.withLock { $0 = true }
                    _ = kill(pid, SIGKILL)
                    return
                }
            }
        }
    }

    var fired: Bool { firedFlag.withLock { $0 } }
    func touch() { last.withLock { $0 = monotonicSeconds() } }
    func stop() { done.withLock { $0 = true } }
}

/// 1,000,000 (long) random dictionaries through the four SecItem functions.
func fuzzAttacks(_ context: StressContext) throws -> [StressRow] {
    let scratch = try Scratch("fuzz")
    let directory = try scratch.directory("keychains")
    _ = try KeychainDatabase.create(
        at: directory + "/fuzz.keychain-db", password: nil, configuration: StressKeys.testing())
    let total = context.mode.pick(quick: 20_000, long: 1_000_000)
    let batch = context.mode.pick(quick: 10_000, long: 50_000)
    let merged = Mutex(FuzzBatch())
    let next = Mutex(0)
    DispatchQueue.concurrentPerform(iterations: max(1, context.workers)) { _ in
        while true {
            let from: Int = next.withLock { value in
                defer { value += batch }
                return value
            }
            guard from < total else { return }
            let result = fuzzRange(
                seed: context.seed, directory: directory, from: from, count: min(batch, total - from), scratch: scratch)
            merged.withLock { all in
                for (status, n) in result.statuses { all.statuses[status, default: 0] += n }
                all.undocumented += result.undocumented
                all.slow += result.slow
                all.crashes += result.crashes
                all.calls += result.calls
            }
            if context.verbose && from % 200_000 == 0 { context.log("fuzz: \(from + batch)/\(total)") }
        }
    }
    let result = merged.withLock { $0 }
    let top = result.statuses.sorted { $0.value > $1.value }.prefix(6).map { "\($0.key): \(count($0.value))" }
    let hangs = result.crashes.filter { $0.contains("hang") }.count
    let timed = context.mode == .long
    return [
        StressRow(
            group: "Bad input",
            attack: "fuzzed query and attribute dictionaries through SecItemAdd/CopyMatching/Update/Delete",
            trials: result.calls + result.crashes.count,
            // Calls over 1 s are judged in the long run only (the quick run is a unit test,
            // and a loaded machine must not fail it); hangs are caught by the watchdog.
            required: "0 crashes, \(timed ? "0 calls over 1 s, " : "")only documented status codes",
            measured:
                "\(result.crashes.count - hangs) crashes, \(hangs + result.slow.count) calls over 1 s, \(result.undocumented.count) undocumented statuses; \(result.statuses.count) distinct statuses (\(top.joined(separator: ", ")))",
            passed: result.crashes.isEmpty && (!timed || result.slow.isEmpty) && result.undocumented.isEmpty
                && result.calls + result.crashes.count == total && (result.statuses[errSecSuccess] ?? 0) > 0
                && result.statuses.count >= 6,
            evidence: result.crashes + (timed ? result.slow : []) + result.undocumented)
    ]
}
