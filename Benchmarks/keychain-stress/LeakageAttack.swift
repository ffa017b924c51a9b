import Foundation
import GRDB
import KeychainCore
import SeededRandom

/// Finds canary strings in files, in every encoding a careless program might use: raw UTF-8,
/// hex (both cases), base64 (every alignment), UTF-16 (both byte orders).
///
/// Each encoded canary is cut into 8-byte windows at a stride of 4; a file is scanned with a
/// sliding 8-byte window, so any leaked fragment of 11 bytes or more is found. A random
/// ciphertext hits a window with probability ~2^-40 per file, so there are no false alarms.
struct CanaryScanner {
    static let encodings = ["raw", "hex", "HEX", "base64", "UTF-16LE", "UTF-16BE"]
    private var windows: [UInt64: (canary: Int, encoding: Int, offset: Int)] = [:]
    private var encoded: [[(String, [UInt8])]] = []
    private(set) var canaries: [String] = []
    /// A hit counts only when at least this many contiguous bytes of an encoded canary match:
    /// 8 bytes of UTF-16 are only 4 characters, which structured data (the WAL index's small
    /// integers) can spell by chance.
    static let minimumMatch = 16

    mutating func add(_ canary: String) {
        let index = canaries.count
        canaries.append(canary)
        let raw = Data(canary.utf8)
        var encoded: [(String, Data)] = [
            ("raw", raw), ("hex", Data(hex(raw).utf8)), ("HEX", Data(hex(raw).uppercased().utf8)),
            ("UTF-16LE", canary.data(using: .utf16LittleEndian) ?? Data()),
            ("UTF-16BE", canary.data(using: .utf16BigEndian) ?? Data()),
        ]
        for shift in 0..<3 {
            // base64 of the canary at each alignment inside a longer value: drop the first and
            // last characters, which depend on the neighbouring bytes.
            let text = (Data(repeating: 0x20, count: shift) + raw).base64EncodedString()
            encoded.append(("base64", Data(text.utf8).dropFirst(4).dropLast(4)))
        }
        let forms = encoded.map { ($0.0, [UInt8]($0.1)) }
        self.encoded.append(forms)
        for (encoding, (_, array)) in forms.enumerated() where array.count >= 8 {
            var offset = 0
            while offset + 8 <= array.count {
                windows[Self.word(array, offset)] = (index, encoding, offset)
                offset += 4
            }
        }
    }

    private static func word(_ bytes: [UInt8], _ offset: Int) -> UInt64 {
        var value: UInt64 = 0
        for index in offset..<offset + 8 { value = value << 8 | UInt64(bytes[index]) }
        return value
    }

    /// The canaries found in a file, as "file: canary (encoding)".
    func scan(_ path: String) -> [String] {
        guard let data = FileManager.default.contents(atPath: path), data.count >= 8 else { return [] }
        var hits: [String] = []
        var seen = Set<Int>()
        data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) in
            let bytes = buffer.bindMemory(to: UInt8.self)
            var value: UInt64 = 0
            for index in 0..<bytes.count {
                value = value << 8 | UInt64(bytes[index])
                guard index >= 7, let hit = windows[value], !seen.contains(hit.canary) else { continue }
                // Extend the match both ways over the encoded canary.
                let (encoding, form) = encoded[hit.canary][hit.encoding]
                let start = index - 7
                var left = 0
                while hit.offset - left > 0, start - left > 0, form[hit.offset - left - 1] == bytes[start - left - 1] {
                    left += 1
                }
                var right = 8
                while hit.offset + right < form.count, start + right < bytes.count,
                    form[hit.offset + right] == bytes[start + right]
                {
                    right += 1
                }
                guard left + right >= min(Self.minimumMatch, form.count) else { continue }
                seen.insert(hit.canary)
                hits.append(
                    "\((path as NSString).lastPathComponent): \(canaries[hit.canary].prefix(12))… (\(encoding), \(left + right) bytes)"
                )
            }
        }
        return hits
    }

    /// Scans every file in a directory.
    func scan(directory: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.sorted().flatMap { scan(directory + "/" + $0) }
    }
}

private func makeCanary(_ random: inout SplitMix64, _ tag: String) -> String {
    let alphabet = Array("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789")
    return "KCNY" + String((0..<16).map { _ in alphabet[random.int(alphabet.count)] }) + tag
}

