/// The one error type of `KeychainPKI`.
///
/// Every failure of certificate parsing, signature checking and PKCS#12 reading or writing is a
/// `PKIError`. Its ``code`` says what kind of failure it is (an open set of static members, so new
/// codes never break a `switch` with a `default`), its ``message`` says what was wrong in words,
/// and ``osStatus`` is the status Apple's Security framework returns for the same failure.
///
/// Descriptions never contain key bytes, decrypted data or passphrases.
public struct PKIError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of a ``PKIError``.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code's stable name.
        public var rawValue: String
        /// Creates a code from its stable name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The code's stable name.
        public var description: String { rawValue }

        /// The bytes are not the DER (or, for PKCS#12, BER) structure expected.
        public static let malformed = Code(rawValue: "malformed")
        /// The bytes are PEM text; these APIs take DER (decode the Base64 first).
        public static let pemNotAccepted = Code(rawValue: "pemNotAccepted")
        /// A certificate is followed by bytes that are not part of it.
        public static let trailingBytes = Code(rawValue: "trailingBytes")
        /// The PKCS#12 integrity check failed: wrong passphrase (or a tampered file).
        public static let wrongPassphrase = Code(rawValue: "wrongPassphrase")
        /// A PKCS#12 file uses a legacy cipher (PKCS#12 PBE, PBES1, PBES2 over DES or RC2) that
        /// libcrypto cannot decrypt here.
        public static let unsupportedLegacyEncryption = Code(rawValue: "unsupportedLegacyEncryption")
        /// An algorithm (signature, key, cipher, KDF, MAC) this module does not implement.
        public static let unsupportedAlgorithm = Code(rawValue: "unsupportedAlgorithm")
        /// A size, count, depth or iteration limit of this module was exceeded.
        public static let limitExceeded = Code(rawValue: "limitExceeded")
        /// A key or a signature could not be used (bad encoding, wrong key type for the algorithm).
        public static let invalidKey = Code(rawValue: "invalidKey")
    }

    /// What kind of failure this is.
    public var code: Code
    /// What was wrong, in words. Never contains secret material.
    public var message: String

    /// The status Apple's Security framework returns for this failure: `errSecAuthFailed`
    /// (-25293) for a wrong passphrase and for every other failure of the PKCS#12 MAC stage
    /// (as `p12import.c` reports them), `errSecDecode` (-26275) for everything else.
    public var osStatus: Int32

    /// Creates an error whose ``osStatus`` follows from its code.
    public init(_ code: Code, _ message: String) {
        self.init(code, message, osStatus: code == .wrongPassphrase ? -25293 : -26275)
    }

    /// Creates an error with an explicit ``osStatus``.
    public init(_ code: Code, _ message: String, osStatus: Int32) {
        self.code = code
        self.message = message
        self.osStatus = osStatus
    }

    /// `"<code>: <message>"`.
    public var description: String { "\(code.rawValue): \(message)" }

    static func malformed(_ message: String) -> PKIError { PKIError(.malformed, message) }

    /// The one-line conversion that turns a legacy (3DES/RC2) PKCS#12 file into a modern one
    /// (PBES2, AES-256-CBC, HMAC-SHA-256) with OpenSSL 3. It goes through a PEM file because
    /// `openssl pkcs12 -export` reads its input twice and cannot take it from a pipe; the key in
    /// that file is encrypted under a pass phrase openssl asks for (AES-256-CBC), never written
    /// in the clear.
    public static let legacyConversionCommand =
        "openssl pkcs12 -in old.p12 -legacy -out old.pem && openssl pkcs12 -export -in old.pem -out new.p12 && rm old.pem"

    static func legacy(_ what: String) -> PKIError {
        PKIError(
            .unsupportedLegacyEncryption,
            "this PKCS#12 file is encrypted with \(what), a legacy cipher that this system's libcrypto "
                + "cannot decrypt (is OpenSSL's legacy provider installed?); convert it with: \(legacyConversionCommand)"
        )
    }
}
