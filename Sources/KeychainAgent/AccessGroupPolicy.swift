import KeychainCore

/// The access-group rules the agent enforces on every request, from the caller's identity,
/// never from what the caller says (the same rules as `SecItemServer.c` on iOS).
///
/// - An add or update naming a group gets it only if the group is in the caller's set (or the
///   set holds `"*"`); otherwise `errSecMissingEntitlement` (-34018).
/// - A request naming no group uses the caller's first group (``KeychainModel/AccessGroups/defaultGroup``).
/// - Queries see only the caller's groups.
/// - A caller with no groups gets -34018 for everything.
public enum AccessGroupPolicy {
    /// The group a write goes to.
    /// - Parameters:
    ///   - requested: The `kSecAttrAccessGroup` the caller named, or `nil`.
    ///   - caller: Who is asking.
    /// - Returns: `requested` when the caller may use it, else the caller's first group.
    /// - Throws: ``AgentError/Code/missingEntitlement`` (-34018).
    public static func resolve(requested: String?, for caller: CallerIdentity) throws -> String {
        let groups = caller.accessGroups
        if let requested {
            let writable = requested != "*" && requested != tokenGroup
            guard writable, groups.groups.contains(requested) || groups.groups.contains("*") else {
                throw AgentError(.missingEntitlement, "\(caller.summary) may not use access group \(requested)")
            }
            return requested
        }
        guard let first = groups.defaultGroup else {
            throw AgentError(.missingEntitlement, "\(caller.summary) has no access group to add to")
        }
        return first
    }

    /// The groups a query may match.
    /// - Parameters:
    ///   - requested: The `kSecAttrAccessGroup` the caller named, or `nil`.
    ///   - caller: Who is asking.
    /// - Returns: The scope to apply below the seam.
    /// - Throws: ``AgentError/Code/missingEntitlement`` (-34018) for a group outside the set or
    ///   a caller with no groups.
    public static func queryScope(requested: String?, for caller: CallerIdentity) throws -> QueryScope {
        let groups = caller.accessGroups.groups
        guard !groups.isEmpty else {
            throw AgentError(.missingEntitlement, "\(caller.summary) has no access groups")
        }
        let all = groups.contains("*")
        if let requested {
            guard all || groups.contains(requested) else {
                throw AgentError(.missingEntitlement, "\(caller.summary) may not read access group \(requested)")
            }
            return .groups([requested])
        }
        return all ? .all : .groups(groups)
    }

    /// The groups a query is limited to.
    public enum QueryScope: Sendable, Hashable {
        /// Every group (the caller's set holds `"*"`).
        case all
        /// Only these groups.
        case groups([String])

        /// Whether an item in `group` is visible.
        public func contains(_ group: String) -> Bool {
            switch self {
            case .all: return true
            case .groups(let groups): return groups.contains(group)
            }
        }
    }

    /// CryptoTokenKit's read-only group: never a write target.
    static let tokenGroup = "com.apple.token"
}
