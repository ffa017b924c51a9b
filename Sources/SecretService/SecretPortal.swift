import Crypto
import DBusNIO
import DBusWire
import Foundation
import KeychainAgent
import KeychainCore
import KeychainLibc

/// The Secret portal's backend (`org.freedesktop.impl.portal.Secret`, version 1): the secret a
/// sandboxed app's libsecret encrypts its own keyring file with, kept in the default keychain.
///
/// A Flatpak app that uses libsecret does not reach the Secret Service: it asks
/// xdg-desktop-portal (`org.freedesktop.portal.Secret.RetrieveSecret`) for a secret of its own,
/// and the portal asks the backend that its `.portal` file names, passing the app's id and the
/// app's file descriptor. This backend answers only the portal (the current owner of
/// `org.freedesktop.portal.Desktop`): GNOME Keyring's answers any caller on the bus, so any
/// program can read every app's secret by naming its app id. The secret is 64 random bytes,
/// made on the app's first request, stored as a Secret Service item with the attribute `app_id`
/// (as GNOME Keyring stores it) in the app's own access group, so the app's other clients see
/// it as theirs and no other app does.
///
/// Descriptors travel beside the bytes (`SCM_RIGHTS`) and SwiftNIO's stream channels drop them,
/// so the backend has a bus connection of its own on the blocking transport
/// (``DBusWire/DBusSocket``), on a thread of its own, under its own name (``busName``).
///
/// ```swift
/// let portal = SecretPortal(provider: provider)
/// try portal.start(addresses: try DBusAddress.sessionBus(environment: environment)) { line in log(line) }
/// ```
public final class SecretPortal: Sendable {
    /// The backend's bus name, which its `.portal` file declares.
    public static let busName = "org.freedesktop.impl.portal.desktop.keychain"
    /// The name of xdg-desktop-portal, the one caller answered.
    public static let frontendName = "org.freedesktop.portal.Desktop"
    /// Where xdg-desktop-portal calls a backend.
    static let objectPath = "/org/freedesktop/portal/desktop"
    /// The length of an app's secret, as GNOME Keyring makes it and libsecret reads it (exactly;
    /// a stored secret of another length is not given).
    static let secretLength = 64

    let provider: SecretServiceProvider
    /// The Secret Service's own bus connection, on which a locked keychain's password is asked
    /// for (the desktop's prompter, else pinentry), or `nil` to answer 2 while it is locked.
    let prompts: DBusConnection?

    /// A backend that keeps the apps' secrets in `provider`'s default keychain, asking on
    /// `prompts` for its password while it is locked.
    public init(provider: SecretServiceProvider, prompts: DBusConnection? = nil) {
        self.provider = provider
        self.prompts = prompts
    }

    /// Connects to the first bus of `addresses` that answers, takes ``busName``, and serves on a
    /// thread of its own until the connection ends.
    /// - Parameter log: Where each refused call and the connection's end are said (never a secret).
    /// - Throws: ``DBusWire/DBusError`` when no bus answers or the name is taken.
    public func start(addresses: [DBusAddress], log: @escaping @Sendable (String) -> Void) throws {
        var connection = try DBusBlockingConnection.connect(to: addresses)
        try connection.requestName(Self.busName)
        let moved = SendableBox(connection)
        let thread = Thread { [self] in
            var connection = moved.value
            defer { connection.close() }
            serve(&connection, log: log)
        }
        thread.name = "secret-portal"
        thread.start()
    }

    /// Answers calls until the connection closes.
    func serve(_ connection: inout DBusBlockingConnection, log: @Sendable (String) -> Void) {
        while true {
            let received: DBusSocket.Received
            do {
                received = try connection.nextCall()
            } catch {
                log("secret portal: the bus connection ended (\(error))")
                return
            }
            let reply = answer(received, &connection, log: log)
            DBusSocket.closeAll(received.descriptors)
            guard let reply, !received.message.flags.contains(.noReplyExpected) else { continue }
            do {
                try connection.send(reply)
            } catch {
                log("secret portal: a reply could not be sent (\(error))")
                return
            }
        }
    }

