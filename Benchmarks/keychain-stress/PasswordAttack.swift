import Foundation
import KeychainCore
import SeededRandom

/// A wrong password close to the right one, or far from it.
private func wrongPassword(_ right: String, _ random: inout SplitMix64) -> String {
    var candidate: String
    repeat {
        switch random.int(9) {
        case 0: candidate = ""
        case 1: candidate = String(right.dropLast(1 + random.int(3)))
        case 2: candidate = right + String(random.pick(Array(" x\0\n")))
        case 3: candidate = right.uppercased()
        case 4: candidate = " " + right
        case 5:
            var scalars = Array(right.unicodeScalars)
            let index = random.int(scalars.count)
            scalars[index] = Unicode.Scalar(UInt8(33 + random.int(90)))
            candidate = String(String.UnicodeScalarView(scalars))
        case 6: candidate = String(repeating: "a", count: 1 + random.int(4096))
        case 7: candidate = right.precomposedStringWithCompatibilityMapping + "\u{301}"
        default: candidate = hex(random.bytes(1 + random.int(24)))
        }
    } while candidate == right
    return candidate
}

private func read(_ keychain: KeychainDatabase, _ account: String) throws -> Data? {
    try keychain.findFirst(
        ItemQuery(class: .genericPassword, attributes: [.account: .string(account)]), includeData: true)?.data
}

