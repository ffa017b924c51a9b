import CTSS2
import Foundation
import Synchronization

/// Why a TPM operation failed, with the TPM's response code (no secret is ever in it).
public struct TPMError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What went wrong, as a caller acts on it.
    public enum Kind: Sendable, Equatable {
        /// No TPM answers at the configured TCTI (none on this machine, or not reachable).
        case unavailable
        /// The authorization (derived from the password) is wrong; the TPM counted it against its
        /// dictionary-attack limit.
        case authorizationFailed
        /// The TPM refuses authorizations for a while: too many wrong ones (dictionary-attack lockout).
        case lockedOut
        /// The sealed secret was not made by this TPM (another machine, or this TPM was cleared).
        case notThisTPM
        /// The sealed secret is not a well-formed blob.
        case malformed
        /// A policy the secret was sealed under does not hold: the PCRs (the boot state) changed.
        case policyFailed
        /// Any other failure.
        case failed
    }

    /// What went wrong.
    public var kind: Kind
    /// The TSS operation that failed (`Esys_Unseal`, …).
    public var operation: String
    /// The TPM or TSS response code (0 when none).
    public var code: UInt32

    /// For example `Esys_Unseal: the authorization is wrong (TPM response 0x98e)`.
    public var description: String {
        let what: String =
            switch kind {
            case .unavailable: "no TPM answers"
            case .authorizationFailed: "the authorization is wrong"
            case .lockedOut: "the TPM is locked out after too many wrong authorizations; try again later"
            case .notThisTPM: "the secret was sealed by another TPM (another machine, or this TPM was cleared)"
            case .malformed: "the sealed secret is malformed"
            case .policyFailed: "the machine's boot state (its PCRs) changed since the secret was sealed"
            case .failed: "the TPM operation failed"
            }
        return "\(operation): \(what)" + (code == 0 ? "" : " (TPM response 0x\(String(code, radix: 16)))")
    }

    /// An error for a TSS response code.
    init(_ operation: String, code: UInt32) {
        self.operation = operation
        self.code = code
        // Format-one codes carry the parameter, handle or session number in bits 8–11.
        let base = code & 0x0000_0080 != 0 ? code & ~UInt32(0xF00) : code
        let layer = code & 0xFFFF_0000
        switch (layer, base & 0xFFFF) {
        case (0, 0x08E), (0, 0x0A2): kind = .authorizationFailed  // TPM2_RC_AUTH_FAIL, TPM2_RC_BAD_AUTH
        case (0, 0x921): kind = .lockedOut  // TPM2_RC_LOCKOUT
        case (0, 0x09F): kind = .notThisTPM  // TPM2_RC_INTEGRITY: a blob this TPM did not make
        case (0, 0x09D), (0, 0x128): kind = .policyFailed  // TPM2_RC_POLICY_FAIL, TPM2_RC_PCR_CHANGED
        case (0x000A_0000, _), (0x0006_0000, _): kind = .unavailable  // TCTI layer, TCTI loader (TSS2_TCTI_RC_LAYER, …)
        default: kind = .failed
        }
    }

    init(_ kind: Kind, _ operation: String) {
        self.kind = kind
        self.operation = operation
        code = 0
    }
}

/// An object a TPM made under its storage key, a sealed secret or a key: its public and private
/// areas, as `tpm2_create` writes them (`-u`, `-r`). Only the TPM that made it can load it, and
/// only with the authorization it was made with.
public struct TPMBlob: Sendable, Hashable {
    /// The object's marshalled `TPM2B_PUBLIC`.
    public var publicArea: Data
    /// The object's marshalled `TPM2B_PRIVATE` (encrypted by the TPM under its storage key).
    public var privateArea: Data

    /// A sealed secret from its two areas.
    public init(publicArea: Data, privateArea: Data) {
        self.publicArea = publicArea
        self.privateArea = privateArea
    }

    /// One blob for storage: a version byte, then each area with a 2-byte big-endian length.
    public var serialized: Data {
        var bytes = Data([1])
        for area in [publicArea, privateArea] {
            bytes.append(contentsOf: [UInt8(area.count >> 8), UInt8(area.count & 0xFF)])
            bytes.append(area)
        }
        return bytes
    }

