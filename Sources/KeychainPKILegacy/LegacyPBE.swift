// The legacy password-based ciphers of PKCS#12 files (RC2-40 certificate bags and 3DES keys, as
// every file of older OpenSSL, Keychain Access and Windows has; RC4, DES, PBES1), decrypted by
// OpenSSL's PKCS#12 reader (`PKCS12_pbe_crypt_ex`) in a private library context that has the
// default and the legacy provider. swift-crypto has none of these ciphers, and none is written by
// hand (docs/keys-and-certificates.md): KeychainPKI parses the file, checks its MAC and limits, and
// hands only the decryption of a bag to this module.

internal import CLibCrypto

/// Decryption of PKCS#12 contents encrypted with a legacy cipher, by OpenSSL's libcrypto.
public enum LegacyPBE {
    /// Why a decryption did not happen.
    public enum Failure: Error, Equatable, Sendable {
        /// libcrypto does not decode this algorithm (an unknown scheme, or a cipher whose provider
        /// is not installed).
        case unsupported
        /// The cipher ran and the padding did not check: a different passphrase or damaged bytes.
        case decryptionFailed
    }

    /// Decrypts `ciphertext`, encrypted under `algorithm` (the DER of its AlgorithmIdentifier:
    /// a PKCS#12 PBE, PBES1 or PBES2 scheme) with `passphrase` (its UTF-8 bytes, as the file's
    /// maker was given them).
    ///
    /// - Throws: ``Failure``.
    public static func decrypt(algorithm: [UInt8], ciphertext: [UInt8], passphrase: [UInt8]) throws(Failure)
        -> [UInt8]
    {
        guard let context = LibraryContext.shared.pointer, ciphertext.count < Int(Int32.max) else {
            throw .unsupported
        }
        ERR_clear_error()
        defer { ERR_clear_error() }
        guard
            let algor = algorithm.withUnsafeBufferPointer({ buffer -> UnsafeMutablePointer<X509_ALGOR>? in
                var cursor = buffer.baseAddress
                return d2i_X509_ALGOR(nil, &cursor, buffer.count)
            })
        else { throw .unsupported }
        defer { X509_ALGOR_free(algor) }
        var output: UnsafeMutablePointer<UInt8>?
        var length: Int32 = 0
        // The C string OpenSSL takes, cleared (OPENSSL_cleanse) as soon as it is done with it.
        var passphraseText = passphrase.map { CChar(bitPattern: $0) } + [0]
        defer { passphraseText.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) } }
        _ = passphraseText.withUnsafeBufferPointer { pass in
            PKCS12_pbe_crypt_ex(
                algor, pass.baseAddress, Int32(passphrase.count), ciphertext, Int32(ciphertext.count), &output,
                &length, 0, context, nil)
        }
        guard let output, length >= 0 else { throw failure(ofLastError: ERR_peek_last_error()) }
        defer { CRYPTO_clear_free(output, Int(length), nil, 0) }
        return Array(UnsafeBufferPointer(start: output, count: Int(length)))
    }

    /// A failed padding check is a decryption failure; anything else is an algorithm libcrypto
    /// cannot run.
    private static func failure(ofLastError code: UInt) -> Failure {
        let reason = ERR_GET_REASON(code)
        return reason == EVP_R_BAD_DECRYPT || reason == PKCS12_R_PKCS12_CIPHERFINAL_ERROR
            ? .decryptionFailed : .unsupported
    }
}

/// libcrypto's library context with the default and legacy providers, made once per process and
/// never freed (OpenSSL's library contexts are safe to use from any thread).
private final class LibraryContext: @unchecked Sendable {
    static let shared = LibraryContext()

    let pointer: OpaquePointer?

    private init() {
        guard let context = OSSL_LIB_CTX_new() else {
            pointer = nil
            return
        }
        // RC2 and RC4 live in the legacy provider; 3DES and the PKCS#12 key derivation in the default.
        guard OSSL_PROVIDER_load(context, "default") != nil else {
            OSSL_LIB_CTX_free(context)
            pointer = nil
            return
        }
        _ = OSSL_PROVIDER_load(context, "legacy")
        pointer = context
    }
}
