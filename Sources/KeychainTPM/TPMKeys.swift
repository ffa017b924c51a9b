import CLibCrypto
import CTSS2
import Foundation
import Synchronization

// P-256 keys made and used inside the TPM: the "Secure Enclave" of a Linux machine
// (docs/keys-and-certificates.md, "Secure Enclave keys"). The private key is made by the TPM
// (sensitiveDataOrigin), is bound to it (fixedTPM, fixedParent) and leaves it only wrapped under
// the owner hierarchy's storage key, so the blob is useless on any other TPM and after this one
// is cleared. Every command that carries a parameter worth hiding runs in a salted session that
// encrypts it.

/// Objects' contexts as a TPM saved them (`TPM2_ContextSave`): the storage key's and recently used
/// keys', kept in memory between connections, so that a key's next use loads it again with a
/// symmetric decryption in the TPM rather than deriving the storage key from the TPM's seed and
/// checking the key's blob. A context from before the TPM's last reset, or from another TPM,
/// fails to load, and the object is made or loaded as the first time. A context is only usable by
/// the TPM that saved it, and holds no key in the clear.
public final class TPMSavedContexts: Sendable {
    private let saved = Mutex<[Data: Data]>([:])
    /// The most contexts kept (about 1 KiB each).
    static let limit = 64

    /// None yet.
    public init() {}

    /// The storage key's saved context, if any (opaque).
    public var storageKey: Data? { saved.withLock { $0[Data()] } }

    /// How many contexts are kept.
    public var count: Int { saved.withLock { $0.count } }

    func context(_ name: Data) -> Data? { saved.withLock { $0[name] } }

    func keep(_ context: Data, _ name: Data) {
        saved.withLock { saved in
            if saved[name] == nil, saved.count >= Self.limit, let any = saved.keys.first(where: { !$0.isEmpty }) {
                saved[any] = nil
            }
            saved[name] = context
        }
    }
}

extension TPM {
    /// The object `name` names (empty: the storage key; else a key's blob), from its context in
    /// `contexts` when this TPM still loads it, else by `make` (and its context kept there).
    func loaded(
        _ esys: OpaquePointer?, _ name: Data, contexts: TPMSavedContexts?, make: () throws -> ESYS_TR
    ) throws -> ESYS_TR {
        guard let contexts else { return try make() }
        if let bytes = contexts.context(name),
            var saved: TPMS_CONTEXT = try? Self.unmarshal(bytes, Tss2_MU_TPMS_CONTEXT_Unmarshal)
        {
            var handle = ESYS_TR(ESYS_TR_NONE)
            if Esys_ContextLoad(esys, &saved, &handle) == 0 { return handle }
        }
        let handle = try make()
        var saved: UnsafeMutablePointer<TPMS_CONTEXT>?
        if Esys_ContextSave(esys, handle, &saved) == 0, let saved,
            let bytes = try? Self.marshal(saved.pointee, Tss2_MU_TPMS_CONTEXT_Marshal)
        {
            contexts.keep(bytes, name)
        }
        Esys_Free(saved)
        return handle
    }

    /// The object attributes of a Secure Enclave key (TPM 2.0 Part 2, 8.3): made by the TPM and
    /// bound to it, usable with its (empty) authorization value, not counted by the
    /// dictionary-attack protection (there is nothing to guess), and both a signing and a
    /// decryption (ECDH) key, as Apple's Secure Enclave keys are.
    static let keyAttributes: TPMA_OBJECT =
        fixedTPM | fixedParent | 0x0000_0020 /* sensitiveDataOrigin */ | userWithAuth | noDA
        | 0x0002_0000 /* decrypt */ | 0x0004_0000 /* sign */

    /// Creates a P-256 key inside the TPM.
    /// - Returns: Its public key, X9.63 `04‖X‖Y`, and the blob that loads it again in this TPM.
    public func createKey(contexts: TPMSavedContexts? = nil) throws -> (publicKey: Data, blob: TPMBlob) {
        try handles.withLock { handles in
            let esys = handles.esys
            let primary = try loaded(esys, Data(), contexts: contexts) { try Self.storageKey(esys) }
            defer { Esys_FlushContext(esys, primary) }
            var template = TPM2B_PUBLIC()
            template.publicArea.type = 0x0023  // TPM2_ALG_ECC
            template.publicArea.nameAlg = 0x000B  // TPM2_ALG_SHA256
            template.publicArea.objectAttributes = Self.keyAttributes
            // Both sign and decrypt: no restriction and no fixed scheme; each use names its own.
            template.publicArea.parameters.eccDetail.symmetric.algorithm = 0x0010  // TPM2_ALG_NULL
            template.publicArea.parameters.eccDetail.scheme.scheme = 0x0010
            template.publicArea.parameters.eccDetail.curveID = 0x0003  // TPM2_ECC_NIST_P256
            template.publicArea.parameters.eccDetail.kdf.scheme = 0x0010
            var sensitive = TPM2B_SENSITIVE_CREATE()
            let blob = try Self.create(esys, under: primary, sensitive: &sensitive, template: template)
            let publicArea: TPM2B_PUBLIC = try Self.unmarshal(blob.publicArea, Tss2_MU_TPM2B_PUBLIC_Unmarshal)
            let point = publicArea.publicArea.unique.ecc
            return (Data([4]) + Self.coordinate(point.x) + Self.coordinate(point.y), blob)
        }
    }

