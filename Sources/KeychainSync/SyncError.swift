import Foundation

/// Why a sync operation failed.
///
/// The message says what was refused and why, in terms of identifiers the server already sees
/// (zone, record and key ids, sequence numbers, epochs). It never carries a key, a secret, an
/// invitation code or an attribute value.
public struct SyncError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure.
    public enum Code: String, Sendable, Equatable {
        /// A blob, head, roster, key row or share failed authentication, or its header disagrees
        /// with the row that carried it.
        case tampered
        /// Bytes that cannot be parsed (truncated, wrong version, wrong lengths).
        case malformed
        /// A blob names a key this device does not hold.
        case unknownKey
        /// This device is not (or no longer) a member of the zone.
        case notEnrolled
        /// The transport failed.
        case server
        /// A write lost to a concurrent one.
        case conflict
        /// An invitation code is malformed, mistyped or expired.
        case invitation
        /// The zone's head chain does not extend the last verified head.
        case forked
        /// The server returned a head older than one already verified.
        case rolledBack
        /// A recovery key that opens no zone on the server.
        case recovery
    }

    /// The kind of failure.
    public var code: Code
    /// What happened, without any secret.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String = "") {
        self.code = code
        self.message = message
    }

    /// The code and the message.
    public var description: String { message.isEmpty ? "sync: \(code.rawValue)" : "sync: \(code.rawValue): \(message)" }
}
