import CArgon2
import Foundation
import KeePassFormat
import KeychainCore
import KeyringImport
import SecretService

/// Moving a KeePass database in and writing one out (issue 53), each against its floor timed in
/// the same rounds: libargon2's own call with the database's parameters (the password's key),
/// plus the same items added in one transaction (moving in) or read back with their secrets
/// (writing out). The database holds ``SecretServiceComparison/secretServiceItem(_:)``'s items,
/// written by ``KeePassFormat/KeePassExport`` (KeePassXC would take an hour to add 10,000 entries
/// one `keepassxc-cli` process at a time; the writer's files are the ones KeePassXC and pykeepass
/// read in KeePassFileTests).
struct KeePassComparison {
    let lifecycle: Lifecycle
    let scratch: String
    let items: Int
    let progress: (String) -> Void

    static let password = Data("keepass password of the benchmark".utf8)

    func run() -> KeePassResult {
        var result = KeePassResult(items: items)
        do {
            let directory = scratch + "/keepass"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let stored = (0..<items).map(SecretServiceComparison.secretServiceItem)
            guard stored.compactMap(KeePassExport.Entry.init(exporting:)).count == items else {
                throw BenchmarkFailure("not every item has a text secret")
            }
            progress(
                "  KeePass: a database of \(Format.count(items)) entries written and moved in, against Argon2 and the adds"
            )
            let source = try KeychainDatabase.create(
                at: directory + "/source.keychain-db", password: nil, configuration: lifecycle.configuration)
            _ = try source.add(contentsOf: stored)
            var samples = (
                moveIn: [UInt64](), adds: [UInt64](), export: [UInt64](), reads: [UInt64](), argon2: [UInt64]()
            )
            for round in 0...Self.rounds {
                var start = Clock.now()
                let read = try source.find(ItemQuery(class: .genericPassword), includeData: true)
                let file = try KeePassExport.database(
                    read.compactMap(KeePassExport.Entry.init(exporting:)), name: "bench", password: Self.password)
                let exported = Clock.now() - start
                start = Clock.now()
                _ = try source.find(ItemQuery(class: .genericPassword), includeData: true)
                let reads = Clock.now() - start

                let target = try KeychainDatabase.create(
                    at: directory + "/moved-in-\(round).keychain-db", password: nil,
                    configuration: lifecycle.configuration)
                start = Clock.now()
                let movedIn = try KeePassFile(contentsOf: file).items(password: Self.password)
                let tally = SecretServiceImport.Tally(try SecretServiceImport.store(movedIn, in: target), of: movedIn)
                let moveIn = Clock.now() - start
                guard tally.added == items else {
                    throw BenchmarkFailure("\(tally.added) of \(items) entries were moved in")
                }
                let added = try KeychainDatabase.create(
                    at: directory + "/added-\(round).keychain-db", password: nil, configuration: lifecycle.configuration
                )
                start = Clock.now()
                _ = try added.add(contentsOf: stored)
                let adds = Clock.now() - start
                let argon2 = try Self.timeArgon2()
                if round > 0 {
                    samples.export.append(exported)
                    samples.reads.append(reads)
                    samples.moveIn.append(moveIn)
                    samples.adds.append(adds)
                    samples.argon2.append(argon2)
                }
                for name in ["moved-in-\(round)", "added-\(round)"] {
                    try? FileManager.default.removeItem(atPath: directory + "/\(name).keychain-db")
                }
            }
            result.moveIn = Summary(nanoseconds: samples.moveIn)
            result.adds = Summary(nanoseconds: samples.adds)
            result.export = Summary(nanoseconds: samples.export)
            result.reads = Summary(nanoseconds: samples.reads)
            result.argon2 = Summary(nanoseconds: samples.argon2)
        } catch {
            result.note = "not available: \(error)"
        }
        return result
    }

    /// Timed rounds (after one untimed).
    static let rounds = 5

    /// libargon2's own call with a written database's parameters: the floor's key derivation.
    static func timeArgon2() throws -> UInt64 {
        let parameters = KeePassExport.keyDerivation
        var output = [UInt8](repeating: 0, count: 32)
        let salt = [UInt8](repeating: 7, count: 32)
        let password = [UInt8](repeating: 1, count: 32)
        let start = Clock.now()
        let status = argon2_hash(
            UInt32(parameters.iterations), UInt32(parameters.memory / 1024), parameters.parallelism, password,
            password.count, salt, salt.count, &output, output.count, nil, 0, Argon2_id, 0x13)
        let elapsed = Clock.now() - start
        guard status == ARGON2_OK.rawValue else { throw BenchmarkFailure("argon2_hash failed: \(status)") }
        return elapsed
    }
}

/// ``KeePassComparison``'s figures.
struct KeePassResult: Codable, Sendable {
    var items: Int
    /// Reading a KeePass database of ``items`` entries and storing them in a new keychain.
    var moveIn: Summary?
    /// The same items added to a new keychain in one transaction.
    var adds: Summary?
    /// Writing the keychain's ``items`` items into a new KeePass database.
    var export: Summary?
    /// Reading the same items with their secrets.
    var reads: Summary?
    /// libargon2's own call with the database's parameters.
    var argon2: Summary?
    /// Why the rows are missing.
    var note: String?

    /// Moving in ÷ (Argon2 + the adds): the target is ≤ 1.5×.
    var moveInOverFloor: Double? {
        guard let moveIn, let adds, let argon2 else { return nil }
        return moveIn.medianMicroseconds / (adds.medianMicroseconds + argon2.medianMicroseconds)
    }

    /// Writing out ÷ (Argon2 + the reads): the target is ≤ 1.5×.
    var exportOverFloor: Double? {
        guard let export, let reads, let argon2 else { return nil }
        return export.medianMicroseconds / (reads.medianMicroseconds + argon2.medianMicroseconds)
    }
}
