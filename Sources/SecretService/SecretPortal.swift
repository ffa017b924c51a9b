import Crypto
import DBusNIO
import DBusWire
import Foundation
import KeychainAgent
import KeychainCore
import KeychainLibc
import Synchronization

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
/// It is served on the Secret Service's own connection, which receives descriptors
/// (``DBusNIO/DBusConnection/Configuration/receivesDescriptors``), under two names: its own
/// (``busName``, which `keychain.portal` names), and `org.freedesktop.secrets`, which GNOME
/// Keyring's `gnome-keyring.portal` names (the file xdg-desktop-portal 1.16 prefers whenever
/// GNOME Keyring is installed).
///
/// ```swift
/// let bus = try await DBusConnection.connect(to: addresses, objects: provider.objects, configuration: receiving)
/// try await SecretPortal(provider: provider, prompts: bus).start(on: bus, objects: provider.objects) { log($0) }
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
    /// The unique name of xdg-desktop-portal's connection, as last seen.
    private let frontend = Mutex<String?>(nil)

    /// A backend that keeps the apps' secrets in `provider`'s default keychain, asking on
    /// `prompts` for its password while it is locked.
    public init(provider: SecretServiceProvider, prompts: DBusConnection? = nil) {
        self.provider = provider
        self.prompts = prompts
    }

    /// Serves the backend on `bus` (a connection that receives descriptors, exporting
    /// `objects`): its object at `/org/freedesktop/portal/desktop`, and ``busName``.
    /// - Parameter log: Where each refused call is said (never a secret).
    /// - Throws: ``DBusWire/DBusError`` when the object or the name cannot be had.
    public func start(on bus: DBusConnection, objects: DBusObjectTree, log: @escaping @Sendable (String) -> Void)
        async throws
    {
        try objects.register(interface(log: log), at: Self.objectPath)
        // DO_NOT_QUEUE: another keychaind's backend keeps the name it has.
        let reply = try await bus.callBus("RequestName", [.string(Self.busName), .uint32(4)])
        guard let code = reply.body.first?.uint32Value, code == 1 || code == 4 else {
            throw DBusError(.remoteError, "\(Self.busName) is taken")
        }
    }

    /// `org.freedesktop.impl.portal.Secret`, its one method and its `version`.
    func interface(log: @escaping @Sendable (String) -> Void) -> DBusInterface {
        DBusInterface(
            SecretPortalInterface.name,
            methods: [
                DBusMethod(SecretPortalInterface.retrieveSecret) { [self] call, arguments in
                    // Taken at once, so that it is closed when this call is done, whatever happens.
                    let descriptor = call.descriptors?.take(arguments.fd)
                    defer { if let descriptor { Glibc.close(descriptor) } }
                    guard let sender = call.message.sender, await isFrontend(sender, on: call.connection) else {
                        log("secret portal: refused a call from \(call.message.sender ?? "?"): not xdg-desktop-portal")
                        throw DBusError.method(
                            "org.freedesktop.DBus.Error.AccessDenied",
                            "only xdg-desktop-portal (the owner of \(Self.frontendName)) may ask for an app's secret")
                    }
                    let response = await retrieveSecret(arguments.appID, descriptor: descriptor, log: log)
                    return SecretPortalInterface.Response(response: response, results: [:])
                }
            ],
            properties: [DBusProperty("version", type: .uint32) { _ in .uint32(1) }])
    }

    /// Whether `sender` is xdg-desktop-portal: the owner of ``frontendName`` when it was last
    /// asked (a bus never gives a unique name twice, so a name that owned it stays the portal's
    /// connection), or now.
    func isFrontend(_ sender: String, on bus: DBusConnection) async -> Bool {
        if frontend.withLock({ $0 == sender }) { return true }
        let owner = try? await bus.callBus("GetNameOwner", [.string(Self.frontendName)]).body.first?.stringValue
        guard let owner else { return false }
        frontend.withLock { $0 = owner }
        return owner == sender
    }

    /// Writes the app's secret to its descriptor; the portal's response code: 0 when written,
    /// 1 when the person cancelled the unlock, 2 when it could not be (the reason is logged,
    /// never the secret).
    func retrieveSecret(_ appID: String, descriptor: Int32?, log: (String) -> Void) async -> UInt32 {
        guard let descriptor else {
            log("secret portal: RetrieveSecret for \(appID.prefix(255)) carried no descriptor")
            return 2
        }
        guard let groups = provider.directory.resolver.accessGroups(forSandboxedApp: appID), !groups.groups.isEmpty
        else {
            // The empty id of a program outside a sandbox, a malformed one, or an app id that a
            // manifest binds to host executables: none of them has a portal secret.
            log("secret portal: no secret for app id \"\(appID.prefix(255))\"")
            return 2
        }
        let secret: [UInt8]
        do {
            secret = try await appSecretUnlocking(appID, for: groups)
        } catch is PortalCancelled {
            return 1
        } catch {
            log("secret portal: the secret of \(appID) is not available (\(error))")
            return 2
        }
        guard Self.write(secret, to: descriptor) else {
            log("secret portal: the secret of \(appID) could not be written to its descriptor")
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
    ///
    /// An app that used GNOME Keyring's portal has its secret in GNOME Keyring's login keyring, an
    /// item whose only attribute is `app_id`; moving that keyring in puts it in the group the
    /// user's own programs add to (the first of ``KeychainAgent/IdentityResolver/defaultGroups``).
    /// Found there, it is moved into the app's group and given, so the app still opens the keyring
    /// file it encrypted with it. This gives no program more than it had: only the user's own
    /// programs write that group, and they can already claim any app id (a made-up
    /// `/.flatpak-info`); other apps can neither write it nor see the app's group.
    /// - Throws: ``PortalLocked`` while the keychain is locked (nothing is made then: the app's
    ///   secret may be there, unreadable).
    func appSecret(_ appID: String, for groups: AccessGroups) async throws -> [UInt8] {
        let collection = try provider.collection(alias: "default")
        let attributes = ["app_id": appID]
        // The group the user's own programs add to (a move-in among them): never `*`, so that no
        // other app's group is searched, where an app could have planted an item for another.
        let movedIn = provider.directory.resolver.defaultGroups.groups.prefix(1).filter {
            $0 != "*" && !groups.groups.contains($0)
        }
        return try await provider.withKeychain(collection, for: AccessGroups(groups.groups + movedIn)) { keychain in
            guard !keychain.isLocked else { throw PortalLocked() }
            let found = try SecretServiceProvider.find(attributes, in: keychain).items.filter {
                SecretAttributes.matches($0, attributes)
            }
            var adoptable: (id: UUID, secret: [UInt8])?
            for item in found {
                guard let id = item.persistentID,
                    let data = try SecretServiceProvider.findPassword(id, in: keychain, includeData: true)?.data,
                    data.count == Self.secretLength
                else { continue }
                if let group = item.accessGroup, groups.groups.contains(group) { return [UInt8](data) }
                // Only GNOME Keyring's own kind of item: `app_id` and nothing else (a schema aside).
                let others = SecretAttributes.attributes(of: item).filter { $0.key != SecretAttributes.schemaKey }
                if adoptable == nil && others == attributes && movedIn.contains(item.accessGroup ?? "") {
                    adoptable = (id, [UInt8](data))
                }
            }
            let appGroup = groups.groups[0]
            if let adoptable {
                _ = try keychain.update(
                    ItemQuery(class: SecretAttributes.itemClass(for: attributes), persistentID: adoptable.id),
                    attributes: [.accessGroup: .string(appGroup)], data: nil)
                return adoptable.secret
            }
            let secret = SymmetricKey(size: SymmetricKeySize(bitCount: Self.secretLength * 8)).withUnsafeBytes {
                [UInt8]($0)
            }
            var item = Item(
                class: SecretAttributes.itemClass(for: attributes),
                attributes: SecretAttributes.keychainAttributes(for: attributes, label: "Secret portal: \(appID)"),
                data: Data(secret))
            item.attributes[.accessGroup] = .string(appGroup)
            _ = try SecretServiceProvider.addDistinct(item, to: keychain)
            return secret
        }
    }

    /// Writes all of `bytes` to `descriptor` without waiting (a full pipe fails the request
    /// rather than stall every app's next one).
    static func write(_ bytes: [UInt8], to descriptor: Int32) -> Bool {
        let flags = fcntl(descriptor, F_GETFL)
        guard flags >= 0, fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) == 0 else { return false }
        return bytes.withUnsafeBytes { writeAll($0, to: descriptor) }
    }
}

/// The default keychain is locked and no password was given for it.
struct PortalLocked: Error, CustomStringConvertible {
    var description: String { "the default keychain is locked, and there is no one to ask for its password" }
}

/// The person cancelled the password dialog.
struct PortalCancelled: Error {}
