import ArgumentParser
import Crypto
import Foundation
import KeychainModel
import Security

// MARK: - Identity preferences

/// An identity preference as macOS's `SecIdentitySetPreference` keeps one
/// (`OSX/libsecurity_keychain/lib/SecIdentity.cpp`): a generic password whose service and label
/// are the name the identity is preferred for, of type `iprf`. macOS keeps a persistent reference
/// to the certificate in its generic attribute; here it is the certificate's SHA-1, which names
/// it in any keychain of the search list.
enum IdentityPreference {
    /// `'iprf'`, the item type of a preference.
    static let type = Int64(0x6970_7266)

    static func query(_ service: String) -> ItemQuery {
        var query = ItemQuery(
            class: .genericPassword, attributes: [.service: .string(service), "type": .number(type)])
        query.synchronizable = .any
        return query
    }

    /// The certificates of the keychains' identities.
    static func certificates(_ targets: [OpenKeychain], session: Session) throws -> [SecCertificate] {
        try targets.flatMap { try keychainIdentities($0, session: session) }.map(certificate(of:))
    }
}

/// `security set-identity-preference`.
struct SetIdentityPreference: ToolCommand {
    static let name = "set-identity-preference"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Set the preferred identity to use for a service.",
        usage: "security set-identity-preference [-n] [-c identity] -s service [-u keyUsage] [-Z hash] [keychain...]",
        discussion: HelpText.wrapped(
            """
            Prefers the identity whose certificate's common name contains -c (or whose SHA-1 hash is \
            -Z) for the service -s (a URL, an email address, a host or any name), as macOS keeps it: \
            an item of type iprf in the default keychain. -n clears the service's preference. \
            The keychains given are searched for the identity (default: the search list); -u is \
            accepted for macOS scripts.

            Example:
              security set-identity-preference -c "Apple Development" -s com.example.signing
            """))

    @Flag(name: .customShort("n"), help: "Clear the service's preference.")
    var none = false
    @Option(name: .customShort("c"), help: ArgumentHelp("The identity, by certificate name.", valueName: "identity"))
    var identity: String?
    @Option(name: .customShort("s"), help: ArgumentHelp("The service.", valueName: "service"))
    var service: String?
    @Option(name: .customShort("u"), help: ArgumentHelp("Accepted for macOS scripts.", valueName: "keyUsage"))
    var keyUsage: String?
    @Option(name: .customShort("Z"), help: ArgumentHelp("The identity, by SHA-1 hash.", valueName: "hash"))
    var hash: String?
    @Argument(help: ArgumentHelp("Keychains to search (default: the search list).", valueName: "keychain"))
    var keychains: [String] = []

    func execute(in session: Session) throws -> Int32 {
        guard let service else { throw CommandFailure.usage("Give the service with -s.") }
        let defaultKeychain = try session.open(nil, createDefault: true)
        try session.withAccess(to: defaultKeychain) {
            do {
                _ = try defaultKeychain.database.delete(IdentityPreference.query(service))
            } catch let error as KeychainError where error.code == .itemNotFound {
                // No preference yet.
            }
        }
        guard !none, identity != nil || hash != nil else { return 0 }
        let targets = try searchTargets(keychains, in: session)
        let chosen = try IdentityPreference.certificates(targets, session: session).first { certificate in
            if let hash { return CertificateDigest.matches(hash, derData(certificate)) }
            return identity.map { commonNameContains(certificate, $0) } ?? false
        }
        guard let der = chosen.map(derData) else {
            throw CommandFailure.failure("No matching identity found for \"\(hash ?? identity ?? "")\"")
        }
        let item = Item(
            class: .genericPassword,
            attributes: [
                .service: .string(service), .label: .string(service), "type": .number(IdentityPreference.type),
                .generic: .data(Data(Insecure.SHA1.hash(data: der))),
            ], data: Data())
        try session.withAccess(to: defaultKeychain) { _ = try defaultKeychain.database.add(item) }
        return 0
    }
}

/// `security get-identity-preference`.
struct GetIdentityPreference: ToolCommand {
    static let name = "get-identity-preference"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Get the preferred identity to use for a service.",
        usage: "security get-identity-preference -s service [-u keyUsage] [-p] [-c] [-Z]",
        discussion: HelpText.wrapped(
            """
            Prints the certificate of the identity preferred for the service -s, as find-certificate \
            prints one, or with -p in PEM; -c first prints its common name, -Z its SHA-1 hash. \
            Without a preference it fails with "The specified item could not be found in the \
            keychain." (exit 44). -u is accepted for macOS scripts.
            """))

    @Option(name: .customShort("s"), help: ArgumentHelp("The service.", valueName: "service"))
    var service: String?
    @Option(name: .customShort("u"), help: ArgumentHelp("Accepted for macOS scripts.", valueName: "keyUsage"))
    var keyUsage: String?
    @Flag(name: .customShort("p"), help: "Print the certificate in PEM.")
    var pem = false
    @Flag(name: .customShort("c"), help: "Print the certificate's common name.")
    var printName = false
    @Flag(name: .customShort("Z"), help: "Print the certificate's SHA-1 hash.")
    var printHash = false

    func execute(in session: Session) throws -> Int32 {
        guard let service else { throw CommandFailure.usage("Give the service with -s.") }
        let targets = try searchTargets([], in: session)
        var wanted: Data?
        for target in targets where wanted == nil {
            wanted = try session.withAccess(to: target) {
                try target.database.find(IdentityPreference.query(service)).first?.attributes[.generic]?.dataValue
            }
        }
        let certificates = try allCertificates(in: targets, session: session)
        guard let wanted, let found = certificates.first(where: { Data(Insecure.SHA1.hash(data: $0.der)) == wanted })
        else {
            throw CommandFailure.status(KeychainError.Code.itemNotFound.rawValue, "SecIdentityCopyPreference")
        }
        if printName { Console.out("common name: \"\(commonName(found.certificate) ?? "<NULL>")\"\n") }
        if printHash { Console.out("SHA-1 hash: \(CertificateDigest.sha1(found.der))\n") }
        if pem {
            Console.out(PEMBlock.encode(found.der, label: "CERTIFICATE"))
        } else {
            Console.out(ItemFormat.certificateBlock(found))
        }
        return 0
    }
}
