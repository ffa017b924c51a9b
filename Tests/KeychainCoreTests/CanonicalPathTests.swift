import Foundation
import KeychainLibc
import SeededRandom
import Testing

@testable import KeychainCore

/// How a keychain argument becomes the one absolute path that names its keychain
/// (`CanonicalPath`, what `security` resolves every keychain name with).
@Suite("Paths: one canonical spelling of a keychain's path")
struct CanonicalPathTests {
    /// A scratch tree: `dir/sub/file`, `dir/k.keychain-db`, and links `up` → `dir` (absolute),
    /// `rel` → `dir/sub` (relative), `chain` → `up`, `ahead` → `dir/later` (not there yet),
    /// `loop` → `loop`.
    final class Tree {
        let scratch: Scratch
        /// The scratch directory's own canonical path (the temporary directory may be a link).
        let root: String

        init() throws {
            scratch = try Scratch()
            root = try #require(
                realpath(scratch.path, nil).map { pointer in
                    defer { free(pointer) }
                    return String(cString: pointer)
                })
            let files = FileManager.default
            try files.createDirectory(atPath: root + "/dir/sub", withIntermediateDirectories: true)
            #expect(files.createFile(atPath: root + "/dir/sub/file", contents: Data()))
            #expect(files.createFile(atPath: root + "/dir/k.keychain-db", contents: Data()))
            try files.createSymbolicLink(atPath: root + "/up", withDestinationPath: root + "/dir")
            try files.createSymbolicLink(atPath: root + "/rel", withDestinationPath: "dir/sub")
            try files.createSymbolicLink(atPath: root + "/chain", withDestinationPath: "up")
            try files.createSymbolicLink(atPath: root + "/ahead", withDestinationPath: root + "/dir/later")
            try files.createSymbolicLink(atPath: root + "/loop", withDestinationPath: "loop")
        }
    }

    @Test(
        "a path is resolved through links, dots and repeated slashes, and a part not there yet is kept",
        arguments: [
            ("/dir/k.keychain-db", "/dir/k.keychain-db"),
            ("//dir///./k.keychain-db", "/dir/k.keychain-db"),
            ("/up/k.keychain-db", "/dir/k.keychain-db"),
            ("/chain/sub/../k.keychain-db", "/dir/k.keychain-db"),
            ("/rel/file", "/dir/sub/file"),
            ("/rel/../k.keychain-db", "/dir/k.keychain-db"),
            ("/up/new.keychain-db", "/dir/new.keychain-db"),
            ("/up/missing/../new.keychain-db", "/dir/new.keychain-db"),
            ("/up/missing/./deeper/", "/dir/missing/deeper"),
            ("/ahead", "/dir/later"),
            ("/rel/", "/dir/sub"),
        ])
    func resolvesLinksAndKeepsMissingParts(path: String, expected: String) throws {
        let tree = try Tree()
        #expect(CanonicalPath.of(tree.root + path) == tree.root + expected)
    }

    @Test("a link that loops is kept as written, not followed forever")
    func loopingLinkEnds() throws {
        let tree = try Tree()
        #expect(CanonicalPath.of(tree.root + "/loop") == tree.root + "/loop")
        #expect(CanonicalPath.of(tree.root + "/loop/k") == tree.root + "/loop/k")
    }

    @Test("a relative path is taken from the working directory")
    func relativeFromWorkingDirectory() throws {
        let directory = try #require(
            getcwd(nil, 0).map { pointer in
                defer { free(pointer) }
                return String(cString: pointer)
            })
        let name = "not-here-\(UUID().uuidString).keychain-db"
        #expect(CanonicalPath.of(name) == CanonicalPath.of(directory) + "/" + name)
        #expect(CanonicalPath.of("./x/../" + name) == CanonicalPath.of(directory) + "/" + name)
        #expect(CanonicalPath.of("/") == "/")
        #expect(CanonicalPath.of("/..") == "/")
    }

    @Test(
        "a path that exists comes out as realpath(3) gives it and names the same file",
        arguments: [1, 2, 3] as [UInt64])
    func randomPathsNameTheSameFile(seed: UInt64) throws {
        let tree = try Tree()
        var generator = SplitMix64(seed: seed)
        let parts = ["dir", "sub", "up", "rel", "chain", ".", "..", "", "file", "k.keychain-db", "missing"]
        for _ in 0..<300 {
            let count = Int.random(in: 1...6, using: &generator)
            let path =
                tree.root + "/"
                + (0..<count).map { _ in parts.randomElement(using: &generator)! }
                .joined(separator: "/")
            let canonical = CanonicalPath.of(path)
            #expect(canonical.hasPrefix("/"), "\(path)")
            #expect(!canonical.contains("//") && !canonical.contains("/./") && !canonical.hasSuffix("/."), "\(path)")
            #expect(!canonical.split(separator: "/").contains(".."), "\(path)")
            var original = stat()
            guard stat(path, &original) == 0 else { continue }
            var resolved = stat()
            #expect(stat(canonical, &resolved) == 0, "\(path)")
            #expect(resolved.st_ino == original.st_ino && resolved.st_dev == original.st_dev, "\(path)")
            let real = realpath(path, nil).map { pointer in
                defer { free(pointer) }
                return String(cString: pointer)
            }
            #expect(canonical == real, "\(path)")
        }
    }
}
