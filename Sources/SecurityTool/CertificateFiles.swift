import Crypto
import CryptoExtras
import Foundation
import KeychainPKI
import KeychainLibc

// What the certificate commands need below the Security API: reading and writing PEM, the
// digests macOS prints, the key formats a PEM file holds, and why a PKCS#12 file was refused.

/// One PEM block: its label (`CERTIFICATE`, `PRIVATE KEY`, …) and its DER bytes.
struct PEMBlock {
    var label: String
    var der: Data

    /// The blocks of a PEM text, in order; `nil` when the bytes hold no PEM block, or a block
    /// that is not well formed (no end line, Base64 that does not decode).
    static func blocks(in data: Data) -> [PEMBlock]? {
        guard let text = String(data: data, encoding: .utf8) ?? String(data: data, encoding: .isoLatin1) else {
            return nil
        }
        var blocks: [PEMBlock] = []
        var rest = Substring(text)
        while let begin = rest.range(of: "-----BEGIN ") {
            guard let labelEnd = rest[begin.upperBound...].range(of: "-----") else { return nil }
            let label = String(rest[begin.upperBound..<labelEnd.lowerBound])
            let endMarker = "-----END \(label)-----"
            guard let end = rest[labelEnd.upperBound...].range(of: endMarker) else { return nil }
            let body = rest[labelEnd.upperBound..<end.lowerBound]
            // Encrypted OpenSSL keys have header lines ("Proc-Type: …"); their body is kept
            // as it is and refused later, where the label says what it is.
            guard let der = Data(base64Encoded: String(body), options: .ignoreUnknownCharacters), !der.isEmpty
            else { return nil }
            blocks.append(PEMBlock(label: label, der: der))
            rest = rest[end.upperBound...]
        }
        return blocks.isEmpty ? nil : blocks
    }

    /// The PEM text of DER bytes (64 columns), as `openssl` and macOS's `print_buffer_pem` write it.
    static func encode(_ der: Data, label: String) -> String {
        let base64 = der.base64EncodedString()
        var lines: [String] = ["-----BEGIN \(label)-----"]
        var index = base64.startIndex
        while index < base64.endIndex {
            let next = base64.index(index, offsetBy: 64, limitedBy: base64.endIndex) ?? base64.endIndex
            lines.append(String(base64[index..<next]))
            index = next
        }
        lines.append("-----END \(label)-----")
        return lines.joined(separator: "\n") + "\n"
    }
}

/// The digests macOS prints for certificates (`-Z`, `find-identity`).
enum CertificateDigest {
    /// The uppercase hex SHA-1 of the bytes.
    static func sha1(_ data: Data) -> String { hex(Insecure.SHA1.hash(data: data)) }

    /// The uppercase hex SHA-256 of the bytes.
    static func sha256(_ data: Data) -> String { hex(SHA256.hash(data: data)) }

    /// Whether `text`, the hash a user typed (any case, 40 or 64 hex digits), is the
    /// SHA-1 or SHA-256 of the bytes.
    static func matches(_ text: String, _ data: Data) -> Bool {
        let wanted = text.uppercased()
        switch wanted.count {
        case 40: return wanted == sha1(data)
        case 64: return wanted == sha256(data)
        default: return false
        }
    }

    private static func hex(_ digest: some Sequence<UInt8>) -> String {
        digest.map { String(format: "%02X", $0) }.joined()
    }
}

/// A private or public key read from a PEM block, in the representation `SecKeyCreateWithData`
/// takes (EC: X9.63; RSA: PKCS#1). **The private bytes are secret**: they go to the keychain only.
struct KeyFileContents {
    enum Kind { case ec, rsa }
    var kind: Kind
    var isPrivate: Bool
    var bytes: Data

    /// Reads an unencrypted DER key (PKCS#8, SEC 1, PKCS#1 or SPKI), trying each kind in turn.
    static func read(der: Data) -> KeyFileContents? {
        guard der.first == 0x30 else { return nil }
        for label in ["PRIVATE KEY", "EC PRIVATE KEY", "RSA PRIVATE KEY", "PUBLIC KEY", "RSA PUBLIC KEY"] {
            if let key = read(PEMBlock(label: label, der: der)) { return key }
        }
        return nil
    }

