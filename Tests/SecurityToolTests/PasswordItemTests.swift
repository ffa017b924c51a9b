import Foundation
import Testing

/// End-to-end tests of the password commands: each runs the built `security` binary and
/// compares standard output, standard error and the exit status with macOS's.
@Suite struct PasswordItemTests {
    @Test func addThenFindWithWPrintsTheSecret() throws {
        let sandbox = try Sandbox()
        let add = try sandbox.run(["add-generic-password", "-a", "ci", "-s", "deploy", "-w", "s3cret"])
        #expect(add.status == 0, "\(add)")
        #expect(add.out.isEmpty && add.err.isEmpty, "\(add)")

        let find = try sandbox.run(["find-generic-password", "-s", "deploy", "-a", "ci", "-w"])
        #expect(find.status == 0, "\(find)")
        #expect(find.out == "s3cret\n")
        #expect(find.err.isEmpty)
    }

    @Test func findOfAMissingItemExits44WithTheMacOSMessage() throws {
        let sandbox = try Sandbox()
        try sandbox.run(["add-generic-password", "-a", "ci", "-s", "deploy", "-w", "s3cret"])
        for arguments in [
            ["find-generic-password", "-s", "nothing-here", "-w"],
            ["find-generic-password", "-a", "ci", "-s", "other"],
            ["find-internet-password", "-s", "example.com"],
        ] {
            let find = try sandbox.run(arguments)
            #expect(find.status == 44, "\(find)")
            #expect(find.out.isEmpty)
            #expect(find.err == itemNotFoundMessage)
        }
    }

    @Test func findOnAFreshMachineWithNoKeychainExits44() throws {
        let sandbox = try Sandbox()
        let find = try sandbox.run(["find-generic-password", "-s", "deploy", "-w"])
        #expect(find.status == 44, "\(find)")
        #expect(find.err == itemNotFoundMessage)
    }

    @Test func addOfAnExistingItemExits45AndUUpdatesIt() throws {
        let sandbox = try Sandbox()
        try sandbox.run(["add-generic-password", "-a", "ci", "-s", "deploy", "-w", "old", "-j", "kept"])

        let duplicate = try sandbox.run(["add-generic-password", "-a", "ci", "-s", "deploy", "-w", "new"])
        #expect(duplicate.status == 45, "\(duplicate)")
        #expect(duplicate.out.isEmpty)
        #expect(
            duplicate.err
                == "security: SecKeychainItemCreateFromContent (<default>): The specified item already exists in the keychain.\n"
        )
        #expect(try sandbox.run(["find-generic-password", "-a", "ci", "-s", "deploy", "-w"]).out == "old\n")

        let update = try sandbox.run(["add-generic-password", "-U", "-a", "ci", "-s", "deploy", "-w", "new"])
        #expect(update.status == 0, "\(update)")
        #expect(update.out.isEmpty && update.err.isEmpty)
        #expect(try sandbox.run(["find-generic-password", "-a", "ci", "-s", "deploy", "-w"]).out == "new\n")

        // -U without a password changes attributes and keeps the secret; others stay.
        let relabel = try sandbox.run(["add-generic-password", "-U", "-a", "ci", "-s", "deploy", "-l", "Deploy"])
        #expect(relabel.status == 0, "\(relabel)")
        #expect(try sandbox.run(["find-generic-password", "-l", "Deploy", "-w"]).out == "new\n")
        let block = try sandbox.run(["find-generic-password", "-a", "ci", "-s", "deploy"]).out
        #expect(block.contains("    \"icmt\"<blob>=\"kept\"\n"))

