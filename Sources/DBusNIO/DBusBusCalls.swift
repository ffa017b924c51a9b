import DBusWire

extension DBusConnection {
    /// Asks the bus to route the broadcasts that `rule` matches to this connection
    /// (`org.freedesktop.DBus.AddMatch`); they arrive in ``signals``.
    ///
    /// - Throws: ``DBusError`` `.invalidName` for a rule with an invalid name, `.remoteError`
    ///   when the bus refuses it (`MatchRuleInvalid`, `LimitsExceeded`).
    public func addMatch(_ rule: DBusMatchRule) async throws {
        try rule.validate()
        _ = try await callBus("AddMatch", [.string(rule.description)])
    }

    /// Removes a rule added by ``addMatch(_:)`` (`org.freedesktop.DBus.RemoveMatch`).
    ///
    /// - Throws: ``DBusError`` `.remoteError` (`MatchRuleNotFound`) when no such rule was added.
    public func removeMatch(_ rule: DBusMatchRule) async throws {
        try rule.validate()
        _ = try await callBus("RemoveMatch", [.string(rule.description)])
    }

    /// The unique name of the connection that owns `name` now, or `nil` when nobody does
    /// (`org.freedesktop.DBus.GetNameOwner`). A signal whose sender is this unique name comes
    /// from the owner: the bus sets every message's sender, and a connection cannot forge it.
    ///
    /// - Throws: ``DBusError`` for any failure other than `NameHasNoOwner`.
    public func nameOwner(of name: String) async throws -> String? {
        do {
            let reply = try await callBus("GetNameOwner", [.string(name)])
            guard case .string(let owner)? = reply.body.first else {
                throw DBusError(.typeMismatch, "GetNameOwner returned \(reply.signature), expected s")
            }
            return owner
        } catch let error as DBusError where error.errorName == "org.freedesktop.DBus.Error.NameHasNoOwner" {
            return nil
        }
    }
}
