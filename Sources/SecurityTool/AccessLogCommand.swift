import ArgumentParser
import Foundation
import KeychainClient
import KeychainModel

/// `security access-log` (Linux only): the secrets keychaind gave out since it started, to whom
/// and allowed by what (``KeychainClient/Keychains/accessLog()``).
struct AccessLogCommand: ToolCommand {
    static let name = "access-log"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Show which items' secrets keychaind gave out, when, to whom (Linux only).",
        usage: "security access-log",
        discussion: HelpText.wrapped(
            """
            Prints a line for each secret keychaind gave out since it started (the last 1,000), \
            oldest first: when, the item's class and the attributes that name it, the program that \
            asked as the kernel names it (its sandbox's or manifest's app id, else its executable), \
            and what allowed it (its access group, and your authentication for an item that asks \
            for it). No secret is ever in it, and it is kept in keychaind's memory only. Exits with \
            status 1 when no keychaind serves you (each program then opens the keychains itself, \
            and nothing is logged).
            """))

    func execute(in session: Session) throws -> Int32 {
        guard let entries = try Keychains.accessLog() else {
            Console.err("security: access-log: no keychaind serves you, so nothing is logged\n")
            return 1
        }
        Console.out(entries.map { $0 + "\n" }.joined())
        return 0
    }
}
