import Crypto
import CryptoExtras
import Foundation

/// An SSH private key the agent holds for its user, with its comment: Ed25519, ECDSA on P-256 or
/// P-384, or RSA of at least 2048 bits, as OpenSSH's agent protocol carries them
/// (draft-miller-ssh-agent §4.2.3) and as `ssh-keygen` writes their public keys. Every
/// signature comes from swift-crypto (RSA from its CryptoExtras).
public struct SSHIdentity: Sendable {
    enum Key: Sendable {
        case ed25519(Curve25519.Signing.PrivateKey)
        case p256(P256.Signing.PrivateKey)
        case p384(P384.Signing.PrivateKey)
        case rsa(_RSA.Signing.PrivateKey, modulus: [UInt8], exponent: [UInt8])
    }

    let key: Key
    /// The key's comment (`ssh-add -L` shows it; usually `user@host` or the file's name).
    public var comment: String
    /// The private key's fields in the agent protocol's form, without the comment: what the
    /// keychain item stores.
    let privateFields: [UInt8]

    /// The smallest RSA modulus accepted, in bits.
    public static let minimumRSABits = 2048

    /// The key's type name (`ssh-ed25519`, `ecdsa-sha2-nistp256`, `ecdsa-sha2-nistp384`, `ssh-rsa`).
    public var typeName: String {
        switch key {
        case .ed25519: "ssh-ed25519"
        case .p256: "ecdsa-sha2-nistp256"
        case .p384: "ecdsa-sha2-nistp384"
        case .rsa: "ssh-rsa"
        }
    }

    /// The public key blob (RFC 4253 §6.6, RFC 5656 §3.1, RFC 8709 §4): what `ssh-add -L`
    /// prints in base64 and a sign request names.
    public var publicKeyBlob: [UInt8] {
        var writer = SSHWriter()
        writer.string(typeName)
        switch key {
        case .ed25519(let key): writer.string(Array(key.publicKey.rawRepresentation))
        case .p256(let key):
            writer.string("nistp256")
            writer.string(Array(key.publicKey.x963Representation))
        case .p384(let key):
            writer.string("nistp384")
            writer.string(Array(key.publicKey.x963Representation))
        case .rsa(_, let modulus, let exponent):
            writer.positiveInteger(exponent)
            writer.positiveInteger(modulus)
        }
        return writer.bytes
    }

    /// `SHA256:` and the unpadded base64 of the blob's SHA-256, as `ssh-keygen -l` prints it.
    public var fingerprint: String { Self.fingerprint(ofBlob: publicKeyBlob) }

    /// The fingerprint of a public key blob.
    public static func fingerprint(ofBlob blob: [UInt8]) -> String {
        "SHA256:" + Data(SHA256.hash(data: blob)).base64EncodedString().replacingOccurrences(of: "=", with: "")
    }

    /// The line of an `authorized_keys` or `.pub` file: type, base64 blob, comment.
    public var publicKeyLine: String {
        [typeName, Data(publicKeyBlob).base64EncodedString(), comment].filter { !$0.isEmpty }.joined(separator: " ")
    }

    /// Reads a key from the agent protocol's private key fields (type, the type's fields) and,
    /// when `withComment`, its comment; each public part is checked against the private key.
    /// - Throws: ``SSHAgentError`` for a malformed key, an unknown type, an RSA key under
    ///   ``minimumRSABits``, or public parts that are not the private key's.
    init(reading reader: inout SSHReader, withComment: Bool) throws(SSHAgentError) {
        var fields = SSHWriter()
        let type = try reader.text()
        fields.string(type)
        switch type {
        case "ssh-ed25519":
            let publicKey = try reader.string()
            let secret = try reader.string()
            fields.string(publicKey)
            fields.string(secret)
            // The seed, then the public key again (RFC 8709's private key, as OpenSSH keeps it).
            guard secret.count == 64, publicKey.count == 32, Array(secret[32...]) == publicKey,
                let parsed = try? Curve25519.Signing.PrivateKey(rawRepresentation: secret[..<32]),
                Array(parsed.publicKey.rawRepresentation) == publicKey
            else { throw .malformed("the Ed25519 key's parts do not match") }
            key = .ed25519(parsed)
        case "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384":
            let curve = try reader.text()
            let point = try reader.string()
            let scalar = try reader.positiveInteger()
            fields.string(curve)
            fields.string(point)
            fields.positiveInteger(scalar)
            key = try Self.ecdsa(type: type, curve: curve, point: point, scalar: scalar)
        case "ssh-rsa":
            let modulus = try reader.positiveInteger()
            let exponent = try reader.positiveInteger()
            let privateExponent = try reader.positiveInteger()
            let coefficient = try reader.positiveInteger()
            let p = try reader.positiveInteger()
            let q = try reader.positiveInteger()
            for part in [modulus, exponent, privateExponent, coefficient, p, q] { fields.positiveInteger(part) }
            guard modulus.count * 8 >= Self.minimumRSABits, modulus.first.map({ $0 != 0 }) ?? false else {
                throw .unsupported("RSA keys of fewer than \(Self.minimumRSABits) bits are refused")
            }
            guard
                let parsed = try? _RSA.Signing.PrivateKey(n: modulus, e: exponent, d: privateExponent, p: p, q: q),
                parsed.keySizeInBits >= Self.minimumRSABits
            else { throw .malformed("the RSA key's parts do not make a key") }
            key = .rsa(parsed, modulus: modulus, exponent: exponent)
        default:
            throw .unsupported("keys of type \(type.prefix(64)) are not supported")
        }
        privateFields = fields.bytes
        comment = withComment ? try reader.text() : ""
    }