    /// Reads ``serialized``'s form back.
    /// - Throws: ``TPMError`` `.malformed` for anything else.
    public init(serialized bytes: Data) throws {
        var rest = bytes[...]
        guard rest.popFirst() == 1 else { throw TPMError(.malformed, "TPMBlob") }
        var areas: [Data] = []
        for _ in 0..<2 {
            guard rest.count >= 2 else { throw TPMError(.malformed, "TPMBlob") }
            let length = Int(rest[rest.startIndex]) << 8 | Int(rest[rest.startIndex + 1])
            rest = rest.dropFirst(2)
            guard rest.count >= length else { throw TPMError(.malformed, "TPMBlob") }
            // Each area is a TPM2B: its own 2-byte size, which must be the rest of it (tpm2-tss
            // would load an area whose size was altered, the TPM checking only what follows).
            let area = Data(rest.prefix(length))
            guard area.count >= 2, Int(area[0]) << 8 | Int(area[1]) == area.count - 2 else {
                throw TPMError(.malformed, "TPMBlob")
            }
            areas.append(area)
            rest = rest.dropFirst(length)
        }
        guard rest.isEmpty else { throw TPMError(.malformed, "TPMBlob") }
        publicArea = areas[0]
        privateArea = areas[1]
    }
}

/// A TPM 2.0, through tpm2-tss's Enhanced System API: seals and unseals small secrets under the
/// owner hierarchy's storage key, every command in a salted, encrypted HMAC session (the secret
/// and the authorization never cross the bus in the clear).
///
/// ```swift
/// let tpm = try TPM(tcti: "device:/dev/tpmrm0")
/// let sealed = try tpm.seal(secret, authorization: passwordDerivedKey)
/// let secret = try tpm.unseal(sealed, authorization: passwordDerivedKey)
/// ```
///
/// The sealed object is protected against dictionary attacks (no `noDA`): each wrong
/// authorization counts against the TPM's lockout, so guesses are rate-limited by the hardware.
public final class TPM: Sendable {
    /// The TCTI configuration: `device:/dev/tpmrm0`, `swtpm:host=127.0.0.1,port=2321`, …
    public let tcti: String
    let handles: Mutex<Handles>

    struct Handles: ~Copyable {
        var tcti: OpaquePointer?
        var esys: OpaquePointer?

        deinit {
            var esys = esys
            var tcti = tcti
            if esys != nil { Esys_Finalize(&esys) }
            if tcti != nil { Tss2_TctiLdr_Finalize(&tcti) }
        }
    }

    /// The most a sealed secret may hold (a TPM's `MAX_SYM_DATA`).
    public static let maximumSecret = 128

    /// Connects to the TPM at `tcti`.
    /// - Throws: ``TPMError`` `.unavailable` when none answers.
    public init(tcti: String) throws {
        self.tcti = tcti
        var handles = Handles()
        var rc = Tss2_TctiLdr_Initialize(tcti, &handles.tcti)
        guard rc == 0 else { throw TPMError(.unavailable, "Tss2_TctiLdr_Initialize") }
        rc = Esys_Initialize(&handles.esys, handles.tcti, nil)
        guard rc == 0 else { throw TPMError("Esys_Initialize", code: rc) }
        self.handles = Mutex(handles)
    }

    /// Seals `secret` (at most ``maximumSecret`` bytes) under `authorization` (at most 32 bytes).
    public func seal(_ secret: Data, authorization: Data) throws -> TPMBlob {
        guard secret.count <= Self.maximumSecret, authorization.count <= 32 else {
            throw TPMError(.malformed, "TPM.seal")
        }
        // Not noDA: wrong authorizations count.
        return try sealObject(secret, authorization: authorization, attributes: Self.userWithAuth)
    }

    /// Unseals what ``seal(_:authorization:)`` sealed, with the same authorization.
    /// - Throws: ``TPMError``: `.authorizationFailed` (counted by the TPM), `.lockedOut`,
    ///   `.notThisTPM`, `.malformed`.
    public func unseal(_ sealed: TPMBlob, authorization: Data) throws -> Data {
        guard authorization.count <= 32 else { throw TPMError(.malformed, "TPM.unseal") }
        return try unseal(sealed) { esys, object, primary in
            var auth = TPM2B_AUTH()
            Self.fill(&auth.size, &auth.buffer, authorization)
            let rc = Esys_TR_SetAuth(esys, object, &auth)
            explicit_bzero(&auth, MemoryLayout<TPM2B_AUTH>.size)
            guard rc == 0 else { throw TPMError("Esys_TR_SetAuth", code: rc) }
            return try Self.saltedSession(esys, key: primary)
        }
    }

