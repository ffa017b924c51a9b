import Foundation
import GRDB
import KeychainCore
import SeededRandom

/// A keychain filled with a varied set of items (every class, every accessibility, two access
/// groups, synchronizable items and a tombstone), each with a canary secret and a unique label,
/// and the truth to compare against: every item as read back from the pristine file.
package struct Corpus {
    /// Whether the keychain has a password (`Corpus.password`) or only the device key.
    var hasPassword: Bool
    package var path: String
    var configuration: KeychainConfiguration
    /// Every live item and tombstone by label, as the engine returned it from the pristine file.
    package var truth: [String: Item]
    /// Labels of tombstones (deleted synchronizable items).
    var tombstones: Set<String>
    /// Every canary string placed in the keychain.
    var canaries: [String]

    package static let password = "correct horse battery staple"
    package static let classes: [ItemClass] = [.genericPassword, .internetPassword, .certificate, .key]

    /// Builds the keychain at `path` (which must not exist) and checkpoints it into one file.
    package static func build(
        at path: String, hasPassword: Bool, seed: UInt64, configuration: KeychainConfiguration = StressKeys.testing()
    ) throws -> Corpus {
        var random = SplitMix64(seed: seed)
        let keychain = try KeychainDatabase.create(
            at: path, password: hasPassword ? password : nil, configuration: configuration)
        if hasPassword { try keychain.unlock(password: password) }
        var canaries: [String] = []
        func canary(_ tag: String) -> String {
            let alphabet = Array("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789")
            let value = "QZX" + String((0..<17).map { _ in alphabet[random.int(alphabet.count)] }) + tag
            canaries.append(value)
            return value
        }
        let accessibilities = Accessibility.all.filter { hasPassword || $0 != .whenPasscodeSetThisDeviceOnly }
        var index = 0
        var tombstoneLabels: [String] = []
        for itemClass in classes {
            for (position, accessibility) in accessibilities.enumerated() {
                let label = "item-\(index)"
                index += 1
                var attributes: Attributes = [
                    .label: .string(label), .accessible: .string(accessibility.rawValue),
                    .accessGroup: .string(position % 2 == 0 ? "default" : "com.example.shared"),
                ]
                switch itemClass {
                case .genericPassword:
                    attributes[.account] = .string(canary("acct"))
                    attributes[.service] = .string(canary("svce"))
                    attributes[.comment] = .string(canary("icmt"))
                    attributes[.generic] = .data(Data(canary("gena").utf8))
                case .internetPassword:
                    attributes[.account] = .string(canary("acct"))
                    attributes[.server] = .string(canary("srvr"))
                    attributes[.path] = .string(canary("path"))
                    attributes[.port] = .number(Int64(443 + position))
                case .certificate:
                    attributes["issr"] = .data(Data(canary("issr").utf8))
                    attributes["slnr"] = .data(Data(canary("slnr").utf8))
                    attributes["subj"] = .data(Data(canary("subj").utf8))
                default:
                    attributes["kcls"] = .number(Int64(position % 3))
                    attributes["klbl"] = .data(Data(canary("klbl").utf8))
                    attributes["atag"] = .data(Data(canary("atag").utf8))
                }
                if position == 1 || position == 2 { attributes[.synchronizable] = .number(1) }
                let secretLength = [1, 31, 32, 100, 7][random.int(5)]
                let secret = canary("data").padding(toLength: max(secretLength, 24), withPad: "s", startingAt: 0)
                try keychain.add(Item(class: itemClass, attributes: attributes, data: Data(secret.utf8)))
                if position == 2 { tombstoneLabels.append(label) }
            }
        }
        for label in tombstoneLabels {
            for itemClass in classes {
                _ = try? keychain.delete(
                    ItemQuery(class: itemClass, attributes: [.label: .string(label)], synchronizable: .any))
            }
        }
        var truth: [String: Item] = [:]
        for itemClass in classes {
            let items = try keychain.find(
                ItemQuery(class: itemClass, synchronizable: .any, includesTombstones: true), includeData: true)
            for item in items {
                guard let label = item.attributes[.label]?.stringValue else { continue }
                truth[label] = item
            }
        }
        try checkpoint(path)
        return Corpus(
            hasPassword: hasPassword, path: path, configuration: configuration, truth: truth,
            tombstones: Set(tombstoneLabels), canaries: canaries)
    }

    /// Reads the truth back from a pristine copy (what a worker process does).
    static func load(path: String, hasPassword: Bool, configuration: KeychainConfiguration) throws -> Corpus {
        let keychain = try KeychainDatabase.open(at: path, configuration: configuration)
        if hasPassword { try keychain.unlock(password: password) }
        var truth: [String: Item] = [:]
        var tombstones = Set<String>()
        for itemClass in classes {
            for item in try keychain.find(
                ItemQuery(class: itemClass, synchronizable: .any, includesTombstones: true), includeData: true)
            {
                guard let label = item.attributes[.label]?.stringValue else { continue }
                truth[label] = item
                if item.attributes[.tombstone] != nil { tombstones.insert(label) }
            }
        }
        var canaries: [String] = []
        for item in truth.values {
            for value in item.attributes.values {
                if let text = value.stringValue ?? value.dataValue.map({ String(decoding: $0, as: UTF8.self) }),
                    text.hasPrefix("QZX")
                {
                    canaries.append(text)
                }
            }
            if let data = item.data { canaries.append(String(decoding: data, as: UTF8.self)) }
        }
        return Corpus(
            hasPassword: hasPassword, path: path, configuration: configuration, truth: truth, tombstones: tombstones,
            canaries: canaries)
    }

    /// The attributes a full query for an item uses: every stored value the engine indexes.
    static func queryAttributes(_ item: Item) -> Attributes {
        item.attributes.filter { name, _ in
            ![.synchronizable, .tombstone, .multiUser, .accessControl].contains(name)
        }
    }
}