/// Wrong passwords; the accessibility × lock-state matrix; this-device-only items elsewhere.
func passwordAttacks(_ context: StressContext) throws -> [StressRow] {
    let scratch = try Scratch("passwords")
    var rows: [StressRow] = []
    var random = SplitMix64(seed: context.seed)

    // Wrong passwords: each errSecAuthFailed, nothing unlocked.
    func wrongPasswords(_ configuration: KeychainConfiguration, attempts: Int, name: String) throws -> (
        Int, [String]
    ) {
        let path = scratch.file("\(name).keychain-db")
        let keychain = try KeychainDatabase.create(at: path, password: Corpus.password, configuration: configuration)
        try keychain.unlock(password: Corpus.password)
        for accessibility in Accessibility.all {
            try keychain.add(
                Item(
                    class: .genericPassword,
                    attributes: [
                        .account: .string(accessibility.rawValue), .accessible: .string(accessibility.rawValue),
                    ],
                    data: Data("secret".utf8)))
        }
        let handle = try KeychainDatabase.open(at: path, configuration: configuration)
        var failures: [String] = []
        var refused = 0
        for attempt in 0..<attempts {
            let password = wrongPassword(Corpus.password, &random)
            let code = errorCode { try handle.unlock(password: password) }
            if code == .authFailed {
                refused += 1
            } else {
                failures.append("attempt \(attempt): \(codeName(code)) for \(password.debugDescription.prefix(80))")
            }
            if !handle.isLocked { failures.append("attempt \(attempt): the handle reports unlocked") }
            for locked in ["ak", "ck", "aku", "cku", "akpu"] where (try? read(handle, locked)) != nil {
                failures.append("attempt \(attempt): \(locked) item readable")
            }
        }
        do {
            try handle.unlock(password: Corpus.password)
            if try read(handle, "ak") != Data("secret".utf8) {
                failures.append("the right password then fails to read")
            }
        } catch {
            failures.append("the right password no longer unlocks: \(error)")
        }
        return (refused, failures)
    }
    let attempts = context.mode.pick(quick: 100, long: 1_000)
    var (refused, failures) = try wrongPasswords(StressKeys.testing(), attempts: attempts, name: "cheap")
    var trials = attempts
    var note = "test KDF"
    if context.mode == .long {
        let (productionRefused, productionFailures) = try wrongPasswords(
            StressKeys.production(), attempts: 20, name: "production")
        refused += productionRefused
        failures += productionFailures
        trials += 20
        note = "\(attempts) with the test KDF, 20 with scrypt 2^17"
    }
    rows.append(
        StressRow(
            group: "Passwords and locks", attack: "wrong passwords (\(note))", trials: trials,
            required: "each errSecAuthFailed, 0 unlocks",
            measured: "\(refused)/\(trials) errSecAuthFailed, \(failures.count) other outcomes",
            passed: refused == trials && failures.isEmpty, evidence: failures))

    // When each accessibility class is readable, as on iOS: (accessibility, never unlocked,
    // unlocked, relocked) readable.
    let matrix: [(Accessibility, Bool, Bool, Bool)] = [
        (.whenUnlocked, false, true, false), (.whenUnlockedThisDeviceOnly, false, true, false),
        (.whenPasscodeSetThisDeviceOnly, false, true, false), (.afterFirstUnlock, false, true, true),
        (.afterFirstUnlockThisDeviceOnly, false, true, true), (.always, true, true, true),
        (.alwaysThisDeviceOnly, true, true, true),
    ]
    let matrixPath = scratch.file("matrix.keychain-db")
    let owner = try KeychainDatabase.create(
        at: matrixPath, password: Corpus.password, configuration: StressKeys.testing())
    try owner.unlock(password: Corpus.password)
    for (accessibility, _, _, _) in matrix {
        try owner.add(
            Item(
                class: .genericPassword,
                attributes: [.account: .string(accessibility.rawValue), .accessible: .string(accessibility.rawValue)],
                data: Data("secret-\(accessibility.rawValue)".utf8)))
    }
    var cells = 0
    var matrixFailures: [String] = []
    let handle = try KeychainDatabase.open(at: matrixPath, configuration: StressKeys.testing())
    for (state, column) in [("never unlocked", 1), ("unlocked", 2), ("relocked", 3)] {
        if state == "unlocked" { try handle.unlock(password: Corpus.password) }
        if state == "relocked" { handle.lock() }
        for entry in matrix {
            let accessibility = entry.0
            let readable = [entry.1, entry.2, entry.3][column - 1]
            let expected: KeychainError.Code? = readable ? nil : .interactionNotAllowed
            let account = accessibility.rawValue
            let query = ItemQuery(class: .genericPassword, attributes: [.account: .string(account)])
            let checks: [(String, () throws -> Void)] = [
                (
                    "read data",
                    {
                        guard try read(handle, account) == Data("secret-\(account)".utf8) else {
                            throw KeychainError(.internalComponent, "wrong data")
                        }
                    }
                ),
                ("read attributes", { _ = try handle.find(query) }),
                ("update", { try handle.update(query, attributes: [.label: .string(state)]) }),
                (
                    "add",
                    {
                        try handle.add(
                            Item(
                                class: .genericPassword,
                                attributes: [
                                    .account: .string("\(account)-\(state)"), .accessible: .string(account),
                                ], data: Data("x".utf8)))
                    }
                ),
            ]
            for (operation, body) in checks {
                cells += 1
                let code = errorCode(body)
                if code != expected {
                    matrixFailures.append(
                        "\(accessibility) \(state) \(operation): \(codeName(code)), expected \(codeName(expected))")
                }
            }
        }
    }
    rows.append(
        StressRow(
            group: "Passwords and locks",
            attack:
                "accessibility class × lock state (never unlocked, unlocked, relocked) × read/attributes/update/add",
            trials: cells, required: "matches spec §6 (locked classes: errSecInteractionNotAllowed)",
            measured: "\(cells - matrixFailures.count)/\(cells) cells as specified",
            passed: matrixFailures.isEmpty, evidence: matrixFailures))

    // This-device-only items with another device key.
    var deviceFailures: [String] = []
    var deviceTrials = 0
    let moved = try KeychainDatabase.open(
        at: matrixPath, configuration: StressKeys.testing(device: StressKeys.otherDevice))
    try moved.unlock(password: Corpus.password)
    for (accessibility, _, _, _) in matrix {
        deviceTrials += 1
        let result = Result { try read(moved, accessibility.rawValue) }
        switch (accessibility.isThisDeviceOnly, result) {
        case (true, .success(let data)) where data != nil:
            deviceFailures.append("\(accessibility): readable with another device key")
        case (false, .success(let data)) where data == Data("secret-\(accessibility.rawValue)".utf8):
            break
        case (false, _):
            deviceFailures.append("\(accessibility): not readable with the password on another device: \(result)")
        default:
            break
        }
    }
    let plainPath = scratch.file("plain.keychain-db")
    let plain = try KeychainDatabase.create(at: plainPath, password: nil, configuration: StressKeys.testing())
    try plain.add(Item(class: .genericPassword, attributes: [.account: .string("a")], data: Data("x".utf8)))
    deviceTrials += 1
    let plainCode = errorCode {
        _ = try KeychainDatabase.open(at: plainPath, configuration: StressKeys.testing(device: StressKeys.otherDevice))
    }
    if plainCode != .authFailed {
        deviceFailures.append("a password-less keychain with another device key: \(codeName(plainCode))")
    }
    rows.append(
        StressRow(
            group: "Passwords and locks", attack: "file and password moved to a machine with another device key",
            trials: deviceTrials,
            required: "this-device-only items unreadable, all others readable; a password-less keychain does not open",
            measured: "\(deviceTrials - deviceFailures.count)/\(deviceTrials) as required",
            passed: deviceFailures.isEmpty, evidence: deviceFailures))
    return rows
}
