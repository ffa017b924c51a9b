import Crypto
import Foundation
import KeychainModel

/// An invitation to join a zone (docs/sync.md, "Machines"): what an existing device shows as a code
/// for a new device to type or paste.
///
/// It carries the server's address (never a password) with its `sslmode`, the zone, the
/// sponsoring device and its signing key (the new device's trust anchor; its fingerprint is
/// what the two people compare), and a one-time 128-bit secret
/// J. The server stores only ``tokenHash``; the login role and password the new device enrolls
/// with, and the key that authenticates its join request, are derived from J.
///
/// ## The server's root certificate
/// A root certificate file (`sslrootcert`) is a path on the inviting machine, so the code
/// carries its SHA-256 (``serverRootFingerprint``) instead of the path: the new machine must be
/// given a copy of the same file (`security sync join CODE --server-root FILE`), and a file
/// whose fingerprint differs is refused before anything is sent. A server verified with the
/// system's trust store (`verify-full` without `sslrootcert`) needs no file.
///
/// ## Code
/// `kcsync1-` followed by unpadded base64url of
///
///     version (1 or 2) ‖ zone (16) ‖ sponsor (16) ‖ sponsor signing key (32) ‖ secret (16) ‖
///     server length (2, big-endian) ‖ server (UTF-8) ‖ [root fingerprint (32), version 2] ‖
///     checksum (4)
///
/// where the checksum is the first 4 bytes of SHA-256 of everything before it, so a mistyped
/// code is refused rather than tried against the server. A code without a root fingerprint is
/// written as version 1, as before TLS.
public struct Invitation: Sendable, CustomStringConvertible, CustomReflectable {
    static let prefix = "kcsync1-"
    static let version: UInt8 = 1
    /// The version of a code that carries ``serverRootFingerprint``.
    static let versionWithRoot: UInt8 = 2
    static let maximumServerLength = 2048

    /// The server, as a `postgresql://` URL without a password or `sslrootcert`, with its `sslmode`.
    public let server: String
    /// SHA-256 of the root certificate file the inviting machine verifies the server with (see
    /// ``SyncServerAddress/rootFingerprint(ofFile:)``); `nil` when it has none.
    public let serverRootFingerprint: Data?
    /// The zone to join.
    public let zone: ZoneID
    /// The device that made the invitation and will approve the join.
    public let sponsor: DeviceID
    /// The sponsor's Ed25519 signing key: the only key a new device trusts until it holds the
    /// roster (it verifies the sponsor's share and roster with it).
    public let sponsorKey: Curve25519.Signing.PublicKey
    /// SHA-256 of the sponsor's signing key (32 bytes).
    public var sponsorFingerprint: Data { Data(SHA256.hash(data: sponsorKey.rawRepresentation)) }
    /// The one-time secret J (16 bytes).
    public let secret: Data

    /// A new invitation with a fresh secret.
    ///
    /// - Parameters:
    ///   - server: the server's URL, without password or `sslrootcert`.
    ///   - serverRootFingerprint: SHA-256 of the server's root certificate file (32 bytes), if any.
    /// - Throws: `.invitation` if `server` is not a `postgresql://` (or `postgres://`) URL, or it
    ///   contains a password or `sslrootcert`, or the fingerprint is not 32 bytes.
    public static func make(
        server: String, serverRootFingerprint: Data? = nil, zone: ZoneID, sponsor: DeviceID,
        sponsorSigningKey: Curve25519.Signing.PublicKey
    ) throws -> Invitation {
        try Invitation(
            server: server, root: serverRootFingerprint, zone: zone, sponsor: sponsor, sponsorKey: sponsorSigningKey,
            secret: SymmetricKey(size: .bits128).syncKeyBytes)
    }

    private init(
        server: String, root: Data?, zone: ZoneID, sponsor: DeviceID, sponsorKey: Curve25519.Signing.PublicKey,
        secret: Data
    ) throws {
        try Self.checkServer(server)
        guard secret.count == 16, root == nil || root?.count == 32 else {
            throw SyncError(.invitation, "invitation is malformed")
        }
        self.server = server
        self.serverRootFingerprint = root
        self.zone = zone
        self.sponsor = sponsor
        self.sponsorKey = sponsorKey
        self.secret = secret
    }

