// Every status code has Apple's number (`base/SecBase.h`), and SecCopyErrorMessageString returns
// Apple's message for it, the code's name when the header has no message, `UNIX[…]` for the errno
// range and `OSStatus <n>` otherwise.

import Foundation
import KeychainLibc
import Security
import Testing

/// One status code: its name, constant, number and Apple's message.
struct StatusCase: Sendable, CustomTestStringConvertible {
    let name: String
    let status: OSStatus
    let number: OSStatus
    let message: String

    var testDescription: String { name }
}

/// Apple's status codes (`base/SecBase.h`): name, constant, expected number, expected message.
let specStatusCases: [StatusCase] = [
    StatusCase(name: "errSecSuccess", status: errSecSuccess, number: 0, message: "No error."),
    StatusCase(
        name: "errSecUnimplemented", status: errSecUnimplemented, number: -4,
        message: "Function or operation not implemented."),
    StatusCase(
        name: "errSecDiskFull", status: errSecDiskFull, number: -34, message: "The disk is full."),
    StatusCase(name: "errSecIO", status: errSecIO, number: -36, message: "I/O error."),
    StatusCase(
        name: "errSecParam", status: errSecParam, number: -50,
        message: "One or more parameters passed to a function were not valid."),
    StatusCase(
        name: "errSecAllocate", status: errSecAllocate, number: -108,
        message: "Failed to allocate memory."),
    StatusCase(
        name: "errSecUserCanceled", status: errSecUserCanceled, number: -128,
        message: "User canceled the operation."),
    StatusCase(
        name: "errSecBadReq", status: errSecBadReq, number: -909,
        message: "Bad parameter or invalid state for operation."),
    StatusCase(
        name: "errSecInternalComponent", status: errSecInternalComponent, number: -2070,
        message: "errSecInternalComponent"),
    StatusCase(
        name: "errSecCoreFoundationUnknown", status: errSecCoreFoundationUnknown, number: -4960,
        message: "errSecCoreFoundationUnknown"),
    StatusCase(
        name: "errSecMissingEntitlement", status: errSecMissingEntitlement, number: -34018,
        message: "A required entitlement isn't present."),
    StatusCase(
        name: "errSecRestrictedAPI", status: errSecRestrictedAPI, number: -34020,
        message: "Client is restricted and is not permitted to perform this operation."),
    StatusCase(
        name: "errSecNotAvailable", status: errSecNotAvailable, number: -25291,
        message: "No keychain is available. You may need to restart your computer."),
    StatusCase(
        name: "errSecReadOnly", status: errSecReadOnly, number: -25292,
        message: "This keychain cannot be modified."),
    StatusCase(
        name: "errSecAuthFailed", status: errSecAuthFailed, number: -25293,
        message: "The user name or passphrase you entered is not correct."),
    StatusCase(
        name: "errSecNoSuchKeychain", status: errSecNoSuchKeychain, number: -25294,
        message: "The specified keychain could not be found."),
    StatusCase(
        name: "errSecInvalidKeychain", status: errSecInvalidKeychain, number: -25295,
        message: "The specified keychain is not a valid keychain file."),
    StatusCase(
        name: "errSecDuplicateKeychain", status: errSecDuplicateKeychain, number: -25296,
        message: "A keychain with the same name already exists."),
    StatusCase(
        name: "errSecDuplicateItem", status: errSecDuplicateItem, number: -25299,
        message: "The specified item already exists in the keychain."),
    StatusCase(
        name: "errSecItemNotFound", status: errSecItemNotFound, number: -25300,
        message: "The specified item could not be found in the keychain."),
    StatusCase(
        name: "errSecBufferTooSmall", status: errSecBufferTooSmall, number: -25301,
        message: "There is not enough memory available to use the specified item."),
    StatusCase(
        name: "errSecDataTooLarge", status: errSecDataTooLarge, number: -25302,
        message:
            "This item contains information which is too large or in a format that cannot be displayed."
    ),
    StatusCase(
        name: "errSecNoSuchAttr", status: errSecNoSuchAttr, number: -25303,
        message: "The specified attribute does not exist."),
    StatusCase(
        name: "errSecInvalidItemRef", status: errSecInvalidItemRef, number: -25304,
        message:
            "The specified item is no longer valid. It may have been deleted from the keychain."),
    StatusCase(
        name: "errSecInvalidSearchRef", status: errSecInvalidSearchRef, number: -25305,
        message: "Unable to search the current keychain."),
    StatusCase(
        name: "errSecNoSuchClass", status: errSecNoSuchClass, number: -25306,
        message: "The specified item does not appear to be a valid keychain item."),
    StatusCase(
        name: "errSecNoDefaultKeychain", status: errSecNoDefaultKeychain, number: -25307,
        message: "A default keychain could not be found."),
    StatusCase(
        name: "errSecInteractionNotAllowed", status: errSecInteractionNotAllowed, number: -25308,
        message: "User interaction is not allowed."),
    StatusCase(
        name: "errSecReadOnlyAttr", status: errSecReadOnlyAttr, number: -25309,
        message: "The specified attribute could not be modified."),
    StatusCase(
        name: "errSecWrongSecVersion", status: errSecWrongSecVersion, number: -25310,
        message:
            "This keychain was created by a different version of the system software and cannot be opened."
    ),
    StatusCase(
        name: "errSecInteractionRequired", status: errSecInteractionRequired, number: -25315,
        message: "User interaction is required, but is currently not allowed."),
    StatusCase(
        name: "errSecDataNotAvailable", status: errSecDataNotAvailable, number: -25316,
        message: "The contents of this item cannot be retrieved."),
    StatusCase(
        name: "errSecDataNotModifiable", status: errSecDataNotModifiable, number: -25317,
        message: "The contents of this item cannot be modified."),
    StatusCase(
        name: "errSecInDarkWake", status: errSecInDarkWake, number: -25320,
        message: "In dark wake, no UI possible"),
    StatusCase(
        name: "errSecACLNotSimple", status: errSecACLNotSimple, number: -25240,
        message: "The specified access control list is not in standard (simple) form."),
    StatusCase(
        name: "errSecNoAccessForItem", status: errSecNoAccessForItem, number: -25243,
        message: "The specified item has no access control."),
    StatusCase(
        name: "errSecInvalidOwnerEdit", status: errSecInvalidOwnerEdit, number: -25244,
        message: "Invalid attempt to change the owner of this item."),
    StatusCase(
        name: "errSecUnsupportedFormat", status: errSecUnsupportedFormat, number: -25256,
        message: "Import/Export format unsupported."),
    StatusCase(
        name: "errSecUnknownFormat", status: errSecUnknownFormat, number: -25257,
        message: "Unknown format in import."),
    StatusCase(
        name: "errSecInvalidPasswordRef", status: errSecInvalidPasswordRef, number: -25261,
        message: "The password reference was invalid."),
    StatusCase(
        name: "errSecNotSigner", status: errSecNotSigner, number: -26267,
        message: "A certificate was not signed by its proposed parent."),
    StatusCase(
        name: "errSecDecode", status: errSecDecode, number: -26275,
        message: "Unable to decode the provided data."),
]
@Suite("§2 error codes and messages")
struct ErrorMessageTests {
    @Test("Each §2.1 code has its number and message", arguments: specStatusCases)
    func specCode(_ row: StatusCase) {
        #expect(row.status == row.number)
        #expect(SecCopyErrorMessageString(row.status, nil) as String? == row.message)
    }

