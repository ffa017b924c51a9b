import Foundation
import SeededRandom
import Testing

@testable import SecurityTool

/// Options grouped as getopt allows (`-Uw SECRET`, `-UwSECRET`) work as on macOS, and no
/// secret given in them is printed, by `-v` or in an error.
@Suite struct GroupedOptionTests {
    @Test func groupedOptionsWithASecretAreParsedAsGetoptDoes() throws {
        let sandbox = try Sandbox()
        for (service, arguments, expected) in [
            ("attached", ["-UwS3CRET-A"], "S3CRET-A"), ("next", ["-Uw", "S3CRET-B"], "S3CRET-B"),
            ("hex", ["-UX414243"], "ABC"), ("dash", ["-Uw", "-S3CRET"], "-S3CRET"),
        ] {
            let add = try sandbox.run(["add-generic-password", "-a", "ci", "-s", service] + arguments)
            #expect(add.status == 0 && add.err.isEmpty, "\(add)")
            let find = try sandbox.run(["find-generic-password", "-a", "ci", "-s", service, "-w"])
            #expect(find.out == expected + "\n", "\(find)")
        }
    }

    /// Commands run with `-v`, each with a secret that must not appear on standard error.
    static let verboseCases: [[String]] = [
        ["add-generic-password", "-a", "ci", "-s", "x", "-Uw", "S3CRET"],
        ["add-generic-password", "-a", "ci", "-s", "y", "-UwS3CRET"],
        ["add-generic-password", "-a", "ci", "-s", "z", "-UX", "533343524554"],
        ["add-generic-password", "-a", "ci", "-s", "p", "-Ap", "S3CRET"],
        ["add-internet-password", "-a", "ci", "-s", "h", "-UAwS3CRET"],
        ["create-keychain", "-Pp", "S3CRET", "k1"],
        ["unlock-keychain", "-upS3CRET", "k1"],
        ["set-keychain-password", "-oS3CRET", "-p", "S3CRET", "k1"],
        ["set-key-partition-list", "-S", "apple:", "-dk", "S3CRET", "k1"],
        ["add-generic-password", "-a", "ci", "-s", "q", "-ZwS3CRET"],
    ]

    @Test(arguments: verboseCases)
    func verboseModeHidesSecretsInGroupedOptions(_ arguments: [String]) throws {
        let sandbox = try Sandbox()
        let run = try sandbox.run(["-v"] + arguments)
        #expect(run.err.hasPrefix(arguments[0]), "\(run)")
        #expect(!run.err.contains("S3CRET") && !run.err.contains("533343524554"), "\(run)")
        #expect(!run.out.contains("S3CRET"), "\(run)")
    }

    @Test func anUnknownOptionInAGroupIsReportedWithoutTheRestOfTheArgument() throws {
        let sandbox = try Sandbox()
        let run = try sandbox.run(["add-generic-password", "-a", "ci", "-s", "x", "-ZwS3CRET"])
        #expect(run.status == 2, "\(run)")
        #expect(run.err.contains("'-Z'") && !run.err.contains("S3CRET"), "\(run)")
    }

    /// The letters that take a value, as each command's help lists them (`-a <account>`).
    @Test(arguments: SecurityTool.commands.map(\.name).filter { $0 != "error" })
    func optionTableMatchesEachCommandsHelp(_ name: String) throws {
        let command = try #require(SecurityTool.commands.first { $0.name == name })
        let help = SecurityCommand.helpMessage(for: command.type)
        let valued = Set(
            help.split(separator: "\n").compactMap { line -> Character? in
                let text = Array(line)
                guard text.count > 5, text[0...2] == ["\u{20}", "\u{20}", "-"], text[4...5] == [" ", "<"] else {
                    return nil
                }
                return text[3]
            })
        #expect(OptionSyntax.forCommand(name)?.valued == OptionLetters(valued))
    }
}

@Suite("Option letters: the set of letters a command's options use")
struct OptionLettersTests {
    @Test(
        "a letter set holds exactly the ASCII letters put in it, and a union holds both",
        arguments: [1, 2, 3] as [UInt64])
    func matchesASetOfCharacters(seed: UInt64) {
        var generator = SplitMix64(seed: seed)
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789?@_~")
        for _ in 0..<200 {
            let first = Set(
                (0..<Int.random(in: 0...8, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            let second = Set(
                (0..<Int.random(in: 0...8, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            let letters = OptionLetters(first)
            let union = letters.union(OptionLetters(second))
            for letter in alphabet {
                #expect(letters.contains(letter) == first.contains(letter))
                #expect(union.contains(letter) == (first.contains(letter) || second.contains(letter)))
            }
            #expect(!letters.contains("é"))
            #expect((letters == OptionLetters(second)) == (first == second))
        }
    }
}
