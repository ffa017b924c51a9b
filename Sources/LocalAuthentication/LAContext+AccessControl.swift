// `LAContext.evaluateAccessControl`, which takes Security's `SecAccessControl` as Apple's does.

import Foundation
import KeychainModel
import Security

extension LAContext {
    /// Asks the person what `accessControl` asks for `operation`, so that the context answers for
    /// the reads and key uses that follow (Apple's
    /// [`evaluateAccessControl(_:operation:localizedReason:reply:)`](https://developer.apple.com/documentation/localauthentication/lacontext/evaluateaccesscontrol(_:operation:localizedreason:reply:))).
    ///
    /// Making an item or a key asks nothing, nor does an access control that asks nothing of the
    /// person (`.privateKeyUsage` alone, or `.applicationPassword` when the context holds the
    /// password). `.userPresence` and `.devicePasscode` ask as
    /// ``LocalAuthentication/LAPolicy/deviceOwnerAuthentication`` does, unless `.or` offers them
    /// beside biometry or a companion; biometry asks for a finger as
    /// ``LocalAuthentication/LAPolicy/deviceOwnerAuthenticationWithBiometrics`` does, and a
    /// companion fails as its policy does. `reply` is called on a thread of its own.
    public func evaluateAccessControl(
        _ accessControl: SecAccessControl, operation: LAAccessControlOperation, localizedReason: String,
        reply: @escaping @Sendable (Bool, (any Error)?) -> Void
    ) {
        switch policy(answering: accessControl, for: operation) {
        case .success(nil):
            Thread.detachNewThread { reply(true, nil) }
        case .success(let policy?):
            evaluatePolicy(policy, localizedReason: localizedReason, reply: reply)
        case .failure(let error):
            Thread.detachNewThread { reply(false, error) }
        }
    }

    /// ``evaluateAccessControl(_:operation:localizedReason:reply:)``, awaited.
    /// - Returns: `true` when the access control is answered.
    /// - Throws: `LAError` when it is not.
    @discardableResult
    public func evaluateAccessControl(
        _ accessControl: SecAccessControl, operation: LAAccessControlOperation, localizedReason: String
    ) async throws -> Bool {
        try await withCheckedThrowingContinuation { continuation in
            evaluateAccessControl(accessControl, operation: operation, localizedReason: localizedReason) {
                success, error in
                if let error { continuation.resume(throwing: error) } else { continuation.resume(returning: success) }
            }
        }
    }

    /// The policy whose evaluation answers `accessControl` for `operation`: `nil` when it asks
    /// nothing, a failure when nothing here can answer it.
    private func policy(answering accessControl: SecAccessControl, for operation: LAAccessControlOperation)
        -> Result<LAPolicy?, LAError>
    {
        let stored = StoredAccessControl(
            flags: UInt64(accessControl.flags.rawValue), protection: accessControl.protectionValue)
        switch operation {
        case .createItem, .createKey: return .success(nil)
        case .useItem, .useKeySign, .useKeyDecrypt, .useKeyKeyExchange: break
        }
        if stored.needsApplicationPassword && !isCredentialSet(.applicationPassword) {
            return .failure(
                LAError(
                    .notInteractive, "the application password is given with setCredential(_:type:), never asked for"))
        }
        guard stored.requiresAuthentication(openingApplicationPassword: true) else { return .success(nil) }
        if stored.isAnsweredByOwnerAuthentication { return .success(.deviceOwnerAuthentication) }
        let flags = accessControl.flags
        let biometry = flags.contains(.biometryAny) || flags.contains(.biometryCurrentSet)
        switch (biometry, flags.contains(.companion)) {
        case (false, true): return .success(.deviceOwnerAuthenticationWithCompanion)
        case (true, true) where flags.contains(.or):
            return .success(.deviceOwnerAuthenticationWithBiometricsOrCompanion)
        default: return .success(.deviceOwnerAuthenticationWithBiometrics)
        }
    }
}