    // MARK: Sealed to this TPM alone

    /// Seals `secret` (at most ``maximumSecret`` bytes) to this TPM alone: it unseals with no
    /// authorization, on this TPM only (not on another machine, nor after this one is cleared).
    /// The object is not counted by the dictionary-attack protection (there is nothing to
    /// guess), so a TPM locked out by wrong passwords still unseals it.
    public func seal(_ secret: Data) throws -> TPMBlob {
        guard secret.count <= Self.maximumSecret else { throw TPMError(.malformed, "TPM.seal") }
        // An empty authorization value.
        return try sealObject(secret, authorization: Data(), attributes: Self.userWithAuth | Self.noDA)
    }

    /// Unseals what ``seal(_:)`` sealed, in a salted, encrypted session.
    /// - Throws: ``TPMError``: `.notThisTPM`, `.malformed`.
    public func unseal(_ sealed: TPMBlob) throws -> Data {
        try unseal(sealed, authorization: Data())
    }

    // MARK: Sealed to the boot state

    /// Seals `secret` (at most ``maximumSecret`` bytes) under a policy of the current values of
    /// the SHA-256 PCRs `pcrs` (`TPM2_PolicyPCR`): it unseals, with no authorization, only while
    /// those PCRs hold the same values (the same firmware, boot loader and Secure Boot state for
    /// PCR 7). The object has no authorization value and is not counted by the dictionary-attack
    /// protection (there is nothing to guess).
    public func seal(_ secret: Data, toPCRs pcrs: [Int]) throws -> TPMBlob {
        guard secret.count <= Self.maximumSecret, !pcrs.isEmpty, pcrs.allSatisfy({ (0..<24).contains($0) }) else {
            throw TPMError(.malformed, "TPM.seal")
        }
        // Not userWithAuth: only the policy authorizes.
        return try sealObject(secret, authorization: Data(), attributes: Self.noDA) { esys in
            try Self.pcrPolicyDigest(esys, pcrs: pcrs)
        }
    }

    /// Unseals what ``seal(_:toPCRs:)`` sealed, in a salted, encrypted policy session.
    /// - Throws: ``TPMError``: `.policyFailed` when the PCRs changed, `.notThisTPM`, `.malformed`.
    public func unseal(_ sealed: TPMBlob, fromPCRs pcrs: [Int]) throws -> Data {
        guard !pcrs.isEmpty, pcrs.allSatisfy({ (0..<24).contains($0) }) else {
            throw TPMError(.malformed, "TPM.unseal")
        }
        return try unseal(sealed) { esys, _, primary in
            let session = try Self.saltedSession(esys, key: primary, type: 0x01 /* TPM2_SE_POLICY */)
            var empty = TPM2B_DIGEST()
            var selection = Self.selection(pcrs)
            let rc = Esys_PolicyPCR(esys, session, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &empty, &selection)
            guard rc == 0 else {
                Esys_FlushContext(esys, session)
                throw TPMError("Esys_PolicyPCR", code: rc)
            }
            return session
        }
    }

    // MARK: Creating, loading and unsealing

    // The object attributes of TPM 2.0 Part 2, 8.3 (TPMA_OBJECT).
    static let fixedTPM: TPMA_OBJECT = 0x0000_0002
    static let fixedParent: TPMA_OBJECT = 0x0000_0010
    static let userWithAuth: TPMA_OBJECT = 0x0000_0040
    static let noDA: TPMA_OBJECT = 0x0000_0400

    /// Creates a sealed data object holding `secret` under the owner's storage key:
    /// `fixedTPM|fixedParent` and `attributes`, with `authorization` as its authorization value
    /// and `policy`'s digest as its policy.
    private func sealObject(
        _ secret: Data, authorization: Data, attributes: TPMA_OBJECT,
        policy: (OpaquePointer?) throws -> Data = { _ in Data() }
    ) throws -> TPMBlob {
        try handles.withLock { handles in
            let esys = handles.esys
            let primary = try Self.storageKey(esys)
            defer { Esys_FlushContext(esys, primary) }
            var sensitive = TPM2B_SENSITIVE_CREATE()
            Self.fill(&sensitive.sensitive.userAuth.size, &sensitive.sensitive.userAuth.buffer, authorization)
            Self.fill(&sensitive.sensitive.data.size, &sensitive.sensitive.data.buffer, secret)
            defer { explicit_bzero(&sensitive, MemoryLayout<TPM2B_SENSITIVE_CREATE>.size) }
            let template = Self.sealedObject(
                attributes: Self.fixedTPM | Self.fixedParent | attributes, policy: try policy(esys))
            return try Self.create(esys, under: primary, sensitive: &sensitive, template: template)
        }
    }

