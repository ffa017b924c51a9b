// The layers' imports, checked on the sources (issue 51): the engine's SQLite code is in the
// files named `_sqlite`, as swift-crypto names its BoringSSL files `_boring`.

import Foundation
import Testing

@Suite("Layering")
struct LayeringTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The Swift files of `Sources/<module>` and the modules each imports.
    static func imports(of module: String) throws -> [(file: String, modules: [String])] {
        let directory = root.appendingPathComponent("Sources/\(module)")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".swift") }.sorted()
        #expect(!files.isEmpty, "no Swift file in Sources/\(module)")
        return try files.map { file in
            let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            let modules = text.split(separator: "\n").compactMap { line -> String? in
                let words = line.split(separator: " ").filter {
                    !$0.hasPrefix("@") && !["internal", "package", "public", "private", "fileprivate"].contains($0)
                }
                guard words.count >= 2, words[0] == "import" else { return nil }
                return String(words[1])
            }
            return (file, modules)
        }
    }

    @Test("KeychainModel imports Foundation and the C library only")
    func modelImportsFoundationOnly() throws {
        let allowed: Set = ["Foundation", "KeychainLibc", "Synchronization"]
        for (file, modules) in try Self.imports(of: "KeychainModel") {
            #expect(Set(modules).isSubset(of: allowed), "Sources/KeychainModel/\(file) imports \(modules)")
        }
    }

    @Test(
        "The API products import KeychainModel and KeychainClient, never the engine",
        arguments: ["Security", "Keychain", "KeychainStorage", "SwiftKeychain", "SecurityTool"])
    func apiProductsDoNotImportTheEngine(module: String) throws {
        for (file, modules) in try Self.imports(of: module) {
            #expect(
                !modules.contains { $0 == "KeychainCore" || $0.hasPrefix("GRDB") },
                "Sources/\(module)/\(file) imports the engine")
        }
    }

    @Test("Only KeychainCore's *_sqlite.swift files import GRDB")
    func onlySQLiteFilesImportGRDB() throws {
        for (file, modules) in try Self.imports(of: "KeychainCore") where !file.hasSuffix("_sqlite.swift") {
            #expect(
                !modules.contains { $0 == "GRDB" || $0 == "GRDBSQLite" },
                "Sources/KeychainCore/\(file) imports GRDB: SQLite code goes in a file named *_sqlite.swift")
        }
    }
}
