/// How a command's options are read, as getopt(3) reads them for macOS's `security`.
///
/// Options are single letters; several may be grouped in one argument (`-Uw`), and an option
/// that takes a value takes the rest of its argument (`-wSECRET`, `-UwSECRET`) or, when that
/// is empty, the next argument whatever it looks like (`-Uw SECRET`, `-P -1`). The tool
/// splits every group into separate options before ArgumentParser sees the arguments, so
/// that ArgumentParser never refuses (and prints) a group, and hides the values of secret
/// options in `-v` output wherever they are.
struct OptionSyntax {
    /// The letters that take a value.
    var valued: OptionLetters
    /// The letters whose value is a secret.
    var secret: OptionLetters = []

    /// The options of a command, or `nil` for a command whose arguments are not options
    /// (`error` takes codes such as `-25300`).
    static func forCommand(_ name: String) -> OptionSyntax? {
        let genericMatch: OptionLetters = ["a", "s", "l", "D", "G", "j", "c", "C"]
        let internetMatch: OptionLetters = ["a", "s", "d", "p", "P", "r", "t", "l", "D", "j", "c", "C"]
        let partitionList: OptionLetters = ["S", "k"]
        return switch name {
        case "add-generic-password":
            OptionSyntax(valued: genericMatch.union(["w", "p", "X", "T"]), secret: ["w", "p", "X"])
        case "add-internet-password":
            OptionSyntax(valued: internetMatch.union(["w", "X", "T"]), secret: ["w", "X"])
        case "find-generic-password", "delete-generic-password": OptionSyntax(valued: genericMatch)
        case "find-internet-password", "delete-internet-password": OptionSyntax(valued: internetMatch)
        case "set-generic-password-partition-list":
            OptionSyntax(valued: genericMatch.union(partitionList), secret: ["k"])
        case "set-internet-password-partition-list":
            OptionSyntax(valued: internetMatch.union(partitionList), secret: ["k"])
        case "set-key-partition-list":
            OptionSyntax(valued: partitionList.union(["a", "c", "D", "j", "l", "t"]), secret: ["k"])
        case "create-keychain", "unlock-keychain", "set-login-unlock": OptionSyntax(valued: ["p"], secret: ["p"])
        case "set-keychain-password": OptionSyntax(valued: ["o", "p"], secret: ["o", "p"])
        case "list-keychains", "default-keychain", "login-keychain": OptionSyntax(valued: ["d"])
        case "set-keychain-settings": OptionSyntax(valued: ["t"])
        case "import": OptionSyntax(valued: ["k", "t", "f", "P", "T"], secret: ["P"])
        case "export": OptionSyntax(valued: ["k", "t", "f", "P", "o"], secret: ["P"])
        case "find-certificate": OptionSyntax(valued: ["c", "e"])
        case "find-identity": OptionSyntax(valued: ["p", "s"])
        case "add-certificates", "import-secret-service", "sync": OptionSyntax(valued: ["k"])
        case "import-keyring": OptionSyntax(valued: ["k", "p"], secret: ["p"])
        case "export-keyring": OptionSyntax(valued: ["k", "p", "o"], secret: ["p"])
        case "delete-certificate", "delete-identity": OptionSyntax(valued: ["c", "Z"])
        case "find-key": OptionSyntax(valued: ["a", "c", "D", "j", "l", "t"])
        case "create-ssh-key": OptionSyntax(valued: ["C", "p"])
        case "revoke-access": OptionSyntax(valued: ["s", "a", "l"])
        case "security-key": OptionSyntax(valued: ["n", "d"])
        case "create-keypair": OptionSyntax(valued: ["a", "s", "f", "t", "d", "k", "T"])
        case "verify-cert": OptionSyntax(valued: ["c", "r", "p", "d", "k", "s", "e", "R"])
        case "cms": OptionSyntax(valued: ["i", "o", "c", "h", "k", "u"])
        case "set-identity-preference": OptionSyntax(valued: ["c", "s", "u", "Z"])
        case "get-identity-preference": OptionSyntax(valued: ["s", "u"])
        case "add-trusted-cert": OptionSyntax(valued: ["r", "a", "p", "s", "e", "u", "k", "i", "o"])
        case "error": nil
        default: OptionSyntax(valued: [])
        }
    }

