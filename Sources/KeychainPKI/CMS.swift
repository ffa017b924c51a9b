import SwiftASN1

/// A CMS message (RFC 5652) as `security cms -D` decodes it: the content of a SignedData
/// (an iOS provisioning profile's property list, say) or of plain Data, with the certificates a
/// SignedData carries, in DER or BER (indefinite lengths, constructed strings).
///
/// Signatures are not checked here: this reads what the message says it holds.
///
/// ```swift
/// let message = try CMSMessage(berEncoded: profileBytes)
/// let plist = message.content  // nil for a detached signature
/// ```
public struct CMSMessage: Sendable {
    /// The largest message read (64 MiB).
    public static let maximumSize = 64 << 20

    /// The content's type (dotted), `1.2.840.113549.1.7.1` (data) for a profile.
    public var contentType: String
    /// The content, or `nil` when the signature is detached.
    public var content: [UInt8]?
    /// The certificates a SignedData carries that parse as X.509 certificates.
    public var certificates: [X509Certificate]
    /// How many signers a SignedData names (0 for plain Data).
    public var signerCount: Int

    static let signedData: ASN1ObjectIdentifier = "1.2.840.113549.1.7.2"
    static let envelopedData: ASN1ObjectIdentifier = "1.2.840.113549.1.7.3"

    /// Reads a ContentInfo holding SignedData or Data.
    /// - Throws: ``PKIError``: `.limitExceeded` above ``maximumSize``; `.unsupportedAlgorithm`
    ///   for enveloped or other content types; `.malformed` otherwise.
    public init(berEncoded bytes: some Collection<UInt8>) throws {
        let bytes = Array(bytes)
        guard bytes.count <= Self.maximumSize else {
            throw PKIError(.limitExceeded, "CMS: \(bytes.count) bytes is over the \(Self.maximumSize)-byte limit")
        }
        let (type, content) = try contentInfo(parseBER(bytes[...], "CMS ContentInfo"), "CMS ContentInfo")
        switch type {
        case OID.data:
            contentType = OID.data.description
            self.content = try octetStringBytes(content, ber: true, "CMS Data")
            certificates = []
            signerCount = 0
        case Self.signedData:
            (contentType, self.content, certificates, signerCount) = try Self.signed(content)
        case Self.envelopedData:
            throw PKIError(.unsupportedAlgorithm, "CMS: enveloped (encrypted) messages are not supported")
        default:
            throw PKIError(.unsupportedAlgorithm, "CMS: content type \(type) is not supported")
        }
    }

    /// SignedData: version, digestAlgorithms, encapContentInfo, [0] certificates, [1] crls,
    /// signerInfos.
    private static func signed(_ node: ASN1Node) throws -> (String, [UInt8]?, [X509Certificate], Int) {
        var fields = try NodeList(node, .sequence, "SignedData")
        _ = try smallInteger(fields.next(), limit: 5, "SignedData.version")
        _ = try NodeList(fields.next(), .set, "SignedData.digestAlgorithms")
        var encapsulated = try NodeList(fields.next(), .sequence, "EncapsulatedContentInfo")
        let type = try objectIdentifier(encapsulated.next(), "EncapsulatedContentInfo.eContentType")
        var content: [UInt8]?
        if let explicit = encapsulated.optional(.context(0)) {
            var inner = try NodeList(explicit, .context(0), "eContent")
            content = try octetStringBytes(inner.next(), ber: true, "eContent")
            try inner.finish()
        }
        try encapsulated.finish()
        var certificates: [X509Certificate] = []
        if let set = fields.optional(.context(0)), case .constructed(let choices) = set.content {
            for choice in choices where choice.identifier == .sequence {
                if let certificate = try? X509Certificate(derEncoded: Array(choice.encodedBytes)) {
                    certificates.append(certificate)
                }
            }
        }
        _ = fields.optional(.context(1))
        let signers = try NodeList(fields.next(), .set, "SignedData.signerInfos")
        try fields.finish()
        return (type.description, content, certificates, signers.remaining)
    }
}