    /// The reply to a method call (an error for one this backend does not serve).
    func answer(_ received: DBusSocket.Received, _ connection: inout DBusBlockingConnection, log: (String) -> Void)
        -> DBusMessage?
    {
        var call = received.message
        var body = received.body
        switch (call.interface, call.member) {
        case (SecretPortalInterface.name, SecretPortalInterface.retrieveSecret.name):
            do {
                let arguments = try SecretPortalInterface.RetrieveSecretArguments(reading: &body)
                guard call.path == Self.objectPath else { throw PortalRefusal.unknownObject }
                let frontend = try? connection.owner(of: Self.frontendName)
                guard let sender = call.sender, sender == frontend else { throw PortalRefusal.notThePortal }
                let response = retrieveSecret(arguments, descriptors: received.descriptors, log: log)
                return .methodReturn(
                    to: call, body: SecretPortalInterface.Response(response: response, results: [:]).values)
            } catch let refusal as PortalRefusal {
                log("secret portal: refused a call from \(call.sender ?? "?"): \(refusal.message)")
                return .error(to: call, name: refusal.errorName, message: refusal.message)
            } catch {
                return .error(
                    to: call, name: "org.freedesktop.DBus.Error.InvalidArgs",
                    message: "RetrieveSecret takes (o handle, s app_id, h fd, a{sv} options)")
            }
        case ("org.freedesktop.DBus.Properties", "Get"), ("org.freedesktop.DBus.Properties", "GetAll"):
            call.body = (try? body.readAll()) ?? []
            return properties(call)
        case ("org.freedesktop.DBus.Peer", "Ping"):
            return .methodReturn(to: call)
        case ("org.freedesktop.DBus.Introspectable", "Introspect"):
            return .methodReturn(to: call, body: [.string(SecretPortalInterface.introspection)])
        default:
            return .error(
                to: call, name: "org.freedesktop.DBus.Error.UnknownMethod",
                message: "no method \(call.member ?? "") of \(call.interface ?? "any interface") here")
        }
    }

    /// `Properties.Get` and `GetAll` of the interface: its `version`, 1.
    func properties(_ call: DBusMessage) -> DBusMessage {
        let interface = call.body.first?.stringValue
        let version = DBusValue.uint32(1)
        switch (call.member, interface, call.body.dropFirst().first?.stringValue) {
        case ("GetAll", SecretPortalInterface.name, _):
            return .methodReturn(to: call, body: [.stringVariantDictionary(["version": version])])
        case ("GetAll", _, _):
            return .methodReturn(to: call, body: [.stringVariantDictionary([:])])
        case ("Get", SecretPortalInterface.name, "version"):
            return .methodReturn(to: call, body: [.variant(version)])
        default:
            return .error(to: call, name: "org.freedesktop.DBus.Error.UnknownProperty", message: "no such property")
        }
    }

    /// Writes the app's secret to its descriptor; the portal's response code: 0 when written,
    /// 2 when it could not be (the reason is logged, never the secret).
    func retrieveSecret(
        _ arguments: SecretPortalInterface.RetrieveSecretArguments, descriptors: [Int32], log: (String) -> Void
    ) -> UInt32 {
        guard case .unixFD(let index) = arguments.fd, Int(index) < descriptors.count else {
            log("secret portal: RetrieveSecret for \(arguments.appID) carried no descriptor")
            return 2
        }
        guard let groups = provider.directory.resolver.accessGroups(forSandboxedApp: arguments.appID),
            !groups.groups.isEmpty
        else {
            // The empty id of a program outside a sandbox, a malformed one, or an app id that a
            // manifest binds to host executables: none of them has a portal secret.
            log("secret portal: no secret for app id \"\(arguments.appID.prefix(255))\"")
            return 2
        }
        let secret: [UInt8]
        do {
            secret = try waitFor { [self] in try await appSecretUnlocking(arguments.appID, for: groups) }
        } catch is PortalCancelled {
            return 1
        } catch {
            log("secret portal: the secret of \(arguments.appID) is not available (\(error))")
            return 2
        }
        guard Self.write(secret, to: descriptors[Int(index)]) else {
            log("secret portal: the secret of \(arguments.appID) could not be written to its descriptor")
            return 2
        }
        return 0
    }