    @Test("The §2.1 table lists 42 distinct codes")
    func specTableIsComplete() {
        #expect(specStatusCases.count == 42)
        #expect(Set(specStatusCases.map(\.number)).count == 42)
    }

    @Test(
        "Codes without a header message give their name",
        arguments: [
            (errSecInternalComponent, -2070, "errSecInternalComponent"),
            (errSecCoreFoundationUnknown, -4960, "errSecCoreFoundationUnknown"),
            (errSecMobileMeRequestQueued, -67657, "errSecMobileMeRequestQueued"),
            (errSecMobileMeFailedConsistencyCheck, -67666, "errSecMobileMeFailedConsistencyCheck"),
        ] as [(OSStatus, OSStatus, String)])
    func nameFallback(_ status: OSStatus, _ number: OSStatus, _ name: String) {
        #expect(status == number)
        #expect(SecCopyErrorMessageString(status, nil) as String? == name)
    }

    @Test(
        "Unknown and private codes give `OSStatus <n>`",
        arguments: [
            (-26276, "OSStatus -26276"),  // errSecInternal (SecBasePriv.h)
            (-25330, "OSStatus -25330"),  // errSecAuthNeeded
            (-34019, "OSStatus -34019"),  // errSecUpgradePending
            (1, "OSStatus 1"),
            (-1, "OSStatus -1"),
            (99_999, "OSStatus 99999"),
            (100_256, "OSStatus 100256"),
            (Int32.min, "OSStatus -2147483648"),
        ] as [(OSStatus, String)])
    func numericFallback(_ status: OSStatus, _ message: String) {
        #expect(SecCopyErrorMessageString(status, nil) as String? == message)
    }