    /// Signs `digest` with the key `blob` holds: ECDSA over the digest as given (of any length,
    /// as ECDSA takes its leftmost 256 bits), run in the TPM.
    /// - Returns: The signature `r‖s`, 64 bytes.
    /// - Throws: ``TPMError``: `.notThisTPM` for a key of another TPM, `.malformed`.
    public func sign(_ digest: Data, with blob: TPMBlob, contexts: TPMSavedContexts? = nil) throws -> Data {
        try withLoadedKey(blob, contexts) { esys, key, session in
            // The digest is hidden on the bus (decrypt); a signature is no TPM2B, which a
            // response's encryption needs, and it is public anyway.
            try Self.setAttributes(esys, session, 0x01 | 0x20)
            var input = TPM2B_DIGEST()
            Self.fill(&input.size, &input.buffer, Self.ecdsaInput(digest))
            var scheme = TPMT_SIG_SCHEME()
            scheme.scheme = 0x0018  // TPM2_ALG_ECDSA
            scheme.details.ecdsa.hashAlg = 0x000B  // TPM2_ALG_SHA256: the size of the input
            var validation = TPMT_TK_HASHCHECK()
            validation.tag = 0x8024  // TPM2_ST_HASHCHECK
            validation.hierarchy = 0x4000_0007  // TPM2_RH_NULL: no ticket, the key is not restricted
            var signature: UnsafeMutablePointer<TPMT_SIGNATURE>?
            let rc = Esys_Sign(
                esys, key, session, ESYS_TR_NONE, ESYS_TR_NONE, &input, &scheme, &validation, &signature)
            defer { Esys_Free(signature) }
            guard rc == 0, let signature else { throw TPMError("Esys_Sign", code: rc) }
            let ecdsa = signature.pointee.signature.ecdsa
            return Self.coordinate(ecdsa.signatureR) + Self.coordinate(ecdsa.signatureS)
        }
    }

    /// ECDH between the key `blob` holds and `peer` (X9.63 `04‖X‖Y` on P-256), run in the TPM.
    /// - Returns: The shared secret: the x-coordinate of the shared point, 32 bytes.
    /// - Throws: ``TPMError``: `.malformed` for a peer key that is not a P-256 point,
    ///   `.notThisTPM` for a key of another TPM.
    public func sharedSecret(
        with blob: TPMBlob, peer: Data, contexts: TPMSavedContexts? = nil
    ) throws -> Data {
        guard peer.count == 65, peer.first == 4 else { throw TPMError(.malformed, "TPM.sharedSecret") }
        return try withLoadedKey(blob, contexts) { esys, key, session in
            var point = TPM2B_ECC_POINT()
            Self.fill(
                &point.point.x.size, &point.point.x.buffer, Data(peer[peer.startIndex + 1..<peer.startIndex + 33]))
            Self.fill(&point.point.y.size, &point.point.y.buffer, Data(peer.suffix(32)))
            var shared: UnsafeMutablePointer<TPM2B_ECC_POINT>?
            let rc = Esys_ECDH_ZGen(esys, key, session, ESYS_TR_NONE, ESYS_TR_NONE, &point, &shared)
            defer {
                if let shared { explicit_bzero(shared, MemoryLayout<TPM2B_ECC_POINT>.size) }
                Esys_Free(shared)
            }
            guard rc == 0, let shared else {
                let error = TPMError("Esys_ECDH_ZGen", code: rc)
                // TPM2_RC_ECC_POINT: the peer's point is not on the curve.
                throw rc & 0xBF == 0x27 && rc & 0xFFFF_F000 == 0 ? TPMError(.malformed, "Esys_ECDH_ZGen") : error
            }
            return Self.coordinate(shared.pointee.point.x)
        }
    }