    /// Reads an unencrypted key: `PRIVATE KEY` (PKCS#8), `EC PRIVATE KEY` (SEC 1),
    /// `RSA PRIVATE KEY` (PKCS#1), `PUBLIC KEY` (SPKI) or `RSA PUBLIC KEY`; `nil` when the
    /// block is not a key, or is one of a kind this version does not read (an encrypted key).
    static func read(_ block: PEMBlock) -> KeyFileContents? {
        let pem = PEMBlock.encode(block.der, label: block.label)
        switch block.label {
        case "PRIVATE KEY", "EC PRIVATE KEY", "RSA PRIVATE KEY":
            if let key = try? P256.Signing.PrivateKey(pemRepresentation: pem) {
                return KeyFileContents(kind: .ec, isPrivate: true, bytes: key.x963Representation)
            }
            if let key = try? P384.Signing.PrivateKey(pemRepresentation: pem) {
                return KeyFileContents(kind: .ec, isPrivate: true, bytes: key.x963Representation)
            }
            if let key = try? P521.Signing.PrivateKey(pemRepresentation: pem) {
                return KeyFileContents(kind: .ec, isPrivate: true, bytes: key.x963Representation)
            }
            if let key = try? _RSA.Signing.PrivateKey(unsafePEMRepresentation: pem) {
                return KeyFileContents(kind: .rsa, isPrivate: true, bytes: key.derRepresentation)
            }
            return nil
        case "PUBLIC KEY", "RSA PUBLIC KEY":
            if let key = try? P256.Signing.PublicKey(pemRepresentation: pem) {
                return KeyFileContents(kind: .ec, isPrivate: false, bytes: key.x963Representation)
            }
            if let key = try? P384.Signing.PublicKey(pemRepresentation: pem) {
                return KeyFileContents(kind: .ec, isPrivate: false, bytes: key.x963Representation)
            }
            if let key = try? P521.Signing.PublicKey(pemRepresentation: pem) {
                return KeyFileContents(kind: .ec, isPrivate: false, bytes: key.x963Representation)
            }
            if let key = try? _RSA.Signing.PublicKey(unsafePEMRepresentation: pem) {
                return KeyFileContents(kind: .rsa, isPrivate: false, bytes: key.pkcs1DERRepresentation)
            }
            return nil
        default:
            return nil
        }
    }
}

/// Why a PKCS#12 file that `SecPKCS12Import` refused with errSecDecode was refused, when
/// KeychainPKI can say more than Apple's status text: a legacy cipher, with the `openssl`
/// command that converts the file. Never contains the passphrase or any decrypted byte.
func pkcs12Diagnosis(_ data: Data, passphrase: String) -> String? {
    do {
        _ = try PKCS12.parse(Array(data), passphrase: passphrase)
        return nil
    } catch let error as PKIError where error.code == .unsupportedLegacyEncryption {
        return error.message
    } catch {
        return nil
    }
}

/// The `openssl` command that converts a legacy PKCS#12 file (for the help text).
let legacyPKCS12Conversion = PKIError.legacyConversionCommand

/// Reads a whole file.
/// - Throws: ``CommandFailure`` with macOS's message (`Error reading infile <file>: <reason>`).
func readInputFile(_ path: String) throws -> Data {
    guard let file = fopen(path, "rb") else {
        throw CommandFailure.failure("Error reading infile \(path): \(String(cString: strerror(errno)))")
    }
    defer { fclose(file) }
    var data = Data()
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = fread(&buffer, 1, buffer.count, file)
        if count > 0 { data.append(contentsOf: buffer[0..<count]) }
        if count < buffer.count {
            if ferror(file) != 0 {
                throw CommandFailure.failure("Error reading infile \(path): \(String(cString: strerror(errno)))")
            }
            break
        }
    }
    return data
}