    @Test("100000…100255 carry an errno: `UNIX[<strerror>]`", arguments: [1, 2, 13, 28, 255])
    func errnoRange(_ errnoValue: Int32) {
        let expected = "UNIX[\(String(cString: strerror(errnoValue)))]"
        #expect(SecCopyErrorMessageString(100_000 + errnoValue, nil) as String? == expected)
    }

    @Test("errSecErrnoBase + EPERM reads as the C library's text")
    func errnoExample() {
        #expect(
            SecCopyErrorMessageString(100_001, nil) as String? == "UNIX[Operation not permitted]")
    }

    @Test(
        "Other SecBase.h codes: messages are the header comment, whitespace squeezed",
        arguments: [
            (errSecOpWr, -49, "File already open with write permission."),
            (errSecWrPerm, -61, "Write permissions error."),
            (
                errSecDuplicateCallback, -25297,
                "The specified callback function is already installed."
            ),
            (
                errSecKeySizeNotAllowed, -25311,
                "This item specifies a key size which is too large or too small."
            ),
            (
                errSecPkcs12VerifyFailure, -25264,
                "MAC verification failed during PKCS12 import (wrong password?)"
            ),
            (errSecServiceNotAvailable, -67585, "The required service is not available."),
            (errSecInvalidCRLAuthority, -67827, "The CRL authority was not valid."),
            (
                errSecMissingQualifiedCertStatement, -67904,
                "A qualified certificate statement was expected but missing."
            ),
            (errSSLProtocol, -9800, "SSL protocol error"),
            (errSSLWeakPeerEphemeralDHKey, -9850, "weak ephemeral dh key"),
            (errSSLEarlyDataRejected, -9890, "Early application data rejected by peer"),
        ] as [(OSStatus, OSStatus, String)])
    func otherHeaderCodes(_ status: OSStatus, _ number: OSStatus, _ message: String) {
        #expect(status == number)
        #expect(SecCopyErrorMessageString(status, nil) as String? == message)
    }

    @available(*, deprecated, message: "checks the deprecated aliases on purpose")
    @Test("Deprecated code names alias their replacements")
    func deprecatedAliases() {
        #expect(errSecDskFull == errSecDiskFull)
        #expect(errSecInvaldCRLAuthority == errSecInvalidCRLAuthority)
        #expect(errSecInvalidTupleCredendtials == errSecInvalidTupleCredentials)
    }

    @Test("The reserved argument is ignored")
    func reservedIgnored() {
        var scratch = 0
        let message = withUnsafeMutableBytes(of: &scratch) {
            SecCopyErrorMessageString(errSecItemNotFound, $0.baseAddress)
        }
        #expect(message as String? == "The specified item could not be found in the keychain.")
    }

    @Test("The table holds all 455 SecBase.h codes, each once, with clean messages")
    func tableInvariants() {
        #expect(secBaseStatusTable.count == 455)
        #expect(Set(secBaseStatusTable.map(\.status)).count == secBaseStatusTable.count)
        #expect(Set(secBaseStatusTable.map(\.name)).count == secBaseStatusTable.count)
        #expect(secBaseStatusTable.filter { $0.message == nil }.count == 12)
        for entry in secBaseStatusTable {
            #expect(entry.name.hasPrefix("errSec") || entry.name.hasPrefix("errSSL"))
            if let message = entry.message {
                #expect(!message.isEmpty)
                #expect(message.trimmingCharacters(in: .whitespaces) == message)
                #expect(!message.contains("  "))
            }
        }
    }

    @Test("Every table entry is what SecCopyErrorMessageString returns")
    func tableDrivesMessages() {
        for entry in secBaseStatusTable {
            #expect(
                SecCopyErrorMessageString(entry.status, nil) as String? == entry.message
                    ?? entry.name,
                "\(entry.name)")
        }
    }
}
