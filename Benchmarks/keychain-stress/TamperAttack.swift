import Foundation
import GRDB
import KeychainCore
import SeededRandom

/// Where a tampering lands.
enum TamperSurface: String, CaseIterable {
    /// `items.attributes` and `items.data`: AES-GCM blobs.
    case sealed
    /// The columns and the `tags` table that lookups use.
    case index
    /// The `meta` table: keychain id, key-derivation parameters, wrapped keys.
    case header
    /// Bytes anywhere in the SQLite file.
    case raw
    /// Blobs and wrapped keys moved between rows, classes, groups and keychains.
    case swap
}

/// One tampering, described for the report.
struct Tampering {
    var description: String
    /// The labels of the items whose stored bytes were touched (empty: the whole keychain).
    var targets: Set<String>
}

// MARK: - Value mutations

private enum Mutation: String, CaseIterable {
    case flip, truncate, extend, zero, replace
}

private func mutate(_ bytes: Data, _ random: inout SplitMix64) -> (Data, String) {
    var out = bytes
    let mutation = random.pick(Mutation.allCases)
    switch mutation {
    case .flip:
        guard !out.isEmpty else { return (Data([1]), "flip of empty → 1 byte") }
        let flips = 1 + random.int(3)
        var positions: [Int] = []
        for _ in 0..<flips {
            let bit = random.int(out.count * 8)
            out[out.startIndex + bit / 8] ^= UInt8(1 << (bit % 8))
            positions.append(bit)
        }
        return (out, "flip bits \(positions) of \(bytes.count) bytes")
    case .truncate:
        let length = random.int(max(1, bytes.count))
        return (bytes.prefix(length), "truncate \(bytes.count) → \(length) bytes")
    case .extend:
        let extra = 1 + random.int(64)
        return (bytes + random.bytes(extra), "extend by \(extra) bytes")
    case .zero:
        guard !out.isEmpty else { return (Data(count: 16), "zero-fill empty → 16 zero bytes") }
        if random.chance(30) { return (Data(count: bytes.count), "zero all \(bytes.count) bytes") }
        let start = random.int(out.count)
        let length = 1 + random.int(min(32, out.count - start))
        out.replaceSubrange(out.startIndex + start..<out.startIndex + start + length, with: Data(count: length))
        return (out, "zero bytes \(start)..<\(start + length) of \(bytes.count)")
    case .replace:
        return (random.bytes(bytes.count), "replace \(bytes.count) bytes with random ones")
    }
}

private func mutate(_ value: DatabaseValue, column: String, _ random: inout SplitMix64) -> (DatabaseValue, String) {
    switch value.storage {
    case .blob(let data):
        if column == "data" && random.chance(12) { return (.null, "set to NULL") }
        if random.chance(4) {
            return random.chance(50)
                ? (Int64(data.count).databaseValue, "blob → the integer \(data.count)")
                : ("not a blob".databaseValue, "blob → text")
        }
        let (bytes, what) = mutate(data, &random)
        return (bytes.databaseValue, what)
    case .string(let text):
        if random.chance(40) {
            let other = random.pick(["genp", "inet", "cert", "keys", "idnt", "", "GENP", "genp\0", "x"])
            return (other.databaseValue, "class \(text) → \(other.debugDescription)")
        }
        let (bytes, what) = mutate(Data(text.utf8), &random)
        if let string = String(data: bytes, encoding: .utf8) { return (string.databaseValue, what) }
        return (bytes.databaseValue, what + " (stored as a blob)")
    case .int64(let number):
        switch random.int(6) {
        case 0:
            let bit = random.int(63)
            return ((number ^ (1 << Int64(bit))).databaseValue, "flip bit \(bit) of \(number)")
        case 1: return (0.databaseValue, "\(number) → 0")
        case 2:
            let other = Int64(random.int(10)) - 2
            return (other.databaseValue, "\(number) → \(other)")
        case 3: return (Int64.min.databaseValue, "\(number) → Int64.min")
        case 4: return (Data(count: 8).databaseValue, "\(number) → 8 zero bytes (blob)")
        default: return (String(number).databaseValue, "\(number) → its text")
        }
    case .double(let number):
        return ((number + 1).databaseValue, "\(number) + 1")
    case .null:
        return (random.bytes(44).databaseValue, "NULL → 44 random bytes")
    }
}