    /// The app's secret; while the default keychain is locked, its password is asked for first
    /// (the dialog names the app), as for a Secret Service client's unlock.
    /// - Throws: ``PortalCancelled`` when the person cancels; ``PortalLocked`` when there is no
    ///   one to ask.
    func appSecretUnlocking(_ appID: String, for groups: AccessGroups) async throws -> [UInt8] {
        do {
            return try await appSecret(appID, for: groups)
        } catch is PortalLocked {
            guard let prompts else { throw PortalLocked() }
            let collection = try provider.collection(alias: "default")
            let outcome = await provider.askForPasswords(
                on: prompts, caller: nil, asker: "The Flatpak app \(appID), through xdg-desktop-portal,",
                collections: [collection], groups: groups, state: PromptState())
            switch outcome {
            case .unlocked: return try await appSecret(appID, for: groups)
            case .cancelled: throw PortalCancelled()
            case .noOneToAsk: throw PortalLocked()
            }
        }
    }

    /// The app's secret in the default keychain, made and stored on its first request.
    /// - Throws: ``PortalLocked`` while the keychain is locked (nothing is made then: the app's
    ///   secret may be there, unreadable).
    func appSecret(_ appID: String, for groups: AccessGroups) async throws -> [UInt8] {
        let collection = try provider.collection(alias: "default")
        let attributes = ["app_id": appID]
        return try await provider.withKeychain(collection, for: groups) { keychain in
            guard !keychain.isLocked else { throw PortalLocked() }
            let found = try SecretServiceProvider.find(attributes, in: keychain).items
            for item in found where SecretAttributes.matches(item, attributes) {
                guard let id = item.persistentID,
                    let data = try SecretServiceProvider.findPassword(id, in: keychain, includeData: true)?.data,
                    data.count == Self.secretLength
                else { continue }
                return [UInt8](data)
            }
            let secret = SymmetricKey(size: SymmetricKeySize(bitCount: Self.secretLength * 8)).withUnsafeBytes {
                [UInt8]($0)
            }
            let item = Item(
                class: SecretAttributes.itemClass(for: attributes),
                attributes: SecretAttributes.keychainAttributes(for: attributes, label: "Secret portal: \(appID)"),
                data: Data(secret))
            _ = try SecretServiceProvider.addDistinct(item, to: keychain)
            return secret
        }
    }

    /// Writes all of `bytes` to `descriptor` without waiting (a full pipe fails the request
    /// rather than stall every app's next one).
    static func write(_ bytes: [UInt8], to descriptor: Int32) -> Bool {
        let flags = fcntl(descriptor, F_GETFL)
        guard flags >= 0, fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) == 0 else { return false }
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
            if written > 0 {
                offset += written
            } else if written < 0 && errno == EINTR {
                continue
            } else {
                return false
            }
        }
        return true
    }
}

/// The default keychain is locked and no password was given for it.
struct PortalLocked: Error, CustomStringConvertible {
    var description: String { "the default keychain is locked, and there is no one to ask for its password" }
}

/// The person cancelled the password dialog.
struct PortalCancelled: Error {}

/// Why a call was refused, with the D-Bus error it is answered with.
struct PortalRefusal: Error {
    var errorName: String
    var message: String

    static let notThePortal = PortalRefusal(
        errorName: "org.freedesktop.DBus.Error.AccessDenied",
        message: "only xdg-desktop-portal (the owner of \(SecretPortal.frontendName)) may ask for an app's secret")
    static let unknownObject = PortalRefusal(
        errorName: "org.freedesktop.DBus.Error.UnknownObject",
        message: "the Secret portal is served at \(SecretPortal.objectPath)")
}

/// A value handed to another thread once (the connection, to the backend's thread).
private struct SendableBox<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}
