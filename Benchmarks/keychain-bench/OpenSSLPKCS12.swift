import CLibCrypto
import Foundation

/// OpenSSL's own reading of a `.p12` (`d2i_PKCS12` and `PKCS12_parse`: MAC, decryption of every
/// bag, the key and the certificates), in process: the floor of the legacy PKCS#12 row, whose
/// bags our import has OpenSSL decrypt. The legacy provider is loaded into this process's default
/// library context once (the benchmark's own process; the library loads it only in a private one).
struct OpenSSLPKCS12: @unchecked Sendable {
    private let file: [UInt8]
    private let passphrase: String

    init(_ file: Data, passphrase: String) throws {
        guard Self.legacyProviderLoaded else {
            throw BenchmarkFailure("not measured: OpenSSL's legacy provider cannot be loaded")
        }
        self.file = Array(file)
        self.passphrase = passphrase
        try parse()
    }

    private static let legacyProviderLoaded: Bool =
        OSSL_PROVIDER_load(nil, "default") != nil && OSSL_PROVIDER_load(nil, "legacy") != nil

    /// Parses the file and frees what it gave.
    func parse() throws {
        let parsed = file.withUnsafeBufferPointer { buffer -> Bool in
            var cursor = buffer.baseAddress
            guard let p12 = d2i_PKCS12(nil, &cursor, buffer.count) else { return false }
            defer { PKCS12_free(p12) }
            var key: OpaquePointer?
            var certificate: OpaquePointer?
            var chain: OpaquePointer?
            guard PKCS12_parse(p12, passphrase, &key, &certificate, &chain) == 1 else { return false }
            EVP_PKEY_free(key)
            X509_free(certificate)
            OPENSSL_sk_pop_free(chain) { X509_free(OpaquePointer($0)) }
            return key != nil && certificate != nil
        }
        guard parsed else { throw BenchmarkFailure("OpenSSL's PKCS12_parse failed on the legacy file") }
    }
}