    /// A sealed data object's template: a keyed hash with no scheme, named with SHA-256.
    static func sealedObject(attributes: TPMA_OBJECT, policy: Data) -> TPM2B_PUBLIC {
        var template = TPM2B_PUBLIC()
        template.publicArea.type = 0x0008  // TPM2_ALG_KEYEDHASH
        template.publicArea.nameAlg = 0x000B  // TPM2_ALG_SHA256
        template.publicArea.objectAttributes = attributes
        template.publicArea.parameters.keyedHashDetail.scheme.scheme = 0x0010  // TPM2_ALG_NULL
        fill(&template.publicArea.authPolicy.size, &template.publicArea.authPolicy.buffer, policy)
        return template
    }

    /// Creates the sealed object `template` holding `sensitive` (wiped after) under `primary`,
    /// through a salted session.
    static func create(
        _ esys: OpaquePointer?, under primary: ESYS_TR, sensitive: inout TPM2B_SENSITIVE_CREATE,
        template: TPM2B_PUBLIC
    ) throws -> TPMBlob {
        defer { explicit_bzero(&sensitive, MemoryLayout<TPM2B_SENSITIVE_CREATE>.size) }
        let session = try saltedSession(esys, key: primary)
        defer { Esys_FlushContext(esys, session) }
        var template = template
        var outsideInfo = TPM2B_DATA()
        var creationPCRs = TPML_PCR_SELECTION()
        var privateArea: UnsafeMutablePointer<TPM2B_PRIVATE>?
        var publicArea: UnsafeMutablePointer<TPM2B_PUBLIC>?
        let rc = Esys_Create(
            esys, primary, session, ESYS_TR_NONE, ESYS_TR_NONE, &sensitive, &template, &outsideInfo, &creationPCRs,
            &privateArea, &publicArea, nil, nil, nil)
        defer {
            Esys_Free(privateArea)
            Esys_Free(publicArea)
        }
        guard rc == 0, let privateArea, let publicArea else { throw TPMError("Esys_Create", code: rc) }
        return TPMBlob(
            publicArea: try marshal(publicArea.pointee, Tss2_MU_TPM2B_PUBLIC_Marshal),
            privateArea: try marshal(privateArea.pointee, Tss2_MU_TPM2B_PRIVATE_Marshal))
    }

    /// Loads `sealed` under the storage key and unseals it in the session `authorize` starts for
    /// the loaded object (given the ESYS context, the object and the storage key).
    private func unseal(
        _ sealed: TPMBlob, authorize: (OpaquePointer?, ESYS_TR, ESYS_TR) throws -> ESYS_TR
    ) throws -> Data {
        let publicArea: TPM2B_PUBLIC = try Self.unmarshal(sealed.publicArea, Tss2_MU_TPM2B_PUBLIC_Unmarshal)
        let privateArea: TPM2B_PRIVATE = try Self.unmarshal(sealed.privateArea, Tss2_MU_TPM2B_PRIVATE_Unmarshal)
        return try handles.withLock { handles in
            let esys = handles.esys
            let primary = try Self.storageKey(esys)
            defer { Esys_FlushContext(esys, primary) }
            let object = try Self.load(esys, primary: primary, publicArea: publicArea, privateArea: privateArea)
            defer { Esys_FlushContext(esys, object) }
            let session = try authorize(esys, object, primary)
            defer { Esys_FlushContext(esys, session) }
            var data: UnsafeMutablePointer<TPM2B_SENSITIVE_DATA>?
            let rc = Esys_Unseal(esys, object, session, ESYS_TR_NONE, ESYS_TR_NONE, &data)
            defer {
                if let data { explicit_bzero(data, MemoryLayout<TPM2B_SENSITIVE_DATA>.size) }
                Esys_Free(data)
            }
            guard rc == 0, let data else { throw TPMError("Esys_Unseal", code: rc) }
            return withUnsafeBytes(of: data.pointee.buffer) { Data($0.prefix(Int(data.pointee.size))) }
        }
    }