    /// The code to show: one copy-pasteable token.
    public var code: String {
        var writer = SyncWriter()
        writer.u8(serverRootFingerprint == nil ? Self.version : Self.versionWithRoot)
        writer.uuid(zone.uuid)
        writer.uuid(sponsor.uuid)
        writer.raw(sponsorKey.rawRepresentation)
        writer.raw(secret)
        writer.u16(UInt16(server.utf8.count))
        writer.raw(Array(server.utf8))
        if let serverRootFingerprint { writer.raw(serverRootFingerprint) }
        let body = writer.data
        return Self.prefix + (body + SHA256.hash(data: body).prefix(4)).base64URLEncoded
    }

    /// Parses a code (surrounding whitespace is ignored).
    ///
    /// - Throws: `.invitation` for any problem: wrong prefix, not base64url, a checksum that does
    ///   not match (a typo), an unknown version, or a server URL with a password.
    public init(code: String) throws {
        let trimmed = code.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.hasPrefix(Self.prefix),
            let bytes = Self.decodeBase64url(String(trimmed.dropFirst(Self.prefix.count))),
            bytes.count > 4
        else { throw SyncError(.invitation, "not an invitation code") }
        let body = bytes.dropLast(4)
        guard Data(SHA256.hash(data: body).prefix(4)) == Data(bytes.suffix(4)) else {
            throw SyncError(.invitation, "the invitation code is mistyped (checksum)")
        }
        do {
            var reader = SyncReader(body, what: "invitation")
            let version = try reader.u8()
            guard version == Self.version || version == Self.versionWithRoot else {
                throw SyncError(.invitation, "invitation version is not supported")
            }
            let zone = ZoneID(try reader.uuid())
            let sponsor = DeviceID(try reader.uuid())
            let key = try Curve25519.Signing.PublicKey(rawRepresentation: try reader.raw(32))
            let secret = try reader.raw(16)
            let serverBytes = try reader.raw(Int(try reader.u16()))
            let root = version == Self.versionWithRoot ? try reader.raw(32) : nil
            try reader.finish()
            guard let server = String(bytes: serverBytes, encoding: .utf8) else {
                throw SyncError(.invitation, "bad server")
            }
            try self.init(server: server, root: root, zone: zone, sponsor: sponsor, sponsorKey: key, secret: secret)
        } catch let error as SyncError where error.code == .invitation {
            throw error
        } catch {
            throw SyncError(.invitation, "the invitation code is malformed")
        }
    }

    /// Whether `key` is the sponsor's signing key (the trust anchor).
    public func isSponsorKey(_ key: Curve25519.Signing.PublicKey) -> Bool {
        Data(SHA256.hash(data: key.rawRepresentation)) == sponsorFingerprint
    }

    // MARK: Derived values

    /// SHA-256 of the secret: what the server stores to recognise the invitation.
    public var tokenHash: Data { Data(SHA256.hash(data: secret)) }

    /// The PostgreSQL login role the new device enrolls with: "kc_inv_" and 24 lowercase hex digits.
    public var loginRole: String { "kc_inv_" + derive("login role", count: 12).syncHex }

    /// The password of ``loginRole``: 24 derived bytes as unpadded base64url.
    public var loginPassword: String { derive("login password", count: 24).base64URLEncoded }

    /// The key that authenticates the new device's ``JoinRequest``.
    public var joinMACKey: SymmetricKey { SymmetricKey(data: derive("join mac", count: 32)) }