    /// Loads the key `blob` holds under the storage key and runs `body` with it and a salted,
    /// encrypting session (the one that loaded it); everything is flushed after.
    private func withLoadedKey<Result: Sendable>(
        _ blob: TPMBlob, _ contexts: TPMSavedContexts?, _ body: (OpaquePointer?, ESYS_TR, ESYS_TR) throws -> Result
    ) throws -> Result {
        let publicArea: TPM2B_PUBLIC = try Self.unmarshal(blob.publicArea, Tss2_MU_TPM2B_PUBLIC_Unmarshal)
        let privateArea: TPM2B_PRIVATE = try Self.unmarshal(blob.privateArea, Tss2_MU_TPM2B_PRIVATE_Unmarshal)
        guard publicArea.publicArea.type == 0x0023, publicArea.publicArea.objectAttributes == Self.keyAttributes,
            publicArea.publicArea.parameters.eccDetail.curveID == 0x0003
        else { throw TPMError(.malformed, "TPM key") }
        return try handles.withLock { handles in
            let esys = handles.esys
            let primary = try loaded(esys, Data(), contexts: contexts) { try Self.storageKey(esys) }
            defer { Esys_FlushContext(esys, primary) }
            let session = try Self.saltedSession(esys, key: primary)
            defer { Esys_FlushContext(esys, session) }
            let key = try loaded(esys, blob.serialized, contexts: contexts) {
                try Self.load(
                    esys, primary: primary, publicArea: publicArea, privateArea: privateArea, session: session)
            }
            defer { Esys_FlushContext(esys, key) }
            return try body(esys, key, session)
        }
    }

    /// What a P-256 ECDSA signs for `digest`: its leftmost 32 bytes, or, when shorter, the same
    /// number with zeros in front (ECDSA reads the digest as a number of at most 256 bits).
    static func ecdsaInput(_ digest: Data) -> Data {
        digest.count >= 32 ? Data(digest.prefix(32)) : Data(count: 32 - digest.count) + digest
    }

    /// A coordinate or scalar as 32 bytes (a TPM may drop leading zeros).
    static func coordinate(_ parameter: TPM2B_ECC_PARAMETER) -> Data {
        let bytes = withUnsafeBytes(of: parameter.buffer) { Data($0.prefix(min(Int(parameter.size), 32))) }
        return Data(count: 32 - bytes.count) + bytes
    }
}

/// The ANSI X9.63 key derivation (SEC 1, 3.6.1) over a shared secret, by OpenSSL's `X963KDF`.
public enum X963KeyDerivation {
    /// Derives `outputSize` bytes from `secret` and `sharedInfo` with SHA-`hashBits` (1 for
    /// SHA-1, 256, 384 or 512).
    /// - Returns: `nil` for another hash or a size the KDF refuses.
    public static func derive(_ secret: Data, hashBits: Int, sharedInfo: Data, outputSize: Int) -> Data? {
        let digest: String
        switch hashBits {
        case 1: digest = "SHA1"
        case 256, 384, 512: digest = "SHA\(hashBits)"
        default: return nil
        }
        guard outputSize > 0, let kdf = EVP_KDF_fetch(nil, "X963KDF", nil) else { return nil }
        defer { EVP_KDF_free(kdf) }
        guard let context = EVP_KDF_CTX_new(kdf) else { return nil }
        defer { EVP_KDF_CTX_free(context) }
        var output = Data(count: outputSize)
        var key = [UInt8](secret)
        defer { explicit_bzero(&key, key.count) }
        var info = [UInt8](sharedInfo)
        let derived = digest.withCString { name in
            key.withUnsafeMutableBytes { key in
                info.withUnsafeMutableBytes { info in
                    output.withUnsafeMutableBytes { output in
                        // The parameters keep their names' addresses: static strings.
                        var parameters = [
                            OSSL_PARAM_construct_utf8_string(
                                Self.name("digest"), UnsafeMutablePointer(mutating: name), 0),
                            OSSL_PARAM_construct_octet_string(Self.name("key"), key.baseAddress, key.count),
                            OSSL_PARAM_construct_octet_string(Self.name("info"), info.baseAddress, info.count),
                            OSSL_PARAM_construct_end(),
                        ]
                        return EVP_KDF_derive(
                            context, output.bindMemory(to: UInt8.self).baseAddress, outputSize, &parameters)
                    }
                }
            }
        }
        return derived == 1 ? output : nil
    }

    /// A parameter's name, from static storage that outlives the parameter.
    private static func name(_ name: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(name.utf8Start).assumingMemoryBound(to: CChar.self)
    }
}

extension TPM {
    /// The TPM's manufacturer, as its four-letter vendor ID says it (`IBM`, `INTC`, `MSFT`):
    /// a command that shows a TPM answers.
    public func manufacturer() throws -> String {
        try handles.withLock { handles in
            var more: TPMI_YES_NO = 0
            var data: UnsafeMutablePointer<TPMS_CAPABILITY_DATA>?
            let rc = Esys_GetCapability(
                handles.esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, 0x0000_0006 /* TPM2_CAP_TPM_PROPERTIES */,
                0x0000_0105 /* TPM2_PT_MANUFACTURER */, 1, &more, &data)
            defer { Esys_Free(data) }
            guard rc == 0, let data, data.pointee.data.tpmProperties.count == 1 else {
                throw TPMError("Esys_GetCapability", code: rc)
            }
            let value = data.pointee.data.tpmProperties.tpmProperty.0.value
            let bytes = (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) }.filter {
                $0 > 0x20 && $0 < 0x7F
            }
            return String(decoding: bytes, as: UTF8.self)
        }
    }
}