// MARK: - Column-level tampering

private let sealedColumns = ["attributes", "data"]
private let indexColumns = ["uuid", "class", "protection", "agrp", "sync", "pk", "tomb", "id"]

/// Changes one stored value of a keychain file in place (the file must be checkpointed).
func tamperColumns(_ path: String, surface: TamperSurface, corpus: Corpus, random: inout SplitMix64) throws
    -> Tampering?
{
    let queue = try rawQueue(path)
    defer { try? queue.close() }
    return try queue.writeWithoutTransaction { db -> Tampering? in
        let labels = try labelsByRow(db, corpus: corpus)
        for _ in 0..<20 {
            var table = "items"
            var column: String
            var rowFilter: String
            var arguments: StatementArguments
            var targets: Set<String> = []
            switch surface {
            case .sealed:
                column = random.pick(sealedColumns)
                let id = random.pick(labels.keys.sorted())
                rowFilter = "id = ?"
                arguments = [id]
                targets = [labels[id] ?? "?"]
            case .index:
                if random.chance(25) {
                    table = "tags"
                    column = random.pick(["tag", "item"])
                    let rows = try Row.fetchAll(db, sql: "SELECT tag, item FROM tags ORDER BY tag, item")
                    let row = random.pick(rows)
                    let tag: Data = row["tag"]
                    let item: Int64 = row["item"]
                    rowFilter = "tag = ? AND item = ?"
                    arguments = [tag, item]
                    targets = [labels[item] ?? "?"]
                } else {
                    column = random.pick(indexColumns)
                    let id = random.pick(labels.keys.sorted())
                    rowFilter = "id = ?"
                    arguments = [id]
                    targets = [labels[id] ?? "?"]
                }
            default:
                table = "meta"
                column = "value"
                let names = try String.fetchAll(db, sql: "SELECT name FROM meta ORDER BY name")
                let name = random.pick(names)
                rowFilter = "name = ?"
                arguments = [name]
                if random.chance(8) {
                    try db.execute(sql: "DELETE FROM meta WHERE name = ?", arguments: [name])
                    return Tampering(description: "meta.\(name): deleted", targets: [])
                }
                column = "value"
                let old = try DatabaseValue.fetchOne(
                    db, sql: "SELECT value FROM meta WHERE name = ?", arguments: [name])
                guard let old else { continue }
                let (new, what) = mutate(old, column: column, &random)
                guard new != old else { continue }
                do {
                    try db.execute(sql: "UPDATE meta SET value = ? WHERE name = ?", arguments: [new, name])
                } catch { continue }
                return Tampering(description: "meta.\(name): \(what)", targets: [])
            }
            guard
                let old = try DatabaseValue.fetchOne(
                    db, sql: "SELECT \(column) FROM \(table) WHERE \(rowFilter)", arguments: arguments)
            else { continue }
            let (new, what) = mutate(old, column: column, &random)
            guard new != old else { continue }
            do {
                try db.execute(
                    sql: "UPDATE \(table) SET \(column) = ? WHERE \(rowFilter)", arguments: [new] + arguments)
            } catch {
                continue  // a constraint refused it (an id or tag already taken): pick again
            }
            // Column affinity may turn the new value back into the old one ("9" into 9). Read it
            // back through the old key: a changed key column no longer finds the row.
            if try DatabaseValue.fetchOne(
                db, sql: "SELECT \(column) FROM \(table) WHERE \(rowFilter)", arguments: arguments) == old
            {
                continue
            }
            return Tampering(
                description: "\(table).\(column) of \(targets.sorted().joined()): \(what)", targets: targets)
        }
        return nil
    }
}

