import ArgumentParser
import Foundation
import KeychainPKI

// MARK: - cms

/// `security cms -D`: prints the content of a CMS message, as iOS build scripts (fastlane,
/// Flutter, Azure Pipelines) read a provisioning profile's property list
/// (`security cms -D -i X.mobileprovision`). macOS's `cmsutil.c` (SecurityTool) decodes with
/// NSS's CMS decoder; here KeychainPKI's ``CMSMessage`` reads SignedData and Data.
struct CMSCommand: ToolCommand {
    static let name = "cms"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Encode or decode CMS messages.",
        usage: "security cms -D [-i infile] [-o outfile] [-n] [-c content] [-h level] [-v]",
        discussion: HelpText.wrapped(
            """
            With -D, reads a CMS message (SignedData or Data, DER or BER; an iOS provisioning \
            profile is one) from -i or standard input and writes its content to -o or standard \
            output: the property list of a .mobileprovision file. -n writes nothing (the message \
            is still read and checked); -c names the content of a detached signature, written as \
            it is. The signature is not verified on Linux (no signer's trust is evaluated), and -h \
            and -v print nothing more. Creating messages (-C, -E, -S) is not available on Linux.

            Example:
              security cms -D -i profile.mobileprovision -o profile.plist
            """))

    @Flag(name: .customShort("D"), help: "Decode a CMS message.")
    var decode = false
    @Flag(name: .customShort("C"), help: "Create a CMS encrypted message (not available on Linux).")
    var createEncrypted = false
    @Flag(name: .customShort("E"), help: "Create a CMS enveloped message (not available on Linux).")
    var createEnveloped = false
    @Flag(name: .customShort("S"), help: "Create a CMS signed message (not available on Linux).")
    var createSigned = false
    @Option(name: .customShort("i"), help: ArgumentHelp("Read the message from this file.", valueName: "infile"))
    var input: String?
    @Option(name: .customShort("o"), help: ArgumentHelp("Write the content to this file.", valueName: "outfile"))
    var output: String?
    @Flag(name: .customShort("n"), help: "Do not write the content.")
    var noContent = false
    @Option(name: .customShort("c"), help: ArgumentHelp("The detached content.", valueName: "content"))
    var detachedContent: String?
    @Option(name: .customShort("h"), help: ArgumentHelp("Accepted for macOS scripts.", valueName: "level"))
    var headerLevel: String?
    @Option(name: .customShort("k"), help: ArgumentHelp("Accepted for macOS scripts.", valueName: "keychain"))
    var keychain: String?
    @Option(name: .customShort("u"), help: ArgumentHelp("Accepted for macOS scripts.", valueName: "certusage"))
    var certificateUsage: String?
    @Flag(name: .customShort("v"), help: "Accepted for macOS scripts.")
    var verbose = false

    func execute(in session: Session) throws -> Int32 {
        guard !(createEncrypted || createEnveloped || createSigned) else {
            throw CommandFailure.failure("cms: creating CMS messages (-C, -E, -S) is not available on Linux")
        }
        guard decode else { throw CommandFailure.usage("cms: give -D to decode a message") }
        let bytes = try input.map(readInputFile) ?? FileHandle.standardInput.readDataToEndOfFile()
        let message: CMSMessage
        do {
            message = try CMSMessage(berEncoded: bytes)
        } catch let error as PKIError {
            throw CommandFailure.failure("failed to decode message: \(error.message)")
        }
        let content = try detachedContent.map { [UInt8](try readInputFile($0)) } ?? message.content ?? []
        guard !noContent else { return 0 }
        if let output {
            guard FileManager.default.createFile(atPath: output, contents: Data(content)) else {
                throw CommandFailure.failure("Error writing to \(output): \(String(cString: strerror(errno)))")
            }
        } else {
            Console.out(content)
        }
        return 0
    }
}
