import CKeychainAgent
import Foundation
import KeychainLibc
import KeychainTestSupport
import SecretService
import Testing

/// A person's view: Debian's Seahorse ("Passwords and Keys"), in a real window on Xvfb, on a
/// private bus that activates the built `keychaind`, shows the keychain's collection and an item
/// an application stored with `SecItemAdd`. What the window shows is read back by OCR
/// (`tesseract`) from a screenshot (`import`), which is kept under `.build/test-artifacts`.
@Suite("Seahorse shows the keychain")
struct SeahorseTests {
    /// Where the screenshot and the text read from it are kept for a reader of the test output.
    static let artifacts = SecretToolTests.repository + "/.build/test-artifacts"

    /// Lower case, whitespace removed: OCR may join or split words, never change their letters
    /// (when it does, the assertion fails, as it should).
    static func normalized(_ text: String) -> String {
        String(text.lowercased().unicodeScalars.filter { !CharacterSet.whitespacesAndNewlines.contains($0) })
    }

    /// A word that tesseract found in a screenshot, with the centre of its box.
    struct Word {
        var text: String
        var x: Int
        var y: Int
    }

    /// The words of `tesseract … tsv` output (level 5 rows).
    static func words(_ tsv: String) -> [Word] {
        tsv.split(separator: "\n").compactMap { line in
            let columns = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard columns.count >= 12, columns[0] == "5", let left = Int(columns[6]), let top = Int(columns[7]),
                let width = Int(columns[8]), let height = Int(columns[9])
            else { return nil }
            let text = columns[11].trimmingCharacters(in: .whitespaces)
            return text.isEmpty ? nil : Word(text: text, x: left + width / 2, y: top + height / 2)
        }
    }

    @Test(
        "Seahorse, under Xvfb, shows the Login collection and the label of an item SecItemAdd stored: read by OCR from a kept screenshot"
    )
    func seahorseShowsTheKeychain() throws {
        _ = try requireTool("/usr/bin/Xvfb")
        let seahorse = try requireTool("/usr/bin/seahorse")
        let tesseract = try requireTool("/usr/bin/tesseract")
        let screenshot = try requireTool("/usr/bin/import")
        let xdotool = try requireTool("/usr/bin/xdotool")
        let gdbus = try requireTool("/usr/bin/gdbus")
        let worker = try requireTool(productsDirectory + "/keychain-secitem-worker")

        let bus = try PrivateSessionBus.activatingKeychaind()
        defer { bus.stop() }

        // The collection's label, as the provider gives it to any client (this activates it).
        let collection = "/org/freedesktop/secrets/collection/login"
        let got = try runTool(
            gdbus,
            [
                "call", "--session", "--dest", SecretServiceProvider.busName, "--object-path", collection,
                "--method", "org.freedesktop.DBus.Properties.Get", "org.freedesktop.Secret.Collection", "Label",
            ], environment: bus.environment)
        let collectionLabel = got.out.components(separatedBy: "'").dropFirst().first ?? ""
        try #require(got.status == 0 && !collectionLabel.isEmpty, "\(got) \(got.out)")

        // An application stores a password through SecItemAdd, in its own process; the secret
        // goes through standard input.
        let itemLabel = "Harbor Lighthouse Password"
        let added = try runTool(
            worker, ["add", "harbor.example", "keeper", itemLabel], stdin: Data("lantern-\(UUID().uuidString)".utf8),
            environment: bus.environment)
        try #require(added.status == 0 && added.out == "ok\n", "\(added) \(added.out)")

        // A private X server on a display it chooses (-displayfd), then Seahorse on it.
        let (server, display) = try TestDaemon.xServer(environment: bus.environment)
        defer { server.stop() }
        var environment = bus.environment
        environment["DISPLAY"] = display
        environment["GDK_BACKEND"] = "x11"
        environment["GSETTINGS_BACKEND"] = "memory"
        environment["NO_AT_BRIDGE"] = "1"
        let manager = try TestDaemon(seahorse, [], environment: environment)
        defer { manager.stop() }

        // As a person would: wait for the window, make it wide enough for its sidebar, click
        // the collection there, read what the window shows. Until the item's label shows, or
        // 90 s.
        try FileManager.default.createDirectory(atPath: Self.artifacts, withIntermediateDirectories: true)
        let shot = Self.artifacts + "/seahorse.png"
        let textFile = Self.artifacts + "/seahorse.txt"
        try? FileManager.default.removeItem(atPath: shot)
        try? FileManager.default.removeItem(atPath: textFile)
        var resized = false
        var text = ""
        let end = Date().addingTimeInterval(90)
        while Date() < end && manager.isRunning {
            if !resized {
                let window = try runTool(
                    xdotool, ["search", "--onlyvisible", "--class", "seahorse"], environment: environment,
                    deadline: 30)
                if let id = window.out.split(separator: "\n").first {
                    resized =
                        try runTool(
                            xdotool, ["windowsize", String(id), "1200", "750"], environment: environment, deadline: 30
                        ).status == 0
                }
                if !resized {
                    usleep(500_000)
                    continue
                }
                usleep(500_000)
            }
            let taken = try runTool(screenshot, ["-window", "root", shot], environment: environment, deadline: 30)
            guard taken.status == 0 else {
                usleep(500_000)
                continue
            }
            let read = try runTool(tesseract, [shot, "-", "tsv"], environment: environment, deadline: 60)
            let words = Self.words(read.out)
            text = words.map(\.text).joined(separator: " ")
            if Self.normalized(text).contains(Self.normalized(itemLabel)) { break }
            // The collection in the sidebar (the first place its label shows) is clicked.
            if let word = words.first(where: { Self.normalized($0.text) == Self.normalized(collectionLabel) }) {
                _ = try runTool(
                    xdotool, ["mousemove", String(word.x), String(word.y), "click", "1"], environment: environment,
                    deadline: 30)
            }
            usleep(1_000_000)
        }
        try? text.write(toFile: textFile, atomically: true, encoding: .utf8)
        print("Seahorse's window: \(shot) (the text read from it: \(textFile))")

        let seen = Self.normalized(text)
        #expect(
            seen.contains(Self.normalized(itemLabel)),
            "the item's label in Seahorse's window (screenshot: \(shot)); read: \(text); seahorse said: \(manager.errors)"
        )
        #expect(
            seen.contains(Self.normalized(collectionLabel)),
            "the collection's label '\(collectionLabel)' in Seahorse's window (screenshot: \(shot)); read: \(text)")
        // A negative control: a label no one stored is not read.
        #expect(
            !seen.contains(Self.normalized("Meadow Unicorn Password")),
            "a label never stored is not in Seahorse's window (screenshot: \(shot)); read: \(text)")
        #expect(manager.isRunning, "Seahorse still runs")
    }
}
