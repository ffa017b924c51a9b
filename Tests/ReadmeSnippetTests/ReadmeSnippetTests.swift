// The README's Swift snippets are compiled as part of this target (Snippets/, written by
// scripts/extract-readme-snippets). These tests check that the compiled files are exactly what the
// script makes of the README now, so an edited snippet fails until the files are regenerated, and
// that the script follows its documented conventions.

import Foundation
import Testing

/// Runs the extractor on `readme` into a fresh directory and returns the files it wrote, by name.
func extractSnippets(from readme: URL) throws -> [String: String] {
    let output = FileManager.default.temporaryDirectory
        .appendingPathComponent("readme-snippets-\(UUID().uuidString)", isDirectory: true)
    defer { try? FileManager.default.removeItem(at: output) }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = [ReadmeSnippetTests.extractor.path, readme.path, output.path]
    let errors = Pipe()
    process.standardError = errors
    try process.run()
    let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    #expect(process.terminationStatus == 0, "extract-readme-snippets failed: \(message)")
    return try swiftFiles(in: output)
}

/// The `.swift` files of a directory, by name.
func swiftFiles(in directory: URL) throws -> [String: String] {
    var files: [String: String] = [:]
    for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) where name.hasSuffix(".swift") {
        files[name] = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
    }
    return files
}

@Suite("README snippets")
struct ReadmeSnippetTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let extractor = root.appendingPathComponent("scripts/extract-readme-snippets")
    static let snippets = root.appendingPathComponent("Tests/ReadmeSnippetTests/Snippets")

    @Test("the compiled snippets are exactly the README's (run scripts/extract-readme-snippets after editing one)")
    func snippetsAreCurrent() throws {
        let expected = try extractSnippets(from: Self.root.appendingPathComponent("README.md"))
        let checkedIn = try swiftFiles(in: Self.snippets)
        #expect(!expected.isEmpty)
        #expect(checkedIn.keys.sorted() == expected.keys.sorted())
        for (name, text) in expected.sorted(by: { $0.key < $1.key }) {
            #expect(checkedIn[name] == text, "\(name) differs from README.md: run scripts/extract-readme-snippets")
        }
    }

    @Test("every ```swift block of the README is compiled unless marked <!-- snippet: skip -->")
    func everySwiftBlockIsCompiled() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let lines = readme.components(separatedBy: "\n")
        var blocks = 0
        var skipped = 0
        var previous = ""
        var inFence = false
        for line in lines {
            if inFence {
                if line.trimmingCharacters(in: .whitespaces) == "```" { inFence = false }
                continue
            }
            if line.hasPrefix("```") {
                inFence = true
                if line.trimmingCharacters(in: .whitespaces) == "```swift" {
                    blocks += 1
                    if previous == "<!-- snippet: skip -->" { skipped += 1 }
                }
                continue
            }
            if !line.trimmingCharacters(in: .whitespaces).isEmpty { previous = line }
        }
        #expect(blocks >= 4)
        #expect(skipped == 1, "only the Package.swift fragment is skipped")
        #expect(try swiftFiles(in: Self.snippets).count == blocks - skipped)
    }

    @Test("the extractor wraps, hoists imports, inherits them, picks async, and skips what it should")
    func extractorConventions() throws {
        let readme = FileManager.default.temporaryDirectory
            .appendingPathComponent("readme-\(UUID().uuidString).md")
        defer { try? FileManager.default.removeItem(at: readme) }
        let text = """
            # Title

            ```swift
            import Foundation

            let now = Date()
            ```

            ```sh
            swift build
            ```

            ```swift
            let later = try await fetch()
            ```

            <!-- snippet: skip -->
            ```swift
            dependencies: [],
            ```

            ```swift
            import Security
            if true {

                print(1)
            }
            ```

            """
        try text.write(to: readme, atomically: true, encoding: .utf8)
        let files = try extractSnippets(from: readme)
        #expect(files.keys.sorted() == ["ReadmeSnippet01.swift", "ReadmeSnippet02.swift", "ReadmeSnippet03.swift"])
        let header = """
            // swift-format-ignore-file
            // Generated by scripts/extract-readme-snippets from README.md: do not edit.

            """
        #expect(
            files["ReadmeSnippet01.swift"] == header + """
                // Snippet 1 of the README, compiled (never run) by the ReadmeSnippetTests target.

                import Foundation

                func readmeSnippet01() throws {
                    let now = Date()
                }

                """)
        #expect(
            files["ReadmeSnippet02.swift"] == header + """
                // Snippet 2 of the README, compiled (never run) by the ReadmeSnippetTests target.

                import Foundation

                func readmeSnippet02() async throws {
                    let later = try await fetch()
                }

                """)
        #expect(
            files["ReadmeSnippet03.swift"] == header + """
                // Snippet 3 of the README, compiled (never run) by the ReadmeSnippetTests target.

                import Security

                func readmeSnippet03() throws {
                    if true {

                        print(1)
                    }
                }

                """)
    }
}