    /// The policy digest of `TPM2_PolicyPCR` over the current values of the SHA-256 PCRs `pcrs`,
    /// computed by the TPM in a trial session.
    static func pcrPolicyDigest(_ esys: OpaquePointer?, pcrs: [Int]) throws -> Data {
        var symmetric = TPMT_SYM_DEF()
        symmetric.algorithm = 0x0010  // TPM2_ALG_NULL
        var trial = ESYS_TR(ESYS_TR_NONE)
        var rc = Esys_StartAuthSession(
            esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, nil, 0x03 /* TPM2_SE_TRIAL */,
            &symmetric, 0x000B, &trial)
        guard rc == 0 else { throw TPMError("Esys_StartAuthSession", code: rc) }
        defer { Esys_FlushContext(esys, trial) }
        var empty = TPM2B_DIGEST()
        var selection = selection(pcrs)
        rc = Esys_PolicyPCR(esys, trial, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &empty, &selection)
        guard rc == 0 else { throw TPMError("Esys_PolicyPCR", code: rc) }
        var digest: UnsafeMutablePointer<TPM2B_DIGEST>?
        rc = Esys_PolicyGetDigest(esys, trial, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &digest)
        defer { Esys_Free(digest) }
        guard rc == 0, let digest else { throw TPMError("Esys_PolicyGetDigest", code: rc) }
        return withUnsafeBytes(of: digest.pointee.buffer) { Data($0.prefix(Int(digest.pointee.size))) }
    }

    /// A selection of the SHA-256 bank's PCRs `pcrs`.
    static func selection(_ pcrs: [Int]) -> TPML_PCR_SELECTION {
        var selection = TPML_PCR_SELECTION()
        selection.count = 1
        selection.pcrSelections.0.hash = 0x000B  // TPM2_ALG_SHA256
        selection.pcrSelections.0.sizeofSelect = 3
        withUnsafeMutableBytes(of: &selection.pcrSelections.0.pcrSelect) { bytes in
            for pcr in pcrs { bytes[pcr / 8] |= UInt8(1 << (pcr % 8)) }
        }
        return selection
    }

    /// Loads an object under `primary` through `session`, else a salted session of its own.
    static func load(
        _ esys: OpaquePointer?, primary: ESYS_TR, publicArea: TPM2B_PUBLIC, privateArea: TPM2B_PRIVATE,
        session given: ESYS_TR? = nil
    ) throws -> ESYS_TR {
        let session = try given ?? saltedSession(esys, key: primary)
        defer { if given == nil { Esys_FlushContext(esys, session) } }
        var object = ESYS_TR(ESYS_TR_NONE)
        var inPrivate = privateArea
        var inPublic = publicArea
        let rc = Esys_Load(esys, primary, session, ESYS_TR_NONE, ESYS_TR_NONE, &inPrivate, &inPublic, &object)
        guard rc == 0 else {
            // A blob another TPM (or this one before a clear) made fails its integrity check here.
            let error = TPMError("Esys_Load", code: rc)
            throw error.kind == .failed ? TPMError(.notThisTPM, "Esys_Load") : error
        }
        return object
    }

    // MARK: The storage key and the session

    /// The owner hierarchy's storage key (an ECC P-256 restricted decryption key with AES-128-CFB,
    /// as `tpm2_createprimary -C o -G ecc256:aes128cfb` makes it): derived from the owner seed,
    /// so the same key every time on this TPM, and another on any other.
    static func storageKey(_ esys: OpaquePointer?) throws -> ESYS_TR {
        var sensitive = TPM2B_SENSITIVE_CREATE()
        var template = TPM2B_PUBLIC()
        template.publicArea.type = 0x0023  // TPM2_ALG_ECC
        template.publicArea.nameAlg = 0x000B  // TPM2_ALG_SHA256
        // fixedTPM, fixedParent, sensitiveDataOrigin, userWithAuth, noDA, restricted, decrypt.
        template.publicArea.objectAttributes =
            0x0000_0002 | 0x0000_0010 | 0x0000_0020 | 0x0000_0040 | 0x0000_0400 | 0x0001_0000 | 0x0002_0000
        template.publicArea.parameters.eccDetail.symmetric.algorithm = 0x0006  // TPM2_ALG_AES
        template.publicArea.parameters.eccDetail.symmetric.keyBits.aes = 128
        template.publicArea.parameters.eccDetail.symmetric.mode.aes = 0x0043  // TPM2_ALG_CFB
        template.publicArea.parameters.eccDetail.scheme.scheme = 0x0010  // TPM2_ALG_NULL
        template.publicArea.parameters.eccDetail.curveID = 0x0003  // TPM2_ECC_NIST_P256
        template.publicArea.parameters.eccDetail.kdf.scheme = 0x0010  // TPM2_ALG_NULL
        var outsideInfo = TPM2B_DATA()
        var pcrs = TPML_PCR_SELECTION()
        var handle = ESYS_TR(ESYS_TR_NONE)
        let rc = Esys_CreatePrimary(
            esys, ESYS_TR(ESYS_TR_RH_OWNER), ESYS_TR(ESYS_TR_PASSWORD), ESYS_TR_NONE, ESYS_TR_NONE, &sensitive,
            &template, &outsideInfo, &pcrs, &handle, nil, nil, nil, nil)
        guard rc == 0 else { throw TPMError("Esys_CreatePrimary", code: rc) }
        return handle
    }