/// Attributes of every string or data kind for a class, each holding a canary.
private func canaryAttributes(
    _ itemClass: ItemClass, _ index: Int, _ random: inout SplitMix64, _ scanner: inout CanaryScanner
) -> Attributes {
    func value(_ tag: String) -> String {
        let canary = makeCanary(&random, tag)
        scanner.add(canary)
        return canary
    }
    var attributes: Attributes = [
        .label: .string(value("labl")), .comment: .string(value("icmt")), .description: .string(value("desc")),
    ]
    switch itemClass {
    case .genericPassword:
        attributes[.account] = .string(value("acct"))
        attributes[.service] = .string(value("svce"))
        attributes[.generic] = .data(Data(value("gena").utf8))
        attributes["alis"] = .string(value("alis"))
    case .internetPassword:
        attributes[.account] = .string(value("acct"))
        attributes[.server] = .string(value("srvr"))
        attributes[.securityDomain] = .string(value("sdmn"))
        attributes[.path] = .string(value("path"))
        attributes[.authenticationType] = .string(value("atyp"))
    case .certificate:
        attributes = [.label: .string(value("labl"))]
        for name in ["issr", "slnr", "subj", "skid", "pkhh"] {
            attributes[AttributeName(rawValue: name)] = .data(Data(value(name).utf8))
        }
        attributes["alis"] = .data(Data(value("alis").utf8))
    default:
        attributes = [.label: .string(value("labl"))]
        attributes["klbl"] = .data(Data(value("klbl").utf8))
        attributes["atag"] = .data(Data(value("atag").utf8))
        attributes["alis"] = .string(value("alis"))
        attributes["kcls"] = .number(Int64(index % 3))
    }
    return attributes
}

