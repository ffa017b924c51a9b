import Crypto
import Foundation

/// The state of the ways a context can authenticate the person, as Apple's
/// (<https://developer.apple.com/documentation/localauthentication/ladomainstate>): a hash that
/// changes when what they enrolled changes, so that an app can tell a new finger from the ones
/// its user had when it stored something.
///
/// On Linux the biometry hash covers fprintd's reader and the names of the fingers enrolled on
/// it for this user (``UserPresence/FingerprintReader/domainState(reader:fingers:)``): adding or
/// deleting a finger changes it, but a finger deleted and enrolled again under the same name
/// does not, because fprintd shows nobody the prints themselves. Apple's hash covers the
/// templates in the Secure Enclave and has no such gap.
public final class LADomainState: NSObject, Sendable {
    /// The biometry's state.
    public let biometry: LADomainStateBiometry
    /// The companions' state.
    public let companion: LADomainStateCompanion

    init(biometry: LADomainStateBiometry, companion: LADomainStateCompanion) {
        self.biometry = biometry
        self.companion = companion
    }

    /// A hash of every domain's state: the biometry's while it is the only one with a state,
    /// `nil` when none has one.
    public var stateHash: Data? {
        switch (biometry.stateHash, companion.stateHash) {
        case (nil, nil): return nil
        case (let biometry?, nil): return biometry
        case (nil, let companion?): return companion
        case (let biometry?, let companion?): return Data(SHA256.hash(data: biometry + companion))
        }
    }
}

/// The biometry's part of ``LADomainState``
/// (<https://developer.apple.com/documentation/localauthentication/ladomainstatebiometry>).
public final class LADomainStateBiometry: NSObject, Sendable {
    /// The biometry the device has: ``LABiometryType/touchID`` for fprintd's fingerprint reader.
    public let biometryType: LABiometryType
    /// A hash that changes when the enrolled fingers change; `nil` without a reader or with
    /// nothing enrolled.
    public let stateHash: Data?

    init(biometryType: LABiometryType, stateHash: Data?) {
        self.biometryType = biometryType
        self.stateHash = stateHash
    }
}

/// A kind of companion device (<https://developer.apple.com/documentation/localauthentication/lacompaniontype>).
public enum LACompanionType: Int, Sendable, Hashable {
    /// An Apple Watch.
    case watch = 1
    /// A Mac.
    case mac = 2
}

/// The companions' part of ``LADomainState``
/// (<https://developer.apple.com/documentation/localauthentication/ladomainstatecompanion>). On
/// Linux the companions are the FIDO2 security keys paired with the user's keychains: the hash
/// covers their credentials (and changes when one is paired or removed), `nil` when none is.
/// None is of Apple's kinds, so ``availableCompanionTypes`` stays empty.
public final class LADomainStateCompanion: NSObject, Sendable {
    /// The kinds of companion paired with this device.
    public let availableCompanionTypes: Set<LACompanionType>
    /// A hash that changes when the paired companions change.
    public let stateHash: Data?

    init(availableCompanionTypes: Set<LACompanionType> = [], stateHash: Data? = nil) {
        self.availableCompanionTypes = availableCompanionTypes
        self.stateHash = stateHash
    }

    /// The hash of the companions of `type`.
    public func stateHash(for type: LACompanionType) -> Data? {
        availableCompanionTypes.contains(type) ? stateHash : nil
    }
}