    /// A key read back from the fields a keychain item stores.
    init(storedFields: [UInt8], comment: String) throws(SSHAgentError) {
        var reader = SSHReader(storedFields)
        self = try SSHIdentity(reading: &reader, withComment: false)
        guard reader.isAtEnd else { throw .malformed("bytes after the stored key") }
        self.comment = comment
    }

    private static func ecdsa(type: String, curve: String, point: [UInt8], scalar: [UInt8]) throws(SSHAgentError)
        -> Key
    {
        switch (type, curve) {
        case ("ecdsa-sha2-nistp256", "nistp256"):
            guard scalar.count <= 32, let key = try? P256.Signing.PrivateKey(rawRepresentation: padded(scalar, to: 32)),
                Array(key.publicKey.x963Representation) == point
            else { throw .malformed("the P-256 key's parts do not match") }
            return .p256(key)
        case ("ecdsa-sha2-nistp384", "nistp384"):
            guard scalar.count <= 48, let key = try? P384.Signing.PrivateKey(rawRepresentation: padded(scalar, to: 48)),
                Array(key.publicKey.x963Representation) == point
            else { throw .malformed("the P-384 key's parts do not match") }
            return .p384(key)
        default:
            throw .malformed("the key's curve is not its type's")
        }
    }

    private static func padded(_ bytes: [UInt8], to count: Int) -> [UInt8] {
        [UInt8](repeating: 0, count: max(0, count - bytes.count)) + bytes
    }

    /// `SSH_AGENT_RSA_SHA2_256` and `SSH_AGENT_RSA_SHA2_512`, a sign request's flags.
    static let rsaSHA256: UInt32 = 2
    static let rsaSHA512: UInt32 = 4

    /// The signature blob over `data`: the algorithm's name and the signature in its SSH form.
    /// - Parameter flags: The sign request's flags; an RSA key signs with SHA-512 or SHA-256 as
    ///   they ask, and refuses SHA-1 (`ssh-rsa`), which OpenSSH has not asked for since 8.8.
    /// - Throws: ``SSHAgentError`` `.unsupported` for an RSA request without a SHA-2 flag.
    public func signature(for data: [UInt8], flags: UInt32) throws(SSHAgentError) -> [UInt8] {
        var writer = SSHWriter()
        do {
            switch key {
            case .ed25519(let key):
                writer.string("ssh-ed25519")
                writer.string(Array(try key.signature(for: data)))
            case .p256(let key):
                writer.string(typeName)
                writer.string(Self.ecdsaSignature(try key.signature(for: data).rawRepresentation, half: 32))
            case .p384(let key):
                writer.string(typeName)
                writer.string(Self.ecdsaSignature(try key.signature(for: data).rawRepresentation, half: 48))
            case .rsa(let key, _, _):
                let signature: _RSA.Signing.RSASignature
                if flags & Self.rsaSHA512 != 0 {
                    writer.string("rsa-sha2-512")
                    signature = try key.signature(for: SHA512.hash(data: data), padding: .insecurePKCS1v1_5)
                } else if flags & Self.rsaSHA256 != 0 {
                    writer.string("rsa-sha2-256")
                    signature = try key.signature(for: SHA256.hash(data: data), padding: .insecurePKCS1v1_5)
                } else {
                    throw SSHAgentError.unsupported("RSA signatures with SHA-1 are refused")
                }
                writer.string(Array(signature.rawRepresentation))
            }
        } catch let error as SSHAgentError {
            throw error
        } catch {
            throw .unsupported("the key could not sign")
        }
        return writer.bytes
    }

    /// An ECDSA signature's `r‖s` as SSH writes it: two `mpint`s in a string.
    private static func ecdsaSignature(_ raw: Data, half: Int) -> [UInt8] {
        var writer = SSHWriter()
        writer.positiveInteger(raw.prefix(half))
        writer.positiveInteger(raw.dropFirst(half))
        return writer.bytes
    }
}
