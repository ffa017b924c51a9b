import Foundation

extension DataProtocol {
    /// The bytes as unpadded base64url (RFC 4648 §5): what sync invitations, generated passwords
    /// and CXF's byte strings are written in.
    package var base64URLEncoded: String {
        Data(self).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}
