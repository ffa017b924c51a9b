import SwiftASN1

@testable import KeychainPKI

/// Re-encodes a DER PKCS#12 file in BER: every constructed node with an indefinite length,
/// OCTET STRINGs (and implicit [0] ones) split into 8-byte constructed segments, the MAC
/// recomputed over the new AuthenticatedSafe with the file's own salt and iteration count.
enum BERRewriter {
    static func rewritePFX(_ der: [UInt8], passphrase: String, rawPassword: [UInt8]? = nil) throws -> [UInt8] {
        let pfx = try DER.parse(der)
        guard case .constructed(let pfxChildren) = pfx.content else { throw PKIError.malformed("test: PFX") }
        let fields = Array(pfxChildren)
        let authSafeBytes = try innerOctets(fields[1])
        let authSafe = try DER.parse(authSafeBytes)
        guard case .constructed(let infos) = authSafe.content else { throw PKIError.malformed("test: authSafe") }
        var newAuthSafe: [UInt8] = [0x30, 0x80]
        for info in infos { newAuthSafe += try rewriteContentInfo(info) }
        newAuthSafe += [0, 0]
        let password = rawPassword ?? PKCS12KeyDerivation.bmpPassword(passphrase)
        let mac = try rewriteMAC(fields[2], authSafe: newAuthSafe, password: password)
        let info = [0x30, 0x80] + DERWriter.oid(OID.data) + [0xa0, 0x80] + segments(0x24, newAuthSafe) + [0, 0, 0, 0]
        return [0x30, 0x80] + Array(fields[0].encodedBytes) + info + mac + [0, 0]
    }

    /// The OCTET STRING content inside `ContentInfo { data, [0] { OCTET STRING } }`.
    static func innerOctets(_ contentInfo: ASN1Node) throws -> [UInt8] {
        guard case .constructed(let children) = contentInfo.content,
            case .constructed(let explicit) = Array(children)[1].content,
            case .primitive(let bytes) = Array(explicit)[0].content
        else { throw PKIError.malformed("test: ContentInfo") }
        return Array(bytes)
    }

    static func rewriteContentInfo(_ info: ASN1Node) throws -> [UInt8] {
        guard case .constructed(let children) = info.content else { throw PKIError.malformed("test: ContentInfo") }
        let type = try ASN1ObjectIdentifier(derEncoded: Array(children)[0])
        if type == OID.data {
            let safeContents = try berify(DER.parse(innerOctets(info)))
            return [0x30, 0x80] + DERWriter.oid(OID.data) + [0xa0, 0x80] + segments(0x24, safeContents) + [0, 0, 0, 0]
        }
        return try berify(info)
    }

    static func rewriteMAC(_ macData: ASN1Node, authSafe: [UInt8], password: [UInt8]) throws -> [UInt8] {
        guard case .constructed(let children) = macData.content else { throw PKIError.malformed("test: MacData") }
        let fields = Array(children)
        guard case .constructed(let digestInfo) = fields[0].content,
            case .primitive(let salt) = fields[1].content,
            case .primitive(let iterationBytes) = fields[2].content
        else { throw PKIError.malformed("test: MacData") }
        let algorithm = Array(digestInfo)[0]
        let digest = try PKCS12Digest(digestOID: AlgorithmIdentifier(node: algorithm, "test").oid)
        let iterations = iterationBytes.reduce(0) { $0 << 8 | Int($1) }
        let key = digest.macKey(password: password, salt: Array(salt), iterations: iterations)
        let mac = digest.hmac(authSafe, key: key)
        let newDigestInfo = [0x30, 0x80] + Array(algorithm.encodedBytes) + segments(0x24, mac) + [0, 0]
        return [0x30, 0x80] + newDigestInfo + Array(fields[1].encodedBytes) + Array(fields[2].encodedBytes) + [0, 0]
    }

    static func berify(_ node: ASN1Node) throws -> [UInt8] {
        let tag = node.encodedBytes.first ?? 0
        switch node.content {
        case .constructed(let children):
            var out: [UInt8] = [tag | 0x20, 0x80]
            for child in children { out += try berify(child) }
            return out + [0, 0]
        case .primitive(let bytes):
            if (tag == 0x04 || tag == 0x80) && bytes.count > 8 { return segments(tag | 0x20, Array(bytes)) }
            return Array(node.encodedBytes)
        }
    }

    static func segments(_ tag: UInt8, _ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [tag, 0x80]
        for start in stride(from: 0, to: bytes.count, by: 8) {
            out += derTLV(0x04, Array(bytes[start..<min(start + 8, bytes.count)]))
        }
        return out + [0, 0]
    }
}