    /// HKDF-SHA256 of the secret, salted with the zone, for one purpose.
    private func derive(_ purpose: String, count: Int) -> Data {
        let key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: secret), salt: zone.uuid.syncBytes,
            info: Data("kcsync-invitation-v1 \(purpose)".utf8), outputByteCount: count)
        return key.syncKeyBytes
    }

    // MARK: Description without the secret

    /// The server, zone and sponsor; never the secret.
    public var description: String { "Invitation(server: \(server), zone: \(zone), sponsor: \(sponsor))" }

    /// The server, zone and sponsor; never the secret.
    public var customMirror: Mirror {
        Mirror(self, children: ["server": server, "zone": zone, "sponsor": sponsor], displayStyle: .struct)
    }

    // MARK: Helpers

    /// Refuses a server that is not a PostgreSQL URL or that carries a password or a root file's path.
    static func checkServer(_ server: String) throws {
        guard server.utf8.count <= maximumServerLength, let url = URLComponents(string: server),
            let scheme = url.scheme?.lowercased(), scheme == "postgresql" || scheme == "postgres"
        else { throw SyncError(.invitation, "the server is not a postgresql:// URL") }
        let passwordInQuery = url.queryItems?.contains { $0.name.lowercased().contains("password") } ?? false
        guard url.password == nil, url.percentEncodedPassword == nil, !passwordInQuery else {
            throw SyncError(.invitation, "the server URL contains a password; an invitation never carries one")
        }
        guard !(url.queryItems?.contains { $0.name == "sslrootcert" } ?? false) else {
            throw SyncError(.invitation, "the server URL names a root file; an invitation carries its fingerprint")
        }
    }

    /// Decodes unpadded base64url, refusing any non-canonical spelling.
    static func decodeBase64url(_ text: String) -> Data? {
        guard text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
            return nil
        }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), data.base64URLEncoded == text else { return nil }
        return data
    }
}

/// A new device's request to join: its card, authenticated with the invitation's
/// ``Invitation/joinMACKey`` so the server, which relays it, cannot substitute its keys.
///
/// Blob layout: version (1) ‖ card length (4) ‖ card (see ``DeviceCard``) ‖ HMAC-SHA256 (32) over
/// "kcsync-join-v1" ‖ zone (16) ‖ sponsor (16) ‖ every byte of the blob before the MAC.
public struct JoinRequest: Equatable, Sendable {
    static let version: UInt8 = 1

    /// The new device's card.
    public var card: DeviceCard

    /// Wraps a card.
    public init(card: DeviceCard) { self.card = card }

    /// The request as the new device posts it.
    public func sealed(invitation: Invitation) -> Data {
        var writer = SyncWriter()
        writer.u8(Self.version)
        writer.bytes(card.encoded)
        let mac = HMAC<SHA256>.authenticationCode(
            for: Self.macInput(writer.data, invitation), using: invitation.joinMACKey)
        writer.raw(Data(mac))
        return writer.data
    }

    /// Checks and opens a posted request.
    ///
    /// - Throws: `.tampered` if the MAC fails (another invitation, or altered on the way);
    ///   `.malformed` if unparseable.
    public static func open(_ blob: Data, invitation: Invitation) throws -> JoinRequest {
        guard blob.count > 32 else { throw SyncError(.malformed, "join request is truncated") }
        let body = blob.dropLast(32)
        guard
            HMAC<SHA256>.isValidAuthenticationCode(
                blob.suffix(32), authenticating: macInput(body, invitation), using: invitation.joinMACKey)
        else { throw SyncError(.tampered, "join request fails authentication") }
        var reader = SyncReader(body, what: "join request")
        guard try reader.u8() == version else { throw SyncError(.malformed, "join request version is not supported") }
        var cardReader = SyncReader(try reader.bytes(limit: 4096), what: "device card")
        let card = try DeviceCard(reading: &cardReader)
        try cardReader.finish()
        try reader.finish()
        return JoinRequest(card: card)
    }

    /// Checks and opens a posted request row, which must be posted by the device its card names.
    ///
    /// - Throws: as ``open(_:invitation:)``; `.tampered` also if the row's device is not the card's.
    public static func open(_ row: ServerJoinRequest, invitation: Invitation) throws -> JoinRequest {
        let request = try open(row.blob, invitation: invitation)
        guard request.card.id == row.device else {
            throw SyncError(.tampered, "join request of \(row.device) carries another device's card")
        }
        return request
    }

    private static func macInput<D: DataProtocol>(_ body: D, _ invitation: Invitation) -> Data {
        var writer = SyncWriter(prefix: "kcsync-join-v1")
        writer.uuid(invitation.zone.uuid)
        writer.uuid(invitation.sponsor.uuid)
        writer.raw(body)
        return writer.data
    }
}
