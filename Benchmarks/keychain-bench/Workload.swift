import Foundation
import KeychainCore
import SeededRandom

/// The items of a benchmark keychain: realistic generic passwords with 100-byte secrets.
///
/// Item `k` of a keychain of `count` items belongs to service `k % serviceCount` and is
/// account number `k / serviceCount` of that service, so the accounts of one service are
/// spread across the file as they would be after years of use. Services look like host
/// names and reverse-DNS identifiers, accounts like e-mail addresses and user names.
struct Workload: Sendable {
    /// The number of seeded items.
    let count: Int
    /// Accounts per service (the size of a "list all accounts of one service" answer).
    let accountsPerService: Int
    /// The length of every secret.
    static let secretLength = 100

    init(count: Int, accountsPerService: Int = 10) {
        self.count = count
        self.accountsPerService = max(1, min(accountsPerService, count))
    }

    var serviceCount: Int { (count + accountsPerService - 1) / accountsPerService }

    private static let hosts = [
        "api.github.com", "registry.npmjs.org", "gitlab.internal", "vault.corp", "s3.amazonaws.com",
        "login.microsoftonline.com", "hub.docker.com", "pypi.org",
    ]

    /// The service of seeded service number `s`.
    func service(number s: Int) -> String {
        if s % 3 == 0 { return "com.example.app\(s).token" }
        let host = Self.hosts[s % Self.hosts.count]
        return "\(s).\(host)"
    }

    /// The service and account of seeded item `k`.
    func name(of k: Int) -> (service: String, account: String) {
        let s = k % serviceCount
        let a = k / serviceCount
        let account = a % 2 == 0 ? "user\(k)@example.org" : "svc-deploy-\(k)"
        return (service(number: s), account)
    }

    /// The number of seeded items of service number `s`.
    func accounts(ofService s: Int) -> Int {
        (0..<accountsPerService).filter { $0 * serviceCount + s < count }.count
    }

    /// A service and account that no seeded item has, in a service that exists.
    func missingName(_ i: Int) -> (service: String, account: String) {
        (service(number: i % serviceCount), "nobody-\(i)@example.org")
    }

    /// Who adds items during a run: the names each one adds are its own.
    enum Adder: Int, CaseIterable {
        case engine, secItem, floor, indexedFloor, growth
    }

    /// The service and account of the `i`-th item that `adder` adds: the one account of a
    /// service that no seeded item has, named as the seeded services are.
    ///
    /// The service's number is scrambled over [10^k, 10^(k+1)), a range of numbers above every
    /// seeded one whose leading digits are all equally likely, so that in key order added
    /// names fall anywhere among the seeded ones, as a real keychain's new names do. Numbered
    /// in sequence they would sort next to each other, and a plaintext index would write them
    /// all into the same few cached pages (``FloorOperation/insertClustered`` measures that).
    func addedName(_ adder: Adder, _ i: Int) -> (service: String, account: String) {
        var base = 10_000_000
        while base <= serviceCount { base *= 10 }
        // Multiplying by a number prime to 2, 3 and 5 is a bijection modulo 9 × 10^k:
        // distinct (adder, i) give distinct services. (The product fits in 64 bits for any
        // index below 3 × 10^9.)
        let index = i * Adder.allCases.count + adder.rawValue
        let scrambled = index * 2_654_435_761 % (9 * base)
        return (service(number: base + scrambled), "added-\(i)@example.net")
    }

    /// The `i`-th name of ``FloorOperation/insertClustered``: names that all sort together,
    /// after every seeded name (the benchmark's added names before they were scrambled).
    static func clusteredName(_ i: Int) -> (service: String, account: String) {
        ("new\(i % 100).bench.example.net", "clustered-\(i)@example.net")
    }

    static func label(service: String, account: String) -> String { "\(service) (\(account))" }

    /// A secret: 100 printable bytes (a token), different for every `k` and `version`.
    static func secret(_ k: Int, version: Int = 0) -> Data {
        var generator = SplitMix64(seed: UInt64(truncatingIfNeeded: k) &* 0x1000_0001 &+ UInt64(version))
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        return Data((0..<secretLength).map { _ in alphabet[Int(generator.next() % 64)] })
    }

    /// The engine item for a name and secret.
    static func item(service: String, account: String, secret: Data) -> Item {
        Item(
            class: .genericPassword,
            attributes: [
                .service: .string(service), .account: .string(account),
                .label: .string(label(service: service, account: account)),
            ],
            data: secret)
    }

    /// `iterations` indices of seeded items, drawn from a seeded generator.
    func randomItems(_ iterations: Int, seed: UInt64) -> [Int] {
        var generator = SplitMix64(seed: seed)
        return (0..<iterations).map { _ in Int(generator.next() % UInt64(count)) }
    }

    /// `iterations` indices of seeded services.
    func randomServices(_ iterations: Int, seed: UInt64) -> [Int] {
        var generator = SplitMix64(seed: seed)
        return (0..<iterations).map { _ in Int(generator.next() % UInt64(serviceCount)) }
    }
}
