import DBusNIO
import Foundation
import KeychainModel
import Synchronization

/// What the agent remembers of each secret it gave out: which item, when, to which caller (as
/// the kernel names it), and what allowed it. Kept in the agent's memory only, the most recent
/// ``capacity`` entries, and never a secret: `security access-log` shows it (`AccessLog`).
package final class AccessLog: Sendable {
    /// One secret given out.
    struct Entry: Sendable {
        var date: Date
        /// `read` (a secret returned) or `used` (a token key's operation).
        var operation: String
        /// The item's class and the attributes that name it.
        var item: String
        /// Who asked: ``CallerIdentity/summary``, with the executable of an unidentified caller.
        var caller: String
        /// What allowed it: the caller's access group, and the owner's authentication.
        var allowedBy: String

        /// `2026-11-30T11:40:02Z read genp "Vault" (service "vault", account "owner") by pid 42 (unidentified: /usr/bin/app), allowed by access group default`.
        var line: String {
            "\(date.formatted(.iso8601)) \(operation) \(item) by \(caller), allowed by \(allowedBy)"
        }
    }

    /// The most entries kept; the oldest go first.
    static let capacity = 1_000

    private let entries = Mutex<[Entry]>([])

    /// Records that the secrets of `items` were given out.
    package func record(_ operation: String, _ items: [Item], caller: String, groups: AccessGroups, verified: Bool) {
        guard !items.isEmpty else { return }
        let date = Date()
        let added = items.map { item in
            var allowedBy = "access group \(item.accessGroup ?? groups.groups.first ?? "none")"
            if verified { allowedBy += " and the owner's authentication" }
            return Entry(
                date: date, operation: operation, item: Self.name(of: item), caller: caller, allowedBy: allowedBy)
        }
        entries.withLock { entries in
            entries.append(contentsOf: added)
            if entries.count > Self.capacity { entries.removeFirst(entries.count - Self.capacity) }
        }
    }

    /// The entries, oldest first, a line each.
    package var lines: [String] { entries.withLock { $0.map(\.line) } }

    /// A caller as the log names it: its identity's summary, and for a caller no sandbox or
    /// manifest names, the executable the kernel said process `pid` runs (`/proc/PID/exe`, as
    /// read when it was identified).
    static func callerName(_ identity: CallerIdentity?, executable: String?, pid: Int32) -> String {
        if let identity, identity.tier != .unidentified { return identity.summary }
        return "pid \(pid) (\(executable ?? "an executable the kernel does not name"))"
    }

    /// An item's class and the attributes that name it (never its secret).
    static func name(of item: Item) -> String {
        var parts: [String] = []
        for (attribute, title) in [
            (AttributeName.service, "service"), (.server, "server"), (.account, "account"), ("atag", "tag"),
        ] {
            if let value = item.attributes[attribute]?.stringValue, !value.isEmpty {
                parts.append("\(title) \"\(value)\"")
            }
        }
        let label = item.attributes[.label]?.stringValue.map { " \"\($0)\"" } ?? ""
        return item.itemClass.rawValue + label + (parts.isEmpty ? "" : " (\(parts.joined(separator: ", ")))")
    }
}