/// Canaries in every file, index values across keychains, padding, and error texts.
func leakageAttacks(_ context: StressContext) throws -> [StressRow] {
    let scratch = try Scratch("leakage")
    var random = SplitMix64(seed: context.seed)
    let directory = try scratch.directory("keychain")
    let path = directory + "/canary.keychain-db"
    let keychain = try KeychainDatabase.create(at: path, password: Corpus.password, configuration: StressKeys.testing())
    try keychain.unlock(password: Corpus.password)
    let count = context.mode.pick(quick: 160, long: 1_000)
    var scanner = CanaryScanner()
    var queries: [ItemQuery] = []
    let classes: [ItemClass] = [.genericPassword, .internetPassword, .certificate, .key]
    var errorTexts: [String] = []
    for index in 0..<count {
        let itemClass = classes[index % classes.count]
        var attributes = canaryAttributes(itemClass, index, &random, &scanner)
        attributes[.accessible] = .string(random.pick(Accessibility.all).rawValue)
        let secret = makeCanary(&random, "data").padding(
            toLength: 24 + random.int(100), withPad: "#", startingAt: 0)
        scanner.add(secret)
        let item = Item(class: itemClass, attributes: attributes, data: Data(secret.utf8))
        try keychain.add(item)
        errorTexts.append(item.description)
        queries.append(ItemQuery(class: itemClass, attributes: [.label: attributes[.label]!]))
        // Errors raised about canary-carrying requests must not repeat them.
        if index % 50 == 0 {
            do { try keychain.add(item) } catch { errorTexts.append("\(error)") }
            var bad = attributes
            bad["zzzz"] = .string(makeCanary(&random, "unknown"))
            scanner.add(bad["zzzz"]!.stringValue!)
            do { try keychain.add(Item(class: itemClass, attributes: bad, data: nil)) } catch {
                errorTexts.append("\(error)")
            }
            do {
                _ = try keychain.find(
                    ItemQuery(class: itemClass, attributes: ["pdmn": .string(makeCanary(&random, "pdmn"))]))
            } catch { errorTexts.append("\(error)") }
        }
    }
    var stages: [(String, [String])] = [("after \(count) adds", scanner.scan(directory: directory))]
    // Half updated (new canary secrets and labels), half deleted.
    for index in 0..<count {
        if index < count / 2 {
            let label = makeCanary(&random, "labl2")
            let secret = makeCanary(&random, "data2")
            scanner.add(label)
            scanner.add(secret)
            try keychain.update(queries[index], attributes: [.label: .string(label)], data: Data(secret.utf8))
        } else {
            try keychain.delete(queries[index])
        }
    }
    stages.append(("after updates and deletes", scanner.scan(directory: directory)))
    let raw = try rawQueue(path)
    try raw.writeWithoutTransaction { db in
        _ = try Row.fetchAll(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        try db.execute(sql: "VACUUM")
    }
    stages.append(("after VACUUM", scanner.scan(directory: directory)))
    try raw.close()
    let remaining = try classes.map { try keychain.find(ItemQuery(class: $0), includeData: true).count }.reduce(0, +)
    // The scanner finds what it must: each encoding of a canary planted in the clear.
    let probe = scratch.file("probe.keychain-db")
    try copyFile(path, probe)
    var probeScanner = CanaryScanner()
    let planted = (0..<6).map { _ in makeCanary(&random, "probe") }
    for canary in planted { probeScanner.add(canary) }
    let plantedValues: [Data] = [
        Data(planted[0].utf8), Data(hex(Data(planted[1].utf8)).utf8),
        Data(hex(Data(planted[2].utf8)).uppercased().utf8),
        Data(("x" + planted[3]).utf8).base64EncodedData(), planted[4].data(using: .utf16LittleEndian)!,
        planted[5].data(using: .utf16BigEndian)!,
    ]
    let probeQueue = try rawQueue(probe)
    try probeQueue.write { db in
        for (index, value) in plantedValues.enumerated() {
            try db.execute(sql: "INSERT INTO meta VALUES (?, ?)", arguments: ["probe\(index)", value])
        }
    }
    try probeQueue.close()
    let probeHits = probeScanner.scan(probe) + sidecarSuffixes.flatMap { probeScanner.scan(probe + $0) }
    // Count canaries, not encoding names: UTF-16LE text one byte off reads as UTF-16BE.
    let selfTest = planted.filter { canary in probeHits.contains { $0.contains(canary.prefix(12)) } }.count

    let found = stages.flatMap { stage in stage.1.map { "\(stage.0): \($0)" } }
    let textLeaks = errorTexts.filter { text in scanner.canaries.contains { text.contains($0) } }
    var rows = [
        StressRow(
            group: "Leakage",
            attack: "\(count) items with canaries in the secret and every attribute; half updated, half deleted",
            trials: count,
            required: "0 canaries (raw, hex, base64, UTF-16) in database, WAL, SHM, journal, before and after VACUUM",
            measured:
                "\(found.count) canaries found in \(stages.count) scans of \(scanner.canaries.count) canaries × \(CanaryScanner.encodings.count) encodings; scanner self-test: \(selfTest)/6 planted canaries found",
            passed: found.isEmpty && selfTest == 6 && remaining == count / 2,
            evidence: found + (selfTest == 6 ? [] : ["scanner self-test found only \(probeHits)"])
                + (remaining == count / 2 ? [] : ["\(remaining) items left instead of \(count / 2)"])),
        StressRow(
            group: "Leakage", attack: "item descriptions and error messages about canary-carrying requests",
            trials: errorTexts.count, required: "0 canaries", measured: "\(textLeaks.count) canaries",
            passed: textLeaks.isEmpty, evidence: textLeaks.prefix(3).map { "leak: \($0.prefix(120))" }),
    ]

    // The same values in two keychains: disjoint index values.
    let same = context.mode.pick(quick: 100, long: 1_000)
    var indexSets: [Set<Data>] = []
    for name in ["first", "second"] {
        let other = try KeychainDatabase.create(
            at: scratch.file("\(name).keychain-db"), password: nil, configuration: StressKeys.testing())
        for index in 0..<same {
            try other.add(
                Item(
                    class: .genericPassword,
                    attributes: [
                        .account: .string("same-account-\(index)"), .service: .string("same-service"),
                        .label: .string("same label"),
                    ], data: Data("same".utf8)))
        }
        let values = try rawQueue(scratch.file("\(name).keychain-db")).read { db in
            Set(
                try Data.fetchAll(db, sql: "SELECT tag FROM tags")
                    + Data.fetchAll(db, sql: "SELECT pk FROM items") + Data.fetchAll(db, sql: "SELECT agrp FROM items")
                    + Data.fetchAll(db, sql: "SELECT sync FROM items"))
        }
        indexSets.append(values)
    }
    let shared = indexSets[0].intersection(indexSets[1]).count
    rows.append(
        StressRow(
            group: "Leakage", attack: "the same \(same) attribute sets in two keychains",
            trials: same, required: "different index values (tags, primary-key, group and sync columns)",
            measured: "\(shared) of \(indexSets[0].count) index values shared",
            passed: shared == 0 && indexSets[0].count > same))

    // Padding: secret length shows only in steps of 32 bytes.
    let padded = try KeychainDatabase.create(
        at: scratch.file("padding.keychain-db"), password: nil, configuration: StressKeys.testing())
    for length in 0...96 {
        try padded.add(
            Item(
                class: .genericPassword, attributes: [.account: .string("len\(length)")],
                data: Data(repeating: 0x61, count: length)))
    }
    let lengths = try rawQueue(scratch.file("padding.keychain-db")).read { db in
        try Int.fetchAll(db, sql: "SELECT length(data) FROM items ORDER BY id")
    }
    let expected = (0...96).map { 12 + 16 + 32 * (($0 + 1 + 31) / 32) }
    rows.append(
        StressRow(
            group: "Leakage", attack: "secrets of 0…96 bytes: stored length (ISO/IEC 7816-4 padding to 32 bytes)",
            trials: 97, required: "1- and 31-byte secrets give equal lengths; lengths step only every 32 bytes",
            measured:
                "1 B → \(lengths.count > 1 ? lengths[1] : -1) B, 31 B → \(lengths.count > 31 ? lengths[31] : -1) B, 32 B → \(lengths.count > 32 ? lengths[32] : -1) B; \(Set(lengths).count) distinct lengths",
            passed: lengths == expected && lengths[1] == lengths[31]))
    return rows
}
