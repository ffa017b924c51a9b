import DBusNIO
import Foundation
import KeychainModel
import Synchronization

/// What the agent remembers of each secret it gave out: which item, when, to which caller (as
/// the kernel names it), and what allowed it. Kept in the agent's memory only, the most recent
/// ``capacity`` entries, and never a secret: `security access-log` shows it (`AccessLog`).
package final class AccessLog: Sendable {
    /// One secret given out, kept as read (the line is made when the log is shown).
    struct Entry: Sendable {
        var date: Date
        /// `read` (a secret returned) or `used` (a token key's operation).
        var operation: String
        /// The item's class.
        var itemClass: ItemClass
        /// The attributes that name the item: its label, then service, server, account, tag.
        var names: [String?]
        /// Who asked: ``CallerIdentity/summary``, with the executable of an unidentified caller.
        var caller: String
        /// The access group that allowed it.
        var group: String
        /// What the person proved that allowed it too: the owner's authentication, a finger.
        var proof: String?
        /// For an item with an access list: what let the caller past it (`its access list`,
        /// `the person's answer to a prompt`).
        var accessList: String?

        /// `2026-11-30T11:40:02Z read genp "Vault" (service "vault", account "owner") by pid 42
        /// (/usr/bin/app), allowed by access group default`.
        var line: String {
            var item = itemClass.rawValue
            if let label = names[0] { item += " \"\(label.printable)\"" }
            let parts = zip(AccessLog.namingTitles, names.dropFirst()).compactMap { title, value in
                value.map { "\(title) \"\($0.printable)\"" }
            }
            if !parts.isEmpty { item += " (\(parts.joined(separator: ", ")))" }
            let allowedBy =
                "access group \(group)" + (accessList.map { ", " + $0 } ?? "")
                + (proof.map { " and " + $0 } ?? "")
            return
                "\(date.formatted(.iso8601)) \(operation) \(item) by \(caller.printable), allowed by \(allowedBy.printable)"
        }
    }

    /// The most entries kept; the oldest go first.
    static let capacity = 1_000

    /// The entries, in a ring of ``capacity``: `next` is where the next one goes.
    private struct Ring {
        var entries: [Entry] = []
        var next = 0
    }

    private let ring = Mutex(Ring())

    /// What the person proved for `item`'s read, when it asked for them: a finger for an item a
    /// finger answered, the owner's authentication for one it answered, both for one that asks
    /// for both (`.and`); nothing for an item that asks for nobody, read in the same call.
    private static func proof(verified: Bool, finger: FingerAnswer?, companion: Data?, of item: Item) -> String? {
        guard verified || finger != nil || companion != nil,
            let control = item.attributes[.accessControl]?.dataValue.flatMap(StoredAccessControl.init(serialized:)),
            !control.isAnswered(owner: false, finger: nil)
        else { return nil }
        var matched: FingerAnswer?
        if case .matched? = finger { matched = finger }
        // Each answer the item would not have been read without.
        var credited: [String] = []
        if verified && !control.isAnswered(owner: false, finger: matched, companion: companion) {
            credited.append("the owner's authentication")
        }
        if matched != nil && !control.isAnswered(owner: verified, finger: nil, companion: companion) {
            credited.append("a finger on the reader")
        }
        if companion != nil && !control.isAnswered(owner: verified, finger: matched, companion: nil) {
            credited.append("a touch of a security key")
        }
        guard let last = credited.popLast() else { return nil }
        return credited.isEmpty ? last : credited.joined(separator: ", ") + " and " + last
    }

    /// Records that the secrets of `items` were given out.
    /// - Parameters:
    ///   - allowed: The items the person allowed this call though their access lists do not
    ///     name the caller.
    package func record(
        _ operation: String, _ items: [Item], caller: String, groups: AccessGroups, verified: Bool,
        finger: FingerAnswer? = nil, companion: Data? = nil, allowed: Set<UUID> = []
    ) {
        guard !items.isEmpty else { return }
        let date = Date()
        let fallbackGroup = groups.groups.first ?? "none"
        let added = items.map { item in
            Entry(
                date: date, operation: operation, itemClass: item.itemClass,
                names: Self.namingAttributes.map { name in
                    item.attributes[name]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
                },
                caller: caller, group: item.accessGroup ?? fallbackGroup,
                proof: Self.proof(verified: verified, finger: finger, companion: companion, of: item),
                accessList: item.attributes[.access] == nil
                    ? nil
                    : item.persistentID.map(allowed.contains) == true
                        ? "the person's answer to a prompt" : "its access list")
        }
        ring.withLock { ring in
            for entry in added {
                if ring.entries.count < Self.capacity {
                    ring.entries.append(entry)
                } else {
                    ring.entries[ring.next] = entry
                }
                ring.next = (ring.next + 1) % Self.capacity
            }
        }
    }

    /// The entries, oldest first, a line each.
    package var lines: [String] {
        let entries = ring.withLock { ring in
            ring.entries.count < Self.capacity
                ? ring.entries : Array(ring.entries[ring.next...] + ring.entries[..<ring.next])
        }
        return entries.map(\.line)
    }

    /// The attributes that name an item in the log (never its secret): its label, then those
    /// ``namingTitles`` name.
    static let namingAttributes: [AttributeName] = [.label, .service, .server, .account, "atag"]
    /// What the log calls ``namingAttributes`` after the label.
    static let namingTitles = ["service", "server", "account", "tag"]

    /// A caller as the log names it: its identity's summary, and for a caller no sandbox or
    /// manifest names, the executable the kernel said process `pid` runs (`/proc/PID/exe`, as
    /// read when it was identified) and the system service it runs in.
    static func callerName(
        _ identity: CallerIdentity?, executable: String?, systemService: String? = nil, pid: Int32
    ) -> String {
        if let identity, identity.tier != .unidentified { return identity.summary }
        let service = systemService.map { ", system service \($0)" } ?? ""
        return "pid \(pid) (\(executable ?? "an executable the kernel does not name")\(service))"
    }
}