    /// An HMAC session salted with `key` (so its session key is unknown to anyone on the bus) that
    /// encrypts the first command and response parameters with AES-128-CFB.
    static func saltedSession(_ esys: OpaquePointer?, key: ESYS_TR, type: TPM2_SE = 0x00) throws -> ESYS_TR {
        let session = try startSaltedSession(esys, key: key, type: type)
        do {
            // continueSession, decrypt (the command's first parameter), encrypt (the response's).
            try setAttributes(esys, session, 0x01 | 0x20 | 0x40)
        } catch {
            Esys_FlushContext(esys, session)
            throw error
        }
        return session
    }

    /// Sets a session's attributes (TPMA_SESSION).
    static func setAttributes(_ esys: OpaquePointer?, _ session: ESYS_TR, _ attributes: TPMA_SESSION) throws {
        let rc = Esys_TRSess_SetAttributes(esys, session, attributes, 0xFF)
        guard rc == 0 else { throw TPMError("Esys_TRSess_SetAttributes", code: rc) }
    }

    /// A session salted with `key` whose parameter encryption is AES-128-CFB, before its
    /// attributes are set.
    private static func startSaltedSession(_ esys: OpaquePointer?, key: ESYS_TR, type: TPM2_SE) throws -> ESYS_TR {
        var symmetric = TPMT_SYM_DEF()
        symmetric.algorithm = 0x0006  // TPM2_ALG_AES
        symmetric.keyBits.aes = 128
        symmetric.mode.aes = 0x0043  // TPM2_ALG_CFB
        var session = ESYS_TR(ESYS_TR_NONE)
        let rc = Esys_StartAuthSession(
            esys, key, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, nil, type /* TPM2_SE_HMAC by default */,
            &symmetric, 0x000B /* TPM2_ALG_SHA256 */, &session)
        guard rc == 0 else { throw TPMError("Esys_StartAuthSession", code: rc) }
        return session
    }

    // MARK: Buffers

    /// Copies `bytes` into a TPM2B's buffer and sets its size.
    static func fill<Buffer>(_ size: inout UInt16, _ buffer: inout Buffer, _ bytes: Data) {
        withUnsafeMutableBytes(of: &buffer) { destination in
            precondition(bytes.count <= destination.count)
            destination.copyBytes(from: bytes)
        }
        size = UInt16(bytes.count)
    }

    static func marshal<Value>(
        _ value: Value,
        _ function: (UnsafePointer<Value>?, UnsafeMutablePointer<UInt8>?, Int, UnsafeMutablePointer<Int>?) -> UInt32
    ) throws -> Data {
        var value = value
        var buffer = [UInt8](repeating: 0, count: MemoryLayout<Value>.size + 16)
        var offset = 0
        let rc = function(&value, &buffer, buffer.count, &offset)
        guard rc == 0 else { throw TPMError("Tss2_MU marshal", code: rc) }
        return Data(buffer.prefix(offset))
    }

    static func unmarshal<Value>(
        _ bytes: Data,
        _ function: (UnsafePointer<UInt8>?, Int, UnsafeMutablePointer<Int>?, UnsafeMutablePointer<Value>?) -> UInt32
    ) throws -> Value {
        let value = UnsafeMutablePointer<Value>.allocate(capacity: 1)
        defer { value.deallocate() }
        memset(value, 0, MemoryLayout<Value>.size)
        var offset = 0
        let rc = bytes.withUnsafeBytes { raw in
            function(raw.bindMemory(to: UInt8.self).baseAddress, raw.count, &offset, value)
        }
        guard rc == 0, offset == bytes.count else { throw TPMError(.malformed, "Tss2_MU unmarshal") }
        return value.pointee
    }
}