/// Row id → label, from the truth (persistent ids are stable across tampering).
private func labelsByRow(_ db: Database, corpus: Corpus) throws -> [Int64: String] {
    var byUUID: [Data: String] = [:]
    for (label, item) in corpus.truth {
        guard let id = item.persistentID else { continue }
        byUUID[withUnsafeBytes(of: id.uuid) { Data($0) }] = label
    }
    var labels: [Int64: String] = [:]
    for row in try Row.fetchAll(db, sql: "SELECT id, uuid FROM items") {
        let uuid: Data = row["uuid"]
        labels[row["id"]] = byUUID[uuid] ?? "?"
    }
    return labels
}

// MARK: - Byte-level tampering

/// Changes bytes of the file itself: flips, zeroed ranges, truncation, extension. Half of them
/// land in the first page (the SQLite header and schema).
func tamperBytes(_ path: String, random: inout SplitMix64) throws -> Tampering {
    var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
    let original = bytes
    var description = ""
    repeat {
        bytes = original
        let window = random.chance(50) ? min(4096, bytes.count) : bytes.count
        switch random.int(4) {
        case 0:
            let flips = 1 + random.int(4)
            var offsets: [Int] = []
            for _ in 0..<flips {
                let offset = random.int(window)
                bytes[offset] ^= UInt8(1 << random.int(8))
                offsets.append(offset)
            }
            description = "flip bits at bytes \(offsets)"
        case 1:
            let start = random.int(window)
            let length = 1 + random.int(min(512, bytes.count - start))
            bytes.replaceSubrange(start..<start + length, with: Data(count: length))
            description = "zero bytes \(start)..<\(start + length)"
        case 2:
            let length = random.int(bytes.count)
            bytes = bytes.prefix(length)
            description = "truncate \(original.count) → \(length) bytes"
        default:
            let extra = 1 + random.int(8192)
            bytes += random.bytes(extra)
            description = "extend by \(extra) bytes"
        }
    } while bytes == original
    try bytes.write(to: URL(fileURLWithPath: path))
    return Tampering(description: "file: " + description, targets: [])
}

// MARK: - Swaps

