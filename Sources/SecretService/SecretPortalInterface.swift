import DBusWire

/// The Secret portal's backend interface, `org.freedesktop.impl.portal.Secret` (xdg-desktop-portal's
/// `data/org.freedesktop.impl.portal.Secret.xml`), declared once: what ``SecretPortal`` decodes
/// and answers, and what its introspection says (built from it by the object tree).
enum SecretPortalInterface {
    static let name = "org.freedesktop.impl.portal.Secret"

    /// `RetrieveSecret(o handle, s app_id, h fd, a{sv} options) → (u response, a{sv} results)`.
    static let retrieveSecret: DBusMethodDeclaration<RetrieveSecretArguments, Response> = DBusMethodDeclaration(
        "RetrieveSecret", interface: name)

    struct RetrieveSecretArguments: DBusArguments {
        /// The request's object path (the portal's; this backend answers at once, so it
        /// exports no request object).
        var handle = "/"
        /// The Flatpak app id xdg-desktop-portal read from the caller's sandbox.
        var appID = ""
        /// The index of the app's descriptor among the call's descriptors.
        var fd: DBusValue = .unixFD(0)
        /// `token` when the app passed one (unused: there is one secret per app).
        var options: [String: DBusValue] = [:]
        mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("handle", &handle, .objectPath)
            try fields.field("app_id", &appID, .string)
            try fields.field("fd", &fd, .value(of: .unixFD))
            try fields.field("options", &options, .stringVariantDictionary)
        }
    }

    struct Response: DBusArguments {
        /// 0 when the secret was written, 1 when the user cancelled, 2 otherwise.
        var response: UInt32 = 2
        var results: [String: DBusValue] = [:]
        mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("response", &response, .uint32)
            try fields.field("results", &results, .stringVariantDictionary)
        }
    }
}