        // -U of an item that does not exist adds it.
        let fresh = try sandbox.run(["add-generic-password", "-U", "-a", "ci", "-s", "fresh", "-w", "f"])
        #expect(fresh.status == 0, "\(fresh)")
        #expect(try sandbox.run(["find-generic-password", "-s", "fresh", "-w"]).out == "f\n")
    }

    @Test func findPrintsTheMacOSAttributeBlockAndGPrintsThePasswordOnStandardError() throws {
        let sandbox = try Sandbox()
        try sandbox.run([
            "add-generic-password", "-a", "ci", "-s", "deploy", "-w", "s3cret", "-j", "a comment", "-D", "token",
            "-G", "gen", "-c", "aapl", "-C", "note",
        ])
        let find = try sandbox.run(["find-generic-password", "-a", "ci", "-s", "deploy", "-g"])
        #expect(find.status == 0, "\(find)")
        #expect(
            normalizingDates(find.out) == """
                keychain: "\(sandbox.loginKeychain)"
                version: 512
                class: "genp"
                attributes:
                    0x00000007 <blob>="deploy"
                    0x00000008 <blob>=<NULL>
                    "acct"<blob>="ci"
                    "cdat"<timedate>=<date>
                    "crtr"<uint32>="aapl"
                    "cusi"<sint32>=<NULL>
                    "desc"<blob>="token"
                    "gena"<blob>="gen"
                    "icmt"<blob>="a comment"
                    "invi"<sint32>=<NULL>
                    "mdat"<timedate>=<date>
                    "nega"<sint32>=<NULL>
                    "prot"<blob>=<NULL>
                    "scrp"<sint32>=<NULL>
                    "svce"<blob>="deploy"
                    "type"<uint32>="note"

                """)
        #expect(find.err == "password: \"s3cret\"\n")

        let plain = try sandbox.run(["find-generic-password", "-a", "ci", "-s", "deploy"])
        #expect(!plain.out.contains("s3cret") && !plain.err.contains("s3cret"), "no secret without -g or -w")
    }

    @Test(arguments: [
        "pässwörd", "tab\tinside", "trailing space ", "🔑 emoji", "quote\"and\\backslash", "", "plain-ascii",
    ])
    func secretPipedOnStandardInputIsStoredByteExact(_ secret: String) throws {
        let sandbox = try Sandbox()
        let add = try sandbox.run(["add-generic-password", "-a", "ci", "-s", "piped", "-w"], input: secret + "\n")
        #expect(add.status == 0, "\(add)")
        #expect(add.out.isEmpty && add.err.isEmpty, "no prompt when standard input is not a terminal")

        let bytes = Array(secret.utf8)
        let printable = bytes.allSatisfy { $0 >= 0x20 && $0 <= 0x7E }
        let find = try sandbox.run(["find-generic-password", "-s", "piped", "-w"])
        #expect(find.status == 0, "\(find)")
        // macOS prints a secret that is not all printable ASCII in hex.
        #expect(find.out == (printable ? secret : hex(bytes)) + "\n")

        let dump = try sandbox.run(["dump-keychain", "-d"])
        let dataLine = dump.out.components(separatedBy: "data:\n").last?.components(separatedBy: "\n").first
        #expect(dataLine == printBuffer(bytes))
    }

    @Test func secretWithoutTrailingNewlineAndBinaryHexAreStoredExactly() throws {
        let sandbox = try Sandbox()
        #expect(
            try sandbox.run(["add-generic-password", "-a", "a", "-s", "no-newline", "-w"], input: "abc").status == 0)
        #expect(try sandbox.run(["find-generic-password", "-s", "no-newline", "-w"]).out == "abc\n")

        let binary = try sandbox.run(["add-generic-password", "-a", "a", "-s", "binary", "-X", "00ff0a41"])
        #expect(binary.status == 0, "\(binary)")
        #expect(try sandbox.run(["find-generic-password", "-s", "binary", "-w"]).out == "00ff0a41\n")
        let g = try sandbox.run(["find-generic-password", "-s", "binary", "-g"])
        #expect(g.err == "password: 0x00FF0A41  \"\\000\\377\\012A\"\n")

        // Only the first line is read: the rest of standard input is left alone.
        #expect(
            try sandbox.run(["add-generic-password", "-a", "a", "-s", "lines", "-w"], input: "one\ntwo\n").status == 0)
        #expect(try sandbox.run(["find-generic-password", "-s", "lines", "-w"]).out == "one\n")
    }

    @Test func trailingWAfterTheKeychainArgumentAlsoReadsTheSecret() throws {
        let sandbox = try Sandbox()
        try sandbox.run(["create-keychain", "-p", "", "plain.keychain"])
        let add = try sandbox.run(
            ["add-generic-password", "-a", "a", "-s", "s", "plain.keychain", "-U", "-w"], input: "from stdin\n")
        #expect(add.status == 0, "\(add)")
        #expect(try sandbox.run(["find-generic-password", "-s", "s", "-w", "plain.keychain"]).out == "from stdin\n")
    }

    @Test func internetPasswordRoundTrip() throws {
        let sandbox = try Sandbox()
        let add = try sandbox.run([
            "add-internet-password", "-a", "alice", "-s", "git.example.com", "-r", "htps", "-P", "443", "-p", "/repo",
            "-d", "realm", "-w", "hunter2",
        ])
        #expect(add.status == 0, "\(add)")
        let find = try sandbox.run(["find-internet-password", "-s", "git.example.com", "-a", "alice"])
        #expect(find.status == 0, "\(find)")
        #expect(
            normalizingDates(find.out) == """
                keychain: "\(sandbox.loginKeychain)"
                version: 512
                class: "inet"
                attributes:
                    0x00000007 <blob>="git.example.com"
                    0x00000008 <blob>=<NULL>
                    "acct"<blob>="alice"
                    "atyp"<blob>="dflt"
                    "cdat"<timedate>=<date>
                    "crtr"<uint32>=<NULL>
                    "cusi"<sint32>=<NULL>
                    "desc"<blob>=<NULL>
                    "icmt"<blob>=<NULL>
                    "invi"<sint32>=<NULL>
                    "mdat"<timedate>=<date>
                    "nega"<sint32>=<NULL>
                    "path"<blob>="/repo"
                    "port"<uint32>=0x000001BB 
                    "prot"<blob>=<NULL>
                    "ptcl"<uint32>="htps"
                    "scrp"<sint32>=<NULL>
                    "sdmn"<blob>="realm"
                    "srvr"<blob>="git.example.com"
                    "type"<uint32>=<NULL>

                """)
        #expect(
            try sandbox.run(["find-internet-password", "-s", "git.example.com", "-r", "htps", "-w"]).out == "hunter2\n")
        #expect(try sandbox.run(["find-internet-password", "-s", "git.example.com", "-r", "http"]).status == 44)

        let duplicate = try sandbox.run([
            "add-internet-password", "-a", "alice", "-s", "git.example.com", "-r", "htps", "-P", "443", "-p", "/repo",
            "-d", "realm", "-w", "x",
        ])
        #expect(duplicate.status == 45)
        #expect(
            duplicate.err
                == "security: SecKeychainAddInternetPassword <NULL>: The specified item already exists in the keychain.\n"
        )

        let delete = try sandbox.run(["delete-internet-password", "-s", "git.example.com"])
        #expect(delete.status == 0, "\(delete)")
        #expect(delete.out.hasPrefix("keychain: \"\(sandbox.loginKeychain)\"\nversion: 512\nclass: \"inet\"\n"))
        #expect(delete.err == "password has been deleted.\n")
        #expect(try sandbox.run(["find-internet-password", "-s", "git.example.com"]).status == 44)
    }

    @Test func deleteGenericPasswordDeletesOnlyTheFirstMatch() throws {
        let sandbox = try Sandbox()
        try sandbox.run(["add-generic-password", "-a", "one", "-s", "shared", "-w", "1"])
        try sandbox.run(["add-generic-password", "-a", "two", "-s", "shared", "-w", "2"])
        let delete = try sandbox.run(["delete-generic-password", "-s", "shared"])
        #expect(delete.status == 0, "\(delete)")
        #expect(delete.out.contains("    \"acct\"<blob>=\"one\"\n"))
        #expect(delete.err == "password has been deleted.\n")
        #expect(try sandbox.run(["find-generic-password", "-s", "shared", "-w"]).out == "2\n")

        let none = try sandbox.run(["delete-generic-password", "-s", "missing"])
        #expect(none.status == 44)
        #expect(none.err == itemNotFoundMessage)

        let nothingToMatch = try sandbox.run(["delete-generic-password"])
        #expect(nothingToMatch.status == 2, "delete needs at least one match option")
    }

    @Test func dumpKeychainListsItemsWithoutSecretsAndDWithThem() throws {
        let sandbox = try Sandbox()
        try sandbox.run(["add-generic-password", "-a", "ci", "-s", "deploy", "-w", "generic-secret"])
        try sandbox.run(["add-internet-password", "-a", "bob", "-s", "example.com", "-w", "internet-secret"])

        let dump = try sandbox.run(["dump-keychain"])
        #expect(dump.status == 0, "\(dump)")
        #expect(dump.err.isEmpty)
        #expect(dump.out.components(separatedBy: "attributes:\n").count == 3)
        #expect(dump.out.contains("class: \"genp\"") && dump.out.contains("class: \"inet\""))
        #expect(!dump.out.contains("secret") && !dump.out.contains("data:"))

        let withData = try sandbox.run(["dump-keychain", "-d", sandbox.loginKeychain])
        #expect(withData.status == 0, "\(withData)")
        #expect(withData.out.contains("    \"type\"<uint32>=<NULL>\ndata:\n\"generic-secret\"\n"))
        #expect(withData.out.contains("data:\n\"internet-secret\"\n"))

        let acl = try sandbox.run(["dump-keychain", "-a"])
        #expect(acl.out.components(separatedBy: "no access control for this item\n").count == 3)
    }

    @Test func macOSOnlyFlagsAreAcceptedAndHarmless() throws {
        let sandbox = try Sandbox()
        let add = try sandbox.run([
            "add-generic-password", "-a", "ci", "-s", "deploy", "-T", "/usr/bin/codesign", "-T", "", "-A", "-w", "x",
        ])
        #expect(add.status == 0, "\(add)")
        let partition = try sandbox.run([
            "set-generic-password-partition-list", "-S", "apple-tool:,apple:", "-k", "", "-s", "deploy",
        ])
        #expect(partition.status == 0, "\(partition)")
        #expect(partition.out.contains("\"svce\"<blob>=\"deploy\""))
        let keys = try sandbox.run(["set-key-partition-list", "-S", "apple-tool:,apple:", "-s", "-k", "pw"])
        #expect(keys.status == 0, "\(keys)")
        let settings = try sandbox.run(["set-keychain-settings", "-lut", "21600"])
        #expect(settings.status == 0, "\(settings)")
        #expect(try sandbox.run(["find-generic-password", "-s", "deploy", "-w"]).out == "x\n")
        // A macOS program this machine does not have is left off the list, saying so: the item
        // has no list and reads as before.
        let codesign = try sandbox.run([
            "add-generic-password", "-a", "ci", "-s", "signing", "-T", "/usr/bin/codesign", "-w", "y",
        ])
        #expect(codesign.status == 0 && codesign.err.contains("/usr/bin/codesign: no such program here"), "\(codesign)")
        #expect(try sandbox.run(["find-generic-password", "-s", "signing", "-w"]).out == "y\n")
        #expect(!(try sandbox.run(["dump-keychain", "-a"]).out.contains("access list")))
    }

    @Test func commandNamesMayBeAbbreviatedAsOnMacOS() throws {
        let sandbox = try Sandbox()
        try sandbox.run(["add-generic-password", "-a", "ci", "-s", "deploy", "-w", "x"])
        let find = try sandbox.run(["find-g", "-s", "deploy", "-w"])
        #expect(find.status == 0, "\(find)")
        #expect(find.out == "x\n")
    }

    @Test func verboseModeNeverPrintsTheSecret() throws {
        let sandbox = try Sandbox()
        let add = try sandbox.run(["-v", "add-generic-password", "-a", "ci", "-s", "deploy", "-w", "topsecret"])
        #expect(add.status == 0, "\(add)")
        #expect(add.err.hasPrefix("add-generic-password"))
        #expect(!add.err.contains("topsecret") && !add.out.contains("topsecret"))
    }
}

/// macOS's `print_buffer` for the expected output of `-d` and `-g`.
func printBuffer(_ bytes: [UInt8]) -> String {
    let plain: (UInt8) -> Bool = { $0 >= 0x20 && $0 <= 0x7E && $0 != 0x5C }
    var text = ""
    if bytes.contains(where: { !plain($0) }) {
        text += "0x" + bytes.map { String(format: "%02X", $0) }.joined()
        if bytes.contains(where: plain) { text += " " }
        text += " "
    }
    if bytes.contains(where: plain) {
        text += "\""
        for byte in bytes {
            text += plain(byte) ? String(UnicodeScalar(byte)) : "\\" + String(byte, radix: 8).leftPadded(3)
        }
        text += "\""
    }
    return text
}

extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