/// Moves a blob or a wrapped key: to another row of the same keychain (another class, group,
/// protection class or sync state), or from a twin keychain with the same password and device key.
func swapBlobs(_ path: String, twin: String, corpus: Corpus, random: inout SplitMix64) throws -> Tampering? {
    let queue = try rawQueue(path)
    defer { try? queue.close() }
    let twinQueue = try rawQueue(twin)
    defer { try? twinQueue.close() }
    let twinRows = try twinQueue.read { db in try Row.fetchAll(db, sql: "SELECT * FROM items ORDER BY id") }
    let twinMeta = try twinQueue.read { db in
        try Row.fetchAll(db, sql: "SELECT * FROM meta WHERE name LIKE 'wrap.%' ORDER BY name")
    }
    return try queue.writeWithoutTransaction { db -> Tampering? in
        let labels = try labelsByRow(db, corpus: corpus)
        let rows = try Row.fetchAll(db, sql: "SELECT * FROM items ORDER BY id")
        for _ in 0..<20 {
            let kind = random.int(6)
            switch kind {
            case 0, 1:
                // A blob of another row of this keychain.
                let column = random.pick(sealedColumns)
                let source = random.pick(rows)
                let target = random.pick(rows)
                let sourceID: Int64 = source["id"]
                let targetID: Int64 = target["id"]
                guard sourceID != targetID, let value = source[column] as DatabaseValue?, !value.isNull,
                    value != (target[column] as DatabaseValue)
                else { continue }
                try db.execute(sql: "UPDATE items SET \(column) = ? WHERE id = ?", arguments: [value, targetID])
                let how = difference(source, target)
                return Tampering(
                    description: "\(column) of \(labels[sourceID] ?? "?") → \(labels[targetID] ?? "?") (\(how))",
                    targets: [labels[targetID] ?? "?"])
            case 2, 3:
                // The same item's blob from the twin keychain (same password, same device key).
                let column = random.pick(sealedColumns)
                let target = random.pick(rows)
                let targetID: Int64 = target["id"]
                let source =
                    kind == 2
                    ? twinRows.first { ($0["id"] as Int64) == targetID } : random.pick(twinRows)
                guard let source, let value = source[column] as DatabaseValue?, !value.isNull else { continue }
                try db.execute(sql: "UPDATE items SET \(column) = ? WHERE id = ?", arguments: [value, targetID])
                return Tampering(
                    description:
                        "\(column) from the twin keychain's row \(source["id"] as Int64) → \(labels[targetID] ?? "?")",
                    targets: [labels[targetID] ?? "?"])
            case 4:
                // A whole row from the twin keychain, columns and all.
                let target = random.pick(rows)
                let targetID: Int64 = target["id"]
                guard let source = twinRows.first(where: { ($0["id"] as Int64) == targetID }) else { continue }
                try db.execute(
                    sql: """
                        UPDATE items SET uuid = ?, class = ?, protection = ?, agrp = ?, sync = ?, pk = ?, tomb = ?,
                        attributes = ?, data = ? WHERE id = ?
                        """,
                    arguments: [
                        source["uuid"] as DatabaseValue, source["class"] as DatabaseValue,
                        source["protection"] as DatabaseValue, source["agrp"] as DatabaseValue,
                        source["sync"] as DatabaseValue, source["pk"] as DatabaseValue, source["tomb"] as DatabaseValue,
                        source["attributes"] as DatabaseValue, source["data"] as DatabaseValue, targetID,
                    ])
                return Tampering(
                    description: "whole row \(targetID) from the twin keychain", targets: [labels[targetID] ?? "?"])
            default:
                // A wrapped key: from the twin keychain, or another key's of this one.
                let names = try String.fetchAll(db, sql: "SELECT name FROM meta WHERE name LIKE 'wrap.%' ORDER BY name")
                let name = random.pick(names)
                if random.chance(50), let source = twinMeta.first(where: { ($0["name"] as String) == name }) {
                    try db.execute(
                        sql: "UPDATE meta SET value = ? WHERE name = ?",
                        arguments: [source["value"] as DatabaseValue, name])
                    return Tampering(description: "meta.\(name) from the twin keychain", targets: [])
                }
                let other = random.pick(names)
                guard other != name else { continue }
                try db.execute(
                    sql: """
                        UPDATE meta SET value = CASE name WHEN ?1 THEN (SELECT value FROM meta WHERE name = ?2)
                        ELSE (SELECT value FROM meta WHERE name = ?1) END WHERE name IN (?1, ?2)
                        """, arguments: [name, other])
                return Tampering(description: "meta.\(name) ↔ meta.\(other)", targets: [])
            }
        }
        return nil
    }
}

private func difference(_ a: Row, _ b: Row) -> String {
    var what: [String] = []
    if (a["class"] as String) != (b["class"] as String) { what.append("other class") }
    if (a["agrp"] as Data) != (b["agrp"] as Data) { what.append("other access group") }
    if (a["protection"] as Int) != (b["protection"] as Int) { what.append("other protection class") }
    if (a["sync"] as Data) != (b["sync"] as Data) { what.append("other sync state") }
    return what.isEmpty ? "same class, group, protection and sync" : what.joined(separator: ", ")
}

// MARK: - Judging one trial

/// The outcome names of a tampering trial.
enum TamperOutcome {
    static let detected = "detected"
    static let hidden = "hidden"
    static let noEffect = "no effect"
    static let misreported = "other error"
    static let wrong = "WRONG DATA"
    static let leak = "PLAINTEXT IN ERROR"
    static let untouched = "UNTOUCHED ITEM UNREADABLE"
    static let crash = "CRASH"
    static let order = [detected, hidden, noEffect, misreported, wrong, leak, untouched, crash]
}