    /// One argument as getopt reads it.
    private enum Piece {
        /// Option letters, the last of which may take `value` (attached, or `nil` when it is
        /// the next argument, or missing at the end).
        case options([Character], value: String?)
        /// The value of the previous argument's last option.
        case value(String, of: Character)
        /// An operand, `--`, `-` or a long option: left as it is.
        case other(String)
    }

    /// Reads the arguments as getopt does (except that, as ArgumentParser allows, options
    /// may follow operands).
    private func pieces(_ arguments: [String]) -> [Piece] {
        var result: [Piece] = []
        var pending: Character?
        var afterOptions = false
        for argument in arguments {
            if let letter = pending {
                result.append(.value(argument, of: letter))
                pending = nil
                continue
            }
            if afterOptions || argument == "-" || !argument.hasPrefix("-") || argument.hasPrefix("--") {
                if argument == "--" { afterOptions = true }
                result.append(.other(argument))
                continue
            }
            var letters: [Character] = []
            var value: String?
            var rest = argument.dropFirst()
            while let letter = rest.first {
                letters.append(letter)
                rest = rest.dropFirst()
                if valued.contains(letter) {
                    if rest.isEmpty { pending = letter } else { value = String(rest) }
                    break
                }
            }
            result.append(.options(letters, value: value))
        }
        return result
    }

    /// The arguments with every group split into single options and every value in its own
    /// argument: `-UwSECRET` becomes `-U`, `-w`, `SECRET`.
    func split(_ arguments: [String]) -> [String] {
        pieces(arguments).flatMap { piece -> [String] in
            switch piece {
            case .options(let letters, let value): letters.map { "-\($0)" } + (value.map { [$0] } ?? [])
            case .value(let value, _): [value]
            case .other(let argument): [argument]
            }
        }
    }

    /// The operands getopt leaves after the options (the keychains an item command names).
    func operands(_ arguments: [String]) -> [String] {
        var afterOptions = false
        return pieces(arguments).compactMap { piece -> String? in
            guard case .other(let argument) = piece else { return nil }
            if afterOptions { return argument }
            if argument == "--" { afterOptions = true }
            return argument.hasPrefix("-") ? nil : argument
        }
    }

    /// The arguments as given, with the value of every secret option replaced by `<hidden>`.
    func redacted(_ arguments: [String]) -> [String] {
        pieces(arguments).map { piece -> String in
            switch piece {
            case .options(let letters, let value):
                let hidden = letters.last.map(secret.contains) == true ? "<hidden>" : nil
                return "-" + String(letters) + (value.map { hidden ?? $0 } ?? "")
            case .value(let value, let letter): return secret.contains(letter) ? "<hidden>" : value
            case .other(let argument): return argument
            }
        }
    }
}

/// A set of ASCII option letters, as a bit mask: what ``OptionSyntax`` keeps. A `Set<Character>`
/// would do the same, but its first use costs every `security` process one of the Swift runtime's
/// scans of all conformance records (for `Character: Hashable`), about as long as the rest of
/// reading the line.
struct OptionLetters: ExpressibleByArrayLiteral, Equatable {
    /// Bit `n` set: the ASCII letter `n` is in the set.
    private var mask: (low: UInt64, high: UInt64) = (0, 0)

    init(arrayLiteral letters: Character...) {
        self.init(letters)
    }

    /// The set of `letters` (ASCII letters; anything else is left out).
    init(_ letters: some Sequence<Character>) {
        for letter in letters { insert(letter) }
    }

    /// Whether `letter` is in the set (a letter outside ASCII never is).
    func contains(_ letter: Character) -> Bool {
        guard let code = letter.asciiValue else { return false }
        return code < 64 ? mask.low & (1 << code) != 0 : mask.high & (1 << (code - 64)) != 0
    }

    /// The letters of both sets.
    func union(_ other: OptionLetters) -> OptionLetters {
        var result = self
        result.mask = (mask.low | other.mask.low, mask.high | other.mask.high)
        return result
    }

    /// Adds `letter` (an ASCII letter; anything else is ignored).
    private mutating func insert(_ letter: Character) {
        guard let code = letter.asciiValue else { return }
        if code < 64 { mask.low |= 1 << code } else { mask.high |= 1 << (code - 64) }
    }

    static func == (lhs: OptionLetters, rhs: OptionLetters) -> Bool {
        lhs.mask.low == rhs.mask.low && lhs.mask.high == rhs.mask.high
    }
}
