import KeychainCore

/// Who a caller is, for access-group purposes, and the groups that follows from it.
///
/// Built by ``IdentityResolver/identify(_:)`` from kernel facts about the peer process, in
/// order of strength:
/// 1. ``Tier/sandboxed(appID:)``: a Flatpak app, whose app id the sandbox cannot forge;
/// 2. ``Tier/manifestBound(appID:executable:)``: an executable named by a root-owned manifest;
/// 3. ``Tier/unidentified``: everything else, with the user's configured default groups.
public struct CallerIdentity: Sendable, Hashable, CustomStringConvertible {
    /// How the caller was identified.
    public enum Tier: Sendable, Hashable {
        /// A Flatpak sandbox, with the app id from its `/.flatpak-info`.
        case sandboxed(appID: String)
        /// An executable bound by a manifest in the manifest directory.
        case manifestBound(appID: String, executable: String)
        /// Neither: the user's default groups.
        case unidentified
        /// A process in another root or mount namespace whose `/.flatpak-info` exists but is a
        /// link, not a regular file, or names no valid app id: no groups at all (fail closed, so
        /// a broken sandbox never falls back to the user's defaults).
        case invalidSandbox
    }

    /// How the caller was identified.
    public var tier: Tier
    /// The groups the caller may use; the first is where adds go.
    public var accessGroups: AccessGroups
    /// The caller's process id, for logs.
    public var pid: Int32

    /// Creates an identity.
    /// - Parameters:
    ///   - tier: How the caller was identified.
    ///   - accessGroups: Its groups.
    ///   - pid: Its process id.
    public init(tier: Tier, accessGroups: AccessGroups, pid: Int32) {
        self.tier = tier
        self.accessGroups = accessGroups
        self.pid = pid
    }

    /// The app id, for sandboxed and manifest-bound callers.
    public var appID: String? {
        switch tier {
        case .sandboxed(let appID), .manifestBound(let appID, _): return appID
        case .unidentified, .invalidSandbox: return nil
        }
    }

    /// A one-line account for logs and error messages: pid, tier and app id.
    public var summary: String {
        switch tier {
        case .sandboxed(let appID): return "pid \(pid) (Flatpak app \(appID))"
        case .manifestBound(let appID, let executable): return "pid \(pid) (\(appID) via \(executable))"
        case .unidentified: return "pid \(pid) (unidentified)"
        case .invalidSandbox: return "pid \(pid) (sandbox with an invalid .flatpak-info)"
        }
    }

    /// The summary and the groups.
    public var description: String { "\(summary) groups=\(accessGroups.groups)" }
}