/// Classifies what reading the tampered file gave.
func judge(_ inspection: Inspection, tampering: Tampering, corpus: Corpus, surface: TamperSurface) -> (
    String, String
) {
    if let wrong = inspection.wrong.first { return (TamperOutcome.wrong, wrong) }
    if let leak = inspection.leaks.first { return (TamperOutcome.leak, leak) }
    var accepted: Set<KeychainError.Code> = [.decode, .authFailed]
    if surface == .header || surface == .raw || surface == .swap && tampering.targets.isEmpty {
        accepted.formUnion([.invalidKeychain, .wrongVersion])
    }
    if !tampering.targets.isEmpty {
        if let error = inspection.openError { return (TamperOutcome.untouched, "the keychain did not open: \(error)") }
        for (label, outcomes) in inspection.lookups where !tampering.targets.contains(label) {
            if outcomes.contains(where: { $0 != .exact }) {
                return (TamperOutcome.untouched, "\(label): \(outcomes)")
            }
        }
    }
    let relevant: [Inspection.Outcome]
    if tampering.targets.isEmpty {
        relevant = inspection.lookups.values.flatMap { $0 } + inspection.scans.values
    } else {
        relevant = tampering.targets.flatMap { inspection.lookups[$0] ?? [] } + inspection.scans.values
    }
    let codes =
        (inspection.openError.map { [$0.code] } ?? [])
        + relevant.compactMap { if case .failed(let code) = $0 { code } else { nil } }
    if let other = codes.first(where: { !accepted.contains($0) }) {
        return (TamperOutcome.misreported, codeName(other))
    }
    if !codes.isEmpty { return (TamperOutcome.detected, codeName(codes[0])) }
    if relevant.allSatisfy({ $0 == .exact }) { return (TamperOutcome.noEffect, "") }
    return (TamperOutcome.hidden, "")
}

// MARK: - The attack

/// The worker side of a tampering trial: `tamper <surface> <template> <twin|-> <password 0|1> <seed> <dir>`.
func tamperWorker(_ arguments: [String], from: Int, count: Int) throws {
    guard arguments.count >= 6, let surface = TamperSurface(rawValue: arguments[0]),
        let seed = UInt64(arguments[4])
    else { throw WorkerUsage() }
    let template = arguments[1]
    let twin = arguments[2] == "-" ? nil : arguments[2]
    let hasPassword = arguments[3] == "1"
    let directory = arguments[5]
    let configuration = StressKeys.fromEnvironment()
    let corpus = try Corpus.load(path: template, hasPassword: hasPassword, configuration: configuration)
    serveTrials(from: from, count: count) { index in
        var random = SplitMix64(seed: seed &+ UInt64(index) &* 0x2545_F491_4F6C_DD1D)
        let path = directory + "/trial-\(getpid()).keychain-db"
        do {
            try copyFile(template, path)
            let tampering: Tampering?
            switch surface {
            case .raw: tampering = try tamperBytes(path, random: &random)
            case .swap: tampering = try swapBlobs(path, twin: twin ?? template, corpus: corpus, random: &random)
            default: tampering = try tamperColumns(path, surface: surface, corpus: corpus, random: &random)
            }
            guard let tampering else { return ("skipped", "no tampering applied") }
            let inspection = corpus.inspect(path)
            let (outcome, detail) = judge(inspection, tampering: tampering, corpus: corpus, surface: surface)
            return (outcome, "\(tampering.description) → \(detail) [seed \(seed) trial \(index)]")
        } catch {
            return ("setup failed", "\(error)")
        }
    }
}

struct WorkerUsage: Error {}

/// Tampering of every kind, judged trial by trial in worker processes.
func tamperAttacks(_ context: StressContext) throws -> [StressRow] {
    let scratch = try Scratch("tamper")
    let plain = try Corpus.build(at: scratch.file("plain.keychain-db"), hasPassword: false, seed: context.seed)
    let locked = try Corpus.build(at: scratch.file("password.keychain-db"), hasPassword: true, seed: context.seed + 1)
    let twin = try Corpus.build(at: scratch.file("twin.keychain-db"), hasPassword: true, seed: context.seed + 2)
    let work = try scratch.directory("work")
    let total = context.mode.pick(quick: 240, long: 10_000)
    let shares: [(TamperSurface, Int)] = [
        (.sealed, total * 3 / 10), (.index, total * 3 / 10), (.header, total * 2 / 10), (.raw, total * 2 / 10),
    ]
    var rows: [StressRow] = []
    var tallies: [TamperSurface: Tally] = [:]
    for (surface, trials) in shares + [(.swap, context.mode.pick(quick: 80, long: 2_000))] {
        var tally = Tally()
        let variants: [(Corpus, String)] =
            surface == .swap ? [(locked, twin.path)] : [(plain, "-"), (locked, "-")]
        for (variantIndex, (corpus, twinPath)) in variants.enumerated() {
            let share = trials / variants.count + (variantIndex == 0 ? trials % variants.count : 0)
            let (lines, crashes) = runTrials(
                [
                    "tamper", surface.rawValue, corpus.path, twinPath, corpus.hasPassword ? "1" : "0",
                    String(context.seed &* 31 &+ UInt64(variantIndex)), work,
                ], total: share, batch: context.mode.pick(quick: 120, long: 500), workers: context.workers,
                scratch: scratch)
            for line in lines { tally.add(line.outcome, example: line.detail) }
            for crash in crashes { tally.add(TamperOutcome.crash, example: "trial \(crash.index): \(crash.detail)") }
        }
        tallies[surface] = tally
        context.log("tampering \(surface.rawValue): \(tally.summary(order: TamperOutcome.order))")
        rows.append(tamperRow(surface, tally))
    }
    return rows
}