/// What reading a (possibly tampered) keychain gave.
struct Inspection {
    /// The error of `open` or `unlock`, if any.
    var openError: KeychainError?
    /// Per label: the outcome of the query by every attribute and by label alone.
    var lookups: [String: [Outcome]] = [:]
    /// Per class: the outcome of the scan of every row.
    var scans: [ItemClass: Outcome] = [:]
    /// Items returned whose contents differ from the truth (label and what differs).
    var wrong: [String] = []
    /// Error texts that contained a canary.
    var leaks: [String] = []

    enum Outcome: Equatable {
        case exact
        case notFound
        case failed(KeychainError.Code)
    }

    /// Every error code seen anywhere.
    var codes: [KeychainError.Code] {
        var codes: [KeychainError.Code] = []
        if let openError { codes.append(openError.code) }
        for outcome in lookups.values.flatMap({ $0 }) + scans.values {
            if case .failed(let code) = outcome { codes.append(code) }
        }
        return codes
    }
}

extension Corpus {
    /// Opens the file at `path` as this corpus's keychain and reads every item three ways.
    func inspect(_ path: String, configuration: KeychainConfiguration? = nil) -> Inspection {
        var inspection = Inspection()
        let configuration = configuration ?? self.configuration
        let keychain: KeychainDatabase
        do {
            keychain = try KeychainDatabase.open(at: path, configuration: configuration)
            if hasPassword { try keychain.unlock(password: Corpus.password) }
        } catch {
            let error = error as? KeychainError ?? KeychainError(.internalComponent, "\(error)")
            inspection.openError = error
            note(error, &inspection)
            return inspection
        }
        for (label, expected) in truth {
            var outcomes: [Inspection.Outcome] = []
            let queries = [
                ItemQuery(
                    class: expected.itemClass, attributes: Corpus.queryAttributes(expected), synchronizable: .any,
                    includesTombstones: true),
                ItemQuery(
                    class: expected.itemClass, attributes: [.label: .string(label)], synchronizable: .any,
                    includesTombstones: true),
            ]
            for query in queries {
                do {
                    let found = try keychain.find(query, includeData: true)
                    var sawExpected = false
                    for item in found {
                        if compare(item, label: label, &inspection) { sawExpected = true }
                    }
                    outcomes.append(sawExpected ? .exact : .notFound)
                } catch {
                    let error = error as? KeychainError ?? KeychainError(.internalComponent, "\(error)")
                    note(error, &inspection)
                    outcomes.append(.failed(error.code))
                }
            }
            inspection.lookups[label] = outcomes
        }
        for itemClass in Corpus.classes {
            do {
                let found = try keychain.find(
                    ItemQuery(class: itemClass, synchronizable: .any, includesTombstones: true), includeData: true)
                var labels = Set<String>()
                for item in found {
                    let label = item.attributes[.label]?.stringValue ?? "?"
                    if !compare(item, label: label, &inspection) { continue }
                    if !labels.insert(label).inserted { inspection.wrong.append("\(label) returned twice") }
                }
                inspection.scans[itemClass] = .exact
            } catch {
                let error = error as? KeychainError ?? KeychainError(.internalComponent, "\(error)")
                note(error, &inspection)
                inspection.scans[itemClass] = .failed(error.code)
            }
        }
        return inspection
    }

    /// Whether `item` is exactly the truth for `label`; records it as wrong when it differs.
    /// An item returned under another label is compared with the truth of its own label.
    private func compare(_ item: Item, label: String, _ inspection: inout Inspection) -> Bool {
        let ownLabel = item.attributes[.label]?.stringValue ?? ""
        guard let expected = truth[ownLabel] else {
            inspection.wrong.append("an item with an unknown label was returned (looking for \(label))")
            return false
        }
        var differences: [String] = []
        if item.itemClass != expected.itemClass { differences.append("class") }
        if item.data != expected.data {
            differences.append(
                "data (\(item.data.map { "\($0.count) bytes" } ?? "none") instead of \(expected.data.map { "\($0.count) bytes" } ?? "none"))"
            )
        }
        if item.persistentID != expected.persistentID { differences.append("persistent id") }
        for name in Set(item.attributes.keys).union(expected.attributes.keys)
        where item.attributes[name] != expected.attributes[name] {
            differences.append("attribute \(name)")
        }
        if !differences.isEmpty {
            inspection.wrong.append("\(ownLabel): " + differences.joined(separator: ", "))
            return false
        }
        return ownLabel == label
    }

    private func note(_ error: KeychainError, _ inspection: inout Inspection) {
        let text = "\(error)"
        if let canary = canaries.first(where: { text.contains($0) }) {
            inspection.leaks.append("error text contains canary \(canary.prefix(8))…")
        }
    }
}