private func tamperRow(_ surface: TamperSurface, _ tally: Tally) -> StressRow {
    let failures = [
        TamperOutcome.wrong, TamperOutcome.leak, TamperOutcome.untouched, TamperOutcome.crash, "setup failed",
        "skipped",
    ]
    let bad = failures.map { tally[$0] }.reduce(0, +)
    let detected = tally[TamperOutcome.detected]
    let total = tally.total
    let measured =
        "\(percent(detected, total)) detected (\(tally.summary(order: TamperOutcome.order)))"
    switch surface {
    case .sealed:
        return StressRow(
            group: "Tampering", attack: "sealed columns (attributes, data): flips, truncation, extension, zeroing",
            trials: total,
            required:
                "100% detected (errSecDecode/errSecAuthFailed), 0 wrong data, 0 crashes, 0 plaintext, untouched items readable",
            measured: measured, passed: bad == 0 && detected == total,
            evidence: tally.evidence(
                for: failures + [TamperOutcome.misreported, TamperOutcome.hidden, TamperOutcome.noEffect]))
    case .index:
        return StressRow(
            group: "Tampering", attack: "index columns (uuid, class, protection, group, sync, pk, tomb, id, tags)",
            trials: total,
            required:
                "detected, or the item hidden (a cut index link = a deleted row); 0 wrong data, 0 crashes, 0 plaintext, untouched items readable",
            measured: measured, passed: bad == 0 && tally[TamperOutcome.misreported] == 0,
            evidence: tally.evidence(for: failures + [TamperOutcome.misreported, TamperOutcome.noEffect]))
    case .header:
        return StressRow(
            group: "Tampering", attack: "header (keychain id, KDF parameters, wrapped keys): edits and deletions",
            trials: total,
            required: "100% detected (errSecDecode/errSecAuthFailed/errSecInvalidKeychain), 0 wrong data, 0 crashes",
            measured: measured,
            passed: bad == 0 && tally[TamperOutcome.misreported] == 0 && detected == total,
            evidence: tally.evidence(
                for: failures + [TamperOutcome.misreported, TamperOutcome.noEffect, TamperOutcome.hidden]))
    case .raw:
        return StressRow(
            group: "Tampering", attack: "raw file bytes (SQLite header, pages): flips, zeroing, truncation, extension",
            trials: total,
            required: "0 wrong data, 0 crashes, 0 plaintext; every change refused or without effect",
            measured: measured, passed: bad == 0,
            evidence: tally.evidence(for: failures + [TamperOutcome.misreported]))
    case .swap:
        return StressRow(
            group: "Tampering",
            attack: "blobs and wrapped keys swapped between rows, classes, groups, keychains with one password",
            trials: total, required: "100% detected, 0 wrong data, untouched items readable",
            measured: measured, passed: bad == 0 && detected == total && tally[TamperOutcome.misreported] == 0,
            evidence: tally.evidence(
                for: failures + [TamperOutcome.misreported, TamperOutcome.noEffect, TamperOutcome.hidden]))
    }
}
